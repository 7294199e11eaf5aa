package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHooksAndHeartbeatValidation: the hooks and heartbeat keys a tenant
// writes are refused, with the key and the reason, when they would widen
// what a hook request reaches (a transform, a payload-chosen session key
// without prefixes, an agent outside the allowlist) or cannot mean
// anything (a bad clock time, a zone, a cadence under a second).
func TestHooksAndHeartbeatValidation(t *testing.T) {
	const agents = `agents: {list: [{id: "main"}, {id: "ops"}]}, channels: {telegram: {enabled: true}}`
	tests := []struct {
		name string
		src  string
		want string // "path: message part", "" for valid
	}{
		{"a full valid config", `{` + agents + `, hooks: {enabled: true, token: "0123456789abcdef0123", path: "/hooks/", allowedAgentIds: ["main"],
			allowRequestSessionKey: true, allowedSessionKeyPrefixes: ["hook:"], defaultSessionKey: "hook:default",
			mappings: [{id: "gh", match: {path: "github"}, action: "agent", agentId: "main", sessionKey: "hook:gh:{{payload.id}}",
				messageTemplate: "GitHub {{headers.x-github-event}}", deliver: true, channel: "telegram", to: "111", timeoutSeconds: 60, forEach: "commits"}]},
			agents: {defaults: {heartbeat: {every: "30m", target: "last", ackMaxChars: 300, activeHours: {start: "08:00", end: "24:00", timezone: "Europe/Vienna"}}},
				list: [{id: "main", heartbeat: {every: "10s", target: "telegram", to: "1", directPolicy: "block"}}, {id: "ops"}]}}`, ""},
		{"enabled without a token", `{hooks: {enabled: true}}`, "hooks.token: hooks.enabled needs a non-empty token"},
		{"the root path", `{hooks: {path: "/"}}`, "hooks.path: expected a path"},
		{"a path escaping", `{hooks: {path: "/a/../b"}}`, "hooks.path: expected a path"},
		{"a transform", `{hooks: {mappings: [{match: {path: "x"}, transform: {module: "x.js"}}]}}`,
			"hooks.mappings[0].transform: JavaScript transforms are not supported by Talon"},
		{"a templated key without prefixes", `{hooks: {allowRequestSessionKey: true, mappings: [{sessionKey: "hook:{{id}}"}]}}`,
			"hooks.mappings[0].sessionKey: a templated session key needs hooks.allowedSessionKeyPrefixes"},
		{"a static key outside the prefixes", `{hooks: {allowedSessionKeyPrefixes: ["hook:"], mappings: [{sessionKey: "agent:main:main"}]}}`,
			"hooks.mappings[0].sessionKey: \"agent:main:main\" does not start with"},
		{"a default key outside the prefixes", `{hooks: {allowedSessionKeyPrefixes: ["hook:"], defaultSessionKey: "main"}}`,
			"hooks.defaultSessionKey: \"main\" does not start with"},
		{"an agent not allowed", `{` + agents + `, hooks: {allowedAgentIds: ["main"], mappings: [{agentId: "ops"}]}}`,
			"hooks.mappings[0].agentId: agent \"ops\" is not in hooks.allowedAgentIds"},
		{"an unknown agent", `{hooks: {mappings: [{agentId: "nobody"}]}}`, "hooks.mappings[0].agentId: unknown agent \"nobody\""},
		{"a nested forEach", `{hooks: {mappings: [{forEach: "a.b"}]}}`, "hooks.mappings[0].forEach: expected a top-level key"},
		{"a prototype forEach", `{hooks: {mappings: [{forEach: "__proto__"}]}}`, "hooks.mappings[0].forEach: expected a top-level key"},
		{"an unknown action", `{hooks: {mappings: [{action: "exec"}]}}`, "hooks.mappings[0].action: expected one of agent, wake"},
		{"persistent without a key", `{hooks: {mappings: [{sessionMode: "persistent"}]}}`, "hooks.mappings[0].sessionMode: a persistent mapping needs a sessionKey"},
		{"an unknown channel", `{hooks: {mappings: [{channel: "irc"}]}}`, "hooks.mappings[0].channel: expected last or a configured channel id"},
		{"a huge template", `{hooks: {mappings: [{messageTemplate: "` + strings.Repeat("x", MaxHookTemplate+1) + `"}]}}`, "hooks.mappings[0].messageTemplate: longer than"},
		{"too many mappings", `{hooks: {mappings: [` + strings.Repeat(`{},`, MaxHookMappings+1) + `]}}`, "hooks.mappings: more than 100 mappings"},
		{"every under a second", `{agents: {defaults: {heartbeat: {every: "500ms"}}}}`, "agents.defaults.heartbeat.every: heartbeat every \"500ms\" is shorter than a second"},
		{"every not a duration", `{agents: {defaults: {heartbeat: {every: "often"}}}}`, "agents.defaults.heartbeat.every: invalid duration"},
		{"a start of 24:00", `{agents: {defaults: {heartbeat: {activeHours: {start: "24:00", end: "08:00"}}}}}`,
			"agents.defaults.heartbeat.activeHours.start: expected a time from 00:00 to 23:59"},
		{"an end of 25:00", `{agents: {list: [{id: "a", heartbeat: {activeHours: {start: "08:00", end: "25:00"}}}]}}`,
			"agents.list[0].heartbeat.activeHours.end: expected a time from 00:00 to 24:00"},
		{"an unknown zone", `{agents: {defaults: {heartbeat: {activeHours: {start: "08:00", end: "09:00", timezone: "Mars/Base"}}}}}`,
			"agents.defaults.heartbeat.activeHours.timezone: unknown time zone"},
		{"an unknown target", `{agents: {defaults: {heartbeat: {target: "irc"}}}}`, "agents.defaults.heartbeat.target: expected last, none, owner"},
		{"a negative ack", `{agents: {defaults: {heartbeat: {ackMaxChars: -1}}}}`, "agents.defaults.heartbeat.ackMaxChars: expected an integer from 0"},
		{"a control character in to", `{agents: {defaults: {heartbeat: {to: "1\n2"}}}}`, "agents.defaults.heartbeat.to: contains a control character"},
		{"a direct policy", `{agents: {defaults: {heartbeat: {directPolicy: "maybe"}}}}`, "agents.defaults.heartbeat.directPolicy: expected one of allow, block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := decodeJSON5(t, tc.src)
			for _, w := range warns {
				if !strings.Contains(w.Message, "shorter than") && !strings.Contains(w.Message, "unknown agent") {
					t.Errorf("warning %s", w)
				}
			}
			issues := issuesOf(t, err)
			if tc.want == "" {
				if len(issues) > 0 {
					t.Fatalf("want valid, got %v", issues)
				}
				return
			}
			for _, is := range issues {
				if strings.Contains(is.String(), tc.want) {
					return
				}
			}
			t.Errorf("want an issue %q, got %v", tc.want, issues)
		})
	}
}

