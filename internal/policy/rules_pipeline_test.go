package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// evalCase is one full-pipeline run: config, run context, candidates and
// the surviving tool names.
type evalCase struct {
	name string
	cfg  string
	ctx  Context
	in   []Tool // nil means stdTools()
	want []string
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			if in == nil {
				in = stdTools()
			}
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, in)
			if diff := cmp.Diff(c.want, r.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools (-want +got):\n%s\ntrace: %+v\nwarnings: %q", diff, r.Removed, r.Warnings)
			}
		})
	}
}

// ownerMain is the usual run: the main session of agent main, owner sender.
var ownerMain = Context{SessionKey: "agent:main:main", SenderIsOwner: true}

func withModel(ctx Context, provider, model string) Context {
	ctx.ModelProvider, ctx.ModelID = provider, model
	return ctx
}

// ownerAll is STD as an owner gets it with no config: everything except
// apply_patch, which is never built without tools.exec.applyPatch.
var ownerAll = minus(specSTD, "apply_patch")

// §4.2 Agent id for tool policy: explicit agent id (normalised), else the id
// in an agent:<id>:<rest> key, else main when there is a key at all; no key
// and no agent id → no agent-level policy; an agent id without an
// agents.list entry gets only the global policy.
func TestRulesToolPolicyAgent(t *testing.T) {
	cfg := `{"tools":{"deny":["canvas"]},"agents":{"list":[
		{"id":"main","tools":{"deny":["read"]}},
		{"id":"Ops","tools":{"deny":["exec"]}}]}}`
	in := coreTools("read", "exec", "canvas", "web_fetch")
	cases := []struct {
		name      string
		ctx       Context
		want      []string
		wantAgent string
	}{
		{"no key and no agent: global only", Context{SenderIsOwner: true}, []string{"read", "exec", "web_fetch"}, ""},
		{"blank key and blank agent: global only", Context{SessionKey: "  ", AgentID: " ", SenderIsOwner: true}, []string{"read", "exec", "web_fetch"}, ""},
		{"non-agent key means main", Context{SessionKey: "whatsapp:group:1", SenderIsOwner: true}, []string{"exec", "web_fetch"}, "main"},
		{"agent key", Context{SessionKey: "agent:ops:main", SenderIsOwner: true}, []string{"read", "web_fetch"}, "ops"},
		{"agent key lower-cased", Context{SessionKey: "agent:OPS:main", SenderIsOwner: true}, []string{"read", "web_fetch"}, "ops"},
		{"explicit agent wins over key", Context{SessionKey: "agent:main:main", AgentID: " Ops ", SenderIsOwner: true}, []string{"read", "web_fetch"}, "ops"},
		{"explicit agent without key", Context{AgentID: "main", SenderIsOwner: true}, []string{"exec", "web_fetch"}, "main"},
		{"unknown agent from key: global only", Context{SessionKey: "agent:ghost:main", SenderIsOwner: true}, []string{"read", "exec", "web_fetch"}, "ghost"},
		{"unknown explicit agent: global only", Context{AgentID: "ghost", SenderIsOwner: true}, []string{"read", "exec", "web_fetch"}, "ghost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, cfg), c.ctx, in)
			if diff := cmp.Diff(c.want, r.Names()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if r.AgentID != c.wantAgent {
				t.Errorf("AgentID = %q, want %q", r.AgentID, c.wantAgent)
			}
		})
	}
}

// §4.2 The agent entry is the agents.list item whose normalised id equals
// the agent id; two ids that normalise alike resolve to the first.
func TestRulesAgentEntryByNormalisedID(t *testing.T) {
	cfg := mustConfig(t, `{"agents":{"list":[
		{"id":"My Agent","tools":{"deny":["read"]}},
		{"id":"my-agent","tools":{"deny":["exec"]}}]}}`)
	r := Evaluate(cfg, Context{SessionKey: "agent:my-agent:main", SenderIsOwner: true}, coreTools("read", "exec"))
	if diff := cmp.Diff([]string{"exec"}, r.Names()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := stageKey(&r, "read", "agents.my-agent.tools.allow"); got != "agents.list[0].tools.deny" {
		t.Errorf("read removed by key %q, want agents.list[0].tools.deny", got)
	}
}

// §4.3 allow / alsoAllow / deny → step policy: allow ∪ alsoAllow; an empty
// allow with alsoAllow becomes ["*", …]; alsoAllow alone never restricts;
// allow [] stays "no restriction"; deny still wins.
func TestRulesUnionAllow(t *testing.T) {
	in := coreTools("read", "exec", "process", "canvas")
	all := []string{"read", "exec", "process", "canvas"}
	openai := withModel(ownerMain, "openai", "gpt-5.2")
	runEvalCases(t, []evalCase{
		{"allow plus alsoAllow", `{"tools":{"allow":["read"],"alsoAllow":["exec"]}}`, ownerMain, in, []string{"read", "exec"}},
		{"empty allow plus alsoAllow is star", `{"tools":{"allow":[],"alsoAllow":["exec"]}}`, ownerMain, in, all},
		{"empty allow alone", `{"tools":{"allow":[]}}`, ownerMain, in, all},
		{"alsoAllow alone never restricts", `{"tools":{"alsoAllow":["exec"]}}`, ownerMain, in, all},
		{"empty alsoAllow alone", `{"tools":{"alsoAllow":[]}}`, ownerMain, in, all},
		{"allow with empty alsoAllow unchanged", `{"tools":{"allow":["read"],"alsoAllow":[]}}`, ownerMain, in, []string{"read"}},
		{"overlapping allow and alsoAllow", `{"tools":{"allow":["read"],"alsoAllow":["read","exec"]}}`, ownerMain, in, []string{"read", "exec"}},
		{"deny beats alsoAllow", `{"tools":{"alsoAllow":["canvas"],"deny":["canvas"]}}`, ownerMain, in, []string{"read", "exec", "process"}},
		{"agent alsoAllow alone", `{"agents":{"list":[{"id":"main","tools":{"alsoAllow":["exec"]}}]}}`, ownerMain, in, all},
		{"agent allow plus alsoAllow", `{"agents":{"list":[{"id":"main","tools":{"allow":["read"],"alsoAllow":["process"]}}]}}`, ownerMain, in, []string{"read", "process"}},
		{"agent empty allow plus alsoAllow", `{"agents":{"list":[{"id":"main","tools":{"allow":[],"alsoAllow":["exec"]}}]}}`, ownerMain, in, all},
		{"provider empty allow plus alsoAllow", `{"tools":{"byProvider":{"openai":{"allow":[],"alsoAllow":["exec"]}}}}`, openai, in, all},
		{"provider allow plus alsoAllow", `{"tools":{"byProvider":{"openai":{"allow":["read"],"alsoAllow":["exec"]}}}}`, openai, in, []string{"read", "exec"}},
	})
}

// §4.3 Profile alsoAllow (steps 1–2): the agent's tools.alsoAllow if it is
// an array, otherwise tools.alsoAllow (never merged); plus exec/process for
// a non-null exec section and read/write/edit for a non-null fs section in
// the agent or global tools config; appended only to a restricting profile.
func TestRulesProfileAlsoAllow(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"global alsoAllow extends profile",
			`{"tools":{"profile":"minimal","alsoAllow":["read"]}}`, ownerMain, nil,
			[]string{"read", "session_status"}},
		{"agent alsoAllow wins, not merged",
			`{"tools":{"profile":"minimal","alsoAllow":["read"]},"agents":{"list":[{"id":"main","tools":{"alsoAllow":["exec"]}}]}}`, ownerMain, nil,
			[]string{"exec", "session_status"}},
		{"agent empty alsoAllow array still wins",
			`{"tools":{"profile":"minimal","alsoAllow":["read"]},"agents":{"list":[{"id":"main","tools":{"alsoAllow":[]}}]}}`, ownerMain, nil,
			[]string{"session_status"}},
		{"agent profile takes global alsoAllow when the agent has none",
			`{"tools":{"alsoAllow":["read"]},"agents":{"list":[{"id":"main","tools":{"profile":"minimal"}}]}}`, ownerMain, nil,
			[]string{"read", "session_status"}},
		{"agent exec section adds exec and process",
			`{"tools":{"profile":"minimal"},"agents":{"list":[{"id":"main","tools":{"exec":{"host":"sandbox"}}}]}}`, ownerMain, nil,
			[]string{"exec", "process", "session_status"}},
		{"global fs section adds read write edit",
			`{"tools":{"profile":"messaging","fs":{}}}`, ownerMain, nil,
			[]string{"read", "edit", "write", "message", "sessions_list", "sessions_history", "sessions_send", "session_status"}},
		{"null exec section adds nothing",
			`{"tools":{"profile":"minimal","exec":null}}`, ownerMain, nil,
			[]string{"session_status"}},
		{"global exec and agent fs both",
			`{"tools":{"profile":"minimal","exec":{}},"agents":{"list":[{"id":"main","tools":{"fs":{}}}]}}`, ownerMain, nil,
			[]string{"read", "edit", "write", "exec", "process", "session_status"}},
		{"implicit plus explicit",
			`{"tools":{"profile":"minimal","alsoAllow":["canvas"],"exec":{}}}`, ownerMain, nil,
			[]string{"exec", "process", "canvas", "session_status"}},
		{"another agent's exec section does not count",
			`{"tools":{"profile":"minimal"},"agents":{"list":[{"id":"main"},{"id":"ops","tools":{"exec":{}}}]}}`, ownerMain, nil,
			[]string{"session_status"}},
		{"full profile: sections change nothing",
			`{"tools":{"profile":"full","exec":{}}}`, ownerMain, nil, ownerAll},
		{"agent unknown profile overrides the global profile",
			`{"tools":{"profile":"minimal"},"agents":{"list":[{"id":"main","tools":{"profile":"nope"}}]}}`, ownerMain, nil, ownerAll},
		{"agent full profile overrides the global profile",
			`{"tools":{"profile":"minimal"},"agents":{"list":[{"id":"main","tools":{"profile":"full"}}]}}`, ownerMain, nil, ownerAll},
		{"unknown profile: sections change nothing",
			`{"tools":{"profile":"nope","exec":{},"alsoAllow":["read"]}}`, ownerMain, nil, ownerAll},
	})
}

