package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// §9.1 resolveEnableState, first matching rule wins: 1 plugins disabled,
// 2 deny, 3 entry enabled false, 4 workspace not allowed and not enabled,
// 5 memory slot, 6 allowlist, 7 entry enabled true, 8 bundled on by
// default, 9 bundled off, 10 other origins on; then the built-in chat
// channel bypass of "bundled (disabled by default)" only. allow/deny are
// trimmed, case kept.
func TestRulesPluginEnableState(t *testing.T) {
	const (
		off       = "plugins disabled"
		denied    = "blocked by denylist"
		disabled  = "disabled in config"
		workspace = "workspace plugin (disabled by default)"
		notAllow  = "not in allowlist"
		bundled   = "bundled (disabled by default)"
	)
	cases := []struct {
		name   string
		cfg    string
		id     string
		origin Origin
		on     bool
		reason string
	}{
		{"1 plugins disabled beats everything", `{"plugins":{"enabled":false,"allow":["memory-core"],"entries":{"memory-core":{"enabled":true}}}}`, "memory-core", OriginBundled, false, off},
		{"1 plugins disabled beats the channel bypass", `{"plugins":{"enabled":false},"channels":{"telegram":{"enabled":true}}}`, "telegram", OriginBundled, false, off},
		{"plugins enabled true is the default", `{"plugins":{"enabled":true}}`, "x", OriginConfig, true, ""},
		{"2 deny beats allow and entry", `{"plugins":{"deny":["x"],"allow":["x"],"entries":{"x":{"enabled":true}}}}`, "x", OriginConfig, false, denied},
		{"2 deny beats memory slot", `{"plugins":{"deny":["memory-core"]}}`, "memory-core", OriginBundled, false, denied},
		{"2 deny entries trimmed", `{"plugins":{"deny":[" x "]}}`, "x", OriginConfig, false, denied},
		{"2 deny keeps case", `{"plugins":{"deny":["X"]}}`, "x", OriginConfig, true, ""},
		{"3 entry false beats allow", `{"plugins":{"allow":["x"],"entries":{"x":{"enabled":false}}}}`, "x", OriginConfig, false, disabled},
		{"3 entry false beats memory slot", `{"plugins":{"entries":{"memory-core":{"enabled":false}}}}`, "memory-core", OriginBundled, false, disabled},
		{"3 entry false beats workspace rule", `{"plugins":{"entries":{"w":{"enabled":false}}}}`, "w", OriginWorkspace, false, disabled},
		{"4 workspace without allow or entry", `{}`, "w", OriginWorkspace, false, workspace},
		{"4 workspace in allow", `{"plugins":{"allow":["w"]}}`, "w", OriginWorkspace, true, ""},
		{"4 workspace in allow among others", `{"plugins":{"allow":["a","w"]}}`, "w", OriginWorkspace, true, ""},
		{"4 workspace beats memory slot", `{"plugins":{"slots":{"memory":"w"}}}`, "w", OriginWorkspace, false, workspace},
		{"4 workspace entry without enabled", `{"plugins":{"entries":{"w":{}}}}`, "w", OriginWorkspace, false, workspace},
		{"6 workspace with entry but other allowlist", `{"plugins":{"allow":["a"],"entries":{"w":{"enabled":true}}}}`, "w", OriginWorkspace, false, notAllow},
		{"5 custom memory slot beats allowlist", `{"plugins":{"allow":["other"],"slots":{"memory":"mem-x"}}}`, "mem-x", OriginBundled, true, ""},
		{"5 memory slot trimmed", `{"plugins":{"slots":{"memory":"  mem-x "}}}`, "mem-x", OriginBundled, true, ""},
		{"5 slot none disables memory-core's slot", `{"plugins":{"slots":{"memory":"none"}}}`, "memory-core", OriginBundled, false, bundled},
		{"5 slot NONE any case", `{"plugins":{"slots":{"memory":" NONE "}}}`, "memory-core", OriginBundled, false, bundled},
		{"5 blank slot means memory-core", `{"plugins":{"slots":{"memory":"  "}}}`, "memory-core", OriginBundled, true, ""},
		{"5 slot elsewhere: memory-core is just bundled", `{"plugins":{"slots":{"memory":"mem-x"}}}`, "memory-core", OriginBundled, false, bundled},
		{"6 not in allowlist (config origin)", `{"plugins":{"allow":["a"]}}`, "b", OriginConfig, false, notAllow},
		{"6 not in allowlist (global origin)", `{"plugins":{"allow":["a"]}}`, "b", OriginGlobal, false, notAllow},
		{"6 allowlist beats bundled default-on", `{"plugins":{"allow":["a"]}}`, "ollama", OriginBundled, false, notAllow},
		{"6 allowlist beats entry true", `{"plugins":{"allow":["a"],"entries":{"b":{"enabled":true}}}}`, "b", OriginConfig, false, notAllow},
		{"6 allow entries trimmed", `{"plugins":{"allow":[" b "]}}`, "b", OriginConfig, true, ""},
		{"6 allow keeps case", `{"plugins":{"allow":["B"]}}`, "b", OriginConfig, false, notAllow},
		{"6 blank-only allowlist restricts nothing", `{"plugins":{"allow":["  ",""]}}`, "b", OriginConfig, true, ""},
		{"7 entry true enables a bundled plugin", `{"plugins":{"entries":{"voice-call":{"enabled":true}}}}`, "voice-call", OriginBundled, true, ""},
		{"9 allowlisted bundled plugin still needs an entry", `{"plugins":{"allow":["voice-call"]}}`, "voice-call", OriginBundled, false, bundled},
		{"8 device-pair", `{}`, "device-pair", OriginBundled, true, ""},
		{"8 phone-control", `{}`, "phone-control", OriginBundled, true, ""},
		{"8 sglang", `{}`, "sglang", OriginBundled, true, ""},
		{"8 talk-voice", `{}`, "talk-voice", OriginBundled, true, ""},
		{"8 vllm", `{}`, "vllm", OriginBundled, true, ""},
		{"8 only for bundled origin: ollama from config", `{}`, "ollama", OriginConfig, true, ""},
		{"9 bundled off by default", `{}`, "lobster", OriginBundled, false, bundled},
		{"10 config origin on", `{}`, "lobster", OriginConfig, true, ""},
		{"channel bypass: telegram enabled", `{"channels":{"telegram":{"enabled":true}}}`, "telegram", OriginBundled, true, ""},
		{"channel bypass: line enabled", `{"channels":{"line":{"enabled":true}}}`, "line", OriginBundled, true, ""},
		{"channel bypass: enabled false", `{"channels":{"telegram":{"enabled":false}}}`, "telegram", OriginBundled, false, bundled},
		{"channel bypass: enabled missing", `{"channels":{"telegram":{}}}`, "telegram", OriginBundled, false, bundled},
		{"channel bypass: not a built-in chat channel", `{"channels":{"voice-call":{"enabled":true}}}`, "voice-call", OriginBundled, false, bundled},
		{"channel bypass does not lift the denylist", `{"plugins":{"deny":["slack"]},"channels":{"slack":{"enabled":true}}}`, "slack", OriginBundled, false, denied},
		{"channel bypass does not lift disabled in config", `{"plugins":{"entries":{"discord":{"enabled":false}}},"channels":{"discord":{"enabled":true}}}`, "discord", OriginBundled, false, disabled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := PluginEnableState(mustConfig(t, c.cfg), c.id, c.origin)
			want := EnableState{Enabled: c.on, Reason: c.reason}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(EnableState{}, "Key")); diff != "" {
				t.Errorf("PluginEnableState(%q, %s) (-want +got):\n%s", c.id, c.origin, diff)
			}
		})
	}
}

