package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// findFinding returns the first finding with the code (and key, when set).
func findFinding(fs []Finding, code, key string) (Finding, bool) {
	for _, f := range fs {
		if f.Code == code && (key == "" || f.Key == key) {
			return f, true
		}
	}
	return Finding{}, false
}

// Explain findings: each likely mistake is reported with its key and a fix
// naming the key to change. The mistakes come from the rules: a later layer
// removes a tool an allow list names (§4.1 "a later allow never brings back
// a tool"), plugin-only and glob-only allow lists are ignored (§4.7, fix is
// alsoAllow), allow ["*"] restricts nothing and never enables optional
// tools (§9.2), sandbox allow [] and ["*"] (§5 corner cases), plugin not
// enabled (§9.1), optional tool not allowed (§9.2), byProvider keys that
// collide after lower-casing (§4.4).
func TestRulesExplainFindings(t *testing.T) {
	sub := Context{SessionKey: "agent:main:subagent:x", SenderIsOwner: true}
	withRegs := func(ctx Context, rs ...Registration) Context {
		ctx.Plugins = rs
		return ctx
	}
	cases := []struct {
		name     string
		cfg      string
		ctx      Context
		code     string
		key      string
		severity Severity
		fixHas   []string
	}{
		{"named tool removed by an agent deny",
			`{"tools":{"allow":["read","browser"]},"agents":{"list":[{"id":"main","tools":{"deny":["browser"]}}]}}`, ownerMain,
			CodeNamedToolRemoved, "agents.list[0].tools.deny", SeverityError, []string{"agents.list[0].tools.deny", `"browser"`}},
		{"named tool removed by a group deny entry",
			`{"tools":{"alsoAllow":["exec"],"deny":["group:runtime"]}}`, ownerMain,
			CodeNamedToolRemoved, "tools.deny", SeverityError, []string{"tools.deny", "group:runtime"}},
		{"named tool removed by the profile",
			`{"tools":{"profile":"minimal"},"agents":{"list":[{"id":"main","tools":{"allow":["read","session_status"]}}]}}`, ownerMain,
			CodeNamedToolRemoved, "tools.profile", SeverityError, []string{"alsoAllow", "tools.profile"}},
		{"named tool removed by the default sandbox deny",
			`{"tools":{"alsoAllow":["canvas"]},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain,
			CodeNamedToolRemoved, "tools.sandbox.tools.deny", SeverityError, []string{"tools.sandbox.tools.deny"}},
		{"browser named in a sandboxed session",
			`{"tools":{"alsoAllow":["browser"]},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain,
			CodeNamedToolRemoved, "agents.defaults.sandbox.mode", SeverityWarning, []string{"unsandboxed ones", "never for a tenant"}},
		{"named tool removed by the default sandbox allow",
			`{"tools":{"alsoAllow":["web_fetch"]},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain,
			CodeNamedToolRemoved, "tools.sandbox.tools.allow", SeverityError, []string{"tools.sandbox.tools.allow", `"web_fetch"`}},
		// The built-in subagent deny is not in the config: the fix is to
		// lift it with tools.subagents.tools.alsoAllow (§6), not to edit a
		// deny list the user never wrote.
		{"named tool removed by the built-in subagent deny",
			`{"tools":{"alsoAllow":["sessions_send"]}}`, sub,
			CodeNamedToolRemoved, "tools.subagents.tools.deny", SeverityError, []string{"tools.subagents.tools.alsoAllow"}},
		{"named owner-only tool removed for a non-owner",
			`{"tools":{"allow":["read","cron"]}}`, Context{SessionKey: "agent:main:main"},
			CodeNamedToolRemoved, "commands.ownerAllowFrom", SeverityWarning, []string{"commands.ownerAllowFrom"}},
		{"plugin-only allow list ignored",
			`{"tools":{"allow":["memory_search"]}}`, ownerMain,
			CodeAllowlistIgnored, "tools.allow", SeverityError, []string{"tools.alsoAllow"}},
		{"agent plugin-only allow list ignored",
			`{"agents":{"list":[{"id":"main","tools":{"allow":["memory-core"]}}]}}`, ownerMain,
			CodeAllowlistIgnored, "agents.list[0].tools.allow", SeverityError, []string{"agents.list[0].tools.alsoAllow"}},
		{"glob-only allow list ignored",
			`{"tools":{"allow":["web_*"]}}`, ownerMain,
			CodeAllowlistIgnored, "tools.allow", SeverityError, []string{"tools.allow"}},
		{"allow star", `{"tools":{"allow":["*"]}}`, ownerMain,
			CodeAllowStar, "tools.allow", SeverityWarning, []string{"tools.alsoAllow"}},
		{"agent allow star", `{"agents":{"list":[{"id":"main","tools":{"allow":["*"]}}]}}`, ownerMain,
			CodeAllowStar, "agents.list[0].tools.allow", SeverityWarning, []string{"agents.list[0].tools.alsoAllow"}},
		{"sandbox allow empty", `{"tools":{"sandbox":{"tools":{"allow":[]}}}}`, ownerMain,
			CodeSandboxEmptyAllow, "tools.sandbox.tools.allow", SeverityWarning, []string{"tools.sandbox.tools.allow"}},
		{"agent sandbox allow empty", `{"agents":{"list":[{"id":"main","tools":{"sandbox":{"tools":{"allow":[]}}}}]}}`, ownerMain,
			CodeSandboxEmptyAllow, "agents.list[0].tools.sandbox.tools.allow", SeverityWarning, []string{"agents.list[0].tools.sandbox.tools.allow"}},
		{"sandbox allow star", `{"tools":{"sandbox":{"tools":{"allow":["*"]}}}}`, ownerMain,
			CodeSandboxStarAllow, "tools.sandbox.tools.allow", SeverityWarning, []string{"tools.sandbox.tools.deny"}},
		{"plugin not enabled (bundled off)", `{}`,
			withRegs(ownerMain, Registration{Plugin: "voice-call", Name: "voice_call", Origin: OriginBundled}),
			CodePluginNotEnabled, "plugins.entries.voice-call.enabled", SeverityError, []string{"plugins.entries.voice-call.enabled"}},
		{"plugin not enabled (denylist)", `{"plugins":{"deny":["lobster"]}}`,
			withRegs(ownerMain, Registration{Plugin: "lobster", Name: "lobster", Origin: OriginConfig}),
			CodePluginNotEnabled, "plugins.deny", SeverityError, []string{"plugins.deny"}},
		{"plugin not enabled (allowlist)", `{"plugins":{"allow":["other"]}}`,
			withRegs(ownerMain, Registration{Plugin: "lobster", Name: "lobster", Origin: OriginConfig}),
			CodePluginNotEnabled, "plugins.allow", SeverityError, []string{"plugins.allow"}},
		{"optional tool not allowed", `{"tools":{"allow":["*"]}}`,
			withRegs(ownerMain, Registration{Plugin: "optional-demo", Name: "optional_tool", Optional: true}),
			CodeOptionalTool, "tools.alsoAllow", SeverityError, []string{"tools.alsoAllow", "optional_tool"}},
		{"optional tool not allowed, agent entry", `{"agents":{"list":[{"id":"main"}]}}`,
			withRegs(ownerMain, Registration{Plugin: "optional-demo", Name: "optional_tool", Optional: true}),
			CodeOptionalTool, "agents.list[0].tools.alsoAllow", SeverityError, []string{"agents.list[0].tools.alsoAllow"}},
		{"byProvider key clash", `{"tools":{"byProvider":{"OpenAI":{"deny":["read"]},"openai":{"deny":["exec"]}}}}`, ownerMain,
			CodeProviderKeyClash, "tools.byProvider", SeverityError, []string{"tools.byProvider"}},
		{"agent byProvider key clash", `{"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai/GPT-5.2":{"deny":["read"]},"openai/gpt-5.2 ":{"deny":["exec"]}}}}]}}`, ownerMain,
			CodeProviderKeyClash, "agents.list[0].tools.byProvider", SeverityError, []string{"agents.list[0].tools.byProvider"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := Explain(mustConfig(t, c.cfg), c.ctx, stdTools(), allBuilt)
			f, ok := findFinding(x.Findings, c.code, c.key)
			if !ok {
				t.Fatalf("no %s finding for %s; findings: %+v", c.code, c.key, x.Findings)
			}
			if f.Severity != c.severity {
				t.Errorf("severity = %s, want %s", f.Severity, c.severity)
			}
			for _, s := range c.fixHas {
				if !strings.Contains(f.Fix, s) {
					t.Errorf("fix %q does not mention %q", f.Fix, s)
				}
			}
		})
	}
}

// Explain findings are about mistakes only: a config whose allow lists all
// take effect reports nothing, and a tool removed without being named is
// not a named-tool finding.
func TestRulesExplainNoFalseFindings(t *testing.T) {
	cases := []struct{ name, cfg string }{
		{"empty config", `{}`},
		{"allow list that works", `{"tools":{"allow":["read","exec"]}}`},
		{"deny of an unnamed tool", `{"tools":{"deny":["browser"]}}`},
		{"profile with alsoAllow", `{"tools":{"profile":"coding","alsoAllow":["browser"]}}`},
		{"sandbox allow with a named tool", `{"tools":{"alsoAllow":["read"],"sandbox":{"tools":{"allow":["read","exec"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := Explain(mustConfig(t, c.cfg), ownerMain, stdTools(), allBuilt)
			if len(x.Findings) != 0 {
				t.Errorf("findings: %+v", x.Findings)
			}
		})
	}
}

// Explain rows: one per candidate and registration, in order; Available()
// equals the pipeline's tool list; removed rows carry the trace entry.
func TestRulesExplainRows(t *testing.T) {
	cfg := mustConfig(t, `{"tools":{"deny":["browser"]}}`)
	ctx := ownerMain
	ctx.Plugins = []Registration{{Plugin: "lobster", Name: "lobster"}, {Plugin: "multi", Name: "message"}}
	x := Explain(cfg, ctx, stdTools(), allBuilt)
	r := Evaluate(cfg, ctx, stdTools())
	if diff := cmp.Diff(r.Names(), x.Available()); diff != "" {
		t.Errorf("Available() differs from Evaluate (-evaluate +explain):\n%s", diff)
	}
	var names []string
	for _, row := range x.Tools {
		names = append(names, row.Name)
	}
	if diff := cmp.Diff(append(append([]string{}, specSTD...), "lobster", "message"), names); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	for _, row := range x.Tools {
		switch row.Name {
		case "browser":
			if row.Available || row.Removal == nil || row.Removal.Key != "tools.deny" {
				t.Errorf("browser row = %+v, want removed by tools.deny", row)
			}
		case "read":
			if !row.Available || row.Removal != nil {
				t.Errorf("read row = %+v, want available", row)
			}
		case "message":
			// The native message tool wins the name conflict (§9.3).
			if row.Plugin == "" && (!row.Available || row.Removal != nil) {
				t.Errorf("native message row = %+v, want available", row)
			}
		}
	}
	// The native message stays available; the conflicting plugin row does not.
	last := x.Tools[len(x.Tools)-1]
	if last.Name != "message" || last.Plugin != "multi" || last.Available {
		t.Errorf("conflicting plugin row = %+v, want message (multi) not available", last)
	}
}

// Doctor exits clean (no error findings) on a sensible config, and reports
// errors for a broken one.
func TestRulesDoctor(t *testing.T) {
	t.Run("sensible config is clean", func(t *testing.T) {
		cfg := mustConfig(t, `{
			"tools":{"profile":"coding","deny":["gateway"],
				"byProvider":{"openai/gpt-5.2":{"deny":["web_fetch"]}}},
			"agents":{"defaults":{"sandbox":{"mode":"non-main"}},"list":[
				{"id":"main","default":true},
				{"id":"family","tools":{"allow":["read","sessions_list","session_status"],"deny":["exec"]}}]},
			"channels":{"whatsapp":{"groups":{"*":{"tools":{"deny":["exec"]}}}}}}`)
		rep := Doctor(cfg, nil, specSTD)
		if n := rep.Errors(); n != 0 {
			t.Errorf("Errors() = %d, want 0:\n%s", n, FindingsText(rep.Findings))
		}
		if len(rep.Runs) == 0 {
			t.Errorf("no runs evaluated")
		}
	})
	t.Run("broken config has errors", func(t *testing.T) {
		cfg := mustConfig(t, `{"tools":{"allow":["memory_search"],"byProvider":{"OpenAI":{},"openai":{}}}}`)
		rep := Doctor(cfg, nil, specSTD)
		if rep.Errors() < 2 {
			t.Errorf("Errors() = %d, want at least 2:\n%s", rep.Errors(), FindingsText(rep.Findings))
		}
		for _, code := range []string{CodeAllowlistIgnored, CodeProviderKeyClash} {
			if _, ok := findFinding(rep.Findings, code, ""); !ok {
				t.Errorf("no %s finding", code)
			}
		}
	})
}

// §1.3 CandidateTools: read, edit, write, apply_patch, exec, process; the
// WhatsApp login tool when the channel is configured; the native tools in
// order; memory_search/memory_get of memory-core when it holds the memory
// slot and is enabled. Owner-only tools carry the flag (§7).
func TestRulesCandidateTools(t *testing.T) {
	native := []string{"browser", "canvas", "nodes", "cron", "message", "tts", "gateway", "agents_list", "sessions_list",
		"sessions_history", "sessions_send", "sessions_yield", "sessions_spawn", "subagents", "session_status", "web_search",
		"web_fetch", "image", "pdf"}
	head := []string{"read", "edit", "write", "apply_patch", "exec", "process"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	mem := []string{"memory_search", "memory_get"}
	cases := []struct {
		name string
		cfg  string
		want []string
	}{
		{"no config", `{}`, cat(head, native, mem)},
		{"whatsapp channel adds its login tool", `{"channels":{"whatsapp":{}}}`, cat(head, []string{"whatsapp_login"}, native, mem)},
		{"plugins disabled: no memory tools", `{"plugins":{"enabled":false}}`, cat(head, native)},
		{"memory slot none", `{"plugins":{"slots":{"memory":"none"}}}`, cat(head, native)},
		{"memory slot elsewhere", `{"plugins":{"slots":{"memory":"memory-lancedb"}}}`, cat(head, native)},
		{"memory-core denied", `{"plugins":{"deny":["memory-core"]}}`, cat(head, native)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tools := CandidateTools(mustConfig(t, c.cfg))
			var names []string
			for _, tool := range tools {
				names = append(names, tool.Name)
				wantOwner := tool.Name == "whatsapp_login" || tool.Name == "cron" || tool.Name == "gateway" || tool.Name == "nodes"
				if tool.OwnerOnly != wantOwner {
					t.Errorf("%s OwnerOnly = %v, want %v", tool.Name, tool.OwnerOnly, wantOwner)
				}
				wantPlugin := ""
				if tool.Name == "memory_search" || tool.Name == "memory_get" {
					wantPlugin = "memory-core"
				}
				if tool.Plugin != wantPlugin {
					t.Errorf("%s Plugin = %q, want %q", tool.Name, tool.Plugin, wantPlugin)
				}
			}
			if diff := cmp.Diff(c.want, names, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
		})
	}
}

// Every removed row carries its fix, named tool or not: Studio shows it
// beside the layer and key that removed the tool.
func TestRulesExplainRowFix(t *testing.T) {
	cases := []struct {
		name, cfg, tool string
		ctx             Context
		fixHas          []string
	}{
		{"agent deny", `{"agents":{"list":[{"id":"main","tools":{"deny":["browser"]}}]}}`, "browser", ownerMain,
			[]string{`remove "browser" from agents.list[0].tools.deny`}},
		{"group deny", `{"tools":{"deny":["group:runtime"]}}`, "exec", ownerMain,
			[]string{`"group:runtime"`, "tools.deny"}},
		{"profile", `{"tools":{"profile":"minimal"}}`, "read", ownerMain,
			[]string{`add "read" to the alsoAllow beside tools.profile`}},
		{"owner only", `{}`, "cron", Context{SessionKey: "agent:main:main"},
			[]string{"commands.ownerAllowFrom"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := Explain(mustConfig(t, c.cfg), c.ctx, stdTools(), allBuilt)
			for _, r := range x.Tools {
				if r.Available && r.Fix != "" {
					t.Errorf("%s is available but has fix %q", r.Name, r.Fix)
				}
				if !r.Available && r.Fix == "" {
					t.Errorf("%s removed by %s without a fix", r.Name, r.Removal.Stage)
				}
				if r.Name != c.tool {
					continue
				}
				if r.Available {
					t.Fatalf("%s is available", c.tool)
				}
				for _, want := range c.fixHas {
					if !strings.Contains(r.Fix, want) {
						t.Errorf("fix %q lacks %q", r.Fix, want)
					}
				}
			}
		})
	}
}

// talonBuilt is an inventory like Talon's today: its core registry and
// memory-core's tools, not the rest of OpenClaw's catalog.
var talonBuilt = Inventory{Built: []string{
	"read", "edit", "write", "apply_patch", "exec", "process", "sessions_list", "sessions_history",
	"sessions_send", "sessions_spawn", "session_status", "web_fetch", "image", "memory_search", "memory_get",
}}

// The state of each row keeps "the policy allows it" apart from "Talon
// has it": a tool Talon has not built is never available, never counted
// as available, and no fix suggests adding it; the available rows are
// exactly what a run over the built tools offers the model, while
// Evaluate over the whole catalog (OpenClaw's tools_out) is unchanged.
func TestRulesExplainNotBuilt(t *testing.T) {
	notBuilt := []string{"whatsapp_login", "browser", "canvas", "nodes", "cron", "message", "tts", "gateway",
		"agents_list", "sessions_yield", "subagents", "web_search", "pdf"}
	cases := []struct {
		name   string
		cfg    string
		ctx    Context
		counts Counts
		// states of a few rows; removed says the row carries a policy removal.
		states  map[string]string
		removed []string
		// codes must be among the findings, absent must not.
		codes, absent []string
	}{
		{"empty config, owner", `{}`, ownerMain,
			Counts{Tools: 28, Available: 14, Removed: 1, NotBuilt: 13, AllowedNotBuilt: 13},
			map[string]string{"read": StateAvailable, "apply_patch": StateRemoved, "browser": StateNotBuilt, "memory_get": StateAvailable},
			[]string{"apply_patch"}, nil, []string{CodeNotBuilt}},
		{"not an owner: the policy removes owner-only tools too", `{}`, Context{SessionKey: "agent:main:main"},
			Counts{Tools: 28, Available: 14, Removed: 1, NotBuilt: 13, AllowedNotBuilt: 9},
			map[string]string{"cron": StateNotBuilt, "exec": StateAvailable},
			[]string{"cron", "nodes", "gateway", "whatsapp_login"}, nil, nil},
		// OpenClaw keeps only browser; Talon's run has no browser, so
		// the allow list names only tools it lacks and is ignored (§4.7).
		{"allow list of a tool Talon lacks", `{"tools":{"allow":["browser"]}}`, ownerMain,
			Counts{Tools: 28, Available: 14, Removed: 1, NotBuilt: 13, AllowedNotBuilt: 1},
			map[string]string{"browser": StateNotBuilt, "read": StateAvailable},
			[]string{"canvas", "message"}, []string{CodeNotBuilt, CodeAllowlistIgnored}, nil},
		{"named tool Talon lacks, removed by the sandbox too", `{"tools":{"alsoAllow":["browser","web_fetch"]},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain,
			Counts{Tools: 28, Available: 11, Removed: 4, NotBuilt: 13, AllowedNotBuilt: 2},
			map[string]string{"browser": StateNotBuilt, "web_fetch": StateRemoved, "subagents": StateNotBuilt},
			[]string{"browser", "web_fetch"}, []string{CodeNotBuilt, CodeNamedToolRemoved}, nil},
		// OpenClaw's native message wins the name over a plugin's (§9.3);
		// Talon has no native message, so the plugin's is offered, and
		// naming it asks for a tool the run has.
		{"plugin tool named like a native tool Talon lacks", `{"tools":{"alsoAllow":["message"]}}`,
			func() Context {
				c := ownerMain
				c.Plugins = []Registration{{Plugin: "multi", Name: "message"}}
				return c
			}(),
			Counts{Tools: 29, Available: 15, Removed: 1, NotBuilt: 13, AllowedNotBuilt: 13},
			map[string]string{"message": StateNotBuilt}, nil, nil, []string{CodeNotBuilt}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustConfig(t, c.cfg)
			x := Explain(cfg, c.ctx, stdTools(), talonBuilt)
			if diff := cmp.Diff(c.counts, x.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			var have []Tool
			for _, tool := range stdTools() {
				if slices.Contains(talonBuilt.Built, tool.Name) {
					have = append(have, tool)
				}
			}
			run := Evaluate(cfg, c.ctx, have)
			if diff := cmp.Diff(run.Names(), x.Available()); diff != "" {
				t.Errorf("available rows differ from the run over the built tools (-run +explain):\n%s", diff)
			}
			rows := map[string]ToolRow{}
			for _, r := range x.Tools {
				if _, seen := rows[r.Name]; !seen {
					rows[r.Name] = r
				}
				switch {
				case r.State == StateNotBuilt && (r.Available || r.Reason != ReasonNotBuilt || r.Fix != ""):
					t.Errorf("not-built row %+v: want unavailable, reason %q, no fix", r, ReasonNotBuilt)
				case r.State == StateNotBuilt && !slices.Contains(notBuilt, r.Name):
					t.Errorf("%s is built but its row says not-built", r.Name)
				case r.State != StateNotBuilt && slices.Contains(notBuilt, r.Name) && r.Plugin == "":
					t.Errorf("%s is not built but its row says %s", r.Name, r.State)
				case r.Available != (r.State == StateAvailable):
					t.Errorf("row %+v: available and state disagree", r)
				}
				if rm := r.Removal; rm != nil && r.State == StateAvailable {
					t.Errorf("available row %s has a removal %+v", r.Name, rm)
				}
			}
			for n, want := range c.states {
				if got := rows[n].State; got != want {
					t.Errorf("%s: state %q, want %q", n, got, want)
				}
			}
			for _, n := range c.removed {
				if rows[n].Removal == nil {
					t.Errorf("%s: no removal in row %+v", n, rows[n])
				}
			}
			for _, code := range c.codes {
				if _, ok := findFinding(x.Findings, code, ""); !ok {
					t.Errorf("no %s finding in %+v", code, x.Findings)
				}
			}
			for _, code := range c.absent {
				if f, ok := findFinding(x.Findings, code, ""); ok {
					t.Errorf("unexpected finding %+v", f)
				}
			}
			for _, f := range x.Findings {
				if f.Code == CodeNamedToolRemoved && slices.Contains(notBuilt, strings.Trim(strings.Fields(f.Message)[0], `"`)) {
					t.Errorf("named-tool-removed finding about a tool Talon lacks: %+v", f)
				}
			}
			// No fix adds a tool Talon lacks.
			fixes := []string{}
			for _, r := range x.Tools {
				fixes = append(fixes, r.Fix)
			}
			for _, f := range x.Findings {
				fixes = append(fixes, f.Fix)
			}
			for _, fix := range fixes {
				if !strings.HasPrefix(fix, "add ") {
					continue
				}
				for _, n := range notBuilt {
					if strings.Contains(fix, `"`+n+`"`) {
						t.Errorf("fix %q suggests %s, which Talon has not built", fix, n)
					}
				}
			}
		})
	}
}