// §2 Unknown profile id → no profile policy. The ids are minimal, coding,
// messaging, full; OpenClaw looks them up exactly (TOOL_PROFILES[profile]),
// and Talon's own config validator reports "Coding" as an unknown profile
// whose policy does not apply.
func TestRulesProfileIDExact(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"Coding is not coding", `{"tools":{"profile":"Coding"}}`, ownerMain, nil, ownerAll},
		{"agent MINIMAL is not minimal", `{"agents":{"list":[{"id":"main","tools":{"profile":"MINIMAL"}}]}}`, ownerMain, nil, ownerAll},
	})
}

// §4.4 byProvider lookup: only with a model provider; keys trimmed and
// lower-cased, blank keys ignored; the full model key (provider/ prefix
// unless the id already has a "/") beats the bare provider; exactly one
// entry is used; global and agent maps are looked up separately.
func TestRulesByProvider(t *testing.T) {
	in := coreTools("read", "exec", "process", "canvas")
	all := []string{"read", "exec", "process", "canvas"}
	m := func(p, id string) Context { return withModel(ownerMain, p, id) }
	runEvalCases(t, []evalCase{
		{"key trimmed and lower-cased", `{"tools":{"byProvider":{" OpenAI ":{"allow":["read"]}}}}`, m("openai", "gpt-5.2"), in, []string{"read"}},
		{"provider and model normalised", `{"tools":{"byProvider":{"openai":{"allow":["read"]}}}}`, m(" OpenAI ", "GPT-5.2"), in, []string{"read"}},
		{"model id lower-cased for the full key", `{"tools":{"byProvider":{"openai/gpt-5.2":{"allow":["read"]}}}}`, m("openai", "GPT-5.2"), in, []string{"read"}},
		{"full key wins, provider entry not merged",
			`{"tools":{"byProvider":{"openai/gpt-5.2":{"deny":["canvas"]},"openai":{"allow":["read"]}}}}`, m("openai", "gpt-5.2"), in,
			[]string{"read", "exec", "process"}},
		{"other model falls back to provider",
			`{"tools":{"byProvider":{"openai/gpt-5.2":{"deny":["canvas"]},"openai":{"allow":["read"]}}}}`, m("openai", "gpt-4.1"), in,
			[]string{"read"}},
		{"model id with slash is the full key",
			`{"tools":{"byProvider":{"anthropic/claude-sonnet-4":{"allow":["read"]}}}}`, m("openrouter", "anthropic/claude-sonnet-4"), in,
			[]string{"read"}},
		{"model id with slash is not prefixed",
			`{"tools":{"byProvider":{"openrouter/anthropic/claude-sonnet-4":{"allow":["read"]}}}}`, m("openrouter", "anthropic/claude-sonnet-4"), in,
			all},
		{"slash model key beats provider",
			`{"tools":{"byProvider":{"openrouter":{"deny":["read"]},"anthropic/claude-sonnet-4":{"allow":["exec"]}}}}`, m("openrouter", "anthropic/claude-sonnet-4"), in,
			[]string{"exec"}},
		{"slash model falls back to provider",
			`{"tools":{"byProvider":{"openrouter":{"deny":["read"]}}}}`, m("openrouter", "anthropic/claude-sonnet-4"), in,
			[]string{"exec", "process", "canvas"}},
		{"no provider: no entry", `{"tools":{"byProvider":{"openai":{"deny":["read"]}}}}`, m("", "gpt-5.2"), in, all},
		{"no model: provider entry only", `{"tools":{"byProvider":{"openai/gpt-5.2":{"allow":["read"]},"openai":{"deny":["canvas"]}}}}`, m("openai", ""), in,
			[]string{"read", "exec", "process"}},
		{"blank key ignored", `{"tools":{"byProvider":{"  ":{"deny":["read"]}}}}`, m("openai", "gpt-5.2"), in, all},
		{"bare model key is not a candidate", `{"tools":{"byProvider":{"gpt-5.2":{"deny":["read"]}}}}`, m("openai", "gpt-5.2"), in, all},
		{"agent byProvider (step 6)",
			`{"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"deny":["exec"]}}}}]}}`, m("openai", "gpt-5.2"), in,
			[]string{"read", "process", "canvas"}},
		{"global and agent maps chosen separately",
			`{"tools":{"byProvider":{"openai":{"allow":["read","exec"]}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai/gpt-5.2":{"deny":["exec"]}}}}]}}`,
			m("openai", "gpt-5.2"), in, []string{"read"}},
		{"agent map uses one entry too",
			`{"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai/gpt-5.2":{"deny":["canvas"]},"openai":{"deny":["read"]}}}}]}}`,
			m("openai", "gpt-5.2"), in, []string{"read", "exec", "process"}},
		{"another agent's byProvider not applied",
			`{"agents":{"list":[{"id":"main"},{"id":"ops","tools":{"byProvider":{"openai":{"deny":["read"]}}}}]}}`,
			m("openai", "gpt-5.2"), in, all},
	})
}

