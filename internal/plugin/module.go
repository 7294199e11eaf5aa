package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"talon/internal/config"
	"talon/internal/netguard"
	"talon/internal/tools"
)

// Module is a plugin compiled into Talon, registered by id.
type Module struct {
	ID          string
	Kind        string // "memory" competes for the memory slot; "tools" otherwise
	Description string
	// New constructs an unconfigured instance.
	New func() Instance
}

// Instance is one configured plugin. The host calls Decode, Provision and
// Validate once, in that order, then Tools for every run until Close.
// Tools may be called concurrently.
type Instance interface {
	// Decode reads plugins.entries.<id>.config strictly: an unknown key
	// or a wrong type is an error. raw is nil when the entry has none.
	Decode(raw json.RawMessage) error
	// Provision acquires what the instance needs from the host.
	Provision(p *Provision) error
	// Validate checks the instance is ready to serve runs.
	Validate() error
	// Tools returns the plugin's tools for one run.
	Tools(ctx context.Context, run Run) ([]Tool, error)
	// Close releases what Provision acquired.
	Close() error
}

// Provision is what the host offers instances.
type Provision struct {
	// StateDir is the tenant's state directory.
	StateDir string
	Log      *slog.Logger
	// Guard, for a tenant, is the network guard of the endpoints its
	// config names (image-gen's baseUrl); nil for the operator's.
	Guard *netguard.Options
	// ProcessEnv says runs see the gateway's own environment
	// (Run.ProcessEnv): true for the default tenant only.
	ProcessEnv bool
	// host gives instances the tenant-wide services that outlive a config
	// version (the memory index) and the YAML tool loader.
	host *Host
}

// Run is what a plugin knows of the run it serves.
type Run struct {
	AgentID string
	// AgentDir is the agent's own workspace directory on the host.
	AgentDir string
	// Env looks up the config's env (string members of env and
	// env.vars); set by Set.Tools.
	Env func(name string) (string, bool)
	// ProcessEnv looks up the gateway's own environment: set by Set.Tools
	// for the default tenant only, nil for a tenant. A plugin reads from
	// it only names the operator's config gives it (image-gen's
	// apiKeyEnv, api-tools' processEnv), never a name a file or the model
	// chooses.
	ProcessEnv func(name string) (string, bool)
	// Config is the config version the run's tools come from: set by
	// Set.Tools (memory-core reads the agent's memorySearch from it).
	Config *config.Config
}

// Tool is a plugin tool; Optional tools are offered only when an explicit
// allow list names them (spec §9.2).
type Tool struct {
	tools.Tool
	Optional bool
}

var (
	modulesMu sync.RWMutex
	modules   = map[string]Module{}
)

// Register adds a compiled-in plugin; it panics on a duplicate or invalid
// id, which is a programming error found at start-up.
func Register(m Module) {
	modulesMu.Lock()
	defer modulesMu.Unlock()
	if !idRE.MatchString(m.ID) || m.New == nil {
		panic(fmt.Sprintf("plugin: invalid module %q", m.ID))
	}
	if _, dup := modules[m.ID]; dup {
		panic(fmt.Sprintf("plugin: module %q registered twice", m.ID))
	}
	modules[m.ID] = m
}

// Modules lists the compiled-in plugins by id.
func Modules() []Module {
	modulesMu.RLock()
	defer modulesMu.RUnlock()
	out := make([]Module, 0, len(modules))
	for _, m := range modules {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Module) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// DecodeStrict decodes raw into v refusing unknown keys; nil raw leaves
// v. Instances decode their entry config with it.
func DecodeStrict(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the config object")
	}
	return nil
}
