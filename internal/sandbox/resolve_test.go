package sandbox_test

import (
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/sandbox"
)

// candidates are the tools whose fate the tables check: the fs tools, the
// runtime tools, one session tool, image and browser (in the default
// sandbox deny list).
var candidates = []policy.Tool{
	{Name: "read"}, {Name: "edit"}, {Name: "write"}, {Name: "apply_patch"}, {Name: "exec"},
	{Name: "process"}, {Name: "sessions_list"}, {Name: "image"}, {Name: "browser"},
}

const patchOn = `tools: {exec: {applyPatch: {enabled: true}}},`

var (
	hostTools = []string{"read", "edit", "write", "apply_patch", "exec", "process", "sessions_list", "image", "browser"}
	boxTools  = []string{"read", "edit", "write", "apply_patch", "exec", "process", "sessions_list", "image"}
	roTools   = []string{"read", "exec", "process", "sessions_list", "image"}
)

// The table of §8: mode × session key × scope × access → sandboxed, why,
// the workspace the tools and commands get, the mounts, and the tool list
// the policy gives that session.
func TestResolveTable(t *testing.T) {
	cases := []struct {
		name, cfg, agent, key string
		sandboxed             bool
		reason                string
		modeKey, accessKey    string
		scopeKey              string // "" when not sandboxed
		root                  string // "agent" = the agent workspace, else the sandbox workspace of scopeKey
		agentMount            bool
		tools                 []string
	}{
		{name: "off by default", cfg: `{}`, key: "agent:main:main",
			reason: `mode "off" (the default) sandboxes no session`, tools: hostTools},
		{name: "off for a group too", cfg: `{agents: {defaults: {sandbox: {mode: "off"}}}}`, key: "agent:main:whatsapp:group:1",
			reason: `mode "off" (agents.defaults.sandbox.mode) sandboxes no session`, modeKey: "agents.defaults.sandbox.mode", tools: hostTools},
		{name: "non-main: main session", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`, key: "agent:main:main",
			reason:  `agent:main:main is the agent's main session, which mode "non-main" (agents.defaults.sandbox.mode) leaves unsandboxed`,
			modeKey: "agents.defaults.sandbox.mode", tools: hostTools},
		{name: "non-main: alias main", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`, key: "main",
			reason:  `"main" is the agent's main session agent:main:main, which mode "non-main" (agents.defaults.sandbox.mode) leaves unsandboxed`,
			modeKey: "agents.defaults.sandbox.mode", tools: hostTools},
		{name: "non-main: alias in capitals", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`, key: "AGENT:MAIN:MAIN",
			reason:  `"AGENT:MAIN:MAIN" is the agent's main session agent:main:main, which mode "non-main" (agents.defaults.sandbox.mode) leaves unsandboxed`,
			modeKey: "agents.defaults.sandbox.mode", tools: hostTools},
		{name: "non-main: configured mainKey and its aliases", cfg: `{session: {mainKey: "home"}, agents: {defaults: {sandbox: {mode: "non-main"}}}}`, key: "agent:main:main",
			reason:  `"agent:main:main" is the agent's main session agent:main:home, which mode "non-main" (agents.defaults.sandbox.mode) leaves unsandboxed`,
			modeKey: "agents.defaults.sandbox.mode", tools: hostTools},
		{name: "non-main: global scope", cfg: `{session: {scope: "global"}, agents: {defaults: {sandbox: {mode: "non-main"}}}}`, key: "main",
			reason:  `"main" is the agent's main session global, which mode "non-main" (agents.defaults.sandbox.mode) leaves unsandboxed`,
			modeKey: "agents.defaults.sandbox.mode", tools: hostTools},
		{name: "non-main: other session, agent scope, no access", cfg: `{agents: {defaults: {sandbox: {mode: "non-main"}}}}`,
			key: "agent:main:openai-user:bob", sandboxed: true,
			reason:  `mode "non-main" (agents.defaults.sandbox.mode) sandboxes every session but the agent's main session agent:main:main`,
			modeKey: "agents.defaults.sandbox.mode", scopeKey: "agent:main", tools: boxTools},
		{name: "all: session scope, ro", cfg: `{agents: {defaults: {sandbox: {mode: "all", scope: "session", workspaceAccess: "ro"}}}}`,
			key: "agent:main:main", sandboxed: true,
			reason:  `mode "all" (agents.defaults.sandbox.mode) sandboxes every session`,
			modeKey: "agents.defaults.sandbox.mode", accessKey: "agents.defaults.sandbox.workspaceAccess",
			scopeKey: "agent:main:main", agentMount: true, tools: roTools},
		{name: "all: shared scope, rw", cfg: `{agents: {defaults: {sandbox: {mode: "all", scope: "shared", workspaceAccess: "rw"}}}}`,
			key: "agent:main:cron-like", sandboxed: true,
			reason:  `mode "all" (agents.defaults.sandbox.mode) sandboxes every session`,
			modeKey: "agents.defaults.sandbox.mode", accessKey: "agents.defaults.sandbox.workspaceAccess",
			scopeKey: "shared", root: "agent", tools: boxTools},
		{name: "paths-only reads as all; perSession false is shared", cfg: `{agents: {defaults: {sandbox: {mode: "paths-only", perSession: false}}}}`,
			key: "agent:main:main", sandboxed: true,
			reason:  `mode "paths-only" (agents.defaults.sandbox.mode), read as "all", sandboxes every session`,
			modeKey: "agents.defaults.sandbox.mode", scopeKey: "shared", tools: boxTools},
		{name: "per-agent settings", agent: "ops",
			cfg: `{agents: {defaults: {sandbox: {mode: "off"}}, list: [{id: "main"}, {id: "ops", sandbox: {mode: "all", workspaceAccess: "ro", perSession: true}}]}}`,
			key: "agent:ops:main", sandboxed: true,
			reason:  `mode "all" (agents.list[1].sandbox.mode) sandboxes every session`,
			modeKey: "agents.list[1].sandbox.mode", accessKey: "agents.list[1].sandbox.workspaceAccess",
			scopeKey: "agent:ops:main", agentMount: true, tools: roTools},
		{name: "other agent's mode does not apply", agent: "main",
			cfg: `{agents: {list: [{id: "main"}, {id: "ops", sandbox: {mode: "all"}}]}}`,
			key: "agent:main:x", reason: `mode "off" (the default) sandboxes no session`, tools: hostTools},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			cfg := mustConfig(t, "{"+patchOn+c.cfg[1:]) // apply_patch exists: its fate under ro shows
			agent := c.agent
			if agent == "" {
				agent = "main"
			}
			p, err := sandbox.Resolve(cfg, state, agent, c.key)
			if err != nil {
				t.Fatal(err)
			}
			if p.Sandboxed != c.sandboxed || p.Reason != c.reason {
				t.Errorf("sandboxed, reason = %v, %q\nwant %v, %q", p.Sandboxed, p.Reason, c.sandboxed, c.reason)
			}
			if p.Mode.Key != c.modeKey || p.Access.Key != c.accessKey {
				t.Errorf("mode key, access key = %q, %q; want %q, %q", p.Mode.Key, p.Access.Key, c.modeKey, c.accessKey)
			}
			if p.ScopeKey != c.scopeKey {
				t.Errorf("scope key = %q, want %q", p.ScopeKey, c.scopeKey)
			}
			if c.sandboxed {
				ws := cfg.AgentWorkspace(state, agent)
				want := filepath.Join(state, "sandboxes", sandbox.Slug(c.scopeKey))
				if c.root == "agent" {
					want = ws
				}
				if p.Spec.Root != want {
					t.Errorf("root = %s, want %s", p.Spec.Root, want)
				}
				if p.Seed != (c.root != "agent") {
					t.Errorf("seed = %v", p.Seed)
				}
				var mounts []sandbox.Mount
				if c.agentMount {
					mounts = []sandbox.Mount{{Source: ws, Target: sandbox.AgentMount, ReadOnly: true}}
				}
				if diff := cmp.Diff(mounts, p.Spec.Mounts); diff != "" {
					t.Errorf("mounts (-want +got):\n%s", diff)
				}
				if err := p.Spec.Validate(); err != nil {
					t.Error(err)
				}
				if p.Spec.Network || p.Spec.Limits != sandbox.DefaultLimits() || p.Backend.Value != sandbox.DefaultBackend() {
					t.Errorf("network %v, limits %+v, backend %s: want none, the defaults, %s", p.Spec.Network, p.Spec.Limits, p.Backend.Value, sandbox.DefaultBackend())
				}
			} else if p.Spec.ID != "" || p.Spec.Root != "" {
				t.Errorf("unsandboxed plan has a spec: %+v", p.Spec)
			}
			// The tool list of this session, as the runner asks for it.
			d := policy.Evaluate(cfg, policy.Context{
				AgentID: agent, SessionKey: p.SessionKey, ModelProvider: "openai", ModelID: "gpt-5.2", SenderIsOwner: true,
				Sandboxed: &p.Sandboxed, WorkspaceAccess: p.Access.Value,
			}, candidates)
			if diff := cmp.Diff(c.tools, d.Names()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

// One ID per sandbox: the sessions of one agent scope share it; other
// scopes, other state dirs (tenants) and other limits do not.
func TestResolveSpecID(t *testing.T) {
	agentScope := mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all"}}}}`)
	sessionScope := mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all", scope: "session"}}}}`)
	limited := mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all", limits: {processes: 64}}}}}`)
	a, b := t.TempDir(), t.TempDir()
	id := func(cfg *config.Config, state, key string) string {
		t.Helper()
		p, err := sandbox.Resolve(cfg, state, "main", key)
		if err != nil {
			t.Fatal(err)
		}
		return p.Spec.ID
	}
	x := id(agentScope, a, "agent:main:one")
	if !regexp.MustCompile(`^agent-main-[0-9a-f]{12}$`).MatchString(x) {
		t.Errorf("id %q: want agent-main-<12 hex>", x)
	}
	same := []string{id(agentScope, a, "agent:main:two")}
	differ := []string{id(agentScope, b, "agent:main:one"), id(sessionScope, a, "agent:main:one"), id(limited, a, "agent:main:one")}
	for _, y := range same {
		if y != x {
			t.Errorf("same scope, other session: %s != %s", y, x)
		}
	}
	for i, y := range differ {
		if y == x {
			t.Errorf("case %d: id %s shared with another sandbox", i, y)
		}
	}
	if s1, s2 := id(sessionScope, a, "agent:main:one"), id(sessionScope, a, "agent:main:two"); s1 == s2 {
		t.Errorf("scope session: two sessions share %s", s1)
	}
}

func TestResolveBackendNetworkLimits(t *testing.T) {
	cases := []struct {
		name, cfg, agent string
		backend, key     string
		network          string
		netKey           string
		limits           sandbox.Limits
		ignored          []string
	}{
		{name: "defaults", cfg: `{agents: {defaults: {sandbox: {mode: "all"}}}}`,
			backend: sandbox.DefaultBackend(), network: "none", limits: sandbox.DefaultLimits()},
		{name: "docker with a network", cfg: `{agents: {defaults: {sandbox: {mode: "all", backend: "docker", docker: {network: "bridge", image: "busybox"}}}}}`,
			backend: "docker", key: "agents.defaults.sandbox.backend", network: "bridge", netKey: "agents.defaults.sandbox.docker.network", limits: sandbox.DefaultLimits()},
		{name: "agent overrides backend, network and limits field by field", agent: "ops",
			cfg: `{agents: {defaults: {sandbox: {mode: "all", backend: "docker", docker: {network: "none"}, limits: {processes: 64, memoryMb: 512}}},
				list: [{id: "ops", sandbox: {backend: "bwrap", docker: {network: "host"}, limits: {processes: 32, timeoutSeconds: 60}}}]}}`,
			backend: "bwrap", key: "agents.list[0].sandbox.backend", network: "host", netKey: "agents.list[0].sandbox.docker.network",
			limits: sandbox.Limits{Processes: 32, Memory: 512 << 20, Timeout: time.Minute}.WithDefaults()},
		{name: "shared scope ignores the agent's docker and limits", agent: "ops",
			cfg: `{agents: {defaults: {sandbox: {mode: "all", scope: "shared", limits: {processes: 64}}},
				list: [{id: "ops", sandbox: {docker: {network: "host"}, limits: {processes: 32}}}]}}`,
			backend: sandbox.DefaultBackend(), network: "none", limits: sandbox.Limits{Processes: 64}.WithDefaults(),
			ignored: []string{"agents.list[0].sandbox.docker", "agents.list[0].sandbox.limits"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			agent := c.agent
			if agent == "" {
				agent = "main"
			}
			p, err := sandbox.Resolve(mustConfig(t, c.cfg), t.TempDir(), agent, "agent:"+agent+":x")
			if err != nil {
				t.Fatal(err)
			}
			if p.Backend != (sandbox.Setting{Value: c.backend, Key: c.key}) {
				t.Errorf("backend = %+v, want %s from %q", p.Backend, c.backend, c.key)
			}
			if p.Network != (sandbox.Setting{Value: c.network, Key: c.netKey}) || p.Spec.Network != (c.network != "none") {
				t.Errorf("network = %+v (spec %v), want %s from %q", p.Network, p.Spec.Network, c.network, c.netKey)
			}
			if p.Spec.Limits != c.limits {
				t.Errorf("limits = %+v\nwant     %+v", p.Spec.Limits, c.limits)
			}
			if !slices.Equal(p.Ignored, c.ignored) {
				t.Errorf("ignored = %q, want %q", p.Ignored, c.ignored)
			}
			if (p.BackendSettings != nil) != (c.backend == "docker") {
				t.Errorf("backend settings = %v", p.BackendSettings)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  *config.Config
		key  string
		want string
	}{
		{name: "root is the agent workspace", cfg: mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all", scope: "shared", workspaceRoot: "."}}}}`),
			key: "agent:main:x", want: "overlaps the agent workspace"},
		{name: "root inside the agent workspace", cfg: mustConfig(t, `{agents: {defaults: {workspace: "ws", sandbox: {mode: "all", workspaceRoot: "ws/boxes"}}}}`),
			key: "agent:main:x", want: `which workspaceAccess "none" must keep out of the sandbox's reach; set agents.defaults.sandbox.workspaceRoot elsewhere, or workspaceAccess to "rw"`},
		{name: "host under mode all", cfg: &config.Config{Agents: config.Agents{Defaults: config.AgentDefaults{Sandbox: config.Sandbox{Mode: "all", Backend: "host"}}}},
			key: "agent:main:x", want: `backend "host" (agents.defaults.sandbox.backend) runs commands without isolation, which only sandbox mode "off" allows (agents.defaults.sandbox.mode is "all")`},
		{name: "network not a string", cfg: mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all", docker: {network: 5}}}}}`),
			key: "agent:main:x", want: `reading agents.defaults.sandbox.docker.network: expected a network name, or "none" (got 5)`},
		{name: "bad session key", cfg: mustConfig(t, `{agents: {defaults: {sandbox: {mode: "all"}}}}`),
			key: "agent:main:\x01", want: "contains a control character"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			// "." is relative to the state dir, so the first case's root is
			// the state dir; make the agent workspace the state dir too.
			if c.name == "root is the agent workspace" {
				c.cfg.Agents.Defaults.Workspace = state
			}
			_, err := sandbox.Resolve(c.cfg, state, "main", c.key)
			var se *sandbox.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant an *Error containing %q", err, c.want)
			}
		})
	}
	// With rw the agent workspace is the root anyway, so the same
	// workspaceRoot is fine.
	cfg := mustConfig(t, `{agents: {defaults: {workspace: "ws", sandbox: {mode: "all", workspaceAccess: "rw", workspaceRoot: "ws/boxes"}}}}`)
	if _, err := sandbox.Resolve(cfg, t.TempDir(), "main", "agent:main:x"); err != nil {
		t.Errorf("rw: %v", err)
	}
}

func TestSlug(t *testing.T) {
	cases := []struct{ key, base string }{
		{"agent:main:main", "agent-main-main"},
		{"shared", "shared"},
		{"  agent:Ops:WhatsApp:group:+1 555  ", "agent-ops-whatsapp-group-1-555"},
		{"agent:main:openai-user:a-very-long-user-name-that-goes-on", "agent-main-openai-user-a-very-lo"},
		{"", "session"},
		{"::", "session"},
	}
	seen := map[string]string{}
	for _, c := range cases {
		s := sandbox.Slug(c.key)
		i := strings.LastIndexByte(s, '-')
		if s[:i] != c.base || !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(s[i+1:]) {
			t.Errorf("Slug(%q) = %q, want %q-<8 hex>", c.key, s, c.base)
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("Slug(%q) = Slug(%q) = %s", c.key, prev, s)
		}
		seen[s] = c.key
	}
}
