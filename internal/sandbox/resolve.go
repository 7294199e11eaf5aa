package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"talon/internal/config"
	"talon/internal/contain"
	"talon/internal/policy"
	"talon/internal/session"
)

// WorkspacesDir is the directory under the state dir that holds the sandbox
// workspaces when sandbox.workspaceRoot is not set, as in OpenClaw.
const WorkspacesDir = "sandboxes"

// Backends by name.
const (
	BackendBwrap  = "bwrap"
	BackendDocker = "docker"
	BackendHost   = "host"
)

// DefaultBackend is the backend of a config that names none: bubblewrap on
// Linux, where it is the kernel's own isolation, Docker elsewhere.
func DefaultBackend() string {
	if runtime.GOOS == "linux" {
		return BackendBwrap
	}
	return BackendDocker
}

// Setting is one resolved value and the config key it came from; Key is ""
// when the value is Talon's default.
type Setting struct {
	Value string `json:"value"`
	Key   string `json:"key,omitempty"`
}

// Plan is a session's sandbox as its config resolves it: whether the
// session is sandboxed and why, and when it is, where its workspace lives
// and the Spec a backend starts. Resolve makes it without touching the
// disk; Manager.Prepare carries it out.
type Plan struct {
	AgentID string `json:"agent_id"`
	// SessionKey is the key canonicalised as the gateway stores it.
	SessionKey     string `json:"session_key"`
	MainSessionKey string `json:"main_session_key"`
	Sandboxed      bool   `json:"sandboxed"`
	// Reason says why the session is, or is not, sandboxed.
	Reason string `json:"reason"`

	// Mode is as written (paths-only stays paths-only); EffectiveMode is
	// what it means: off, non-main or all.
	Mode          Setting `json:"mode"`
	EffectiveMode string  `json:"effective_mode"`
	Scope         Setting `json:"scope"`
	Access        Setting `json:"workspace_access"`
	Backend       Setting `json:"backend"`
	// WorkspaceRoot is the directory holding the sandbox workspaces.
	WorkspaceRoot Setting `json:"workspace_root"`
	// Network is sandbox.docker.network as configured ("none" by default).
	Network Setting `json:"network"`
	// Ignored are the agent's docker and limits keys, which scope shared
	// ignores.
	Ignored []string `json:"ignored,omitempty"`

	// AgentWorkspace is the agent's own workspace.
	AgentWorkspace string `json:"agent_workspace"`

	// The rest is set only when Sandboxed.

	// ScopeKey names what shares the sandbox: "shared", the session key,
	// or agent:<id>.
	ScopeKey string `json:"scope_key,omitempty"`
	// Seed is true when Spec.Root is a sandbox workspace of its own, seeded
	// from AgentWorkspace; false when it is the agent workspace (rw).
	Seed bool `json:"seed,omitempty"`
	Spec Spec `json:"-"` // Explanation shows it with JSON names and units

	// BackendSettings go to New: the docker block (agents.defaults merged
	// with the agent's) for docker, nil for the others.
	BackendSettings map[string]any `json:"-"`
}

// Resolve works out the sandbox of one run of agentID in sessionKey, with
// the agent's and agents.defaults' sandbox settings (policy.
// ResolveSandboxSettings) and the main-session rule (policy.IsSandboxed):
//
//   - mode off: never sandboxed; all (and seed-era paths-only, which reads
//     as all): always; non-main: every session but the agent's main one,
//     its aliases ("main", the mainKey, agent:<id>:main) included. An
//     empty session key is never sandboxed.
//   - scope session, agent or shared decides what shares one sandbox and
//     its workspace: <workspaceRoot>/<slug of the scope key>, where the
//     workspace root is sandbox.workspaceRoot (relative to the state dir)
//     or <state>/sandboxes. Unlike OpenClaw, which uses the root itself for
//     shared, shared gets a directory of its own too, so it never sees the
//     other scopes' workspaces.
//   - workspaceAccess rw: the root is the agent workspace itself; ro: the
//     sandbox workspace, with the agent workspace read-only at AgentMount
//     for commands (the file tools stay in the root, and the policy removes
//     write, edit and apply_patch); none: the sandbox workspace alone.
//   - backend: sandbox.backend, else DefaultBackend; host only with mode
//     off, since it would run "sandboxed" sessions unisolated.
//   - network: OpenClaw's sandbox.docker.network, for every backend: unset
//     or "none" means no network, anything else grants it.
//   - limits: Talon's sandbox.limits, field by field, over DefaultLimits.
//
// Per-agent docker and limits settings are ignored under scope shared, as
// OpenClaw ignores per-agent docker settings there: one sandbox, one set.
// Errors are *Error and name the config key at fault.
func Resolve(cfg *config.Config, stateDir, agentID, sessionKey string) (Plan, error) {
	p, err := resolve(cfg, stateDir, agentID, sessionKey)
	if err != nil {
		return p, &Error{SessionKey: p.SessionKey, Err: err}
	}
	return p, nil
}

