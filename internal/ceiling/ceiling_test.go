package ceiling

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"talon/internal/config"
)

var bundled = []string{"api-tools", "image-gen", "memory-core"}

const dir = "/state/tenants/acme"

func parse(t *testing.T, src string) *config.File {
	t.Helper()
	f, err := config.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatalf("parsing %s: %v", src, err)
	}
	return f
}

func ceilingOf(t *testing.T, root string) *Ceiling {
	t.Helper()
	var f *config.File
	if root != "" {
		f = parse(t, root)
	}
	c, issues := New(f, bundled)
	if len(issues) > 0 {
		t.Fatalf("ceiling issues: %v", issues)
	}
	return c
}

func paths(issues []config.Issue) []string {
	out := []string{}
	for _, is := range issues {
		out = append(out, is.Path)
	}
	return out
}

// TestApply: each case is a tenant config, the violations it must get
// (by path), and values of the effective config.
func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name, root, tenant string
		violations         []string
		want               map[string]string // dotted path -> JSON of the effective value
		rule               string            // a word every violation's rule has
	}{
		{
			name:   "empty tenant gets the tenant defaults",
			tenant: `{}`,
			want: map[string]string{
				"agents.defaults.sandbox.mode":            `"all"`,
				"agents.defaults.sandbox.workspaceAccess": `"rw"`,
			},
		},
		{
			name:   "a tenant that keeps within the ceiling is left as written",
			tenant: `{agents: {defaults: {sandbox: {mode: "all", workspaceAccess: "none", backend: "docker", docker: {image: "x", network: "none", readOnlyRoot: true}, limits: {memoryMb: 512}}}, list: [{id: "a", workspace: "ws-a"}]}, models: {providers: {or: {baseUrl: "https://openrouter.ai/api/v1"}}}, mcp: {servers: {remote: {url: "https://mcp.example.com/mcp"}}}}`,
			want: map[string]string{
				"agents.defaults.sandbox.workspaceAccess": `"none"`,
				"agents.defaults.sandbox.limits.memoryMb": `512`,
				"mcp.servers.remote.url":                  `"https://mcp.example.com/mcp"`,
			},
		},
		{
			name:       "sandbox off or non-main would run commands on the host",
			tenant:     `{agents: {defaults: {sandbox: {mode: "off"}}, list: [{id: "b", sandbox: {mode: "non-main"}}, {id: "c", sandbox: {mode: "paths-only"}}]}}`,
			violations: []string{"agents.defaults.sandbox.mode", "agents.list[0].sandbox.mode"},
			want:       map[string]string{"agents.defaults.sandbox.mode": `"all"`, "agents.list.0.sandbox.mode": `"all"`, "agents.list.1.sandbox.mode": `"paths-only"`},
			rule:       "sandboxed",
		},
		{
			name:       "backend host, or one the operator does not list",
			root:       `{tenants: {sandbox: {backends: ["bwrap"]}}}`,
			tenant:     `{agents: {defaults: {sandbox: {backend: "host"}}, list: [{id: "d", sandbox: {backend: "docker"}}]}}`,
			violations: []string{"agents.defaults.sandbox.backend", "agents.list[0].sandbox.backend"},
			rule:       "backends bwrap",
		},
		{
			name:       "network and widening docker keys",
			tenant:     `{agents: {defaults: {sandbox: {docker: {network: "bridge", binds: ["/:/host"], seccompProfile: "unconfined", apparmorProfile: "unconfined", capDrop: [], user: "0", readOnlyRoot: false, memory: "64g", image: "ok"}}}}}`,
			violations: []string{"agents.defaults.sandbox.docker.network", "agents.defaults.sandbox.docker.binds", "agents.defaults.sandbox.docker.seccompProfile", "agents.defaults.sandbox.docker.apparmorProfile", "agents.defaults.sandbox.docker.capDrop", "agents.defaults.sandbox.docker.user", "agents.defaults.sandbox.docker.readOnlyRoot", "agents.defaults.sandbox.docker.memory"},
			want:       map[string]string{"agents.defaults.sandbox.docker": `{"network":"none","image":"ok"}`},
		},
		{
			name:   "network granted by the operator",
			root:   `{tenants: {sandbox: {network: true}}}`,
			tenant: `{agents: {defaults: {sandbox: {docker: {network: "bridge"}}}}}`,
			want:   map[string]string{"agents.defaults.sandbox.docker.network": `"bridge"`},
		},
		{
			name:       "limits above the ceiling",
			root:       `{tenants: {sandbox: {limits: {memoryMb: 256, timeoutSeconds: 60}}}}`,
			tenant:     `{agents: {defaults: {sandbox: {limits: {memoryMb: 4096, processes: 10}}}, list: [{id: "e", sandbox: {limits: {timeoutSeconds: 7200}}}]}}`,
			violations: []string{"agents.defaults.sandbox.limits.memoryMb", "agents.list[0].sandbox.limits.timeoutSeconds"},
			want: map[string]string{
				"agents.defaults.sandbox.limits": `{"memoryMb":256,"processes":10,"timeoutSeconds":60}`,
				"agents.list.0.sandbox.limits":   `{"timeoutSeconds":60}`,
			},
			rule: "ceiling is",
		},
		{
			name:       "Talon's default limits are the ceiling",
			tenant:     `{agents: {defaults: {sandbox: {limits: {processes: 100000, cpuSeconds: 301}}}}}`,
			violations: []string{"agents.defaults.sandbox.limits.processes", "agents.defaults.sandbox.limits.cpuSeconds"},
		},
		{
			name:       "providers on private addresses",
			tenant:     `{models: {providers: {loop: {baseUrl: "http://127.0.0.1:18789/v1"}, meta: {baseUrl: "http://169.254.169.254/"}, hex: {baseUrl: "http://0x7f000001:80/"}, name: {baseUrl: "http://localhost:11434/v1"}, pub: {baseUrl: "https://api.example.com/v1"}}}}`,
			violations: []string{"models.providers.loop.baseUrl", "models.providers.meta.baseUrl", "models.providers.hex.baseUrl", "models.providers.name.baseUrl"},
			want:       map[string]string{"models.providers": `{"pub":{"baseUrl":"https://api.example.com/v1"}}`},
			rule:       "public internet",
		},
		{
			name:       "a private provider the operator opened",
			root:       `{tenants: {network: {allowHosts: ["127.0.0.1:11434"]}}}`,
			tenant:     `{models: {providers: {local: {baseUrl: "http://127.0.0.1:11434/v1"}, other: {baseUrl: "http://127.0.0.1:11435/v1"}}}}`,
			violations: []string{"models.providers.other.baseUrl"},
		},
		{
			name: "memory search embeddings endpoints on private addresses",
			tenant: `{agents: {defaults: {memorySearch: {provider: "openai-compatible", model: "e5", remote: {baseUrl: "http://127.0.0.1:11434/v1", apiKey: "k"}}},
				list: [{id: "a", memorySearch: {remote: {baseUrl: "http://[::1]:8080/v1"}}}, {id: "b", memorySearch: {remote: {baseUrl: "http://169.254.169.254/latest"}}},
					{id: "c", memorySearch: {remote: {baseUrl: "https://api.example.com/v1"}}}]}}`,
			violations: []string{"agents.defaults.memorySearch.remote.baseUrl", "agents.list[0].memorySearch.remote.baseUrl", "agents.list[1].memorySearch.remote.baseUrl"},
			want: map[string]string{
				"agents.defaults.memorySearch.remote": `{"apiKey":"k"}`,
				"agents.list.0.memorySearch.remote":   `{}`,
				"agents.list.2.memorySearch.remote":   `{"baseUrl":"https://api.example.com/v1"}`,
			},
			rule: "memory search embeddings endpoint of a tenant must be on the public internet",
		},
		{
			name:   "a private embeddings endpoint the operator opened",
			root:   `{tenants: {network: {allowHosts: ["127.0.0.1:11434"]}}}`,
			tenant: `{agents: {defaults: {memorySearch: {provider: "ollama", remote: {baseUrl: "http://127.0.0.1:11434/v1"}}}}}`,
			want:   map[string]string{"agents.defaults.memorySearch.remote.baseUrl": `"http://127.0.0.1:11434/v1"`},
		},
		{
			name: "chat channel servers on private addresses",
			tenant: `{channels: {telegram: {botToken: "1:x", apiRoot: "http://127.0.0.1:8081"},
				slack: {apiUrl: "https://slack.com/api/", accounts: {b: {apiUrl: "http://169.254.169.254/api/"}}},
				discord: {gatewayUrl: "ws://10.0.0.1:9000/", apiUrl: "https://discord.com/api/v10"}}}`,
			violations: []string{"channels.telegram.apiRoot", "channels.slack.accounts.b.apiUrl", "channels.discord.gatewayUrl"},
			want: map[string]string{
				"channels.telegram":         `{"botToken":"1:x"}`,
				"channels.slack.accounts.b": `{}`,
				"channels.discord.apiUrl":   `"https://discord.com/api/v10"`,
			},
			rule: "chat channel's server of a tenant must be on the public internet",
		},
		{
			name:       "a channel token file on the gateway's host",
			tenant:     `{channels: {telegram: {tokenFile: "/etc/shadow"}, discord: {accounts: {x: {tokenFile: "/root/.ssh/id_rsa"}}}}}`,
			violations: []string{"channels.telegram.tokenFile", "channels.discord.accounts.x.tokenFile"},
			want:       map[string]string{"channels.telegram": `{}`},
			rule:       "never a file on the gateway's host",
		},
		{
			name:   "a private channel server the operator opened",
			root:   `{tenants: {network: {allowHosts: ["127.0.0.1:8081"]}}}`,
			tenant: `{channels: {telegram: {apiRoot: "http://127.0.0.1:8081"}}}`,
			want:   map[string]string{"channels.telegram.apiRoot": `"http://127.0.0.1:8081"`},
		},
		{
			name:       "the browser program is the operator's",
			tenant:     `{browser: {enabled: true, executablePath: "/tmp/evil"}}`,
			violations: []string{"browser.executablePath"},
			want:       map[string]string{"browser": `{"enabled":true}`},
		},
		{
			name:       "loopback for tools is the operator's",
			tenant:     `{tools: {network: {allowLoopback: true}}}`,
			violations: []string{"tools.network.allowLoopback"},
			want:       map[string]string{"tools.network": `{}`},
		},
		{
			name:       "MCP programs, private URLs and redefined operator servers",
			root:       `{tenants: {mcp: {servers: {github: {command: "/usr/bin/gh-mcp", args: ["--stdio"]}}}}}`,
			tenant:     `{mcp: {servers: {sh: {command: "/bin/sh", args: ["-c", "id"]}, github: {url: "https://evil.example/mcp"}, lan: {url: "http://10.0.0.5/mcp"}, ok: {url: "https://mcp.example.com/"}}}}`,
			violations: []string{"mcp.servers.sh.command", "mcp.servers.github", "mcp.servers.lan.url"},
			want:       map[string]string{"mcp.servers": `{"ok":{"url":"https://mcp.example.com/"},"github":{"command":"/usr/bin/gh-mcp","args":["--stdio"]}}`},
		},
		{
			name:       "plugins the operator does not offer",
			root:       `{tenants: {plugins: {allow: ["api-tools"]}}}`,
			tenant:     `{plugins: {entries: {"image-gen": {enabled: true}}, allow: ["memory-core"], slots: {memory: "memory-core"}, load: {paths: ["plugins/mine", "/etc", "../beta/extensions", "~/x"]}}}`,
			violations: []string{"plugins.load.paths[1]", "plugins.load.paths[2]", "plugins.load.paths[3]", "plugins.entries.image-gen.enabled", "plugins.allow[0]", "plugins.slots.memory"},
			want:       map[string]string{"plugins.deny": `["image-gen","memory-core"]`, "plugins.load.paths": `["plugins/mine"]`},
		},
		{
			name:       "workspaces outside, or the tenant directory itself",
			tenant:     `{agents: {defaults: {workspace: "/etc", sandbox: {workspaceRoot: "."}}, list: [{id: "main"}, {id: "dot", workspace: "."}, {id: "up", workspace: "../beta/workspace"}, {id: "home", workspace: "~/x"}, {id: "fine", workspace: "bws", sandbox: {workspaceRoot: "/tmp"}}]}}`,
			violations: []string{"agents.defaults.workspace", "agents.defaults.sandbox.workspaceRoot", "agents.list[1].workspace", "agents.list[2].workspace", "agents.list[3].workspace", "agents.list[4].sandbox.workspaceRoot"},
			want:       map[string]string{"agents.list.4.workspace": `"bws"`},
		},
		{
			name:       "the image-gen endpoint on a private address",
			tenant:     `{plugins: {entries: {"image-gen": {enabled: true, config: {baseUrl: "http://10.0.0.7/api/v1", model: "m"}}}}}`,
			violations: []string{"plugins.entries.image-gen.config.baseUrl"},
			want:       map[string]string{"plugins.entries.image-gen.config": `{"model":"m"}`},
		},
		{
			name:       "api-tools never read the gateway's environment for a tenant",
			tenant:     `{plugins: {entries: {"api-tools": {enabled: true, config: {processEnv: ["TALON_ADMIN_TOKEN"]}}}}}`,
			violations: []string{"plugins.entries.api-tools.config.processEnv"},
			want:       map[string]string{"plugins.entries.api-tools": `{"enabled":true,"config":{}}`},
		},
		{
			name:       "a tenant cannot raise the operator's budget or delay its alert",
			root:       `{tenants: {budget: {monthlyTokens: 1000, monthlyCostUsd: 5, alertAt: 0.8}}}`,
			tenant:     `{usage: {budget: {monthlyTokens: 1000000, monthlyCostUsd: 5.01, alertAt: 1}}}`,
			violations: []string{"usage.budget.monthlyTokens", "usage.budget.monthlyCostUsd", "usage.budget.alertAt"},
			want:       map[string]string{"usage.budget": `{"monthlyTokens":1000,"monthlyCostUsd":5,"alertAt":0.8}`},
			rule:       "may lower it, not raise it",
		},
		{
			name:   "a tenant may lower the operator's budget; what it leaves out is the operator's",
			root:   `{tenants: {budget: {monthlyTokens: 1000, monthlyCostUsd: 5}}}`,
			tenant: `{usage: {budget: {monthlyTokens: 10, alertAt: 0.5}}}`,
			want:   map[string]string{"usage.budget": `{"monthlyTokens":10,"alertAt":0.5,"monthlyCostUsd":5}`},
		},
		{
			name:   "the operator's budget for this tenant replaces the default",
			root:   `{tenants: {budget: {monthlyTokens: 1000}, budgets: {acme: {monthlyTokens: 50000}, beta: {monthlyTokens: 1}}}}`,
			tenant: `{usage: {budget: {monthlyTokens: 20000}}}`,
			want:   map[string]string{"usage.budget": `{"monthlyTokens":20000}`},
		},
		{
			name:   "with no operator budget a tenant sets its own",
			tenant: `{usage: {budget: {monthlyCostUsd: 3}}}`,
			want:   map[string]string{"usage.budget": `{"monthlyCostUsd":3}`},
		},
		{
			name:       "the ceiling belongs to the root config",
			tenant:     `{tenants: {sandbox: {network: true}}}`,
			violations: []string{"tenants"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ceilingOf(t, tc.root)
			tree := parse(t, tc.tenant).Tree
			before := tree.Clone()
			res := c.Apply(tree, dir)
			if !config.Equal(tree, before) {
				t.Errorf("Apply changed its input")
			}
			got := paths(res.Violations)
			want := tc.violations
			if want == nil {
				want = []string{}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("violations = %q\nwant %q\n(%v)", got, want, res.Violations)
			}
			for _, is := range res.Violations {
				if tc.rule != "" && !strings.Contains(is.Message, tc.rule) {
					t.Errorf("%s: rule %q does not say %q", is.Path, is.Message, tc.rule)
				}
			}
			for path, js := range tc.want {
				v := res.Tree
				for _, k := range strings.Split(path, ".") {
					if v != nil && v.Kind == config.Array {
						i := int(k[0] - '0')
						v = v.Items[i]
						continue
					}
					v = v.Get(k)
				}
				got, _ := v.MarshalJSON()
				if v == nil || string(got) != js {
					t.Errorf("%s = %s; want %s", path, got, js)
				}
			}
			// What the ceiling leaves holds to it: nothing more to clamp,
			// and it decodes and validates.
			again := c.Apply(res.Tree, dir)
			if len(again.Violations) > 0 {
				t.Errorf("the clamped config still has violations: %v", again.Violations)
			}
			if _, err := config.Decode(res.Tree, &config.Config{}); err != nil && tc.name != "the ceiling belongs to the root config" {
				t.Errorf("the clamped config does not decode: %v", err)
			}
		})
	}
}

