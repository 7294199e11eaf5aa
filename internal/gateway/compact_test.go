package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"talon/internal/agent"
	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/protocol"
	"talon/protocol/client"
)

// offlineWindow is a config whose agent runs on the offline model with a
// window small enough for 4 KB messages to need compaction.
const offlineWindow = `,"agents":{"defaults":{"contextTokens":16000}}`

// longText is a user message of about 4 KB.
func longText(i int) string {
	return fmt.Sprintf("Turn %d. ", i) + strings.Repeat(fmt.Sprintf("Long text of turn %d. ", i), 190)
}

// chatTurn sends a chat.send and waits for its end; it returns the run's
// events.
func chatTurn(t *testing.T, cl *client.Client, id, text string) *runEvents {
	t.Helper()
	callOK(t, cl, "chat.send", map[string]any{"sessionKey": "main", "message": text, "idempotencyKey": id})
	var ev runEvents
	watch(t, cl, id, &ev, (*runEvents).ended)
	return &ev
}

// compactionEvents are the run's compaction agent events' data.
func (e *runEvents) compactions() []map[string]any {
	var out []map[string]any
	for _, a := range e.agent {
		if a.Stream == "compaction" {
			out = append(out, a.Data)
		}
	}
	return out
}

// TestConformance9CompactWhileBusy is spec context.md §12 vector 9:
// /compact while a run of the session is active answers "Compaction
// unavailable" in chat, and sessions.compact is INVALID_REQUEST; neither
// waits for the run.
func TestConformance9CompactWhileBusy(t *testing.T) {
	model := newScriptedLLM(t)
	_, url := startWS(t, modelMembers(model.srv.URL))
	cl := dialWS(t, url, protocol.ScopeAdmin)
	blocked := make(chan struct{})
	model.mu.Lock()
	model.block = blocked
	model.mu.Unlock()
	callOK(t, cl, "chat.send", map[string]any{"sessionKey": "main", "message": "work long", "idempotencyKey": "busy-1"})
	select {
	case <-blocked:
	case <-time.After(chatTestWait):
		t.Fatal("the run did not reach the model")
	}

	ev := chatTurn(t, cl, "busy-compact", "/compact keep the plan")
	if end := ev.terminal(); end.State != "final" || end.text() != compaction.NoticeUnavailable(busyNotice) {
		t.Errorf("/compact while busy: %+v %q", end, end.text())
	}
	if _, msg := rpc(t, cl, "sessions.compact", map[string]any{"key": "main"}); msg != "Session agent:main:main has an active run; retry after it finishes." {
		t.Errorf("sessions.compact while busy: %q", msg)
	}
	if _, msg := rpc(t, cl, "sessions.compact", map[string]any{"key": "main", "maxLines": 5}); msg != "Session agent:main:main has an active run; retry after it finishes." {
		t.Errorf("sessions.compact maxLines while busy: %q", msg)
	}
	callOK(t, cl, "chat.abort", map[string]any{"sessionKey": "main"})
}