func resolve(cfg *config.Config, stateDir, agentID, sessionKey string) (Plan, error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return Plan{}, fmt.Errorf("resolving sandbox: state dir: %w", err)
	}
	id := config.NormalizeAgentID(agentID)
	st := policy.ResolveSandboxSettings(cfg, id)
	agentBlock, agentKey := agentSandbox(cfg, id)
	p := Plan{
		AgentID:        id,
		MainSessionKey: policy.MainSessionKey(cfg, id),
		Mode:           Setting{rawMode(agentBlock, cfg), st.ModeKey},
		EffectiveMode:  st.Mode,
		Scope:          Setting{st.Scope, st.ScopeKey},
		Access:         Setting{st.WorkspaceAccess, st.AccessKey},
		Backend:        Setting{st.Backend, st.BackendKey},
	}
	if p.Backend.Value == "" {
		p.Backend.Value = DefaultBackend()
	}
	p.WorkspaceRoot = Setting{workspacesRoot(&st, stateDir), st.RootKey}
	if st.Mode != policy.ModeOff && p.Backend.Value == BackendHost {
		return p, fmt.Errorf("resolving sandbox of agent %s: backend \"host\" (%s) runs commands without isolation, which only sandbox mode \"off\" allows (%s is %q); set the backend to bwrap or docker, or the mode to off",
			id, orDefault(p.Backend.Key), orDefault(p.Mode.Key), p.Mode.Value)
	}
	shared := st.Scope == "shared"
	if shared && agentBlock != nil {
		if agentBlock.Docker != nil {
			p.Ignored = append(p.Ignored, agentKey+".docker")
		}
		if agentBlock.Limits != nil {
			p.Ignored = append(p.Ignored, agentKey+".limits")
		}
	}
	docker, err := dockerSettings(cfg, agentBlock, agentKey, shared)
	if err != nil {
		return p, err
	}
	p.Network, err = network(docker, agentBlock, agentKey, shared)
	if err != nil {
		return p, err
	}
	if p.Backend.Value == BackendDocker {
		p.BackendSettings = docker
	}

	p.AgentWorkspace = cfg.AgentWorkspace(stateDir, id)
	if strings.TrimSpace(sessionKey) == "" {
		p.Reason = "no session key: a run outside a session is never sandboxed"
		return p, nil
	}
	if p.SessionKey, err = session.Canonical(cfg, id, sessionKey); err != nil {
		return p, fmt.Errorf("resolving sandbox of agent %s: %w", id, err)
	}
	p.Sandboxed = policy.IsSandboxed(cfg, id, p.SessionKey)
	p.Reason = reason(&p, strings.TrimSpace(sessionKey))
	if !p.Sandboxed {
		return p, nil
	}

	switch p.Scope.Value {
	case "shared":
		p.ScopeKey = "shared"
	case "session":
		p.ScopeKey = p.SessionKey
	default:
		p.ScopeKey = "agent:" + id
	}
	spec := Spec{Network: p.Network.Value != "none"}
	if p.Access.Value == policy.AccessRW {
		spec.Root = p.AgentWorkspace
	} else {
		spec.Root = filepath.Join(p.WorkspaceRoot.Value, Slug(p.ScopeKey))
		p.Seed = true
		if contain.Overlap(spec.Root, p.AgentWorkspace) {
			return p, fmt.Errorf("resolving sandbox of agent %s: the sandbox workspace %s (under %s) overlaps the agent workspace %s, which workspaceAccess %q must keep out of the sandbox's reach; set %s elsewhere, or workspaceAccess to \"rw\"",
				id, spec.Root, orDefault(p.WorkspaceRoot.Key), p.AgentWorkspace, p.Access.Value, rootKeyOf(p.WorkspaceRoot.Key))
		}
		if p.Access.Value == policy.AccessRO {
			spec.Mounts = []Mount{{Source: p.AgentWorkspace, Target: AgentMount, ReadOnly: true}}
		}
	}
	if spec.Limits, err = limits(cfg, agentBlock, shared); err != nil {
		return p, err
	}
	spec.ID = specID(p.ScopeKey, p.Backend.Value, &spec, docker)
	if err := spec.Validate(); err != nil {
		return p, fmt.Errorf("resolving sandbox of agent %s: %w", id, err)
	}
	p.Spec = spec
	return p, nil
}

