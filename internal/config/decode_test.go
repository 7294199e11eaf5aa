package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func decodeJSON5(t *testing.T, src string) (*Config, []Issue, error) {
	t.Helper()
	var c Config
	warns, err := Decode(mustJSON5(t, src), &c)
	return &c, warns, err
}

// issuesOf returns the issues of a *ValidationError, failing for other errors.
func issuesOf(t *testing.T, err error) []Issue {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	return ve.Issues
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Issue
	}{
		{
			name: "all type errors, in file order",
			src: `{
				gateway: {port: "x", auth: {token: 5}},
				agents: {list: [{id: "a"}, {id: "b"}, {id: "c", tools: {allow: ["read", 5], exec: []}}]},
				tools: {deny: "exec", byProvider: {"openai/gpt-5.2": {allow: [1]}, plain: 3}},
				plugins: {enabled: "yes", entries: {x: {config: 1, env: "e"}}},
				models: {providers: {p: {timeoutSeconds: "1", models: [null, {id: 1}], headers: {a: 1}}}},
				channels: [],
			}`,
			want: []Issue{
				{"gateway.port", "expected integer"},
				{"gateway.auth.token", "expected string"},
				{"agents.list[2].tools.allow", "expected array of strings"},
				{"agents.list[2].tools.exec", "expected object"},
				{"tools.deny", "expected array of strings"},
				{`tools.byProvider["openai/gpt-5.2"].allow`, "expected array of strings"},
				{"tools.byProvider.plain", "expected object"},
				{"plugins.enabled", "expected boolean"},
				{"models.providers.p.timeoutSeconds", "expected number"},
				{"models.providers.p.models[0]", "expected object"},
				{"models.providers.p.models[1].id", "expected string"},
				{"models.providers.p.headers.a", "expected string"},
				{"channels", "expected object"},
			},
		},
		{
			name: "list that is not an array",
			src:  `{plugins: {allow: "x"}, commands: {ownerAllowFrom: {}}}`,
			want: []Issue{
				{"plugins.allow", "expected array of strings"},
				{"commands.ownerAllowFrom", "expected array of strings"},
			},
		},
		{
			name: "integers and numbers",
			src: `{
				gateway: {port: 1.5},
				agents: {defaults: {bootstrapMaxChars: Infinity, timeoutSeconds: 1e400, subagents: {maxSpawnDepth: NaN}}},
			}`,
			want: []Issue{
				{"gateway.port", "expected integer"},
				{"agents.defaults.bootstrapMaxChars", "expected integer"},
				{"agents.defaults.timeoutSeconds", "expected integer"},
				{"agents.defaults.subagents.maxSpawnDepth", "expected number"},
			},
		},
		{
			name: "enums and ids",
			src: `{
				gateway: {port: 70000},
				session: {scope: "per-peer"},
				agents: {
					defaults: {sandbox: {mode: "sometimes", scope: "global", workspaceAccess: "rwx", backend: "podman"}},
					list: [
						{id: "Main"},
						{name: "no id"},
						{id: "main", sandbox: {mode: "all", backend: "vm"}},
						{id: "  "},
					],
				},
			}`,
			want: []Issue{
				{"gateway.port", "expected a port number from 1 to 65535 (got 70000)"},
				{"session.scope", `expected one of per-sender, global (got "per-peer")`},
				{"agents.defaults.sandbox.mode", `expected one of off, non-main, all, paths-only (got "sometimes")`},
				{"agents.defaults.sandbox.scope", `expected one of session, agent, shared (got "global")`},
				{"agents.defaults.sandbox.workspaceAccess", `expected one of none, ro, rw (got "rwx")`},
				{"agents.defaults.sandbox.backend", `expected one of bwrap, docker, host (got "podman")`},
				{"agents.list[1].id", "missing id"},
				{"agents.list[2].id", `duplicate agent id "main" (also agents.list[0])`},
				{"agents.list[2].sandbox.backend", `expected one of bwrap, docker, host (got "vm")`},
				{"agents.list[3].id", "missing id"},
			},
		},
		{
			name: "session tools",
			src: `{
				agents: {defaults: {sandbox: {sessionToolsVisibility: "none"}}},
				tools: {sessions: {visibility: "everyone"}, agentToAgent: {enabled: "yes", allow: "ops"}},
			}`,
			want: []Issue{
				{"agents.defaults.sandbox.sessionToolsVisibility", `expected one of spawned, all (got "none")`},
				{"tools.sessions.visibility", `expected one of self, tree, agent, all (got "everyone")`},
				{"tools.agentToAgent.enabled", "expected boolean"},
				{"tools.agentToAgent.allow", "expected array of strings"},
			},
		},
		{
			name: "sandbox backend host and limits",
			src: `{
				agents: {
					defaults: {sandbox: {mode: "non-main", backend: "host", limits: {processes: 0, memoryMb: 512, timeoutSeconds: 604801}}},
					list: [
						{id: "a", sandbox: {mode: "off", backend: "host"}},
						{id: "b", sandbox: {backend: "bwrap"}},
						{id: "c", sandbox: {mode: "paths-only"}},
						{id: "d"},
						{id: "e", sandbox: {mode: "all", backend: "host", limits: {openFiles: -1}}},
					],
				},
			}`,
			want: []Issue{
				{"agents.defaults.sandbox.backend", `sandbox backend "host" runs commands without isolation, which only mode "off" allows (agents.defaults.sandbox.mode is "non-main"); set the backend to bwrap or docker, or the mode to off`},
				{"agents.defaults.sandbox.limits.processes", "expected an integer from 1 to 1048576 (got 0)"},
				{"agents.defaults.sandbox.limits.timeoutSeconds", "expected an integer from 1 to 604800 (got 604801)"},
				{"agents.list[2].sandbox.mode", `sandbox backend "host" runs commands without isolation, which only mode "off" allows (agents.list[2].sandbox.mode is "paths-only"); set the backend to bwrap or docker, or the mode to off`},
				{"agents.list[4].sandbox.backend", `sandbox backend "host" runs commands without isolation, which only mode "off" allows (agents.list[4].sandbox.mode is "all"); set the backend to bwrap or docker, or the mode to off`},
				{"agents.list[4].sandbox.limits.openFiles", "expected an integer from 1 to 1048576 (got -1)"},
			},
		},
		{
			name: "exec security",
			src: `{
				tools: {exec: {security: "yolo"}},
				agents: {list: [{id: "a", tools: {exec: {security: "full"}}}, {id: "b", tools: {exec: {security: "Full"}}}]},
			}`,
			want: []Issue{
				{"tools.exec.security", `expected one of deny, allowlist, full (got "yolo")`},
				{"agents.list[1].tools.exec.security", `expected one of deny, allowlist, full (got "Full")`},
			},
		},
		{
			name: "exec host and ask",
			src: `{
				tools: {exec: {host: "cloud", ask: "on-miss"}},
				agents: {list: [{id: "a", tools: {exec: {host: "gateway", ask: "never"}}}]},
			}`,
			want: []Issue{
				{"tools.exec.host", `expected one of sandbox, gateway, node (got "cloud")`},
				{"agents.list[0].tools.exec.ask", `expected one of off, on-miss, always (got "never")`},
			},
		},
		{
			name: "exec approval timeout",
			src: `{
				tools: {exec: {approvalTimeoutMs: 0}},
				agents: {list: [{id: "a", tools: {exec: {approvalTimeoutMs: 120000}}}, {id: "b", tools: {exec: {approvalTimeoutMs: 86400001}}}]},
			}`,
			want: []Issue{
				{"tools.exec.approvalTimeoutMs", "expected an integer from 1 to 86400000 (got 0)"},
				{"agents.list[1].tools.exec.approvalTimeoutMs", "expected an integer from 1 to 86400000 (got 86400001)"},
			},
		},
		{
			name: "mcp servers",
			src: `{
				mcp: {servers: {
					"Bad Name": {command: "x"},
					none: {},
					both: {command: "x", url: "http://h"},
					ftp: {url: "ftp://h"},
					ftps: {url: "ftp://u:pw@h/?token=t"},
					urlargs: {url: "https://h", args: ["-v"]},
					cmdheaders: {command: "x", headers: {a: "b"}},
					slow: {command: "x", toolTimeoutMs: 600001, startupTimeoutMs: 0},
					ok: {command: "npx", args: ["-y", "pkg"], env: {K: "v"}},
				}},
			}`,
			want: []Issue{
				{"mcp.servers.Bad Name", `invalid server name "Bad Name": use lower-case letters, digits, - and _, starting with a letter (at most 48)`},
				{"mcp.servers.none", "set command (a stdio server) or url (a streamable HTTP server)"},
				{"mcp.servers.both", "set either command or url, not both"},
				{"mcp.servers.ftp.url", `expected an http:// or https:// URL (got "ftp://h")`},
				{"mcp.servers.ftps.url", `expected an http:// or https:// URL (got "ftp://u:__OPENCLAW_REDACTED__@h/?token=__OPENCLAW_REDACTED__")`},
				{"mcp.servers.urlargs", "args, env and cwd apply to a command; a url server takes headers"},
				{"mcp.servers.cmdheaders.headers", "headers apply to a url server; a command server takes env"},
				{"mcp.servers.slow.toolTimeoutMs", "expected an integer from 1 to 600000 (got 600001)"},
				{"mcp.servers.slow.startupTimeoutMs", "expected an integer from 1 to 600000 (got 0)"},
			},
		},
		{
			name: "root is not an object",
			src:  `[1]`,
			want: []Issue{{"(root)", "expected object"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decodeJSON5(t, tt.src)
			if err == nil {
				t.Fatal("Decode succeeded, want a *ValidationError")
			}
			if diff := cmp.Diff(tt.want, issuesOf(t, err)); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidationErrorMessage(t *testing.T) {
	_, _, err := decodeJSON5(t, `{agents: {list: [{id: "a"}, {id: "b"}, {id: "c", tools: {allow: ["x", 1]}}]}, tools: {deny: 1}}`)
	want := "invalid config: agents.list[2].tools.allow: expected array of strings; tools.deny: expected array of strings"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestDecodeValues(t *testing.T) {
	c, warns, err := decodeJSON5(t, `{
		gateway: {port: 8080.0, bind: "loopback", auth: {mode: "token", token: "t"}},
		tools: {
			profile: "coding",
			allow: [],
			alsoAllow: ["web_search"],
			// deny absent
			byProvider: {"openai/gpt-5.2": {profile: "minimal", deny: ["exec"]}},
			exec: {host: "sandbox", applyPatch: {enabled: true}},
			web: {search: {enabled: false}},
		},
		agents: {
			defaults: {sandbox: {mode: "non-main", perSession: true}, subagents: {maxSpawnDepth: 2.5}},
			list: [{id: "main", default: true, tools: {deny: ["browser"], sandbox: {tools: {allow: ["read"]}}}}],
		},
		plugins: {slots: {memory: "none"}, load: {paths: ["/p"]}},
		models: {providers: {p: {headers: {"X-A": "1"}, models: [{id: "m", input: ["text"], maxTokens: 4096}]}}},
		channels: {telegram: {enabled: true}},
		session: {scope: "per-sender", mainKey: "main"},
		gatewayNull: null,
	}`)
	if err != nil {
		t.Fatal(err)
	}
	// A null member is absent, even for an unknown key... except it is still
	// a key Talon does not know, so it is reported.
	if diff := cmp.Diff([]Issue{{"gatewayNull", msgUnknownKey}}, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	port, yes, memory, depth, maxTok := 8080, true, "none", 2.5, 4096.0
	want := Config{
		Gateway: Gateway{Port: &port, Bind: "loopback", Auth: GatewayAuth{Mode: "token", Token: "t"}},
		Tools: Tools{
			Profile:    "coding",
			ToolPolicy: ToolPolicy{Allow: List{}, AlsoAllow: List{"web_search"}},
			ByProvider: map[string]ProviderTools{
				"openai/gpt-5.2": {Profile: "minimal", ToolPolicy: ToolPolicy{Deny: List{"exec"}}},
			},
			Exec: &ExecTools{Host: "sandbox", ApplyPatch: &ApplyPatch{Enabled: &yes}},
			Web:  WebTools{Search: WebSearch{Enabled: new(bool)}},
		},
		Agents: Agents{
			Defaults: AgentDefaults{
				Sandbox:   Sandbox{Mode: "non-main", PerSession: &yes},
				Subagents: SubagentLimits{MaxSpawnDepth: &depth},
			},
			List: []Agent{{ID: "main", Default: &yes, Tools: AgentTools{
				ToolPolicy: ToolPolicy{Deny: List{"browser"}},
				Sandbox:    SandboxTools{Tools: ToolPolicy{Allow: List{"read"}}},
			}}},
		},
		Plugins: Plugins{Slots: PluginSlots{Memory: &memory}, Load: PluginLoad{Paths: List{"/p"}}},
		Models: Models{Providers: map[string]Provider{"p": {
			Headers: map[string]string{"X-A": "1"},
			Models:  []Model{{ID: "m", Input: List{"text"}, MaxTokens: &maxTok}},
		}}},
		Channels: map[string]Channel{"telegram": {ChannelSettings: ChannelSettings{Enabled: &yes}}},
		Session:  Session{Scope: "per-sender", MainKey: "main"},
	}
	if diff := cmp.Diff(want, *c); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	// The point of List: [] and absent must stay distinguishable.
	if c.Tools.Allow == nil || c.Tools.Deny != nil {
		t.Errorf("allow: [] must be non-nil and absent deny nil; got allow=%#v deny=%#v", c.Tools.Allow, c.Tools.Deny)
	}
}

func TestDecodeNullIsAbsent(t *testing.T) {
	c, warns, err := decodeJSON5(t, `{
		gateway: {port: null, auth: null}, tools: {allow: null, exec: null, byProvider: {x: null}},
		agents: {list: null}, meta: null, env: null,
	}`)
	if err != nil || len(warns) != 0 {
		t.Fatalf("err=%v warns=%v", err, warns)
	}
	if c.Gateway.Port != nil || c.Tools.Allow != nil || c.Tools.Exec != nil || c.Agents.List != nil || c.Env != nil {
		t.Errorf("null should leave fields unset: %+v", c)
	}
	if c.Tools.ByProvider == nil || len(c.Tools.ByProvider) != 0 {
		t.Errorf("byProvider = %#v, want an empty map (the key was present, its entry null)", c.Tools.ByProvider)
	}
}

func TestDecodeWarnings(t *testing.T) {
	_, warns, err := decodeJSON5(t, `{
		foo: 1,
		meta: {lastTouchedVersion: "x"},
		gateway: {bar: 2, tls: {}, auth: {allowTailscale: true}},
		__proto__: {polluted: true},
		agents: {list: [{id: "a", zzz: 1, constructor: 2, tools: {profile: "bogus"}, sandbox: {sessionToolsVisibility: "all"}}]},
		tools: {profile: "also-bogus", byProvider: {"x.y": {profile: "nope"}}, sessions: {visibility: "agent"}, agentToAgent: {enabled: true, allow: ["a"]}},
		env: {vars: {prototype: "p"}},
		"key with space": 1,
	}`)
	if err != nil {
		t.Fatal(err)
	}
	profileMsg := func(p string) string {
		return `unknown profile "` + p + `": no profile policy applies (known: minimal, coding, messaging, full)`
	}
	want := []Issue{
		{"foo", msgUnknownKey},
		{"meta", MsgUnused},
		{"gateway.bar", msgUnknownKey},
		{"gateway.tls", MsgUnused},
		{"gateway.auth.allowTailscale", MsgUnused},
		{"__proto__", msgIgnoredKey},
		{"agents.list[0].zzz", msgUnknownKey},
		{"agents.list[0].constructor", msgIgnoredKey},
		{"agents.list[0].tools.profile", profileMsg("bogus")},
		{"agents.list[0].sandbox.sessionToolsVisibility", "not used: only agents.defaults.sandbox.sessionToolsVisibility applies, as in OpenClaw (kept)"},
		{"tools.profile", profileMsg("also-bogus")},
		{`tools.byProvider["x.y"].profile`, profileMsg("nope")},
		{"env.vars.prototype", msgIgnoredKey},
		{`["key with space"]`, msgUnknownKey},
	}
	if diff := cmp.Diff(want, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got := want[0].String(); got != "foo: unknown key (kept, not used by Talon)" {
		t.Errorf("Issue.String() = %q", got)
	}
}

func TestDecodeRest(t *testing.T) {
	tree := mustJSON5(t, `{
		tools: {web: {search: {enabled: false, provider: "brave", openaiCodex: {enabled: true}}, fetch: {enabled: true}}},
		channels: {telegram: {
			enabled: true, streaming: "x", proxy: "p", dmPolicy: "pairing",
			groups: {"-100": {systemPrompt: "p", requireMention: true, tools: {deny: ["exec"]}}},
			accounts: {a1: {name: "A", groups: {}}},
		}},
		commands: {native: "auto", ownerAllowFrom: ["me"]},
	}`)
	var c Config
	warns, err := Decode(tree, &c)
	if err != nil {
		t.Fatal(err)
	}
	// What lands in a rest field is kept, and reported: none of it is read.
	wantWarns := []Issue{
		{"tools.web.search.openaiCodex", MsgUnused},
		{"channels.telegram.streaming", MsgUnused},
		{"channels.telegram.proxy", MsgUnused},
		{"channels.telegram.groups.-100.systemPrompt", MsgUnused},
		{"channels.telegram.accounts.a1.name", MsgUnused},
		{"commands.native", MsgUnused},
	}
	if diff := cmp.Diff(wantWarns, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	rest := func(r *Raw) string {
		if r == nil {
			return "<nil>"
		}
		return compact(t, r.Value)
	}
	tg := c.Channels["telegram"]
	got := map[string]string{
		"search":   rest(c.Tools.Web.Search.Rest),
		"fetch":    rest(c.Tools.Web.Fetch.Rest),
		"telegram": rest(tg.Rest),
		"group":    rest(tg.Groups["-100"].Rest),
		"account":  rest(tg.Accounts["a1"].Rest),
		"commands": rest(c.Commands.Rest),
	}
	want := map[string]string{
		"search":   `{"openaiCodex":{"enabled":true}}`,
		"fetch":    "<nil>",
		"telegram": `{"streaming":"x","proxy":"p"}`,
		"group":    `{"systemPrompt":"p"}`,
		"account":  `{"name":"A"}`,
		"commands": `{"native":"auto"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rest (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(List{"exec"}, tg.Groups["-100"].Tools.Deny); diff != "" {
		t.Errorf("group deny (-want +got):\n%s", diff)
	}
	// Rest holds the tree's own nodes.
	if tg.Rest.Members[0].Value != tree.Lookup("channels", "telegram", "streaming") {
		t.Error("rest member is a copy, want the tree's node")
	}
}

func TestDecodeRawSharesTree(t *testing.T) {
	tree := mustJSON5(t, `{env: {OPENAI_API_KEY: "sk"}, agents: {defaults: {model: {primary: "a/b"}}}}`)
	var c Config
	if _, err := Decode(tree, &c); err != nil {
		t.Fatal(err)
	}
	if c.Env == nil || c.Env.Value != tree.Get("env") {
		t.Error("env Raw should point at the tree node")
	}
	if got := c.Agents.Defaults.Model.Get("primary"); got == nil || got.Str != "a/b" {
		t.Errorf("model.primary = %v", got)
	}
}

func TestDecodeEmbeddedFlattening(t *testing.T) {
	// Embedded ToolPolicy fields are read at the level of the embedding struct.
	var pt ProviderTools
	warns, err := Decode(mustJSON5(t, `{profile: "full", allow: ["a"], alsoAllow: ["b"], deny: ["c"], ToolPolicy: {}}`), &pt)
	if err != nil {
		t.Fatal(err)
	}
	want := ProviderTools{Profile: "full", ToolPolicy: ToolPolicy{Allow: List{"a"}, AlsoAllow: List{"b"}, Deny: List{"c"}}}
	if diff := cmp.Diff(want, pt); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Issue{{"ToolPolicy", msgUnknownKey}}, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestDecodeNeedsPointer(t *testing.T) {
	if _, err := Decode(NewObject(), Config{}); err == nil {
		t.Error("Decode into a non-pointer should fail")
	}
	var c *Config
	if _, err := Decode(NewObject(), c); err == nil {
		t.Error("Decode into a nil pointer should fail")
	}
}

func TestValidateDirect(t *testing.T) {
	port := 0
	c := &Config{Gateway: Gateway{Port: &port}, Tools: Tools{Profile: "bogus"}}
	want := []Issue{{"gateway.port", "expected a port number from 1 to 65535 (got 0)"}}
	if diff := cmp.Diff(want, Validate(c)); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
	if Validate(nil) != nil {
		t.Error("Validate(nil) should find nothing")
	}
}
