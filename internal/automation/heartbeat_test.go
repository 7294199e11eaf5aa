package automation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
)

// TestHeartbeatReply is conformance vector 7 and R9.4's edges.
func TestHeartbeatReply(t *testing.T) {
	alert400 := strings.Repeat("disk full! ", 36) + "abcd" // 400 characters
	if len(alert400) != 400 {
		t.Fatalf("alert400 has %d characters", len(alert400))
	}
	tests := []struct {
		name, text  string
		ack         int
		kind, deliv string
	}{
		{"vector 7: the token alone", "HEARTBEAT_OK", 300, HeartbeatOKToken, ""},
		{"vector 7: a short note and the token", "All quiet. HEARTBEAT_OK", 300, HeartbeatOKToken, ""},
		{"vector 7: 400 characters of alert", alert400 + " HEARTBEAT_OK", 300, HeartbeatAlert, alert400},
		{"vector 7: the token in the middle", "Check HEARTBEAT_OK later please, the server is down", 300, HeartbeatAlert,
			"Check HEARTBEAT_OK later please, the server is down"},
		{"empty", "  \n ", 300, HeartbeatOKEmpty, ""},
		{"NO_REPLY", " no_reply ", 300, HeartbeatOKToken, ""},
		{"no token", "Server down", 300, HeartbeatAlert, "Server down"},
		{"bold token", "**HEARTBEAT_OK**", 300, HeartbeatOKToken, ""},
		{"code token", "`HEARTBEAT_OK`", 300, HeartbeatOKToken, ""},
		{"html token", "<b>HEARTBEAT_OK</b>&nbsp;", 300, HeartbeatOKToken, ""},
		{"trailing punctuation", "Nothing new. HEARTBEAT_OK.", 300, HeartbeatOKToken, ""},
		{"leading and trailing, repeatedly", "HEARTBEAT_OK HEARTBEAT_OK fine HEARTBEAT_OK", 300, HeartbeatOKToken, ""},
		{"ack 0 makes any text an alert", "All quiet. HEARTBEAT_OK", 0, HeartbeatAlert, "All quiet."},
		{"the measure collapses whitespace, delivery keeps lines", "a\n\n\n\nb HEARTBEAT_OK", 3, HeartbeatOKToken, ""},
		{"an alert keeps its line breaks", "line one\nline two HEARTBEAT_OK", 5, HeartbeatAlert, "line one\nline two"},
		{"a longer word is not the token", "HEARTBEAT_OKAY then", 300, HeartbeatAlert, "HEARTBEAT_OKAY then"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, deliver := HeartbeatReply(tc.text, tc.ack)
			if kind != tc.kind || deliver != tc.deliv {
				t.Errorf("HeartbeatReply(%q, %d) = %q, %q; want %q, %q", tc.text, tc.ack, kind, deliver, tc.kind, tc.deliv)
			}
		})
	}
}

// TestEmptyChecklist is conformance vector 8 (a missing file is not
// content: the caller runs the heartbeat) and R9.3's list.
func TestEmptyChecklist(t *testing.T) {
	tests := []struct {
		name, md string
		want     bool
	}{
		{"vector 8", "# Checklist\n\n- [ ]\n", true},
		{"empty file", "", true},
		{"comments, fences, stubs", "<!-- keep\nthis -->\n## Tasks\n```markdown\n```\n* \n+ [x]\n- [ ]  \r\n", true},
		{"a task", "# Checklist\n- [ ] check the backups\n", false},
		{"plain text", "Look at the queue.", false},
		{"a hashtag is not a heading", "#urgent", false},
		{"text after a comment", "<!-- x --> ping the team", false},
		{"an unclosed comment hides the rest", "<!-- draft\n- call Bob\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EmptyChecklist(tc.md); got != tc.want {
				t.Errorf("EmptyChecklist(%q) = %v, want %v", tc.md, got, tc.want)
			}
		})
	}
}