// HostSpec is where an unsandboxed run of the plan's agent runs commands:
// on the host, in the agent workspace, through the host backend.
func (p *Plan) HostSpec() Spec {
	s := Spec{Root: p.AgentWorkspace, Limits: DefaultLimits()}
	s.ID = specID("host:"+p.AgentID, BackendHost, &s, nil)
	return s
}

// WorkspacesRoot is the directory that holds an agent's sandbox workspaces:
// sandbox.workspaceRoot (agent, else defaults; relative to the state dir,
// `~` for home), else <state>/sandboxes.
func WorkspacesRoot(cfg *config.Config, stateDir, agentID string) string {
	st := policy.ResolveSandboxSettings(cfg, agentID)
	return workspacesRoot(&st, stateDir)
}

func workspacesRoot(st *policy.SandboxSettings, stateDir string) string {
	if strings.TrimSpace(st.WorkspaceRoot) != "" {
		return config.ExpandPath(stateDir, st.WorkspaceRoot)
	}
	return filepath.Join(stateDir, WorkspacesDir)
}

// reason explains the sandboxed answer in one sentence.
func reason(p *Plan, asked string) string {
	mode := "mode " + strconv.Quote(p.Mode.Value) + " (" + orDefault(p.Mode.Key) + ")" // every turn: no fmt
	if p.Mode.Value != p.EffectiveMode {
		mode += fmt.Sprintf(", read as %q,", p.EffectiveMode)
	}
	switch p.EffectiveMode {
	case policy.ModeAll:
		return mode + " sandboxes every session"
	case policy.ModeNonMain:
		if p.Sandboxed {
			return fmt.Sprintf("%s sandboxes every session but the agent's main session %s", mode, p.MainSessionKey)
		}
		if asked != p.MainSessionKey {
			return fmt.Sprintf("%q is the agent's main session %s, which %s leaves unsandboxed", asked, p.MainSessionKey, mode)
		}
		return fmt.Sprintf("%s is the agent's main session, which %s leaves unsandboxed", p.MainSessionKey, mode)
	}
	return mode + " sandboxes no session"
}

func orDefault(key string) string {
	if key == "" {
		return "the default"
	}
	return key
}

func rootKeyOf(key string) string {
	if key == "" {
		return "agents.defaults.sandbox.workspaceRoot"
	}
	return key
}

// agentSandbox is the agents.list entry's sandbox block and its key, or
// nil.
func agentSandbox(cfg *config.Config, id string) (*config.Sandbox, string) {
	if a, i := cfg.Agent(id); a != nil {
		return &a.Sandbox, fmt.Sprintf("agents.list[%d].sandbox", i)
	}
	return nil, ""
}

func rawMode(a *config.Sandbox, cfg *config.Config) string {
	switch {
	case a != nil && a.Mode != "":
		return a.Mode
	case cfg.Agents.Defaults.Sandbox.Mode != "":
		return cfg.Agents.Defaults.Sandbox.Mode
	}
	return policy.ModeOff
}

// dockerSettings merges agents.defaults.sandbox.docker with the agent's
// (unless the scope is shared): objects merge key by key, the agent's
// values win.
func dockerSettings(cfg *config.Config, a *config.Sandbox, aKey string, shared bool) (map[string]any, error) {
	d, err := rawObject(cfg.Agents.Defaults.Sandbox.Docker, "agents.defaults.sandbox.docker")
	if err != nil {
		return nil, err
	}
	if a == nil || shared {
		return d, nil
	}
	o, err := rawObject(a.Docker, aKey+".docker")
	if err != nil {
		return nil, err
	}
	return mergeObjects(d, o), nil
}

func rawObject(r *config.Raw, key string) (map[string]any, error) {
	if r == nil || r.Value == nil || r.IsNull() {
		return nil, nil
	}
	data, err := json.Marshal(r.Value)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("reading %s: expected an object", key)
	}
	return m, nil
}