// §9.1 Memory slot: plugins.slots.memory trimmed; "none" (any case) →
// disabled; missing or blank → memory-core.
func TestRulesMemorySlot(t *testing.T) {
	cases := []struct{ name, cfg, want string }{
		{"missing", `{}`, "memory-core"},
		{"blank", `{"plugins":{"slots":{"memory":"   "}}}`, "memory-core"},
		{"none", `{"plugins":{"slots":{"memory":"none"}}}`, ""},
		{"None trimmed", `{"plugins":{"slots":{"memory":" None "}}}`, ""},
		{"custom trimmed", `{"plugins":{"slots":{"memory":" memory-lancedb "}}}`, "memory-lancedb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MemorySlot(&mustConfig(t, c.cfg).Plugins); got != c.want {
				t.Errorf("MemorySlot = %q, want %q", got, c.want)
			}
		})
	}
}

// §9.2 Optional plugin tools exist only when the explicit allowlist (every
// step's allow list, profiles without their alsoAllow, sandbox only when
// sandboxed) names the tool, its plugin id or group:plugins; "*" and globs
// never count; tools.alsoAllow counts through step 3's union.
func TestRulesOptionalPluginTools(t *testing.T) {
	opt := Registration{Plugin: "optional-demo", Name: "optional_tool", Optional: true}
	with := func(ctx Context, regs ...Registration) Context {
		ctx.Plugins = regs
		return ctx
	}
	main := with(Context{SessionKey: "agent:main:main"}, opt)
	in := coreTools("read", "exec")
	yes := []string{"read", "exec", "optional_tool"}
	no := []string{"read", "exec"}
	runEvalCases(t, []evalCase{
		{"named in tools.allow", `{"tools":{"allow":["read","exec","optional_tool"]}}`, main, in, yes},
		{"named in tools.allow, normalised", `{"tools":{"allow":["read","exec"," Optional_Tool "]}}`, main, in, yes},
		{"plugin id in tools.alsoAllow", `{"tools":{"alsoAllow":["optional-demo"]}}`, main, in, yes},
		{"group:plugins in tools.alsoAllow", `{"tools":{"alsoAllow":["group:plugins"]}}`, main, in, yes},
		{"star does not count", `{"tools":{"allow":["*"]}}`, main, in, no},
		{"glob does not count", `{"tools":{"allow":["read","exec","optional_*"]}}`, main, in, no},
		{"star in alsoAllow does not count", `{"tools":{"alsoAllow":["*"]}}`, main, in, no},
		{"deny does not count", `{"tools":{"deny":["optional_tool"]}}`, main, in, no},
		{"no allow list at all", `{}`, main, in, no},
		{"tools.alsoAllow counts beside a profile", `{"tools":{"profile":"coding","alsoAllow":["optional_tool"]}}`, main, in, yes},
		{"profile alone does not name it", `{"tools":{"profile":"coding"}}`, main, in, no},
		{"agent alsoAllow", `{"agents":{"list":[{"id":"main","tools":{"alsoAllow":["optional_tool"]}}]}}`, main, in, yes},
		{"byProvider alsoAllow", `{"tools":{"byProvider":{"openai":{"alsoAllow":["optional_tool"]}}}}`, withModel(main, "openai", "gpt-5.2"), in, yes},
		{"byProvider alsoAllow, other provider", `{"tools":{"byProvider":{"openai":{"alsoAllow":["optional_tool"]}}}}`, withModel(main, "anthropic", "x"), in, no},
		{"group alsoAllow", `{"channels":{"whatsapp":{"groups":{"g1":{"tools":{"alsoAllow":["optional_tool"]}}}}}}`,
			with(Context{SessionKey: "agent:main:whatsapp:group:g1"}, opt), in, yes},
		{"sandbox allow when sandboxed", `{"tools":{"sandbox":{"tools":{"allow":["read","exec","optional_tool"]}}},"agents":{"defaults":{"sandbox":{"mode":"all"}}}}`,
			main, in, yes},
		{"sandbox allow when not sandboxed", `{"tools":{"sandbox":{"tools":{"allow":["read","exec","optional_tool"]}}}}`, main, in, no},
		{"subagent allow on a subagent key", `{"tools":{"subagents":{"tools":{"allow":["read","exec","optional_tool"]}}}}`,
			with(Context{SessionKey: "agent:main:subagent:x"}, opt), in, yes},
		{"subagent allow on a main key", `{"tools":{"subagents":{"tools":{"allow":["read","exec","optional_tool"]}}}}`, main, in, no},
		{"non-optional tool needs no allow list", `{}`, with(Context{SessionKey: "agent:main:main"}, Registration{Plugin: "p", Name: "plain_tool"}), in,
			[]string{"read", "exec", "plain_tool"}},
	})
}