func TestHookTokenWarnings(t *testing.T) {
	_, warns, err := decodeJSON5(t, `{gateway: {auth: {token: "same"}}, hooks: {enabled: true, token: "same"}}`)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, w := range warns {
		got += w.String() + "\n"
	}
	for _, want := range []string{"hooks.token: shorter than 16 characters", "hooks.token: equals the gateway token"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
}

func TestHooksPathAndPolicy(t *testing.T) {
	for in, want := range map[string]string{"": "/hooks", "hooks/": "/hooks", "/a/b//": "/a/b", " /x ": "/x"} {
		if got := HooksPath(in); got != want {
			t.Errorf("HooksPath(%q) = %q, want %q", in, got, want)
		}
	}
	h := Hooks{AllowedSessionKeyPrefixes: List{" ", "Hook:"}}
	for key, want := range map[string]bool{"hook:a": true, "HOOK:b": true, "agent:main:hook:a": false, "": false} {
		if got := h.SessionKeyAllowed(key); got != want {
			t.Errorf("SessionKeyAllowed(%q) = %v, want %v", key, got, want)
		}
	}
	if !(&Hooks{AllowedSessionKeyPrefixes: List{"  "}}).SessionKeyAllowed("anything") {
		t.Error("blank prefixes restrict nothing")
	}
	for _, tc := range []struct {
		allowed List
		id      string
		want    bool
	}{{nil, "ops", true}, {List{}, "main", false}, {List{"*"}, "ops", true}, {List{"Main"}, "main", true}, {List{"main"}, "ops", false}} {
		if got := (&Hooks{AllowedAgentIDs: tc.allowed}).AgentAllowed(tc.id); got != tc.want {
			t.Errorf("AgentAllowed(%v, %q) = %v, want %v", tc.allowed, tc.id, got, tc.want)
		}
	}
	for in, want := range map[string]time.Duration{"": 30 * time.Minute, "0m": 0, "45": 45 * time.Minute, "10s": 10 * time.Second, "1h30m": 90 * time.Minute} {
		if got, err := HeartbeatEvery(in); err != nil || got != want {
			t.Errorf("HeartbeatEvery(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// TestHookTokenRedacted: config.get never shows hooks.token.
func TestHookTokenRedacted(t *testing.T) {
	const secret = "s3cret-hook-token-0123456789"
	tree := mustJSON5(t, `{hooks: {enabled: true, token: "`+secret+`", mappings: [{match: {path: "x"}, messageTemplate: "m"}]}}`)
	if out := string(RedactedJSON(tree)); strings.Contains(out, secret) || !strings.Contains(out, RedactedSentinel) {
		t.Errorf("redacted config %s", out)
	}
}

// TestBootMD: OpenClaw's selection of the bundled boot-md hook, and a
// warning for an entry naming a hook Talon does not have.
func TestBootMD(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		want  bool
		warns []string
	}{
		{"nothing", `{}`, false, nil},
		{"master on, no entries: open discovery", `{hooks: {internal: {enabled: true}}}`, true, nil},
		{"master off wins", `{hooks: {internal: {enabled: false, entries: {"boot-md": {enabled: true}}}}}`, false, nil},
		{"its entry, master unset", `{hooks: {internal: {entries: {"boot-md": {}}}}}`, true, nil},
		{"its entry disabled", `{hooks: {internal: {enabled: true, entries: {"boot-md": {enabled: false}}}}}`, false, nil},
		{"other entries are an allowlist without it", `{hooks: {internal: {enabled: true, entries: {"command-logger": {enabled: true}}}}}`, false,
			[]string{"hooks.internal.entries.command-logger: " + MsgUnused}},
		{"with another", `{hooks: {internal: {entries: {"boot-md": {enabled: true}, "session-memory": {enabled: false}}}}}`, true,
			[]string{"hooks.internal.entries.session-memory: " + MsgUnused}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warns, err := decodeJSON5(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Hooks.BootMD(); got != tt.want {
				t.Errorf("BootMD = %v, want %v", got, tt.want)
			}
			var got []string
			for _, w := range warns {
				got = append(got, w.String())
			}
			if !slices.Equal(got, tt.warns) {
				t.Errorf("warnings %q, want %q", got, tt.warns)
			}
		})
	}
}
