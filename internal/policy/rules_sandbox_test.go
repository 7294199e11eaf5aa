package policy

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// §5 defaults (2026.3.13), copied from the spec.
var (
	specSandboxAllow = []string{"exec", "process", "read", "write", "edit", "apply_patch", "image",
		"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "sessions_yield", "subagents", "session_status"}
	specSandboxDeny = []string{"browser", "canvas", "nodes", "cron", "gateway",
		"telegram", "whatsapp", "discord", "irc", "googlechat", "slack", "signal", "imessage", "line"}
)

// §5 Sandbox tool policy resolution: allow and deny are each taken whole
// from the agent, else tools.sandbox.tools, else the defaults, independently;
// core groups expanded; "image" appended to a non-empty allow list unless
// either list names it exactly (case-insensitive, globs do not count);
// sources recorded.
func TestRulesResolveSandboxPolicy(t *testing.T) {
	agentCfg := `{"tools":{"sandbox":{"tools":{"allow":["exec"],"deny":["exec"]}}},"agents":{"list":[
		{"id":"main"},
		{"id":"Work","tools":{"sandbox":{"tools":{"allow":["read"]}}}},
		{"id":"ops","tools":{"sandbox":{"tools":{"deny":["browser"]}}}},
		{"id":"empty","tools":{"sandbox":{"tools":{"allow":[],"deny":[]}}}}]}}`
	g := func(allow, deny string) string {
		s := `{"tools":{"sandbox":{"tools":{`
		sep := ""
		if allow != "" {
			s += `"allow":` + allow
			sep = ","
		}
		if deny != "" {
			s += sep + `"deny":` + deny
		}
		return s + `}}}}`
	}
	src := func(source, key string) ListSource { return ListSource{Source: source, Key: key} }
	dAllow, dDeny := src("default", "tools.sandbox.tools.allow"), src("default", "tools.sandbox.tools.deny")
	gAllow, gDeny := src("global", "tools.sandbox.tools.allow"), src("global", "tools.sandbox.tools.deny")
	cases := []struct {
		name              string
		cfg, agent        string
		allow, deny       []string
		allowSrc, denySrc ListSource
		imageAdded        bool
	}{
		{"agent allow, global deny", agentCfg, "work", []string{"read", "image"}, []string{"exec"},
			src("agent", "agents.list[1].tools.sandbox.tools.allow"), gDeny, true},
		{"agent id normalised", agentCfg, " WORK ", []string{"read", "image"}, []string{"exec"},
			src("agent", "agents.list[1].tools.sandbox.tools.allow"), gDeny, true},
		{"global allow, agent deny", agentCfg, "ops", []string{"exec", "image"}, []string{"browser"},
			gAllow, src("agent", "agents.list[2].tools.sandbox.tools.deny"), true},
		{"agent without sandbox lists: global", agentCfg, "main", []string{"exec", "image"}, []string{"exec"}, gAllow, gDeny, true},
		{"unknown agent: global", agentCfg, "ghost", []string{"exec", "image"}, []string{"exec"}, gAllow, gDeny, true},
		{"agent empty lists replace global", agentCfg, "empty", []string{}, []string{},
			src("agent", "agents.list[3].tools.sandbox.tools.allow"), src("agent", "agents.list[3].tools.sandbox.tools.deny"), false},
		{"global allow only: default deny", g(`["read"]`, ""), "main", []string{"read", "image"}, specSandboxDeny, gAllow, dDeny, true},
		{"global deny only: default allow", g("", `["exec"]`), "main", specSandboxAllow, []string{"exec"}, dAllow, gDeny, false},
		{"groups expanded and aliases applied", g(`["group:runtime","BASH"]`, `["group:ui"]`), "main",
			[]string{"exec", "process", "image"}, []string{"browser", "canvas"}, gAllow, gDeny, true},
		{"image named in allow, any case", g(`["read","IMAGE"]`, `[]`), "main", []string{"read", "image"}, []string{}, gAllow, gDeny, false},
		{"image named in deny stops the auto-add", g(`["read"]`, `["Image"]`), "main", []string{"read"}, []string{"image"}, gAllow, gDeny, false},
		{"image from a group counts", g(`["group:media"]`, `[]`), "main", []string{"image", "tts"}, []string{}, gAllow, gDeny, false},
		{"image from a group after other entries counts", g(`["read","group:media"]`, `[]`), "main", []string{"read", "image", "tts"}, []string{}, gAllow, gDeny, false},
		{"glob in allow does not count", g(`["ima*"]`, `[]`), "main", []string{"ima*", "image"}, []string{}, gAllow, gDeny, true},
		{"glob in deny does not count", g(`["read"]`, `["im*"]`), "main", []string{"read", "image"}, []string{"im*"}, gAllow, gDeny, true},
		{"empty allow stays empty", g(`[]`, ""), "main", []string{}, specSandboxDeny, gAllow, dDeny, false},
		{"blank-only allow is empty", g(`["  "]`, ""), "main", []string{}, specSandboxDeny, gAllow, dDeny, false},
		{"star allow gets image", g(`["*"]`, ""), "main", []string{"*", "image"}, specSandboxDeny, gAllow, dDeny, true},
		{"empty deny replaces the default", g("", `[]`), "main", specSandboxAllow, []string{}, dAllow, gDeny, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := ResolveSandboxPolicy(mustConfig(t, c.cfg), c.agent)
			if diff := cmp.Diff(c.allow, sp.Allow, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("allow (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.deny, sp.Deny, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deny (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.allowSrc, sp.Sources.Allow); diff != "" {
				t.Errorf("allow source (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.denySrc, sp.Sources.Deny); diff != "" {
				t.Errorf("deny source (-want +got):\n%s", diff)
			}
			if sp.ImageAdded != c.imageAdded {
				t.Errorf("ImageAdded = %v, want %v", sp.ImageAdded, c.imageAdded)
			}
		})
	}
}

// §5 The pipeline applies the sandbox policy with the §3.4 matcher (aliases,
// apply_patch passes when exec is allowed), only when the session is
// sandboxed; the per-agent policy applies even without an agent sandbox block.
func TestRulesSandboxStep(t *testing.T) {
	ap := `"exec":{"applyPatch":{"enabled":true}}`
	openai := withModel(ownerMain, "openai", "gpt-5.2")
	in := coreTools("read", "apply_patch", "exec", "image", "canvas")
	runEvalCases(t, []evalCase{
		{"apply_patch passes a sandbox exec allow",
			`{"tools":{` + ap + `,"sandbox":{"tools":{"allow":["exec"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`,
			openai, in, []string{"apply_patch", "exec", "image"}},
		{"sandbox deny exec keeps apply_patch",
			`{"tools":{` + ap + `,"sandbox":{"tools":{"allow":[],"deny":["exec"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`,
			openai, in, []string{"read", "apply_patch", "image", "canvas"}},
		{"not sandboxed: no sandbox step",
			`{"tools":{"sandbox":{"tools":{"allow":["read"]}}}}`, ownerMain, in, []string{"read", "exec", "image", "canvas"}},
		{"agent sandbox policy without an agent sandbox block",
			`{"agents":{"defaults":{"sandbox":{"mode":"all"}},"list":[{"id":"main","tools":{"sandbox":{"tools":{"allow":["read"],"deny":[]}}}}]}}`,
			ownerMain, in, []string{"read", "image"}},
		{"default sandbox hides web, memory, message, tts, agents_list and pdf",
			`{"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain, nil,
			[]string{"read", "edit", "write", "exec", "process", "sessions_list", "sessions_history", "sessions_send",
				"sessions_yield", "sessions_spawn", "subagents", "session_status", "image"}},
	})
}

// §8 Sandbox settings: each of mode, scope, workspaceAccess is the agent's,
// else agents.defaults', else off / agent / none; legacy perSession maps to
// session/shared when no scope is set; paths-only (Talon) reads as all.
func TestRulesResolveSandboxSettings(t *testing.T) {
	cases := []struct {
		name, cfg, agent    string
		mode, scope, access string
	}{
		{"defaults", `{}`, "main", ModeOff, "agent", AccessNone},
		{"from agents.defaults", `{"agents":{"defaults":{"sandbox":{"mode":"all","scope":"session","workspaceAccess":"rw"}}}}`, "main", ModeAll, "session", AccessRW},
		{"agent overrides each setting independently",
			`{"agents":{"defaults":{"sandbox":{"mode":"all","workspaceAccess":"ro","scope":"shared"}},"list":[{"id":"main","sandbox":{"workspaceAccess":"rw"}}]}}`,
			"main", ModeAll, "shared", AccessRW},
		{"agent mode off overrides all", `{"agents":{"defaults":{"sandbox":{"mode":"all"}},"list":[{"id":"main","sandbox":{"mode":"off"}}]}}`, "main", ModeOff, "agent", AccessNone},
		{"other agent's settings not used", `{"agents":{"list":[{"id":"main"},{"id":"ops","sandbox":{"mode":"all"}}]}}`, "main", ModeOff, "agent", AccessNone},
		{"agent found by normalised id", `{"agents":{"list":[{"id":"Ops","sandbox":{"mode":"non-main"}}]}}`, "OPS", ModeNonMain, "agent", AccessNone},
		{"perSession true", `{"agents":{"defaults":{"sandbox":{"perSession":true}}}}`, "main", ModeOff, "session", AccessNone},
		{"perSession false", `{"agents":{"defaults":{"sandbox":{"perSession":false}}}}`, "main", ModeOff, "shared", AccessNone},
		{"agent perSession overrides default perSession",
			`{"agents":{"defaults":{"sandbox":{"perSession":false}},"list":[{"id":"main","sandbox":{"perSession":true}}]}}`, "main", ModeOff, "session", AccessNone},
		{"scope beats perSession", `{"agents":{"defaults":{"sandbox":{"scope":"agent","perSession":true}}}}`, "main", ModeOff, "agent", AccessNone},
		// Picked: scope = agent.scope ?? defaults.scope first, then the
		// legacy perSession (agent ?? defaults), as resolveSandboxScope does.
		{"defaults scope beats agent perSession",
			`{"agents":{"defaults":{"sandbox":{"scope":"shared"}},"list":[{"id":"main","sandbox":{"perSession":true}}]}}`, "main", ModeOff, "shared", AccessNone},
		{"paths-only reads as all", `{"agents":{"defaults":{"sandbox":{"mode":"paths-only"}}}}`, "main", ModeAll, "agent", AccessNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ResolveSandboxSettings(mustConfig(t, c.cfg), c.agent)
			got := [3]string{s.Mode, s.Scope, s.WorkspaceAccess}
			want := [3]string{c.mode, c.scope, c.access}
			if got != want {
				t.Errorf("mode/scope/access = %q, want %q", got, want)
			}
		})
	}
}

// §8 Is this session sandboxed: empty key → no; off → no; all → yes;
// non-main → yes unless the canonicalised key is the agent's main key
// (main, the configured mainKey, agent:<id>:<mainKey>, agent:<id>:main are
// aliases; global under session.scope global; other keys compared as-is,
// case preserved).
func TestRulesIsSandboxed(t *testing.T) {
	nonMain := `{"agents":{"defaults":{"sandbox":{"mode":"non-main"}}}}`
	home := `{"session":{"mainKey":"Home"},"agents":{"defaults":{"sandbox":{"mode":"non-main"}}}}`
	global := `{"session":{"scope":"global"},"agents":{"defaults":{"sandbox":{"mode":"non-main"}}}}`
	perAgent := `{"agents":{"defaults":{"sandbox":{"mode":"non-main"}},"list":[{"id":"main"},{"id":"work","sandbox":{"mode":"all"}},{"id":"off","sandbox":{"mode":"off"}}]}}`
	cases := []struct {
		name, cfg, agent, key string
		want                  bool
	}{
		{"mode off", `{}`, "main", "agent:main:whatsapp:group:1", false},
		{"all: empty key", `{"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, "main", "", false},
		{"all: blank key", `{"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, "main", "   ", false},
		{"all: main session", `{"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, "main", "agent:main:main", true},
		{"paths-only: main session", `{"agents":{"defaults":{"sandbox":{"mode":"paths-only"}}}}`, "main", "agent:main:main", true},
		{"non-main: empty key", nonMain, "main", "", false},
		{"non-main: main session", nonMain, "main", "agent:main:main", false},
		{"non-main: main session, trimmed", nonMain, "main", "  agent:main:main ", false},
		{"non-main: bare main alias", nonMain, "main", "main", false},
		{"non-main: group session", nonMain, "main", "agent:main:whatsapp:group:1", true},
		{"non-main: per-peer DM", nonMain, "main", "agent:main:telegram:direct:42", true},
		{"non-main: another agent's main", nonMain, "main", "agent:work:main", true},
		// Picked: the aliases are matched by equality and every other key is
		// compared as-is, case preserved, so a mixed-case spelling of an
		// alias is not the main session.
		{"non-main: upper-case MAIN is not an alias", nonMain, "main", "MAIN", true},
		{"non-main: mixed-case agent main key is not an alias", nonMain, "main", "Agent:Main:Main", true},
		{"non-main: agent work main", nonMain, "work", "agent:work:main", false},
		{"non-main: bare main for agent work", nonMain, "work", "main", false},
		{"mainKey: bare mainKey alias", home, "main", "home", false},
		{"mainKey: agent mainKey", home, "main", "agent:main:home", false},
		{"mainKey: agent main still an alias", home, "main", "agent:main:main", false},
		{"mainKey: bare main alias", home, "main", "main", false},
		{"mainKey: other", home, "main", "agent:main:other", true},
		{"global scope: global", global, "main", "global", false},
		{"global scope: main alias", global, "main", "main", false},
		{"global scope: agent main alias", global, "main", "agent:main:main", false},
		{"global scope: case preserved for non-alias keys", global, "main", "Global", true},
		{"global scope: DM session", global, "main", "agent:main:telegram:dm:1", true},
		{"per-agent mode all", perAgent, "work", "agent:work:main", true},
		{"per-agent mode off", perAgent, "off", "agent:off:whatsapp:group:1", false},
		{"per-agent falls back to defaults", perAgent, "main", "agent:main:whatsapp:group:1", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsSandboxed(mustConfig(t, c.cfg), c.agent, c.key); got != c.want {
				t.Errorf("IsSandboxed(%q, %q) = %v, want %v", c.agent, c.key, got, c.want)
			}
		})
	}
}

// §8 Main key = global under session.scope global, else
// agent:<agentId>:<session.mainKey> (lower-cased, default main).
func TestRulesMainSessionKey(t *testing.T) {
	cases := []struct{ name, cfg, agent, want string }{
		{"default", `{}`, "main", "agent:main:main"},
		{"mainKey lower-cased and trimmed", `{"session":{"mainKey":" Home "}}`, "main", "agent:main:home"},
		{"agent id normalised", `{}`, " Work ", "agent:work:main"},
		{"global scope", `{"session":{"scope":"global","mainKey":"home"}}`, "work", "global"},
		{"per-sender scope", `{"session":{"scope":"per-sender"}}`, "main", "agent:main:main"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MainSessionKey(mustConfig(t, c.cfg), c.agent); got != c.want {
				t.Errorf("MainSessionKey = %q, want %q", got, c.want)
			}
		})
	}
}

// §4.2 Default agent: the first agents.list entry with default: true, else
// the first entry, else main (normalised).
func TestRulesDefaultAgentID(t *testing.T) {
	cases := []struct{ name, cfg, want string }{
		{"no list", `{}`, "main"},
		{"first entry", `{"agents":{"list":[{"id":"a"},{"id":"b"}]}}`, "a"},
		{"first default", `{"agents":{"list":[{"id":"a"},{"id":"b","default":true},{"id":"c","default":true}]}}`, "b"},
		{"default false skipped", `{"agents":{"list":[{"id":"a","default":false},{"id":"b"}]}}`, "a"},
		{"normalised", `{"agents":{"list":[{"id":"Ops Team","default":true}]}}`, "ops-team"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustConfig(t, c.cfg).DefaultAgentID(); got != c.want {
				t.Errorf("DefaultAgentID = %q, want %q", got, c.want)
			}
		})
	}
}

// §4.2 / §8 The sandbox agent is the one in the session key, else the
// default agent — independently of the agent whose tool policy applies.
func TestRulesSandboxAgent(t *testing.T) {
	cfg := `{"agents":{"list":[{"id":"a"},{"id":"b","default":true,"sandbox":{"mode":"all"}}]}}`
	cases := []struct {
		name      string
		ctx       Context
		sandboxed bool
		agent     string
	}{
		{"non-agent key: default agent's sandbox", Context{SessionKey: "telegram:dm:1", SenderIsOwner: true}, true, "main"},
		{"agent key: that agent's sandbox", Context{SessionKey: "agent:a:telegram:dm:1", SenderIsOwner: true}, false, "a"},
		{"agent key b", Context{SessionKey: "agent:b:main", SenderIsOwner: true}, true, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, cfg), c.ctx, coreTools("read"))
			if r.Sandboxed != c.sandboxed || r.AgentID != c.agent {
				t.Errorf("sandboxed %v agent %q, want %v %q", r.Sandboxed, r.AgentID, c.sandboxed, c.agent)
			}
		})
	}
}

// TestRulesBrowserGate covers Talon's construction rule for browser: not
// built in a sandboxed session, whatever the sandbox policy allows (its
// browser would run on the gateway host), with the key that sandboxes
// the session; not built when browser.enabled is false. OpenClaw's
// vectors (SandboxBrowser) keep it, as OpenClaw runs one in the sandbox.
func TestRulesBrowserGate(t *testing.T) {
	allow := `"tools":{"sandbox":{"tools":{"allow":["browser","read"],"deny":[]}}}`
	cases := []struct {
		name string
		cfg  string
		ctx  Context
		kept bool
		key  string
		why  string
	}{
		{"unsandboxed", `{}`, ownerMain, true, "", ""},
		{"sandboxed by the defaults", `{` + allow + `,"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain,
			false, "agents.defaults.sandbox.mode", BrowserSandboxed},
		{"sandboxed by the agent", `{` + allow + `,"agents":{"list":[{"id":"main","sandbox":{"mode":"all"}}]}}`, ownerMain,
			false, "agents.list[0].sandbox.mode", BrowserSandboxed},
		{"non-main session of non-main", `{` + allow + `,"agents":{"defaults":{"sandbox":{"mode":"non-main"}}}}`,
			Context{SessionKey: "agent:main:telegram:dm:42", SenderIsOwner: true}, false, "agents.defaults.sandbox.mode", BrowserSandboxed},
		{"main session of non-main", `{` + allow + `,"agents":{"defaults":{"sandbox":{"mode":"non-main"}}}}`, ownerMain, true, "", ""},
		{"disabled", `{"browser":{"enabled":false}}`, ownerMain, false, "browser.enabled", "disabled"},
		{"OpenClaw's sandbox browser", `{` + allow + `,"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`,
			Context{SessionKey: ownerMain.SessionKey, SenderIsOwner: true, SandboxBrowser: true}, true, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, coreTools("read", "browser"))
			if got := slices.Contains(r.Names(), "browser"); got != c.kept {
				t.Fatalf("browser kept = %v, want %v; trace %+v", got, c.kept, r.Removed)
			}
			if c.kept {
				return
			}
			want := Removal{Tool: "browser", Stage: StageConstruction, Key: c.key, Rule: RuleNotBuilt, Entry: c.why}
			if i := slices.IndexFunc(r.Removed, func(rm Removal) bool { return rm.Tool == "browser" }); i < 0 || r.Removed[i] != want {
				t.Errorf("trace %+v, want %+v", r.Removed, want)
			}
		})
	}
}