// §9.3 Plugin tool conflicts: a plugin whose normalised id is a native tool
// name loses all its tools; a tool whose exact name is a native tool, an
// earlier plugin tool or a duplicate in the same registration is dropped;
// read/write/edit/exec/process/apply_patch are not covered. Plugins off →
// no plugin tools; a registration with an origin is subject to its enable
// state.
func TestRulesPluginConflicts(t *testing.T) {
	in := []Tool{{Name: "read"}, {Name: "exec"}, {Name: "message"}, {Name: "browser"}, {Name: "memory_search", Plugin: "memory-core"}}
	base := []string{"read", "exec", "message", "browser", "memory_search"}
	regs := func(rs ...Registration) Context {
		ctx := ownerMain
		ctx.Plugins = rs
		return ctx
	}
	r := func(plugin, name string) Registration { return Registration{Plugin: plugin, Name: name} }
	cases := []struct {
		name    string
		cfg     string
		ctx     Context
		want    []string
		plugins map[string]string // surviving plugin tool → plugin id
	}{
		{"plugin id equal to a native tool drops all its tools", `{}`, regs(r("browser", "browser_extra"), r("browser", "other")), base, nil},
		{"plugin id compared normalised", `{}`, regs(r(" Browser ", "x1")), base, nil},
		{"plugin id equal to pdf (native, not a candidate here)", `{}`, regs(r("pdf", "pdf_extract")), base, nil},
		{"plugin id read is not a native tool", `{}`, regs(r("read", "read_more")), append(append([]string{}, base...), "read_more"),
			map[string]string{"read_more": "read"}},
		{"duplicate within one registration", `{}`, regs(r("multi", "foo"), r("multi", "foo"), r("multi", "bar")),
			append(append([]string{}, base...), "foo", "bar"), map[string]string{"foo": "multi", "bar": "multi"}},
		{"earlier plugin tool wins", `{}`, regs(r("a", "foo"), r("b", "foo"), r("b", "baz")),
			append(append([]string{}, base...), "foo", "baz"), map[string]string{"foo": "a", "baz": "b"}},
		{"candidate plugin tool counts as earlier", `{}`, regs(r("p", "memory_search"), r("p", "ok")),
			append(append([]string{}, base...), "ok"), map[string]string{"ok": "p"}},
		{"native tool name dropped, rest kept", `{}`, regs(r("p", "browser"), r("p", "ok")),
			append(append([]string{}, base...), "ok"), map[string]string{"ok": "p"}},
		{"exec not covered by the conflict check", `{}`, regs(r("p", "exec")),
			append(append([]string{}, base...), "exec"), map[string]string{"exec": "p"}},
		{"exact name compare", `{}`, regs(r("p", "Message")),
			append(append([]string{}, base...), "Message"), map[string]string{"Message": "p"}},
		{"plugins disabled: no plugin tools resolved", `{"plugins":{"enabled":false}}`, regs(r("p", "ok")), base, nil},
		{"disabled bundled plugin", `{}`, regs(Registration{Plugin: "voice-call", Name: "voice_call", Origin: OriginBundled}), base, nil},
		{"enabled bundled plugin", `{"plugins":{"entries":{"voice-call":{"enabled":true}}}}`,
			regs(Registration{Plugin: "voice-call", Name: "voice_call", Origin: OriginBundled}),
			append(append([]string{}, base...), "voice_call"), map[string]string{"voice_call": "voice-call"}},
		{"workspace plugin not allowed", `{}`, regs(Registration{Plugin: "ws", Name: "ws_tool", Origin: OriginWorkspace}), base, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Evaluate(mustConfig(t, c.cfg), c.ctx, in)
			if diff := cmp.Diff(c.want, res.Names()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			got := map[string]string{}
			for _, tool := range res.Tools[len(in):] {
				got[tool.Name] = tool.Plugin
			}
			if diff := cmp.Diff(c.plugins, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("resolved plugin tools (-want +got):\n%s", diff)
			}
			// Every registration not resolved is traced by the plugin stage.
			for _, reg := range c.ctx.Plugins {
				if _, ok := got[reg.Name]; ok && got[reg.Name] == reg.Plugin {
					continue
				}
				found := false
				for _, rm := range res.Removed {
					if rm.Tool == reg.Name && rm.Stage == StagePlugin {
						found = true
					}
				}
				if !found {
					t.Errorf("registration %s/%s neither resolved nor traced", reg.Plugin, reg.Name)
				}
			}
		})
	}
}

// §9.1 Loader extras: bundled memory-kind plugins also need the memory slot
// (slot null → "memory slot disabled"; slot names a different id →
// memory slot set to "<slot>"), whatever their enable state. memory-core is
// the bundled memory plugin (§1.3).
func TestRulesMemoryPluginNeedsSlot(t *testing.T) {
	reg := Registration{Plugin: "memory-core", Name: "memory_search", Origin: OriginBundled}
	ctx := ownerMain
	ctx.Plugins = []Registration{reg}
	cases := []struct {
		name string
		cfg  string
		want []string
	}{
		{"default slot loads it", `{}`, []string{"read", "memory_search"}},
		{"slot none, even when enabled by entry", `{"plugins":{"slots":{"memory":"none"},"entries":{"memory-core":{"enabled":true}}}}`, []string{"read"}},
		{"slot elsewhere, even when enabled by entry", `{"plugins":{"slots":{"memory":"memory-lancedb"},"entries":{"memory-core":{"enabled":true}}}}`, []string{"read"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, c.cfg), ctx, coreTools("read"))
			if diff := cmp.Diff(c.want, r.Names()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}