func TestNewChecksPluginIDs(t *testing.T) {
	_, issues := New(parse(t, `{tenants: {plugins: {allow: ["api-tools", "shell-exec"]}}}`), bundled)
	if len(issues) != 1 || issues[0].Path != "tenants.plugins.allow[1]" || !strings.Contains(issues[0].Message, `unknown plugin "shell-exec"`) {
		t.Errorf("issues = %v", issues)
	}
}

// The tenants section's values are the config package's to validate.
func TestTenantsSectionValidation(t *testing.T) {
	for _, tc := range []struct{ src, path string }{
		{`{tenants: {sandbox: {backends: ["host"]}}}`, "tenants.sandbox.backends[0]"},
		{`{tenants: {sandbox: {backends: []}}}`, "tenants.sandbox.backends"},
		{`{tenants: {sandbox: {limits: {memoryMb: 0}}}}`, "tenants.sandbox.limits.memoryMb"},
		{`{tenants: {network: {allowHosts: ["localhost:11434"]}}}`, "tenants.network.allowHosts[0]"},
		{`{tenants: {network: {allowHosts: ["10.0.0.0/8"]}}}`, "tenants.network.allowHosts[0]"},
		{`{tenants: {network: {allowHosts: ["127.0.0.1"]}}}`, "tenants.network.allowHosts[0]"},
		{`{tenants: {mcp: {servers: {x: {}}}}}`, "tenants.mcp.servers.x"},
		{`{tenants: {models: {operatorKeys: "yes"}}}`, "tenants.models.operatorKeys"},
	} {
		_, err := config.Parse("root.json", []byte(tc.src))
		var ve *config.ValidationError
		if err == nil || !strings.Contains(err.Error(), tc.path+":") {
			t.Errorf("%s: %v; want an issue at %s", tc.src, err, tc.path)
		} else if !asValidation(err, &ve) {
			t.Errorf("%s: %v is not a validation error", tc.src, err)
		}
	}
}

func asValidation(err error, ve **config.ValidationError) bool { return errors.As(err, ve) }

// TestEffectiveMemoryEndpoint: a tenant config written by hand, not
// through config.set, with a loopback embeddings endpoint loads without
// it, so memory search never calls it.
func TestEffectiveMemoryEndpoint(t *testing.T) {
	f := parse(t, `{agents: {list: [{id: "main", memorySearch: {provider: "openai-compatible", model: "e5", remote: {baseUrl: "http://127.0.0.1:9/v1"}}}]}}`)
	eff, res, err := ceilingOf(t, "").Effective(f, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res.Violations); !slices.Equal(got, []string{"agents.list[0].memorySearch.remote.baseUrl"}) {
		t.Errorf("violations %q", got)
	}
	if ms := eff.Config.AgentMemorySearch("main"); ms.Remote == nil || ms.Remote.BaseURL != "" || ms.Provider != "openai-compatible" {
		t.Errorf("memorySearch in force: %+v", ms)
	}
}