// §4.4 / §4.3 Provider profile (step 2): the agent entry's profile wins over
// the global entry's; its alsoAllow is the agent entry's alsoAllow if an
// array, else the global entry's — explicit only (no implicit exec/fs
// section, no tools.alsoAllow).
func TestRulesProviderProfile(t *testing.T) {
	openai := withModel(ownerMain, "openai", "gpt-5.2")
	runEvalCases(t, []evalCase{
		{"agent entry profile wins",
			`{"tools":{"byProvider":{"openai":{"profile":"minimal"}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"profile":"messaging"}}}}]}}`,
			openai, nil, []string{"message", "sessions_list", "sessions_history", "sessions_send", "session_status"}},
		{"agent entry profile wins across different keys",
			`{"tools":{"byProvider":{"openai":{"profile":"coding"}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai/gpt-5.2":{"profile":"minimal"}}}}]}}`,
			openai, nil, []string{"session_status"}},
		{"global profile with agent alsoAllow",
			`{"tools":{"byProvider":{"openai":{"profile":"minimal","alsoAllow":["read"]}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"alsoAllow":["exec"]}}}}]}}`,
			openai, nil, []string{"exec", "session_status"}},
		{"agent empty alsoAllow array wins",
			`{"tools":{"byProvider":{"openai":{"profile":"minimal","alsoAllow":["read"]}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"alsoAllow":[]}}}}]}}`,
			openai, nil, []string{"session_status"}},
		{"agent-only provider profile",
			`{"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"profile":"minimal"}}}}]}}`,
			openai, nil, []string{"session_status"}},
		{"no implicit exec section in the provider profile",
			`{"tools":{"exec":{},"byProvider":{"openai":{"profile":"minimal"}}}}`,
			openai, nil, []string{"session_status"}},
		{"tools.alsoAllow does not extend the provider profile",
			`{"tools":{"alsoAllow":["read"],"byProvider":{"openai":{"profile":"minimal"}}}}`,
			openai, nil, []string{"session_status"}},
		{"agent entry unknown profile overrides the global entry's",
			`{"tools":{"byProvider":{"openai":{"profile":"minimal"}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"profile":"nope"}}}}]}}`,
			openai, nil, ownerAll},
		{"provider profile full restricts nothing",
			`{"tools":{"byProvider":{"openai":{"profile":"full"}}}}`,
			openai, nil, ownerAll},
	})
	t.Run("trace names the agent entry's profile key", func(t *testing.T) {
		cfg := mustConfig(t, `{"tools":{"byProvider":{"openai":{"profile":"minimal"}}},"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"profile":"messaging"}}}}]}}`)
		r := Evaluate(cfg, openai, stdTools())
		rm, _ := removalOf(&r, "read")
		want := Removal{Tool: "read", Stage: "tools.byProvider.profile (messaging)", Key: "agents.list[0].tools.byProvider.openai.profile", Rule: RuleNotAllowed}
		if diff := cmp.Diff(want, rm); diff != "" {
			t.Errorf("removal of read (-want +got):\n%s", diff)
		}
	})
}

// Warning suffixes of §4.7, verbatim.
const (
	wIgnoring = "Ignoring allowlist so core tools remain available. "
	wCore     = "These entries are shipped core tools but unavailable in the current runtime/provider/model/config."
	wPlugin   = "These entries won't match any tool unless the plugin is enabled."
	wMixed    = "Some entries are shipped core tools but unavailable in the current runtime/provider/model/config; other entries won't match any tool unless the plugin is enabled."
)

func unknownWarn(label, entries string, dropped bool, suffix string) string {
	s := "tools: " + label + " allowlist contains unknown entries (" + entries + "). "
	if dropped {
		s += wIgnoring
	}
	return s + suffix
}

