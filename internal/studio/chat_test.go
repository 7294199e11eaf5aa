package studio

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sseEvents splits a server-sent event stream into (event, data) pairs.
func sseEvents(body string) [][2]string {
	var out [][2]string
	for _, block := range strings.Split(body, "\n\n") {
		var ev, data string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data += v
			}
		}
		if ev != "" {
			out = append(out, [2]string{ev, data})
		}
	}
	return out
}

// A turn streamed to the page, an exec approval shown as a card and
// answered through Studio, and the command's outcome arriving in the
// history the page polls.
func TestChatAndApproval(t *testing.T) {
	e := newEnv(t, `{"agents":{"list":[{"id":"main","tools":{"exec":{"security":"allowlist","ask":"on-miss"}}},{"id":"other"}]}}`)
	b := e.signIn(adminToken, "")

	res, body := b.post("/agents/main/chat", url.Values{"message": {"/tools"}})
	if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("%d %s\n%s", res.StatusCode, ct, body)
	}
	events := sseEvents(body)
	last := events[len(events)-1]
	if last[0] != "end" || !strings.Contains(last[1], `"kind":"final"`) || !strings.Contains(last[1], "exec") {
		t.Fatalf("events: %v", events)
	}

	_, body = b.post("/agents/main/chat", url.Values{"message": {`/call exec {"command":"echo studio-chat-ok"}`}})
	var card struct{ ID, HTML string }
	for _, ev := range sseEvents(body) {
		if ev[0] == "approval" {
			if err := json.Unmarshal([]byte(ev[1]), &card); err != nil {
				t.Fatal(err)
			}
		}
	}
	if card.ID == "" || !strings.Contains(card.HTML, "echo studio-chat-ok") || !strings.Contains(card.HTML, `value="allow-once"`) {
		t.Fatalf("no approval card in %s", body)
	}
	// The chat page shows the card too, while it is pending.
	if _, page := b.get("/agents/main/chat"); !strings.Contains(page, `id="approval-`+card.ID+`"`) {
		t.Errorf("the chat page does not show the pending approval")
	}

	// Bad answers: the card says why; nothing is decided.
	for _, c := range []struct{ id, decision, says string }{
		{card.ID, "allow-forever", "is not a decision"},
		{"not/an-id", "deny", "There is no page"},
		{"ffffffff-0000", "deny", "unknown"},
	} {
		_, frag := b.postRaw("/approvals/"+c.id, url.Values{"decision": {c.decision}, "csrf": {b.csrf}}, "hx")
		if !strings.Contains(frag, c.says) {
			t.Errorf("%s %s: %s", c.id, c.decision, frag)
		}
	}
	res, frag := b.postRaw("/approvals/"+card.ID, url.Values{"decision": {"allow-once"}, "csrf": {b.csrf}}, "hx")
	if res.StatusCode != http.StatusOK || !strings.Contains(frag, `data-decision="allow-once"`) || !strings.Contains(frag, "Allowed once") {
		t.Fatalf("resolve: %d %s", res.StatusCode, frag)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, msgs := b.get("/agents/main/chat/since?session=agent:main:main&after=4")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("since: %d %s", res.StatusCode, msgs)
		}
		if strings.Contains(msgs, "msg-system") && strings.Contains(msgs, "studio-chat-ok") {
			if res.Header.Get("X-Last-Seq") == "" {
				t.Error("no X-Last-Seq")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved command's outcome never arrived: %s", msgs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A second answer to the same approval: the gateway's refusal.
	_, frag = b.postRaw("/approvals/"+card.ID, url.Values{"decision": {"deny"}, "csrf": {b.csrf}}, "hx")
	if !strings.Contains(frag, "unknown or expired") {
		t.Errorf("second answer: %s", frag)
	}
	// The history page renders the whole turn.
	_, page := b.get("/agents/main/chat")
	for _, want := range []string{"msg-user", "calls <strong>exec</strong>", "msg-tool", "studio-chat-ok"} {
		if !strings.Contains(page, want) {
			t.Errorf("chat page lacks %q", want)
		}
	}
	if _, page := b.get("/agents/main/sessions"); !strings.Contains(page, "agent:main:main") {
		t.Errorf("sessions page:\n%s", page)
	}
}

// Every bad chat input is refused before anything reaches the gateway.
func TestChatBadInput(t *testing.T) {
	e := newEnv(t, `{"agents":{"list":[{"id":"main"},{"id":"other"}]}}`)
	b := e.signIn(adminToken, "")
	cases := []struct {
		name, path, message, session string
		status                       int
		says                         string
	}{
		{"empty", "/agents/main/chat", "  \n", "", http.StatusBadRequest, "Type a message"},
		{"too long", "/agents/main/chat", strings.Repeat("x", maxMessage+1), "", http.StatusRequestEntityTooLarge, "too long"},
		{"not text", "/agents/main/chat", "\xff\xfe", "", http.StatusBadRequest, "not valid text"},
		{"another agent's session", "/agents/main/chat", "hi", "agent:other:main", http.StatusBadRequest, "is not a session of agent"},
		{"session with spaces", "/agents/main/chat", "hi", "agent:main:a b", http.StatusBadRequest, "no spaces"},
		{"long session", "/agents/main/chat", "hi", "agent:main:" + strings.Repeat("k", maxSessionKey), http.StatusBadRequest, "at most"},
		{"unknown agent", "/agents/ghost/chat", "hi", "", http.StatusNotFound, "no agent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := b.post(c.path, url.Values{"message": {c.message}, "session": {c.session}})
			if res.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Fatalf("%d, want %d with %q: %s", res.StatusCode, c.status, c.says, body)
			}
		})
	}
	if _, page := b.get("/agents/main/chat"); regexp.MustCompile(`class="msg `).MatchString(page) {
		t.Error("a refused message reached the session")
	}
	for _, q := range []string{"after=-1", "after=x", "after=1&session=agent:other:x"} {
		if res, _ := b.get("/agents/main/chat/since?" + q); res.StatusCode != http.StatusBadRequest {
			t.Errorf("since?%s: %d", q, res.StatusCode)
		}
	}
}

