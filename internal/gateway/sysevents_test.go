package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/protocol"
	"talon/protocol/client"
)

// TestSysEvents: spec automation.md R8.1 and vector 10.
func TestSysEvents(t *testing.T) {
	at := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		texts []string
		want  []string // the queue after, oldest first
		outs  []string // each add's outcome ("" for a refusal)
	}{
		{"three identical wakes are one", []string{"check mail", "check mail", " check mail "}, []string{"check mail"},
			[]string{eventQueued, eventCoalesced, eventCoalesced}},
		{"identical only to the last counts", []string{"a", "b", "a"}, []string{"a", "b", "a"}, []string{eventQueued, eventQueued, eventQueued}},
		{"blank is ignored", []string{"  ", "x"}, []string{"x"}, []string{"", eventQueued}},
		{"too long is refused", []string{strings.Repeat("x", maxSysEventText+1)}, nil, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e sysEvents
			for i, text := range tc.texts {
				out, _ := e.add("k", text, at)
				if out != tc.outs[i] {
					t.Errorf("add %q = %q, want %q", text, out, tc.outs[i])
				}
			}
			var got []string
			for _, ev := range e.drain("k") {
				got = append(got, ev.text)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("queue %q, want %q", got, tc.want)
			}
			if e.pending("k") != 0 {
				t.Error("drain left events")
			}
		})
	}
	t.Run("25 distinct keep the last 20", func(t *testing.T) {
		var e sysEvents
		for i := range 25 {
			e.add("k", fmt.Sprint("event ", i), at)
		}
		got := e.drain("k")
		if len(got) != 20 || got[0].text != "event 5" || got[19].text != "event 24" {
			t.Errorf("kept %d, first %q, last %q", len(got), got[0].text, got[len(got)-1].text)
		}
	})
}

func TestWithEvents(t *testing.T) {
	cfg := &config.Config{}
	cfg.Agents.Defaults.UserTimezone = "Europe/Vienna"
	evs := []sysEvent{{text: "Cron: morning brief due", at: time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)},
		{text: "two\nlines", at: time.Date(2026, 11, 27, 7, 5, 0, 0, time.UTC)}}
	got := withEvents([]llm.Message{{Role: llm.RoleUser, Content: "hello"}}, evs, cfg)
	want := "System: [2026-11-27 08:00 CET] Cron: morning brief due\nSystem: [2026-11-27 08:05 CET] two\nSystem: lines\n\nhello"
	if len(got) != 1 || got[0].Content != want {
		t.Errorf("got %q\nwant %q", got[0].Content, want)
	}
	if alone := withEvents(nil, evs[:1], &config.Config{}); len(alone) != 1 || alone[0].Content != "System: [2026-11-27 07:00 UTC] Cron: morning brief due" {
		t.Errorf("without a message: %+v", alone)
	}
}

// TestSystemEventMethod: an operator's system-event reaches the session's
// next turn as a System: line before the message, once; a non-admin is
// refused; a bad target or text is refused with the reason.
func TestSystemEventMethod(t *testing.T) {
	_, url := startWS(t, "")
	admin := dialWS(t, url)
	writer := dialWS(t, url, protocol.ScopeWrite)
	for _, tc := range []struct {
		name   string
		c      *client.Client
		params map[string]any
		err    string
	}{
		{"needs admin", writer, map[string]any{"text": "x"}, "missing scope: operator.admin"},
		{"needs text", admin, map[string]any{"text": "  "}, "text is required"},
		{"unknown agent", admin, map[string]any{"text": "x", "agentId": "ghost"}, `unknown agent "ghost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := callErr(tc.c, "system-event", tc.params); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
	got := mustCall[map[string]any](t, admin, "system-event", map[string]any{"text": "Deploy 42 finished"})
	if got["sessionKey"] != "agent:main:main" || got["eventOutcome"] != eventQueued {
		t.Fatalf("system-event = %v", got)
	}
	if again := mustCall[map[string]any](t, admin, "system-event", map[string]any{"text": "Deploy 42 finished"}); again["eventOutcome"] != eventCoalesced {
		t.Errorf("the same event again = %v", again)
	}
	chatTurn(t, admin, "ev-1", "what happened?")
	chatTurn(t, admin, "ev-2", "and now?")
	var h struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	mustRPC(t, admin, "chat.history", map[string]any{"sessionKey": "main"}, &h)
	var users []string
	for _, m := range h.Messages {
		if m.Role == "user" {
			users = append(users, string(m.Content))
		}
	}
	if len(users) != 2 || !strings.Contains(users[0], "] Deploy 42 finished") || !strings.Contains(users[0], "what happened?") ||
		strings.Contains(users[1], "Deploy 42") {
		t.Errorf("user messages %q: want the event once, before the first", users)
	}
}