// TestConformance11CompactMaxLines is vector 11: sessions.compact with
// maxLines 50 on a 200-line transcript keeps the boundary (which stands
// for OpenClaw's header line) and the last 49 entries, with no model
// call; on a 30-line one it compacts nothing and reports the 30 lines.
// chat.history still lists every message, and the compaction where it
// was appended, naming the first entry it kept.
func TestConformance11CompactMaxLines(t *testing.T) {
	model := newScriptedLLM(t)
	ts, url := startWS(t, modelMembers(model.srv.URL))
	admin := dialWS(t, url, protocol.ScopeAdmin)
	writer := dialWS(t, url, protocol.ScopeWrite)
	db := tenantStore(t, ts)
	ctx := context.Background()
	seed := func(key string, n int) {
		var p patchResult
		mustRPC(t, admin, "sessions.patch", map[string]any{"key": key}, &p)
		msgs := make([]llm.Message, n)
		for i := range msgs {
			role := llm.RoleUser
			if i%2 == 1 {
				role = llm.RoleAssistant
			}
			msgs[i] = llm.Message{Role: role, Content: fmt.Sprint("line ", i+1)}
		}
		if err := db.AppendMessages(ctx, p.Entry.SessionID, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	seed("long", 200)
	seed("short", 30)
	changed := make(chan map[string]any, 4)
	go func() {
		for f := range admin.Events() {
			var p map[string]any
			if f.Event == protocol.EventSessionsChanged && json.Unmarshal(f.Payload, &p) == nil && p["reason"] == "compact" {
				changed <- p
			}
		}
	}()

	cases := []struct {
		key  string
		want string
	}{
		{"long", `{"compacted":true,"kept":50,"key":"agent:main:long","ok":true}`},
		{"short", `{"compacted":false,"kept":30,"key":"agent:main:short","ok":true}`},
		{"none", `{"compacted":false,"key":"agent:main:none","ok":true,"reason":"no transcript"}`},
	}
	for _, c := range cases {
		raw, msg := rpc(t, admin, "sessions.compact", map[string]any{"key": c.key, "maxLines": 50})
		if msg != "" || string(raw) != c.want {
			t.Errorf("%s: %s %s, want %s", c.key, raw, msg, c.want)
		}
	}
	if n := model.count(); n != 0 {
		t.Errorf("maxLines made %d model calls", n)
	}
	select {
	case p := <-changed:
		if p["sessionKey"] != "agent:main:long" || p["reason"] != "compact" || p["compacted"] != true {
			t.Errorf("sessions.changed %v", p)
		}
	case <-time.After(chatTestWait):
		t.Error("no sessions.changed after the compaction")
	}

	_, msgs := history(t, admin, map[string]any{"sessionKey": "long", "limit": 1000})
	if d := msgs[len(msgs)-1]; len(msgs) != 201 || d.Role != "system" || d.Meta.Kind != "compaction" || d.Content[0].Text != "Compaction" ||
		d.Meta.FirstKeptEntryID != "152" || msgs[0].Content[0].Text != "line 1" || msgs[199].Content[0].Text != "line 200" {
		t.Fatalf("history after maxLines: %d messages, divider %+v", len(msgs), d)
	}
	// The next turn sees the stub and the 49 kept lines only.
	model.push(scripted{Content: "fine"})
	ev := chatTurnKey(t, writer, "long", "after-trim", "next")
	if ev.terminal().State != "final" {
		t.Fatalf("turn after the trim: %+v", ev.terminal())
	}
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(model.request(1), &req); err != nil {
		t.Fatal(err)
	}
	got := req.Messages[1:] // after the system prompt
	if len(got) != 51 || !strings.HasPrefix(got[0].Content, compaction.SummaryIntro) || !strings.Contains(got[0].Content, "maxLines 50") ||
		got[1].Content != "line 152" || got[50].Content != "next" {
		t.Errorf("the request after the trim has %d messages, first %.80q, second %q", len(got), got[0].Content, got[min(1, len(got)-1)].Content)
	}

	for _, bad := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{}, "invalid sessions.compact params: key is required"},
		{map[string]any{"key": "main", "maxLines": 0}, "invalid sessions.compact params: maxLines must be an integer from 1 to 1000000"},
		{map[string]any{"key": "main", "maxLines": 2.5}, "invalid sessions.compact params: maxLines must be an integer from 1 to 1000000"},
		{map[string]any{"key": "agent:ghost:main"}, `unknown agent "ghost" (session agent:ghost:main): add it to agents.list first`},
		{map[string]any{"key": "main", "agentId": "ghost"}, `invalid sessions.compact params: unknown agent id "ghost"`},
	} {
		if _, msg := rpc(t, admin, "sessions.compact", bad.params); msg != bad.want {
			t.Errorf("%v: %q, want %q", bad.params, msg, bad.want)
		}
	}
	if _, msg := rpc(t, writer, "sessions.compact", map[string]any{"key": "main"}); msg != "missing scope: operator.admin" {
		t.Errorf("without admin: %q", msg)
	}
}

// chatTurnKey is chatTurn on another session.
func chatTurnKey(t *testing.T, cl *client.Client, key, id, text string) *runEvents {
	t.Helper()
	callOK(t, cl, "chat.send", map[string]any{"sessionKey": key, "message": text, "idempotencyKey": id})
	var ev runEvents
	watch(t, cl, id, &ev, (*runEvents).ended)
	return &ev
}