// TestInActiveHours is conformance vector 9 and the §9.1 window rules.
func TestInActiveHours(t *testing.T) {
	vienna, err := time.LoadLocation("Europe/Vienna")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2027, 3, 1, h, m, 0, 0, vienna) }
	tests := []struct {
		name   string
		hours  config.ActiveHours
		t      time.Time
		userTZ string
		want   bool
	}{
		{"vector 9: start == end never", config.ActiveHours{Start: "08:00", End: "08:00"}, at(8, 0), "Europe/Vienna", false},
		{"vector 9: also at another time", config.ActiveHours{Start: "08:00", End: "08:00"}, at(15, 0), "Europe/Vienna", false},
		{"start is inside", config.ActiveHours{Start: "08:00", End: "22:00"}, at(8, 0), "Europe/Vienna", true},
		{"end is outside", config.ActiveHours{Start: "08:00", End: "22:00"}, at(22, 0), "Europe/Vienna", false},
		{"24:00 ends at midnight", config.ActiveHours{Start: "08:00", End: "24:00"}, at(23, 59), "Europe/Vienna", true},
		{"across midnight, late", config.ActiveHours{Start: "22:00", End: "06:00"}, at(23, 0), "Europe/Vienna", true},
		{"across midnight, early", config.ActiveHours{Start: "22:00", End: "06:00"}, at(5, 59), "Europe/Vienna", true},
		{"across midnight, day", config.ActiveHours{Start: "22:00", End: "06:00"}, at(12, 0), "Europe/Vienna", false},
		{"the user's zone by default", config.ActiveHours{Start: "08:00", End: "09:00"}, at(8, 30).UTC(), "Europe/Vienna", true},
		{"an explicit zone wins", config.ActiveHours{Start: "08:00", End: "09:00", Timezone: "UTC"}, at(8, 30), "Europe/Vienna", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := InActiveHours(tc.hours, tc.t, tc.userTZ)
			if err != nil || got != tc.want {
				t.Errorf("InActiveHours = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := InActiveHours(config.ActiveHours{Start: "8:00", End: "09:00"}, at(8, 0), ""); err == nil || !strings.Contains(err.Error(), "activeHours.start") {
		t.Errorf("a bad start: err %v", err)
	}
	if _, err := InActiveHours(config.ActiveHours{Start: "08:00", End: "09:00", Timezone: "Mars/Base"}, at(8, 0), ""); err == nil {
		t.Error("an unknown zone: no error")
	}
}

// TestHeartbeatAgents is R9.1: which agents run, each block merged over
// the defaults key by key.
func TestHeartbeatAgents(t *testing.T) {
	ten, two := 10, 2
	yes := true
	defaults := &config.Heartbeat{Every: "1h", Target: "last", AckMaxChars: &ten, LightContext: &yes,
		ActiveHours: &config.ActiveHours{Start: "08:00", End: "22:00"}}
	base := HeartbeatSettings{Prompt: HeartbeatPrompt, DirectPolicy: "allow", AckMaxChars: DefaultAckMaxChars}
	tests := []struct {
		name string
		cfg  config.Config
		want []HeartbeatSettings
	}{
		{"no config: the default agent, every 30 min, target none", config.Config{},
			[]HeartbeatSettings{with(base, func(s *HeartbeatSettings) {
				s.AgentID, s.Every, s.Target, s.Timeout = "main", 30*time.Minute, "none", 10*time.Minute
			})}},
		{"defaults only: the default agent", config.Config{Agents: config.Agents{Defaults: config.AgentDefaults{Heartbeat: defaults, TimeoutSeconds: &two},
			List: []config.Agent{{ID: "a"}, {ID: "B", Default: &yes}}}},
			[]HeartbeatSettings{with(base, func(s *HeartbeatSettings) {
				s.AgentID, s.Every, s.Target, s.AckMaxChars, s.LightContext = "b", time.Hour, "last", 10, true
				s.ActiveHours, s.Timeout = defaults.ActiveHours, 2*time.Second
			})}},
		{"blocks: only those agents, merged", config.Config{Agents: config.Agents{Defaults: config.AgentDefaults{Heartbeat: defaults},
			List: []config.Agent{{ID: "a"}, {ID: "ops", Heartbeat: &config.Heartbeat{Every: "0m", Target: "telegram", To: "1", Prompt: "Check."}},
				{ID: "x", Heartbeat: &config.Heartbeat{TimeoutSeconds: &two}}}}},
			[]HeartbeatSettings{
				with(base, func(s *HeartbeatSettings) {
					s.AgentID, s.Every, s.Target, s.To, s.Prompt, s.AckMaxChars, s.LightContext = "ops", 0, "telegram", "1", "Check.", 10, true
					s.ActiveHours, s.Timeout = defaults.ActiveHours, 10*time.Minute
				}),
				with(base, func(s *HeartbeatSettings) {
					s.AgentID, s.Every, s.Target, s.AckMaxChars, s.LightContext = "x", time.Hour, "last", 10, true
					s.ActiveHours, s.Timeout = defaults.ActiveHours, 2*time.Second
				}),
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, HeartbeatAgents(&tc.cfg)); diff != "" {
				t.Errorf("HeartbeatAgents (-want +got):\n%s", diff)
			}
		})
	}
}

func with(s HeartbeatSettings, f func(*HeartbeatSettings)) HeartbeatSettings {
	f(&s)
	return s
}

// TestScheduledHeartbeats: no heartbeat block, no heartbeats (Talon's
// default); with blocks, R9.1's agents whose every is above zero.
func TestScheduledHeartbeats(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"no block", `{agents: {list: [{id: "main"}]}}`, nil},
		{"defaults: the default agent", `{agents: {defaults: {heartbeat: {every: "1h"}}, list: [{id: "a"}, {id: "b", default: true}]}}`, []string{"b"}},
		{"agent blocks: only those", `{agents: {defaults: {heartbeat: {every: "1h"}}, list: [{id: "a", heartbeat: {}}, {id: "b"}, {id: "c", heartbeat: {every: "2h"}}]}}`, []string{"a", "c"}},
		{"every 0 stops one", `{agents: {list: [{id: "a", heartbeat: {every: "0m"}}, {id: "b", heartbeat: {}}]}}`, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := config.ParseJSON5([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			var cfg config.Config
			if _, err := config.Decode(tree, &cfg); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, hs := range ScheduledHeartbeats(&cfg) {
				got = append(got, hs.AgentID)
				if !HasHeartbeat(&cfg, hs.AgentID) {
					t.Errorf("HasHeartbeat(%s) false", hs.AgentID)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("scheduled %v, want %v", got, tt.want)
			}
			if HasHeartbeat(&cfg, "nobody") {
				t.Error("HasHeartbeat of an unknown agent")
			}
		})
	}
}