func mergeObjects(base, over map[string]any) map[string]any {
	if base == nil && over == nil {
		return nil
	}
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bo, ok1 := out[k].(map[string]any)
		oo, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			v = mergeObjects(bo, oo)
		}
		out[k] = v
	}
	return out
}

// network reads sandbox.docker.network from the merged docker settings.
func network(docker map[string]any, a *config.Sandbox, aKey string, shared bool) (Setting, error) {
	v, ok := docker["network"]
	if !ok {
		return Setting{Value: "none"}, nil
	}
	key := "agents.defaults.sandbox.docker.network"
	if a != nil && !shared && a.Docker != nil && a.Docker.Get("network") != nil {
		key = aKey + ".docker.network"
	}
	s, isString := v.(string)
	if s = strings.TrimSpace(s); !isString || s == "" {
		return Setting{}, fmt.Errorf("reading %s: expected a network name, or \"none\" (got %v)", key, v)
	}
	return Setting{s, key}, nil
}

// limits applies sandbox.limits (agent over defaults, field by field) to
// DefaultLimits. The config package has checked the ranges.
func limits(cfg *config.Config, a *config.Sandbox, shared bool) (Limits, error) {
	var l Limits
	apply := func(c *config.SandboxLimits) {
		if c == nil {
			return
		}
		set := func(dst *int, v *int) {
			if v != nil && *dst == 0 {
				*dst = *v
			}
		}
		set(&l.Processes, c.Processes)
		set(&l.OpenFiles, c.OpenFiles)
		if c.FileSizeMB != nil && l.FileSize == 0 {
			l.FileSize = int64(*c.FileSizeMB) << 20
		}
		if c.CPUSeconds != nil && l.CPUTime == 0 {
			l.CPUTime = time.Duration(*c.CPUSeconds) * time.Second
		}
		if c.MemoryMB != nil && l.Memory == 0 {
			l.Memory = int64(*c.MemoryMB) << 20
		}
		if c.TimeoutSeconds != nil && l.Timeout == 0 {
			l.Timeout = time.Duration(*c.TimeoutSeconds) * time.Second
		}
	}
	if a != nil && !shared {
		apply(a.Limits)
	}
	apply(cfg.Agents.Defaults.Sandbox.Limits)
	if l.Processes < 0 || l.OpenFiles < 0 || l.FileSize < 0 || l.CPUTime < 0 || l.Memory < 0 || l.Timeout < 0 {
		return l, fmt.Errorf("reading sandbox.limits: values must be positive (%+v)", l)
	}
	return l.WithDefaults(), nil
}

// Slug names a scope key's workspace directory as OpenClaw does: the key
// lower-cased with runs of other characters as '-', at most 32 characters,
// then '-' and 8 hex digits of its SHA-256, so distinct keys never share a
// directory.
func Slug(key string) string {
	key = strings.TrimSpace(key)
	if key == "" {
		key = "session"
	}
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	dash := false
	for _, c := range []byte(strings.ToLower(key)) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			dash = false
		} else if !dash {
			b.WriteByte('-') // a run of other characters (or bytes of one) is one '-'
			dash = true
		}
	}
	base := strings.Trim(b.String(), "-")
	if len(base) > 32 {
		base = base[:32]
	}
	if base == "" {
		base = "session"
	}
	return base + "-" + hex.EncodeToString(sum[:4])
}

// specID names a sandbox after its scope and everything a backend starts
// it with, so that one ID is one sandbox: two tenants (their roots differ),
// or one scope before and after a config change, never share one.
func specID(scopeKey, backend string, s *Spec, settings map[string]any) string {
	h := sha256.New()
	// Fields NUL-separated: no key or path holds a NUL.
	field := func(s string) { h.Write(append([]byte(s), 0)) }
	field(scopeKey)
	field(backend)
	field(s.Root)
	field(strconv.FormatBool(s.Network))
	l := &s.Limits
	for _, n := range []int64{int64(l.Processes), int64(l.OpenFiles), l.FileSize, int64(l.CPUTime), l.Memory, int64(l.Timeout)} {
		field(strconv.FormatInt(n, 10))
	}
	for _, m := range s.Mounts {
		field(m.Source)
		field(m.Target)
		field(strconv.FormatBool(m.ReadOnly))
	}
	if settings != nil {
		json.NewEncoder(h).Encode(settings) // map keys sorted: stable
	}
	base := Slug(scopeKey)
	base = base[:strings.LastIndexByte(base, '-')]
	return base + "-" + hex.EncodeToString(h.Sum(nil)[:6])
}