// A compaction as the chat shows it: /compact's events and its answer in
// the stream, the divider in the history with the messages still above
// it, and the sessions page's context and compaction count.
func TestChatCompaction(t *testing.T) {
	e := newEnv(t, `{"agents":{"list":[{"id":"main"}],"defaults":{"contextTokens":18000}}}`)
	b := e.signIn(adminToken, "")
	for i := range 3 {
		b.post("/agents/main/chat", url.Values{"message": {strings.Repeat("long talk ", 1500) + string(rune('a'+i))}})
	}
	_, body := b.post("/agents/main/chat", url.Values{"message": {"/compact"}})
	var kinds []string
	for _, ev := range sseEvents(body) {
		kinds = append(kinds, ev[0])
		if ev[0] == "compaction" && !strings.Contains(ev[1], "Context compacted: the earlier messages are summarised") {
			t.Errorf("compaction event %s", ev[1])
		}
	}
	if last := sseEvents(body)[len(kinds)-1]; !strings.Contains(strings.Join(kinds, ","), "compaction") || last[0] != "end" || !strings.Contains(last[1], "⚙️ Compacted (") {
		t.Fatalf("events %v, end %v", kinds, last)
	}
	_, page := b.get("/agents/main/chat")
	divider := strings.Index(page, `class="divider" role="separator"`)
	if divider < 0 || strings.Count(page, "msg-user") != 3 || !strings.Contains(page[divider:], "Context compacted") {
		t.Errorf("chat page: divider at %d, %d user messages", divider, strings.Count(page, "msg-user"))
	}
	_, page = b.get("/agents/main/sessions")
	if !regexp.MustCompile(`<td>~[0-9.]+k/18k \([0-9]+%\)</td><td>[1-9]</td>`).MatchString(page) {
		t.Errorf("sessions page lacks the context and the compaction:\n%s", page)
	}
}
