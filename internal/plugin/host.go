package plugin

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"talon/internal/config"
	"talon/internal/contain"
	"talon/internal/netguard"
	"talon/internal/policy"
	"talon/internal/tools"
)

// MCP is what the host needs of the MCP client (internal/mcp): one
// tenant's servers, configured per config version, their tools listed on
// first use.
type MCP interface {
	Configure(servers map[string]config.MCPServer)
	Tools(ctx context.Context, server string) ([]tools.Tool, error)
}

// Options configure a Host.
type Options struct {
	// StateDir is the tenant's state directory: its extensions/ is the
	// global plugin directory, relative plugins.load.paths start there,
	// and plugins keep their data there.
	StateDir string
	// ProcessEnv lets plugins read the gateway's own environment after
	// the config's env, by the names the config gives them: image-gen's
	// apiKeyEnv, and for YAML tools only the names listed in
	// plugins.entries.api-tools.config.processEnv. It is for the default
	// tenant, whose operator owns the process and writes its config. A
	// tenant's plugins see only their config's env, never the gateway's
	// secrets.
	ProcessEnv bool
	// Guard, when set, is the network guard of the endpoints a config
	// names for a plugin (a tenant's): handed to instances in Provision.
	Guard *netguard.Options
	// Confine, when set, is the directory every plugin directory must
	// really be in (a tenant's): one a symbolic link leads out of is
	// listed with the problem and not read.
	Confine string
	// MCP serves mcp.servers; nil means MCP servers are listed as plugins
	// that cannot load.
	MCP MCP
	Log *slog.Logger
	// Resolver and RootCAs replace the system's DNS and TLS roots for
	// what plugins send: a test points a real API's host name at a
	// stand-in with them. The network guard still checks every address.
	Resolver netguard.Resolver
	RootCAs  *x509.CertPool
}

// Host is one tenant's plugin host. It is safe for concurrent use.
type Host struct {
	opts Options
	yaml yamlCache

	mu   sync.Mutex
	live map[string]*live // compiled-in instances by id
	// sharedMu guards shared and closers: tenant-wide services that
	// outlive config versions, opened by instances while Configure holds
	// mu.
	sharedMu sync.Mutex
	shared   map[string]any
	closers  []func() error
	closed   bool
	clients  clients
}

type live struct {
	conf string // the entry config the instance was built from
	inst Instance
	err  error
}

// NewHost returns a tenant's plugin host.
func NewHost(opts Options) *Host {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Host{opts: opts, live: map[string]*live{}, shared: map[string]any{}}
}

// Set is the plugins of one config version. It is immutable and safe for
// concurrent use.
type Set struct {
	h       *Host
	cfg     *config.Config
	enabled bool
	env     map[string]string
	// static are the plugins found without a workspace: config paths,
	// compiled-in modules, the global directory and MCP servers, in
	// discovery order (workspace plugins go between config and bundled).
	static []Found
	inst   map[string]*live
}

// Configure builds the Set for cfg: it finds the plugins, and constructs,
// decodes, provisions and validates the compiled-in ones that are on. An
// instance whose entry config did not change is kept; the others are
// closed. MCP servers are handed to the MCP client.
func (h *Host) Configure(cfg *config.Config) *Set {
	s := &Set{h: h, cfg: cfg, enabled: !off(cfg.Plugins.Enabled), env: config.EnvVars(cfg), inst: map[string]*live{}}
	var found []Found
	for _, p := range cfg.Plugins.Load.Paths {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(h.opts.StateDir, p)
		}
		found = merge(found, h.scan(p, policy.OriginConfig)...)
	}
	for name, srv := range cfg.MCP.Servers {
		if off(srv.Enabled) {
			continue
		}
		f := Found{ID: name, Kind: "mcp", Origin: policy.OriginConfig, Source: SourceMCP}
		if h.opts.MCP == nil {
			f.Problem = "this gateway has no MCP client"
		}
		found = merge(found, f)
	}
	for _, m := range Modules() {
		found = merge(found, Found{ID: m.ID, Kind: m.Kind, Origin: policy.OriginBundled, Source: SourceModule, module: &m})
	}
	found = merge(found, h.scan(filepath.Join(h.opts.StateDir, GlobalExtensions), policy.OriginGlobal)...)
	s.static = found
	if h.opts.MCP != nil {
		h.opts.MCP.Configure(cfg.MCP.Servers)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	keep := map[string]bool{}
	for _, f := range found {
		if f.module == nil || f.OverriddenBy != "" || !policy.LoadState(cfg, f.ID, f.Origin, f.Kind).Enabled {
			continue
		}
		raw := entryConfig(cfg, f.ID)
		l := h.live[f.ID]
		if l == nil || l.conf != string(raw) {
			if l != nil && l.inst != nil {
				h.closeInstance(f.ID, l.inst)
			}
			l = &live{conf: string(raw)}
			l.inst, l.err = h.start(f.module, raw)
			h.live[f.ID] = l
		}
		keep[f.ID] = true
		s.inst[f.ID] = l
	}
	for id, l := range h.live {
		if !keep[id] {
			if l.inst != nil {
				h.closeInstance(id, l.inst)
			}
			delete(h.live, id)
		}
	}
	return s
}