// TestConformance12FlushAndHistory is vector 12 through the gateway, on
// the offline model: over turns that compact, the memory flush runs at
// most once between two compactions, and its prompt and answer never
// appear in chat.history, which lists every turn, a divider per
// compaction; the compaction agent events and sessions.list's counters
// say what happened.
func TestConformance12FlushAndHistory(t *testing.T) {
	_, url := startWS(t, offlineWindow)
	cl := dialWS(t, url, protocol.ScopeAdmin)
	type cycle struct{ compactions, flushCycle, flushAt int64 }
	var seen []cycle
	var events []map[string]any
	const turns = 40
	for i := 1; i <= turns; i++ {
		ev := chatTurn(t, cl, fmt.Sprint("t", i), longText(i))
		if end := ev.terminal(); end.State != "final" {
			t.Fatalf("turn %d: %+v", i, end)
		}
		events = append(events, ev.compactions()...)
		var rows struct{ Sessions []sessionRow }
		mustRPC(t, cl, "sessions.list", map[string]any{}, &rows)
		e := rows.Sessions[0]
		st := mainEntry(t, cl)
		seen = append(seen, cycle{e.CompactionCount, st.MemoryFlushCompactionCount, st.MemoryFlushAt})
	}
	// Each flush records the compaction count it ran at: one flush time
	// per count.
	flushes := map[int64]map[int64]bool{}
	for _, c := range seen {
		if c.flushAt == 0 {
			continue
		}
		if flushes[c.flushCycle] == nil {
			flushes[c.flushCycle] = map[int64]bool{}
		}
		flushes[c.flushCycle][c.flushAt] = true
	}
	last := seen[len(seen)-1]
	if last.compactions < 2 || len(flushes) == 0 {
		t.Fatalf("%d compactions, flushes %v in %d turns", last.compactions, flushes, turns)
	}
	for n, at := range flushes {
		if len(at) > 1 {
			t.Errorf("%d flushes between compactions %d and %d", len(at), n, n+1)
		}
	}
	var starts, ends int
	for _, d := range events {
		switch {
		case d["phase"] == "start" && d["reason"] == compaction.ReasonThreshold:
			starts++
		case d["phase"] == "end" && d["completed"] == true && d["outcome"] == "compacted":
			ends++
		}
	}
	if int64(ends) != last.compactions || starts != ends {
		t.Errorf("compaction events: %d starts, %d ends, %d compactions", starts, ends, last.compactions)
	}

	_, msgs := history(t, cl, map[string]any{"sessionKey": "main", "limit": 1000})
	var users, assistants, dividers int
	for _, m := range msgs {
		text := ""
		if len(m.Content) > 0 {
			text = m.Content[0].Text
		}
		if strings.Contains(text, "Pre-compaction memory flush") || strings.Contains(text, "memory/") {
			t.Errorf("the flush reached chat.history: %.120q", text)
		}
		switch {
		case m.Role == "user":
			users++
		case m.Role == "assistant":
			assistants++
		case m.Role == "system" && m.Meta.Kind == "compaction" && text == "Compaction" && m.Meta.TokensBefore > m.Meta.TokensAfter:
			dividers++
		}
	}
	if users != turns || assistants != turns || int64(dividers) != last.compactions {
		t.Errorf("chat.history: %d user, %d assistant messages, %d dividers; want %d, %d, %d", users, assistants, dividers, turns, turns, last.compactions)
	}
}

// flushRecord is what a session row records of memory flushes.
type flushRecord struct{ MemoryFlushAt, MemoryFlushCompactionCount int64 }

// mainEntry reads the main session's entry.
func mainEntry(t *testing.T, cl *client.Client) flushRecord {
	t.Helper()
	var out struct {
		Entry flushRecord `json:"entry"`
	}
	mustRPC(t, cl, "sessions.patch", map[string]any{"key": "main"}, &out)
	return out.Entry
}