// §4.7 Unknown entries and the plugin-only strip: warning wording per
// suffix variant, "Ignoring allowlist…" only when the list is dropped,
// de-duplicated unknown entries, group:memory alone ignored, core tools
// removed earlier (owner-only, not built) count as unknown, globs never
// count as core; and Result.Ignored records step, key and why.
func TestRulesUnknownEntries(t *testing.T) {
	nonOwner := Context{SessionKey: "agent:main:main"}
	// What a non-owner keeps of STD with no policy.
	nonOwnerAll := minus(specSTD, "apply_patch", "whatsapp_login", "nodes", "cron", "gateway")
	cases := []struct {
		name     string
		allow    string // JSON array for tools.allow
		want     []string
		warnings []string
		why      string // "" = no ignored allow list
	}{
		{"all unknown are core ids", `["apply_patch","nodes"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "apply_patch, nodes", true, wCore)}, WhyUnavailableCore},
		{"none are core ids", `["wat","foo"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "wat, foo", true, wPlugin)}, WhyUnknown},
		{"mixed core ids and others, dropped", `["apply_patch","wat"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "apply_patch, wat", true, wMixed)}, WhyMixed},
		{"kept list warns without Ignoring", `["read","wat"]`, []string{"read"},
			[]string{unknownWarn("tools.allow", "wat", false, wPlugin)}, ""},
		{"kept list, mixed unknowns", `["read","cron","wat"]`, []string{"read"},
			[]string{unknownWarn("tools.allow", "cron, wat", false, wMixed)}, ""},
		{"owner-only tool removed earlier is unknown", `["read","cron"]`, []string{"read"},
			[]string{unknownWarn("tools.allow", "cron", false, wCore)}, ""},
		{"owner-only tool alone: list dropped", `["cron"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "cron", true, wCore)}, WhyUnavailableCore},
		{"unknown entries de-duplicated after normalising", `["wat","WAT"," wat ","read"]`, []string{"read"},
			[]string{unknownWarn("tools.allow", "wat", false, wPlugin)}, ""},
		{"group:memory alone is ignored", `["group:memory"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "group:memory", true, wPlugin)}, WhyUnknown},
		{"core group without available members is unknown", `["group:automation"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "group:automation", true, wPlugin)}, WhyUnknown},
		{"plugin tool and plugin id only: dropped silently", `["memory_search","memory-core"]`, nonOwnerAll, nil, WhyPluginOnly},
		{"group:plugins and plugin tool only", `["group:plugins","memory_get"]`, nonOwnerAll, nil, WhyPluginOnly},
		{"globs only", `["web_*","mem*"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "web_*, mem*", true, wPlugin)}, WhyGlobsOnly},
		{"plugin plus unknown: dropped", `["memory_search","wat"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "wat", true, wPlugin)}, WhyMixed},
		{"star counts as core", `["*"]`, nonOwnerAll, nil, ""},
		{"star keeps the list, other entries still warn", `["*","wat"]`, nonOwnerAll,
			[]string{unknownWarn("tools.allow", "wat", false, wPlugin)}, ""},
		{"alias is core", `["BASH"]`, []string{"exec"}, nil, ""},
		{"core group with one available member is core", `["group:fs"]`, []string{"read", "edit", "write"}, nil, ""},
		{"core plus group:plugins", `["read","group:plugins"]`, []string{"read", "memory_search", "memory_get"}, nil, ""},
		{"blank-only list is no list", `["  ",""]`, nonOwnerAll, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustConfig(t, `{"tools":{"allow":`+c.allow+`}}`)
			r := Evaluate(cfg, nonOwner, stdTools())
			if diff := cmp.Diff(c.want, r.Names()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.warnings, r.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			var want []IgnoredAllowlist
			if c.why != "" {
				want = []IgnoredAllowlist{{Step: "tools.allow", Key: "tools.allow", Why: c.why}}
			}
			if diff := cmp.Diff(want, r.Ignored, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(IgnoredAllowlist{}, "Entries")); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
		})
	}
}

// §4.1 / §4.7 Step labels in warnings and the keys of ignored allow lists
// for every analysed step; warnings are not de-duplicated in 2026.3.13.
func TestRulesUnknownEntryLabels(t *testing.T) {
	rw := coreTools("read", "exec")
	cases := []struct {
		name     string
		cfg      string
		ctx      Context
		in       []Tool
		warnings []string
		ignored  []IgnoredAllowlist
	}{
		{"profile step", `{"tools":{"profile":"minimal"}}`, ownerMain, rw,
			[]string{unknownWarn("tools.profile (minimal)", "session_status", true, wCore)},
			[]IgnoredAllowlist{{Step: "tools.profile (minimal)", Key: "tools.profile", Why: WhyUnavailableCore}}},
		{"provider profile step", `{"tools":{"byProvider":{"openai":{"profile":"minimal"}}}}`, withModel(ownerMain, "openai", "gpt-5.2"), rw,
			[]string{unknownWarn("tools.byProvider.profile (minimal)", "session_status", true, wCore)},
			[]IgnoredAllowlist{{Step: "tools.byProvider.profile (minimal)", Key: "tools.byProvider.openai.profile", Why: WhyUnavailableCore}}},
		{"global provider step", `{"tools":{"byProvider":{"openai":{"allow":["wat"]}}}}`, withModel(ownerMain, "openai", "gpt-5.2"), rw,
			[]string{unknownWarn("tools.byProvider.allow", "wat", true, wPlugin)},
			[]IgnoredAllowlist{{Step: "tools.byProvider.allow", Key: "tools.byProvider.openai.allow", Why: WhyUnknown}}},
		{"agent step", `{"agents":{"list":[{"id":"main","tools":{"allow":["wat"]}}]}}`, ownerMain, rw,
			[]string{unknownWarn("agents.main.tools.allow", "wat", true, wPlugin)},
			[]IgnoredAllowlist{{Step: "agents.main.tools.allow", Key: "agents.list[0].tools.allow", Why: WhyUnknown}}},
		{"agent provider step", `{"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai":{"allow":["wat"]}}}}]}}`, withModel(ownerMain, "openai", "gpt-5.2"), rw,
			[]string{unknownWarn("agents.main.tools.byProvider.allow", "wat", true, wPlugin)},
			[]IgnoredAllowlist{{Step: "agents.main.tools.byProvider.allow", Key: "agents.list[0].tools.byProvider.openai.allow", Why: WhyUnknown}}},
		{"group step", `{"channels":{"whatsapp":{"groups":{"*":{"tools":{"allow":["wat"]}}}}}}`,
			Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true}, rw,
			[]string{unknownWarn("group tools.allow", "wat", true, wPlugin)},
			[]IgnoredAllowlist{{Step: "group tools.allow", Key: `channels.whatsapp.groups["*"].tools.allow`, Why: WhyUnknown}}},
		{"agent label uses the normalised agent id", `{"agents":{"list":[{"id":"main"},{"id":"Ops","tools":{"allow":["wat"]}}]}}`,
			Context{SessionKey: "agent:ops:main", SenderIsOwner: true}, rw,
			[]string{unknownWarn("agents.ops.tools.allow", "wat", true, wPlugin)},
			[]IgnoredAllowlist{{Step: "agents.ops.tools.allow", Key: "agents.list[1].tools.allow", Why: WhyUnknown}}},
		{"alsoAllow-only list warns but is kept", `{"tools":{"alsoAllow":["wat"]}}`, ownerMain, rw,
			[]string{unknownWarn("tools.allow", "wat", false, wPlugin)}, nil},
		{"same unknown in two steps warns twice", `{"tools":{"allow":["wat"]},"agents":{"list":[{"id":"main","tools":{"allow":["wat"]}}]}}`, ownerMain, rw,
			[]string{unknownWarn("tools.allow", "wat", true, wPlugin), unknownWarn("agents.main.tools.allow", "wat", true, wPlugin)},
			[]IgnoredAllowlist{{Step: "tools.allow", Key: "tools.allow", Why: WhyUnknown}, {Step: "agents.main.tools.allow", Key: "agents.list[0].tools.allow", Why: WhyUnknown}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, c.in)
			if diff := cmp.Diff(c.warnings, r.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.ignored, r.Ignored, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(IgnoredAllowlist{}, "Entries")); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"read", "exec"}, r.Names()); diff != "" {
				t.Errorf("every ignored list keeps the core tools (-want +got):\n%s", diff)
			}
		})
	}
}