// start runs a module's lifecycle up to ready: construct, decode,
// provision, validate. A failure closes what was provisioned.
func (h *Host) start(m *Module, raw json.RawMessage) (Instance, error) {
	inst := m.New()
	if err := inst.Decode(raw); err != nil {
		return nil, fmt.Errorf("plugins.entries.%s.config: %w", m.ID, err)
	}
	if err := inst.Provision(&Provision{StateDir: h.opts.StateDir, Log: h.opts.Log.With("plugin", m.ID), Guard: h.opts.Guard, ProcessEnv: h.opts.ProcessEnv, host: h}); err != nil {
		_ = inst.Close()
		return nil, fmt.Errorf("provisioning plugin %s: %w", m.ID, err)
	}
	if err := inst.Validate(); err != nil {
		_ = inst.Close()
		return nil, fmt.Errorf("plugin %s: %w", m.ID, err)
	}
	return inst, nil
}

// closeInstance closes an instance a newer config no longer uses; h.mu is
// held. Runs of the old config still in flight keep their tools: the
// instances Talon ships hold no per-config resource a late call needs.
func (h *Host) closeInstance(id string, inst Instance) {
	if err := inst.Close(); err != nil {
		h.opts.Log.Warn("closing plugin", "plugin", id, "err", err)
	}
}

// Close closes every instance and tenant-wide service.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for id, l := range h.live {
		if l.inst != nil {
			if err := l.inst.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing plugin %s: %w", id, err))
			}
		}
	}
	h.live = map[string]*live{}
	h.sharedMu.Lock()
	for i := len(h.closers) - 1; i >= 0; i-- {
		if err := h.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	h.closers, h.shared = nil, nil
	h.sharedMu.Unlock()
	h.clients.close()
	return errors.Join(errs...)
}

// Shared returns the tenant-wide service under key, opening it with open
// the first time; it is closed with the host. Instances use it for what
// must outlive a config version (the memory index).
func (p *Provision) Shared(key string, open func() (any, func() error, error)) (any, error) {
	h := p.host
	h.sharedMu.Lock()
	defer h.sharedMu.Unlock()
	if h.shared == nil {
		return nil, errors.New("plugin host is closed")
	}
	if v, ok := h.shared[key]; ok {
		return v, nil
	}
	v, closer, err := open()
	if err != nil {
		return nil, err
	}
	h.shared[key] = v
	if closer != nil {
		h.closers = append(h.closers, closer)
	}
	return v, nil
}

func entryConfig(cfg *config.Config, id string) json.RawMessage {
	e, ok := cfg.Plugins.Entries[id]
	if !ok || e.Config == nil || e.Config.Value == nil {
		return nil
	}
	raw, err := json.Marshal(e.Config)
	if err != nil {
		return nil
	}
	return raw
}

func off(b *bool) bool { return b != nil && !*b }

// RunTools are the plugin tools of one run, as the policy takes them.
type RunTools struct {
	// Candidates are plugin tools that enter the pipeline with the core
	// tools: the memory slot's (OpenClaw builds them with the coding
	// tools, spec §1.3).
	Candidates []policy.Tool
	// Registrations are the other plugins' tools, resolved by the
	// pipeline (optional tools, name conflicts: §9.2, §9.3).
	Registrations []policy.Registration
	// Plugins are the plugins considered for the run, with their state.
	Plugins []Status
	byKey   map[string]tools.Tool
}

// Status is a plugin as a run or an operator sees it.
type Status struct {
	Found
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason,omitempty"`
	Key     string `json:"key,omitempty"`
	// Tools are the names of the tools it offered.
	Tools []string `json:"tools,omitempty"`
	// Errors are what went wrong loading it or its tools for this run
	// (a bad YAML tool file, an MCP server that did not start).
	Errors []string `json:"errors,omitempty"`
}

// Get returns the tool name of plugin for a call.
func (rt *RunTools) Get(plugin, name string) (tools.Tool, bool) {
	if rt == nil {
		return nil, false
	}
	t, ok := rt.byKey[strings.ToLower(plugin)+"\x00"+name]
	return t, ok
}

// Tools returns the tools of one run: the static plugins plus the agent
// workspace's, each on or off by the enable rules, with the tools of those
// that are on.
func (s *Set) Tools(ctx context.Context, run Run) *RunTools {
	rt := &RunTools{byKey: map[string]tools.Tool{}}
	if s == nil {
		return rt
	}
	run.Env = s.lookupEnv
	run.Config = s.cfg
	run.ProcessEnv = nil
	if s.h.opts.ProcessEnv {
		run.ProcessEnv = os.LookupEnv
	}
	found := s.found(run)
	for _, f := range found {
		st := Status{Found: f}
		switch {
		case f.OverriddenBy != "":
			st.Reason = "overridden by " + string(f.OverriddenBy) + " plugin"
		case !s.enabled:
			st.Reason, st.Key = "plugins disabled", "plugins.enabled"
		default:
			es := policy.LoadState(s.cfg, f.ID, f.Origin, f.Kind)
			st.Enabled, st.Reason, st.Key = es.Enabled, es.Reason, es.Key
		}
		if st.Enabled {
			s.load(ctx, run, &st, rt)
		}
		rt.Plugins = append(rt.Plugins, st)
	}
	if slot := policy.MemorySlot(&s.cfg.Plugins); s.enabled && slot != "" &&
		!slices.ContainsFunc(found, func(f Found) bool { return strings.EqualFold(f.ID, slot) }) {
		rt.Plugins = append(rt.Plugins, Status{
			Found:  Found{ID: slot, Kind: "memory", Source: SourceModule},
			Errors: []string{fmt.Sprintf("plugins.slots.memory names %q, which Talon does not have; memory-core is the memory plugin it ships", slot)},
		})
	}
	return rt
}