// TestCompactCommand: /compact and /status in chat.send and on the HTTP
// endpoint, and sessions.compact's LLM mode, on the offline model: the
// notices, the counters in sessions.list (totalTokens an estimate until
// the next turn), a skip when there is nothing new.
func TestCompactCommand(t *testing.T) {
	ts, url := startWS(t, `,"agents":{"defaults":{"compaction":{"keepRecentTokens":1500}}}`)
	cl := dialWS(t, url, protocol.ScopeAdmin)
	for i := 1; i <= 6; i++ {
		chatTurn(t, cl, fmt.Sprint("c", i), longText(i))
	}
	ev := chatTurn(t, cl, "compact-1", "/compact the plan")
	notice := ev.terminal().text()
	if !strings.HasPrefix(notice, "⚙️ Compacted (") || !strings.Contains(notice, "• Context ") {
		t.Errorf("/compact reply %q", notice)
	}
	if cs := ev.compactions(); len(cs) != 2 || cs[0]["reason"] != compaction.ReasonManual || cs[1]["outcome"] != "compacted" {
		t.Errorf("compaction events %v", cs)
	}
	var rows struct{ Sessions []sessionRow }
	mustRPC(t, cl, "sessions.list", map[string]any{}, &rows)
	if r := rows.Sessions[0]; r.CompactionCount != 1 || r.TotalTokensFresh == nil || *r.TotalTokensFresh || r.ContextTokens == nil || *r.ContextTokens != compaction.DefaultWindow {
		t.Errorf("row after /compact %+v", r)
	}
	if ev := chatTurn(t, cl, "compact-2", "/compact"); !strings.HasPrefix(ev.terminal().text(), "⚙️ Compaction skipped: "+compaction.ErrAlreadyCompacted.Error()) {
		t.Errorf("second /compact %q", ev.terminal().text())
	}
	status := chatTurn(t, cl, "status-1", "/status").terminal().text()
	if !strings.Contains(status, "Context: ~") || !strings.Contains(status, "🧹 Compactions: 1") {
		t.Errorf("/status %q", status)
	}

	// The HTTP endpoint takes the same commands.
	h := map[string]string{"Authorization": "Bearer " + wsToken, "X-OpenClaw-Session-Key": "main"}
	for i := 7; i <= 9; i++ {
		ts.post(h, chatBody("", longText(i), false))
	}
	for _, stream := range []bool{false, true} {
		rep := ts.post(h, chatBody("", "/compact", stream))
		if rep.status != 200 || !strings.HasPrefix(rep.content, "⚙️ Compact") {
			t.Errorf("HTTP /compact (stream %v): %d %q", stream, rep.status, rep.content)
		}
	}
	if rep := ts.post(h, chatBody("", "/status", false)); !strings.Contains(rep.content, "🧹 Compactions: 2") {
		t.Errorf("HTTP /status %q", rep.content)
	}
	if rep := ts.post(map[string]string{"Authorization": "Bearer " + wsToken}, chatBody("", "/compact", false)); !strings.HasPrefix(rep.content, "⚙️ Compaction skipped: "+agent.ReasonNoTranscript) {
		t.Errorf("HTTP /compact on a new session %q", rep.content)
	}

	// sessions.compact, the LLM mode.
	chatTurn(t, cl, "c10", longText(10))
	chatTurn(t, cl, "c11", longText(11))
	var res struct {
		OK, Compacted bool
		Key, Reason   string
		Result        struct {
			TokensBefore, TokensAfter int64
			Summary, FirstKeptEntryID string
		}
	}
	mustRPC(t, cl, "sessions.compact", map[string]any{"key": "main"}, &res)
	if !res.OK || !res.Compacted || res.Result.TokensAfter >= res.Result.TokensBefore || !strings.Contains(res.Result.Summary, "## Goal") || res.Result.FirstKeptEntryID == "" {
		t.Errorf("sessions.compact %+v", res)
	}
	mustRPC(t, cl, "sessions.compact", map[string]any{"key": "main"}, &res)
	if res.OK || res.Compacted || res.Reason != compaction.ErrAlreadyCompacted.Error() {
		t.Errorf("sessions.compact again %+v", res)
	}
	mustRPC(t, cl, "sessions.compact", map[string]any{"key": "agent:main:nobody"}, &res)
	if !res.OK || res.Compacted || res.Reason != "no transcript" {
		t.Errorf("sessions.compact of a missing session %+v", res)
	}
}

// TestChatCommandParsing: which messages are commands.
func TestChatCommandParsing(t *testing.T) {
	for _, c := range []struct {
		in, cmd, arg string
		ok           bool
	}{
		{"/compact", cmdCompact, "", true},
		{"  /compact  keep the ids  ", cmdCompact, "keep the ids", true},
		{"/compact\nmulti\nline", cmdCompact, "multi\nline", true},
		{"/status", cmdStatus, "", true},
		{"/status now", "", "", false},
		{"/compactly", "", "", false},
		{"please /compact", "", "", false},
		{"/Compact", "", "", false},
		{"/new", cmdNew, "", true},
		{" /reset ", cmdReset, "", true},
		{"/new idea for the launch", "", "", false},
		{"/newer", "", "", false},
	} {
		cmd, arg, ok := chatCommand(c.in)
		if cmd != c.cmd || arg != c.arg || ok != c.ok {
			t.Errorf("%q: %q %q %v", c.in, cmd, arg, ok)
		}
	}
}