// §4.7 The sandbox (8) and subagent (9) steps never get the unknown-entry
// analysis or the strip.
func TestRulesAnalysisSkipsSandboxAndSubagent(t *testing.T) {
	cases := []struct {
		name string
		cfg  string
		ctx  Context
		in   []Tool
		want []string
	}{
		{"sandbox allow of unknown names restricts",
			`{"tools":{"sandbox":{"tools":{"allow":["wat"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`,
			ownerMain, coreTools("read", "exec", "image"), []string{"image"}},
		{"sandbox allow of plugin tools only restricts",
			`{"tools":{"sandbox":{"tools":{"allow":["memory-core"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`,
			ownerMain, nil, []string{"image", "memory_search", "memory_get"}},
		{"subagent allow of unknown names restricts",
			`{"tools":{"subagents":{"tools":{"allow":["wat"]}}}}`,
			Context{SessionKey: "agent:main:subagent:x", SenderIsOwner: true}, coreTools("read", "exec"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			if in == nil {
				in = stdTools()
			}
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, in)
			if diff := cmp.Diff(c.want, r.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if len(r.Warnings) != 0 || len(r.Ignored) != 0 {
				t.Errorf("warnings %q, ignored %+v; want none", r.Warnings, r.Ignored)
			}
		})
	}
}

// §4.7 coreTools is computed once from the tools entering the pipeline, not
// per step: a tool an earlier step removed still counts as core later, so
// a later allow list naming only it is kept (and a later allow never brings
// the tool back, §4.1).
func TestRulesCoreToolsComputedOnce(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"agent allow of a globally denied tool is kept and removes the rest",
			`{"tools":{"deny":["exec"]},"agents":{"list":[{"id":"main","tools":{"allow":["exec"]}}]}}`,
			ownerMain, coreTools("read", "exec"), nil},
	})
}

// §1.3 Construction-time gating: apply_patch (applyPatch.enabled, OpenAI
// providers, allowModels by bare id or provider/model, case-insensitive;
// the agent's applyPatch object replaces the global one; not in an ro
// sandbox), write/edit only outside an ro sandbox, web toggles, message
// disabled by the caller, bash always dropped.
func TestRulesConstructionGating(t *testing.T) {
	in := coreTools("read", "edit", "write", "apply_patch", "exec", "process", "message", "web_search", "web_fetch", "bash")
	base := []string{"read", "edit", "write", "apply_patch", "exec", "process", "message", "web_search", "web_fetch"}
	noAP := minus(base, "apply_patch")
	noWriters := minus(base, "edit", "write", "apply_patch")
	m := func(p, id string) Context { return withModel(ownerMain, p, id) }
	ap := `{"tools":{"exec":{"applyPatch":{"enabled":true}}}}`
	apModels := func(models string) string {
		return `{"tools":{"exec":{"applyPatch":{"enabled":true,"allowModels":` + models + `}}}}`
	}
	// An open sandbox policy, so only construction gating removes tools.
	openSandbox := `"tools":{"exec":{"applyPatch":{"enabled":true}},"sandbox":{"tools":{"allow":[],"deny":[]}}}`
	noMsg := m("openai", "gpt-5.2")
	noMsg.NoMessageTool = true
	runEvalCases(t, []evalCase{
		{"no applyPatch config", `{}`, m("openai", "gpt-5.2"), in, noAP},
		{"enabled, openai", ap, m("openai", "gpt-5.2"), in, base},
		{"provider trimmed and lower-cased", ap, m(" OpenAI ", "gpt-5.2"), in, base},
		{"openai-codex", ap, m("openai-codex", "gpt-5.2"), in, base},
		{"other provider", ap, m("anthropic", "claude-opus-4"), in, noAP},
		{"provider containing openai is not openai", ap, m("azure-openai", "gpt-5.2"), in, noAP},
		{"no provider", ap, ownerMain, in, noAP},
		{"enabled false", `{"tools":{"exec":{"applyPatch":{"enabled":false}}}}`, m("openai", "gpt-5.2"), in, noAP},
		{"allowModels bare id, case-insensitive", apModels(`["GPT-5.2"]`), m("openai", "gpt-5.2"), in, base},
		{"allowModels provider/model, case-insensitive", apModels(`["OpenAI/GPT-5.2"]`), m("openai", "gpt-5.2"), in, base},
		{"allowModels model id case-insensitive", apModels(`["gpt-5.2"]`), m("openai", "GPT-5.2"), in, base},
		{"allowModels other provider prefix", apModels(`["openai/gpt-5.2"]`), m("openai-codex", "gpt-5.2"), in, noAP},
		{"allowModels miss", apModels(`["gpt-5.2"]`), m("openai", "gpt-4.1"), in, noAP},
		{"allowModels empty means any", apModels(`[]`), m("openai", "gpt-4.1"), in, base},
		{"agent applyPatch replaces global (allowModels not inherited)",
			`{"tools":{"exec":{"applyPatch":{"enabled":true,"allowModels":["gpt-5.2"]}}},"agents":{"list":[{"id":"main","tools":{"exec":{"applyPatch":{"enabled":true}}}}]}}`,
			m("openai", "gpt-4.1"), in, base},
		{"agent applyPatch replaces global (enabled not inherited)",
			`{"tools":{"exec":{"applyPatch":{"enabled":true}}},"agents":{"list":[{"id":"main","tools":{"exec":{"applyPatch":{"allowModels":["gpt-5.2"]}}}}]}}`,
			m("openai", "gpt-5.2"), in, noAP},
		{"agent applyPatch disabled",
			`{"tools":{"exec":{"applyPatch":{"enabled":true}}},"agents":{"list":[{"id":"main","tools":{"exec":{"applyPatch":{"enabled":false}}}}]}}`,
			m("openai", "gpt-5.2"), in, noAP},
		{"agent exec section without applyPatch keeps global",
			`{"tools":{"exec":{"applyPatch":{"enabled":true}}},"agents":{"list":[{"id":"main","tools":{"exec":{"host":"gateway"}}}]}}`,
			m("openai", "gpt-5.2"), in, base},
		{"agent-only applyPatch",
			`{"agents":{"list":[{"id":"main","tools":{"exec":{"applyPatch":{"enabled":true}}}}]}}`,
			m("openai", "gpt-5.2"), in, base},
		{"another agent's applyPatch not used",
			`{"agents":{"list":[{"id":"main"},{"id":"ops","tools":{"exec":{"applyPatch":{"enabled":true}}}}]}}`,
			m("openai", "gpt-5.2"), in, noAP},
		{"ro but not sandboxed keeps writers",
			`{` + openSandbox + `,"agents":{"defaults":{"sandbox":{"mode":"off","workspaceAccess":"ro"}}}}`,
			m("openai", "gpt-5.2"), in, base},
		{"ro, non-main, main session keeps writers",
			`{` + openSandbox + `,"agents":{"defaults":{"sandbox":{"mode":"non-main","workspaceAccess":"ro"}}}}`,
			m("openai", "gpt-5.2"), in, base},
		{"ro, non-main, other session drops writers",
			`{` + openSandbox + `,"agents":{"defaults":{"sandbox":{"mode":"non-main","workspaceAccess":"ro"}}}}`,
			withModel(Context{SessionKey: "agent:main:whatsapp:group:1", SenderIsOwner: true}, "openai", "gpt-5.2"), in, noWriters},
		{"agent ro overrides default rw",
			`{` + openSandbox + `,"agents":{"defaults":{"sandbox":{"mode":"all","workspaceAccess":"rw"}},"list":[{"id":"main","sandbox":{"workspaceAccess":"ro"}}]}}`,
			m("openai", "gpt-5.2"), in, noWriters},
		{"sandboxed rw keeps writers",
			`{` + openSandbox + `,"agents":{"defaults":{"sandbox":{"mode":"all","workspaceAccess":"rw"}}}}`,
			m("openai", "gpt-5.2"), in, base},
		{"web search disabled", `{"tools":{"web":{"search":{"enabled":false}}}}`, m("openai", "gpt-5.2"), in, minus(noAP, "web_search")},
		{"web fetch disabled", `{"tools":{"web":{"fetch":{"enabled":false}}}}`, m("openai", "gpt-5.2"), in, minus(noAP, "web_fetch")},
		{"web enabled true", `{"tools":{"web":{"search":{"enabled":true},"fetch":{"enabled":true}}}}`, m("openai", "gpt-5.2"), in, noAP},
		{"bash dropped even when allowed", `{"tools":{"allow":["bash","read"]}}`, m("openai", "gpt-5.2"), in, []string{"read", "exec"}},
		{"message disabled by the caller", `{}`, noMsg, in, minus(noAP, "message")},
	})
}