// lookupEnv finds a variable of the config's env.
func (s *Set) lookupEnv(name string) (string, bool) {
	v, ok := s.env[name]
	return v, ok
}

// found merges the agent workspace's plugins into the static list.
func (s *Set) found(run Run) []Found {
	if run.AgentDir == "" {
		return s.static
	}
	ws := s.h.scan(filepath.Join(run.AgentDir, WorkspaceExtensions), policy.OriginWorkspace)
	if len(ws) == 0 {
		return s.static
	}
	var out []Found
	i := 0
	for ; i < len(s.static) && s.static[i].Origin == policy.OriginConfig; i++ {
		out = append(out, s.static[i])
	}
	out = merge(out, ws...)
	for _, f := range s.static[i:] {
		f.OverriddenBy = ""
		out = merge(out, f)
	}
	return out
}

// load adds the tools of an enabled plugin to rt.
func (s *Set) load(ctx context.Context, run Run, st *Status, rt *RunTools) {
	if st.Problem != "" {
		st.Errors = append(st.Errors, st.Problem)
		return
	}
	var list []Tool
	switch st.Source {
	case SourceModule:
		l := s.inst[st.ID]
		if l == nil {
			st.Errors = append(st.Errors, "not started")
			return
		}
		if l.err != nil {
			st.Errors = append(st.Errors, l.err.Error())
			return
		}
		ts, err := l.inst.Tools(ctx, run)
		if err != nil {
			st.Errors = append(st.Errors, err.Error())
		}
		list = ts
	case SourceDirectory:
		if err := st.manifest.CheckConfig(entryConfig(s.cfg, st.ID)); err != nil {
			st.Errors = append(st.Errors, err.Error())
			return
		}
		// The api-tools entry's processEnv grants to every YAML tool; a
		// list that does not decode grants nothing (the api-tools
		// plugin reports why).
		grant, _ := DecodeAPIToolsConfig(entryConfig(s.cfg, APITools))
		ts, errs := s.h.yamlTools(filepath.Join(st.Dir, apiToolsDir), yamlEnv(run, grant))
		st.Errors = append(st.Errors, errs...)
		list = ts
	case SourceMCP:
		ts, err := s.h.opts.MCP.Tools(ctx, st.ID)
		if err != nil {
			st.Errors = append(st.Errors, err.Error())
		}
		for _, t := range ts {
			list = append(list, Tool{Tool: t})
		}
	}
	memorySlot := st.Kind == "memory" && strings.EqualFold(policy.MemorySlot(&s.cfg.Plugins), st.ID)
	for _, t := range list {
		name := t.Name()
		st.Tools = append(st.Tools, name)
		key := strings.ToLower(st.ID) + "\x00" + name
		if _, dup := rt.byKey[key]; dup {
			st.Errors = append(st.Errors, fmt.Sprintf("tool %q registered twice; the first is kept", name))
			continue
		}
		rt.byKey[key] = t.Tool
		if memorySlot {
			rt.Candidates = append(rt.Candidates, policy.Tool{Name: name, Plugin: st.ID})
			continue
		}
		rt.Registrations = append(rt.Registrations, policy.Registration{Plugin: st.ID, Name: name, Optional: t.Optional, Kind: st.Kind})
	}
}

// List reports every plugin a run of agentDir's agent would consider, in
// discovery order, for operators (talon plugins list, plugins.list). It
// loads the tools of the plugins that are on, as a run would.
func (s *Set) List(ctx context.Context, run Run) []Status {
	ps := s.Tools(ctx, run).Plugins
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Enabled && !ps[j].Enabled })
	return ps
}

// scan is scan(dir, origin) for a directory inside Confine; one that
// leads out is a plugin that cannot load, named after the directory.
func (h *Host) scan(dir string, origin policy.Origin) []Found {
	if err := h.confined(dir); err != nil {
		return []Found{{ID: filepath.Base(dir), Origin: origin, Source: SourceDirectory, Dir: dir, Problem: err.Error()}}
	}
	return scan(dir, origin)
}

// confined refuses a directory that leads out of Confine.
func (h *Host) confined(dir string) error {
	if h.opts.Confine == "" {
		return nil
	}
	if _, err := contain.Resolved(h.opts.Confine, dir); err != nil {
		return fmt.Errorf("reading plugin directory: %w", err)
	}
	return nil
}