// §4.1 Pre-filters, in order: memory flush (only read and write), message
// provider voice removes tts (exact, case-sensitive tool name), xAI-family
// models remove web_search.
func TestRulesPrefilters(t *testing.T) {
	flush := ownerMain
	flush.MemoryFlush = true
	voice := ownerMain
	voice.MessageProvider = "voice"
	tg := ownerMain
	tg.MessageProvider = "telegram"
	runEvalCases(t, []evalCase{
		{"memory flush keeps only read and write", `{}`, flush, nil, []string{"read", "write"}},
		{"voice drops tts, exact name only", `{}`, voice, coreTools("read", "tts", "TTS"), []string{"read", "TTS"}},
		{"other message provider keeps tts", `{}`, tg, coreTools("read", "tts"), []string{"read", "tts"}},
	})
	t.Run("memory flush runs before owner-only", func(t *testing.T) {
		ctx := flush
		ctx.SenderIsOwner = false
		r := Evaluate(mustConfig(t, `{}`), ctx, stdTools())
		if rm, _ := removalOf(&r, "cron"); rm.Stage != StageMemoryFlush {
			t.Errorf("cron removed by %q, want %q", rm.Stage, StageMemoryFlush)
		}
	})

	// xAI family: provider contains xai or x-ai; openrouter with a model
	// starting x-ai/; venice with a model containing grok.
	xai := []struct {
		provider, model string
		drops           bool
	}{
		{"xai", "grok-4", true},
		{"XAI", "grok-4", true},
		{"x-ai", "grok-4", true},
		{"my-xai-proxy", "anything", true},
		{"openrouter", "x-ai/grok-4", true},
		{"openrouter", "openai/gpt-5.2", false},
		{"openrouter", "xai/grok-4", false},
		{"venice", "grok-3-mini", true},
		{"venice", "llama-3.3", false},
		{"openai", "grok", false},
		{"anthropic", "claude-opus-4", false},
	}
	for _, c := range xai {
		t.Run("xai "+c.provider+" "+c.model, func(t *testing.T) {
			r := Evaluate(mustConfig(t, `{}`), withModel(ownerMain, c.provider, c.model), coreTools("web_search", "web_fetch"))
			want := []string{"web_search", "web_fetch"}
			if c.drops {
				want = []string{"web_fetch"}
				if rm, _ := removalOf(&r, "web_search"); rm.Stage != StageModelProvider {
					t.Errorf("web_search removed by %q, want %q", rm.Stage, StageModelProvider)
				}
			}
			if diff := cmp.Diff(want, r.Names()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

// §7 Owner-only tools: ownerOnly flag or normalised name in whatsapp_login,
// cron, gateway, nodes; removed unless the sender is the owner; it runs
// before the policy steps.
func TestRulesOwnerOnly(t *testing.T) {
	in := []Tool{
		{Name: "read"}, {Name: "cron"}, {Name: "Cron"}, {Name: " NODES "}, {Name: "gateway"},
		{Name: "whatsapp_login"}, {Name: "custom_admin", OwnerOnly: true},
		{Name: "plugin_cron_like", Plugin: "p", OwnerOnly: true}, {Name: "cron_helper"},
	}
	all := []string{"read", "cron", "Cron", " NODES ", "gateway", "whatsapp_login", "custom_admin", "plugin_cron_like", "cron_helper"}
	runEvalCases(t, []evalCase{
		{"non-owner", `{}`, Context{SessionKey: "agent:main:main"}, in, []string{"read", "cron_helper"}},
		{"owner keeps them", `{}`, ownerMain, in, all},
		{"owner keeps them under an allow list naming them", `{"tools":{"allow":["cron","gateway","read"]}}`, ownerMain, in,
			[]string{"read", "cron", "Cron", "gateway"}},
	})
}

// §3.1 Tool names being tested are normalised too: a tool literally named
// "Bash" is matched as exec.
func TestRulesToolNamedBash(t *testing.T) {
	ctx := ownerMain
	ctx.Plugins = []Registration{{Plugin: "shell", Name: "Bash"}}
	runEvalCases(t, []evalCase{
		{"deny exec removes Bash", `{"tools":{"deny":["exec"]}}`, ctx, coreTools("read", "exec"), []string{"read"}},
		{"allow exec keeps Bash", `{"tools":{"allow":["exec"]}}`, ctx, coreTools("read", "exec"), []string{"exec", "Bash"}},
		{"allow bash keeps Bash", `{"tools":{"allow":["bash"]}}`, ctx, coreTools("read", "exec"), []string{"exec", "Bash"}},
		{"allow read drops Bash", `{"tools":{"allow":["read"]}}`, ctx, coreTools("read", "exec"), []string{"read"}},
	})
}

// §4.1 Side effect: exec runs in the background only if process is allowed
// by every raw policy (the matcher, without the plugin-only strip).
func TestRulesExecBackground(t *testing.T) {
	sub := Context{SessionKey: "agent:main:subagent:x", SenderIsOwner: true}
	grp := Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true}
	cases := []struct {
		name string
		cfg  string
		ctx  Context
		want bool
	}{
		{"no config", `{}`, ownerMain, true},
		{"global deny process", `{"tools":{"deny":["process"]}}`, ownerMain, false},
		{"global allow exec only", `{"tools":{"allow":["exec"]}}`, ownerMain, false},
		{"stripped allow list still counts raw", `{"tools":{"allow":["wat"]}}`, ownerMain, false},
		{"group:runtime allows process", `{"tools":{"allow":["group:runtime"]}}`, ownerMain, true},
		{"messaging profile", `{"tools":{"profile":"messaging"}}`, ownerMain, false},
		{"coding profile", `{"tools":{"profile":"coding"}}`, ownerMain, true},
		{"default sandbox allows process", `{"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain, true},
		{"sandbox deny process", `{"tools":{"sandbox":{"tools":{"deny":["process"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`, ownerMain, false},
		{"sandbox deny process, not sandboxed", `{"tools":{"sandbox":{"tools":{"deny":["process"]}}}}`, ownerMain, true},
		{"subagent defaults", `{}`, sub, true},
		{"subagent deny process", `{"tools":{"subagents":{"tools":{"deny":["process"]}}}}`, sub, false},
		{"subagent deny process, main session", `{"tools":{"subagents":{"tools":{"deny":["process"]}}}}`, ownerMain, true},
		{"group deny process", `{"channels":{"whatsapp":{"groups":{"g1":{"tools":{"deny":["process"]}}}}}}`, grp, false},
		{"provider deny process", `{"tools":{"byProvider":{"openai":{"deny":["process"]}}}}`, withModel(ownerMain, "openai", "gpt-5.2"), false},
		{"provider deny process, other provider", `{"tools":{"byProvider":{"openai":{"deny":["process"]}}}}`, withModel(ownerMain, "anthropic", "x"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, coreTools("read", "exec", "process"))
			if r.ExecBackground != c.want {
				t.Errorf("ExecBackground = %v, want %v", r.ExecBackground, c.want)
			}
		})
	}
}

// §4.1 and the trace: every removal names the stage (the step label of
// §4.1 or a pre-filter) and the config key that caused it; lists that are
// built-in defaults are flagged Default, with the key to override.
func TestRulesTraceKeys(t *testing.T) {
	nonOwner := Context{SessionKey: "agent:main:main"}
	openai := withModel(ownerMain, "openai", "gpt-5.2")
	sb := `"agents":{"defaults":{"sandbox":{"mode":"all"}}}`
	sub := Context{SessionKey: "agent:main:subagent:x", SenderIsOwner: true}
	voice := ownerMain
	voice.MessageProvider = "voice"
	flush := ownerMain
	flush.MemoryFlush = true
	alice := Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true, Sender: Sender{ID: "alice"}}
	cases := []struct {
		name string
		cfg  string
		ctx  Context
		want Removal // Entry is compared only when set
	}{
		{"global deny", `{"tools":{"deny":["canvas"]}}`, ownerMain,
			Removal{Tool: "canvas", Stage: "tools.allow", Key: "tools.deny", Rule: RuleDenied, Entry: "canvas"}},
		{"global allow", `{"tools":{"allow":["read"]}}`, ownerMain,
			Removal{Tool: "exec", Stage: "tools.allow", Key: "tools.allow", Rule: RuleNotAllowed}},
		{"agent deny at index 1", `{"agents":{"list":[{"id":"main"},{"id":"work","tools":{"deny":["group:runtime"]}}]}}`,
			Context{SessionKey: "agent:work:main", SenderIsOwner: true},
			Removal{Tool: "exec", Stage: "agents.work.tools.allow", Key: "agents.list[1].tools.deny", Rule: RuleDenied, Entry: "group:runtime"}},
		{"agent allow at index 1", `{"agents":{"list":[{"id":"main"},{"id":"work","tools":{"allow":["read"]}}]}}`,
			Context{SessionKey: "agent:work:main", SenderIsOwner: true},
			Removal{Tool: "exec", Stage: "agents.work.tools.allow", Key: "agents.list[1].tools.allow", Rule: RuleNotAllowed}},
		{"byProvider model key", `{"tools":{"byProvider":{"openai/gpt-5.2":{"allow":["read"]}}}}`, openai,
			Removal{Tool: "exec", Stage: "tools.byProvider.allow", Key: `tools.byProvider["openai/gpt-5.2"].allow`, Rule: RuleNotAllowed}},
		{"byProvider provider key", `{"tools":{"byProvider":{"openai":{"deny":["exec"]}}}}`, openai,
			Removal{Tool: "exec", Stage: "tools.byProvider.allow", Key: "tools.byProvider.openai.deny", Rule: RuleDenied, Entry: "exec"}},
		{"agent byProvider", `{"agents":{"list":[{"id":"main","tools":{"byProvider":{"openai/gpt-5.2":{"deny":["exec"]}}}}]}}`, openai,
			Removal{Tool: "exec", Stage: "agents.main.tools.byProvider.allow", Key: `agents.list[0].tools.byProvider["openai/gpt-5.2"].deny`, Rule: RuleDenied, Entry: "exec"}},
		{"group default entry", `{"channels":{"whatsapp":{"groups":{"*":{"tools":{"allow":["read"]}}}}}}`,
			Context{SessionKey: "agent:main:whatsapp:group:g1", SenderIsOwner: true},
			Removal{Tool: "exec", Stage: "group tools.allow", Key: `channels.whatsapp.groups["*"].tools.allow`, Rule: RuleNotAllowed}},
		{"group sender entry", `{"channels":{"whatsapp":{"groups":{"g1":{"toolsBySender":{"id:alice":{"deny":["exec"]}}}}}}}`, alice,
			Removal{Tool: "exec", Stage: "group tools.allow", Key: `channels.whatsapp.groups.g1.toolsBySender["id:alice"].deny`, Rule: RuleDenied, Entry: "exec"}},
		{"profile", `{"tools":{"profile":"minimal"}}`, ownerMain,
			Removal{Tool: "exec", Stage: "tools.profile (minimal)", Key: "tools.profile", Rule: RuleNotAllowed}},
		{"agent profile", `{"agents":{"list":[{"id":"main","tools":{"profile":"minimal"}}]}}`, ownerMain,
			Removal{Tool: "exec", Stage: "tools.profile (minimal)", Key: "agents.list[0].tools.profile", Rule: RuleNotAllowed}},
		{"provider profile", `{"tools":{"byProvider":{"openai":{"profile":"minimal"}}}}`, openai,
			Removal{Tool: "exec", Stage: "tools.byProvider.profile (minimal)", Key: "tools.byProvider.openai.profile", Rule: RuleNotAllowed}},
		{"sandbox default deny", `{` + sb + `}`, ownerMain,
			Removal{Tool: "canvas", Stage: "sandbox tools.allow", Key: "tools.sandbox.tools.deny", Default: true, Rule: RuleDenied, Entry: "canvas"}},
		{"browser in a sandbox", `{` + sb + `}`, ownerMain,
			Removal{Tool: "browser", Stage: StageConstruction, Key: "agents.defaults.sandbox.mode", Rule: RuleNotBuilt, Entry: BrowserSandboxed}},
		{"sandbox default allow", `{` + sb + `}`, ownerMain,
			Removal{Tool: "message", Stage: "sandbox tools.allow", Key: "tools.sandbox.tools.allow", Default: true, Rule: RuleNotAllowed}},
		{"sandbox global allow", `{"tools":{"sandbox":{"tools":{"allow":["read"]}}},` + sb + `}`, ownerMain,
			Removal{Tool: "exec", Stage: "sandbox tools.allow", Key: "tools.sandbox.tools.allow", Rule: RuleNotAllowed}},
		{"sandbox default deny beside a global allow", `{"tools":{"sandbox":{"tools":{"allow":["*"]}}},` + sb + `}`, ownerMain,
			Removal{Tool: "canvas", Stage: "sandbox tools.allow", Key: "tools.sandbox.tools.deny", Default: true, Rule: RuleDenied, Entry: "canvas"}},
		{"sandbox agent allow",
			`{"agents":{"defaults":{"sandbox":{"mode":"all"}},"list":[{"id":"main"},{"id":"work","tools":{"sandbox":{"tools":{"allow":["read"],"deny":["image"]}}}}]}}`,
			Context{SessionKey: "agent:work:main", SenderIsOwner: true},
			Removal{Tool: "exec", Stage: "sandbox tools.allow", Key: "agents.list[1].tools.sandbox.tools.allow", Rule: RuleNotAllowed}},
		{"sandbox agent deny",
			`{"agents":{"defaults":{"sandbox":{"mode":"all"}},"list":[{"id":"main"},{"id":"work","tools":{"sandbox":{"tools":{"allow":["read"],"deny":["image"]}}}}]}}`,
			Context{SessionKey: "agent:work:main", SenderIsOwner: true},
			Removal{Tool: "image", Stage: "sandbox tools.allow", Key: "agents.list[1].tools.sandbox.tools.deny", Rule: RuleDenied, Entry: "image"}},
		// Like the sandbox defaults: the built-in subagent deny list is not
		// written in the config, so the removal is marked Default.
		{"subagent built-in deny", `{}`, sub,
			Removal{Tool: "cron", Stage: "subagent tools.allow", Key: "tools.subagents.tools.deny", Default: true, Rule: RuleDenied, Entry: "cron"}},
		{"subagent configured deny", `{"tools":{"subagents":{"tools":{"deny":["browser"]}}}}`, sub,
			Removal{Tool: "browser", Stage: "subagent tools.allow", Key: "tools.subagents.tools.deny", Rule: RuleDenied, Entry: "browser"}},
		{"owner-only", `{}`, nonOwner,
			Removal{Tool: "cron", Stage: StageOwnerOnly, Key: "commands.ownerAllowFrom", Rule: RuleOwnerOnly}},
		{"web search disabled", `{"tools":{"web":{"search":{"enabled":false}}}}`, ownerMain,
			Removal{Tool: "web_search", Stage: StageConstruction, Key: "tools.web.search.enabled", Rule: RuleNotBuilt}},
		{"web fetch disabled", `{"tools":{"web":{"fetch":{"enabled":false}}}}`, ownerMain,
			Removal{Tool: "web_fetch", Stage: StageConstruction, Key: "tools.web.fetch.enabled", Rule: RuleNotBuilt}},
		{"apply_patch not enabled", `{}`, openai,
			Removal{Tool: "apply_patch", Stage: StageConstruction, Key: "tools.exec.applyPatch.enabled", Rule: RuleNotBuilt}},
		{"apply_patch allowModels miss", `{"tools":{"exec":{"applyPatch":{"enabled":true,"allowModels":["gpt-4.1"]}}}}`, openai,
			Removal{Tool: "apply_patch", Stage: StageConstruction, Key: "tools.exec.applyPatch.allowModels", Rule: RuleNotBuilt}},
		{"agent apply_patch allowModels miss", `{"agents":{"list":[{"id":"main","tools":{"exec":{"applyPatch":{"enabled":true,"allowModels":["gpt-4.1"]}}}}]}}`, openai,
			Removal{Tool: "apply_patch", Stage: StageConstruction, Key: "agents.list[0].tools.exec.applyPatch.allowModels", Rule: RuleNotBuilt}},
		{"ro default", `{"agents":{"defaults":{"sandbox":{"mode":"all","workspaceAccess":"ro"}}}}`, ownerMain,
			Removal{Tool: "write", Stage: StageConstruction, Key: "agents.defaults.sandbox.workspaceAccess", Rule: RuleNotBuilt}},
		{"ro agent", `{"agents":{"defaults":{"sandbox":{"mode":"all"}},"list":[{"id":"main","sandbox":{"workspaceAccess":"ro"}}]}}`, ownerMain,
			Removal{Tool: "edit", Stage: StageConstruction, Key: "agents.list[0].sandbox.workspaceAccess", Rule: RuleNotBuilt}},
		{"voice", `{}`, voice, Removal{Tool: "tts", Stage: StageMessageProvider, Rule: RuleProviderBlock}},
		{"xai", `{}`, withModel(ownerMain, "xai", "grok-4"), Removal{Tool: "web_search", Stage: StageModelProvider, Rule: RuleProviderBlock}},
		{"memory flush", `{}`, flush, Removal{Tool: "exec", Stage: StageMemoryFlush, Rule: RuleNotBuilt}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, stdTools())
			got, ok := removalOf(&r, c.want.Tool)
			if !ok {
				t.Fatalf("%s not removed; tools %q", c.want.Tool, r.Names())
			}
			opts := []cmp.Option{}
			if c.want.Entry == "" {
				opts = append(opts, cmpopts.IgnoreFields(Removal{}, "Entry"))
			}
			if diff := cmp.Diff(c.want, got, opts...); diff != "" {
				t.Errorf("removal (-want +got):\n%s", diff)
			}
		})
	}
}

// A run's own cap (Context.RunAllow, a cron job's payload.toolsAllow)
// applies after the nine steps, with its key in the trace; it can only
// narrow what the steps let through, and an empty list removes all.
func TestRunAllow(t *testing.T) {
	in := coreTools("read", "exec", "web_fetch", "message")
	const key = "cron job j1 payload.toolsAllow"
	for _, c := range []struct {
		name  string
		cfg   string
		allow []string
		want  []string
	}{
		{"no cap", `{}`, nil, []string{"read", "exec", "web_fetch", "message"}},
		{"names and groups", `{}`, []string{"read", "group:web"}, []string{"read", "web_fetch"}},
		{"empty removes all", `{}`, []string{}, nil},
		{"never widens", `{"tools":{"deny":["exec"]}}`, []string{"read", "exec"}, []string{"read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ownerMain
			ctx.RunAllow, ctx.RunAllowKey = c.allow, key
			r := Evaluate(mustConfig(t, c.cfg), ctx, in)
			if diff := cmp.Diff(c.want, r.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("tools (-want +got):\n%s", diff)
			}
			if c.allow != nil && len(c.want) < 4 && c.name != "never widens" {
				if got := stageKey(&r, "message", StepRun); got != key {
					t.Errorf("message removed by %+v, want the run step with key %q", r.Removed, key)
				}
			}
		})
	}
}
