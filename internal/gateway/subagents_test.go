package gateway

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"talon/protocol"
	"talon/protocol/client"
)

// heldLLM is a child's model at the outside edge that holds each request
// until the test answers it, so that a child runs for exactly as long as
// the test needs: a request arrives on arrived, and the test answers it
// with a text or fails it with an HTTP error.
type heldLLM struct {
	srv     *httptest.Server
	arrived chan *heldCall
}

// heldCall is one request the model holds.
type heldCall struct {
	body   string
	answer chan heldAnswer
	gone   <-chan struct{} // the client ended the request
}

type heldAnswer struct {
	text   string
	status int // an HTTP error status; 0 for the answer text
}

func newHeldLLM(t *testing.T) *heldLLM {
	m := &heldLLM{arrived: make(chan *heldCall)}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *heldLLM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	c := &heldCall{body: string(body), answer: make(chan heldAnswer, 1), gone: r.Context().Done()}
	select {
	case m.arrived <- c:
	case <-r.Context().Done():
		return
	}
	var a heldAnswer
	select {
	case a = <-c.answer:
	case <-r.Context().Done():
		return
	}
	if a.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, a.text)
		return
	}
	if !req.Stream {
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": a.text}, "finish_reason": "stop"}}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, v := range []any{
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": a.text}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}},
	} {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// next is the next request the model holds.
func (m *heldLLM) next(t *testing.T) *heldCall {
	t.Helper()
	select {
	case c := <-m.arrived:
		return c
	case <-time.After(chatTestWait):
		t.Fatal("no request reached the child's model")
		return nil
	}
}

func (c *heldCall) reply(text string)            { c.answer <- heldAnswer{text: text} }
func (c *heldCall) fail(status int, text string) { c.answer <- heldAnswer{text: text, status: status} }

// ended waits until the client that made the request ended it.
func (c *heldCall) ended(t *testing.T) {
	t.Helper()
	select {
	case <-c.gone:
	case <-time.After(chatTestWait):
		t.Fatal("the child's model request was not ended")
	}
}

// requestTools are the names of the tools a chat completions request
// offers.
func requestTools(t *testing.T, body string) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("the model request: %v", err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// heldMembers are config members naming m as provider "held", with extra
// inside agents.defaults.subagents.
func heldMembers(m *heldLLM, subagents string) string {
	return `,"models":{"providers":{"held":{"baseUrl":"` + m.srv.URL + `/v1"}}},"agents":{"defaults":{"subagents":{` + subagents + `}}}`
}

// sessionRuns follows every run a client sees, by runId, so that a test
// can wait for a run it did not start: a child's, or an announce's.
type sessionRuns struct {
	cl    *client.Client
	runs  map[string]*runEvents
	keys  map[string]string // runId → session key
	order []string          // runIds, as first seen
}

func followRuns(cl *client.Client) *sessionRuns {
	return &sessionRuns{cl: cl, runs: map[string]*runEvents{}, keys: map[string]string{}}
}

func (s *sessionRuns) watch(t *testing.T, what string, until func() bool) {
	t.Helper()
	deadline := time.After(chatTestWait)
	for !until() {
		select {
		case f, ok := <-s.cl.Events():
			if !ok {
				t.Fatalf("connection closed while waiting for %s: %v", what, s.cl.Err())
			}
			s.record(t, f)
		case <-deadline:
			t.Fatalf("gave up waiting for %s; runs seen: %v", what, s.keys)
		}
	}
}

func (s *sessionRuns) record(t *testing.T, f protocol.Frame) {
	t.Helper()
	if f.Event != protocol.EventChat && f.Event != protocol.EventAgent {
		return
	}
	var head struct{ RunID, SessionKey string }
	if err := json.Unmarshal(f.Payload, &head); err != nil {
		t.Fatalf("%s event %s: %v", f.Event, f.Payload, err)
	}
	ev := s.runs[head.RunID]
	if ev == nil {
		ev = &runEvents{}
		s.runs[head.RunID] = ev
		s.order = append(s.order, head.RunID)
	}
	if head.SessionKey != "" {
		s.keys[head.RunID] = head.SessionKey
	}
	record(t, f, head.RunID, ev)
}

// send runs a turn of session key and returns its events.
func (s *sessionRuns) send(t *testing.T, key, id, text string) *runEvents {
	t.Helper()
	callOK(t, s.cl, "chat.send", map[string]any{"sessionKey": key, "message": text, "idempotencyKey": id})
	s.watch(t, "run "+id, func() bool { return s.runs[id] != nil && s.runs[id].ended() })
	return s.runs[id]
}

// ended waits until run id has ended.
func (s *sessionRuns) ended(t *testing.T, id string) *runEvents {
	t.Helper()
	s.watch(t, "run "+id, func() bool { return s.runs[id] != nil && s.runs[id].ended() })
	return s.runs[id]
}

// announces are the ended announce turns of session key, in order.
func (s *sessionRuns) announces(key string) []*runEvents {
	var out []*runEvents
	for _, id := range s.order {
		if strings.HasPrefix(id, "announce-") && s.keys[id] == key && s.runs[id].ended() {
			out = append(out, s.runs[id])
		}
	}
	return out
}

// announced waits for the nth (1-based) announce turn of key to end.
func (s *sessionRuns) announced(t *testing.T, key string, n int) *runEvents {
	t.Helper()
	s.watch(t, fmt.Sprintf("announce %d to %s", n, key), func() bool { return len(s.announces(key)) >= n })
	return s.announces(key)[n-1]
}

// accepted is sessions_spawn's result.
type accepted struct {
	Status, RunID, ChildSessionKey, Mode, Note, ResolvedModel string
}

// spawnResult reads the accepted result that the inspect model echoed as
// the turn's answer.
func spawnResult(t *testing.T, ev *runEvents) accepted {
	t.Helper()
	var a accepted
	text := ev.terminal().text()
	if err := json.Unmarshal([]byte(text), &a); err != nil || a.Status != "accepted" {
		t.Fatalf("sessions_spawn did not accept: %s", text)
	}
	return a
}

// historyText is a session's transcript as chat.history shows it, one
// line per text part.
func historyText(t *testing.T, c *client.Client, key string) string {
	t.Helper()
	_, msgs := history(t, c, map[string]any{"sessionKey": key, "limit": 1000})
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Content {
			fmt.Fprintf(&b, "%s: %s\n", m.Role, p.Text)
		}
	}
	return b.String()
}

// TestSubagentEnds: sessions_spawn returns at once, the child runs in a
// session of its own (agent:main:subagent:<uuid>) whose run events the
// parent's clients see, and however the child ends — an answer, a model
// that fails, a kill, a steer that restarts it — its parent's session
// gets one completion event as the input of a turn of its own, which
// says how the child ended.
func TestSubagentEnds(t *testing.T) {
	m := newHeldLLM(t)
	_, url := startWS(t, heldMembers(m, ""))
	runs := followRuns(dialWS(t, url))
	var first string // the spawned run of the case
	for _, tc := range []struct {
		name string
		// end ends the child whose first model request is call, and
		// returns the text of its final answer ("" for none) and the run
		// that gave it ("" for the spawned one).
		end        func(t *testing.T, parent string, call *heldCall) (string, string)
		status     string // the completion event's status line
		result     string // in the completion event
		childFinal string // the child run's final state
	}{
		{"answered", func(t *testing.T, _ string, call *heldCall) (string, string) {
			call.reply("Oslo is the capital.")
			return "Oslo is the capital.", ""
		}, "status: completed; ready for parent review", "Oslo is the capital.", "final"},
		{"model fails", func(t *testing.T, _ string, call *heldCall) (string, string) {
			call.fail(http.StatusBadRequest, "the test model refuses")
			return "", ""
		}, "status: failed: ", "(no output)", "error"},
		{"killed", func(t *testing.T, parent string, call *heldCall) (string, string) {
			got := runs.send(t, parent, parent+"-kill", `/call subagents {"action":"kill","target":"capital"}`).terminal().text()
			if !strings.Contains(got, `"action":"kill"`) || !strings.Contains(got, ":subagent:") {
				t.Errorf("subagents kill: %s", got)
			}
			call.ended(t)
			return "", ""
		}, "status: killed: killed by its parent (subagents kill)", "(no output)", "aborted"},
		{"steered", func(t *testing.T, parent string, call *heldCall) (string, string) {
			got := runs.send(t, parent, parent+"-steer", `/call subagents {"action":"steer","target":"1","message":"only the old town"}`).terminal().text()
			var steer struct{ Action, RunID string }
			if err := json.Unmarshal([]byte(got), &steer); err != nil || steer.Action != "steer" || steer.RunID == "" {
				t.Fatalf("subagents steer: %s", got)
			}
			if old := runs.ended(t, first).terminal(); old.State != "aborted" {
				t.Errorf("the steered run: %+v", old)
			}
			call.ended(t)
			again := m.next(t)
			if !strings.Contains(again.body, "only the old town") {
				t.Errorf("the steered run's request has not the message: %s", again.body)
			}
			again.reply("Gamla stan.")
			return "Gamla stan.", steer.RunID
		}, "status: completed; ready for parent review", "Gamla stan.", "final"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := "agent:main:sub-" + strings.ReplaceAll(tc.name, " ", "-")
			ev := runs.send(t, parent, parent+"-spawn", `/call sessions_spawn {"task":"Name the capital of Norway.","label":"capital of `+tc.name+`","model":"held/m"}`)
			acc := spawnResult(t, ev)
			// The spawn's turn has ended while the child's model has not
			// answered: sessions_spawn did not wait for it.
			call := m.next(t)
			if !strings.HasPrefix(acc.ChildSessionKey, "agent:main:subagent:") || acc.Mode != "run" || acc.ResolvedModel != "held/m" {
				t.Errorf("accepted: %+v", acc)
			}
			if !strings.Contains(call.body, `[Subagent Task]\nName the capital of Norway.`) || !strings.Contains(call.body, acc.ChildSessionKey) {
				t.Errorf("the child's model request: %s", call.body)
			}
			first = acc.RunID
			// A depth-1 child is a leaf (maxSpawnDepth 1): it cannot spawn
			// or read other sessions, and it sees its task, not its
			// parent's conversation.
			tools := requestTools(t, call.body)
			if slices.Contains(tools, "sessions_spawn") || slices.Contains(tools, "subagents") || slices.Contains(tools, "sessions_list") || !slices.Contains(tools, "read") {
				t.Errorf("the leaf child's tools: %v", tools)
			}
			if strings.Contains(call.body, "/call sessions_spawn") {
				t.Errorf("the child saw its parent's conversation: %s", call.body)
			}
			final, last := tc.end(t, parent, call)

			an := runs.announced(t, parent, 1)
			if an.terminal().State != "final" {
				t.Errorf("the announce turn: %+v", an.terminal())
			}
			last = cmp.Or(last, acc.RunID)
			child := runs.ended(t, last)
			if runs.keys[last] != acc.ChildSessionKey || child.terminal().State != tc.childFinal || child.terminal().text() != final {
				t.Errorf("the child's run on %s: %+v", runs.keys[last], child.terminal())
			}
			h := historyText(t, runs.cl, parent)
			for _, want := range []string{"[Internal task completion event]", "session_key: " + acc.ChildSessionKey, "task: capital of " + tc.name, tc.status, tc.result} {
				if !strings.Contains(h, want) {
					t.Errorf("the parent's transcript has not %q:\n%s", want, h)
				}
			}
			if n := strings.Count(h, "[Internal task completion event]"); n != 1 {
				t.Errorf("%d completion events, want 1:\n%s", n, h)
			}
			list := runs.send(t, parent, parent+"-list", `/call subagents {"action":"list"}`).terminal().text()
			if !strings.Contains(list, acc.ChildSessionKey) || strings.Contains(list, `"status":"running"`) {
				t.Errorf("subagents list after the end: %s", list)
			}
		})
	}
}

// TestSubagentYieldContinues: a child that spawns its own child and ends
// its turn with sessions_yield is paused, not ended; its child's
// completion continues it (with the message it yielded with), and that
// turn's answer is its result, announced to the top parent. Yielding with
// nothing owed is refused.
func TestSubagentYieldContinues(t *testing.T) {
	m := newHeldLLM(t)
	_, url := startWS(t, heldMembers(m, `"maxSpawnDepth":2`))
	runs := followRuns(dialWS(t, url))
	const parent = "agent:main:main"

	got := runs.send(t, parent, "y-0", `/call sessions_yield {}`).terminal().text()
	if !strings.Contains(got, "no pending child completion is owned by this session") {
		t.Errorf("sessions_yield with no child: %s", got)
	}

	task := "/call sessions_spawn {\"task\":\"Find the leaf.\",\"label\":\"leaf\",\"model\":\"held/m\"}\n/call sessions_yield {\"message\":\"waiting for the leaf\"}"
	spawn, _ := json.Marshal(map[string]any{"task": task, "label": "orchestrator"})
	acc := spawnResult(t, runs.send(t, parent, "y-1", "/call sessions_spawn "+string(spawn)))
	leaf := m.next(t)

	// The orchestrator's run ended by yielding: it is listed paused.
	runs.ended(t, acc.RunID)
	if y := runs.runs[acc.RunID].terminal(); y.State != "final" || y.text() != "" {
		t.Errorf("the yielded run: %+v", y)
	}
	list := runs.send(t, parent, "y-2", `/call subagents {"action":"list"}`).terminal().text()
	if !strings.Contains(list, `"status":"paused"`) {
		t.Errorf("the yielded child is not paused: %s", list)
	}
	if len(runs.announces(parent)) != 0 {
		t.Fatal("the parent got an announce before the leaf ended")
	}

	leaf.reply("The leaf is green.")
	runs.announced(t, acc.ChildSessionKey, 1)
	runs.announced(t, parent, 1)
	mid := historyText(t, runs.cl, acc.ChildSessionKey)
	for _, want := range []string{"sessions_yield: waiting for the leaf", "[Internal task completion event]", "task: leaf", "The leaf is green.", "status: completed"} {
		if !strings.Contains(mid, want) {
			t.Errorf("the orchestrator's transcript has not %q:\n%s", want, mid)
		}
	}
	top := historyText(t, runs.cl, parent)
	for _, want := range []string{"session_key: " + acc.ChildSessionKey, "task: orchestrator", "status: completed; ready for parent review"} {
		if !strings.Contains(top, want) {
			t.Errorf("the parent's transcript has not %q:\n%s", want, top)
		}
	}
}

// TestSubagentLimits: a model that spawns in a loop is refused, with the
// limit and its config key, once its session has maxChildrenPerAgent
// children running or the gateway maxConcurrent; a session cannot kill
// another's children; killing its own makes room again.
func TestSubagentLimits(t *testing.T) {
	m := newHeldLLM(t)
	_, url := startWS(t, heldMembers(m, `"maxChildrenPerAgent":2,"maxConcurrent":3`))
	runs := followRuns(dialWS(t, url))
	spawn := `/call sessions_spawn {"task":"Wait.","model":"held/m"}`
	loop := strings.Repeat(spawn+"\n", 3)

	got := runs.send(t, "agent:main:a", "l-1", loop).terminal().text()
	if n := strings.Count(got, `"status":"accepted"`); n != 2 {
		t.Errorf("%d children accepted, want 2: %s", n, got)
	}
	if !strings.Contains(got, "sessions_spawn has reached max active children for this session (2/2; agents.defaults.subagents.maxChildrenPerAgent)") {
		t.Errorf("the third spawn: %s", got)
	}
	m.next(t)
	m.next(t)
	got = runs.send(t, "agent:main:b", "l-2", loop).terminal().text()
	if n := strings.Count(got, `"status":"accepted"`); n != 1 {
		t.Errorf("%d children accepted, want 1: %s", n, got)
	}
	if !strings.Contains(got, "sessions_spawn has reached max concurrent subagents (3/3; agents.defaults.subagents.maxConcurrent)") {
		t.Errorf("the spawn beyond maxConcurrent: %s", got)
	}
	m.next(t)
	// A session reaches only its own children.
	theirs := regexp.MustCompile(`agent:main:subagent:[0-9a-f-]+`).FindString(runs.runs["l-1"].terminal().text())
	got = runs.send(t, "agent:main:b", "l-2b", `/call subagents {"action":"kill","target":"`+theirs+`"}`).terminal().text()
	if theirs == "" || !strings.Contains(got, "no subagent of this session matches") {
		t.Errorf("b killing a's child %q: %s", theirs, got)
	}

	got = runs.send(t, "agent:main:a", "l-3", `/call subagents {"action":"kill","target":"all"}`).terminal().text()
	if n := strings.Count(got, ":subagent:"); n != 2 {
		t.Errorf("kill all stopped %d, want 2: %s", n, got)
	}
	runs.announced(t, "agent:main:a", 2)
	got = runs.send(t, "agent:main:b", "l-4", spawn).terminal().text()
	if !strings.Contains(got, `"status":"accepted"`) {
		t.Errorf("a spawn after the kill: %s", got)
	}
	m.next(t)
	// No child is left running for the shutdown to wait for.
	runs.send(t, "agent:main:b", "l-5", `/call subagents {"action":"kill","target":"all"}`)
	runs.announced(t, "agent:main:b", 2)
}

// TestSubagentTenantSandboxed: a tenant's child runs in the tenant's
// sandbox: its command sees neither the operator's config nor the host's
// root user, and its result reaches the tenant's parent session.
func TestSubagentTenantSandboxed(t *testing.T) {
	needBwrap(t)
	ts, url := startWS(t, "")
	writeFile(t, filepath.Join(ts.dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}}}`))
	runs := followRuns(dialTenant(t, url, "acme", "acme-token"))
	const parent = "agent:main:main"

	cmd, _ := json.Marshal(map[string]string{"command": "id -u; cat " + filepath.Join(ts.dir, "talon.json")})
	spawn, _ := json.Marshal(map[string]any{"task": "/call exec " + string(cmd)})
	acc := spawnResult(t, runs.send(t, parent, "t-1", "/call sessions_spawn "+string(spawn)))
	runs.announced(t, parent, 1)

	child := historyText(t, runs.cl, acc.ChildSessionKey)
	top := historyText(t, runs.cl, parent)
	for _, h := range []string{child, top} {
		if strings.Contains(h, wsToken) || !strings.Contains(h, "No such file or directory") {
			t.Errorf("the child's command was not confined to the tenant's sandbox:\n%s", h)
		}
	}
	if !strings.Contains(top, "session_key: "+acc.ChildSessionKey) || !strings.Contains(top, "status: completed") {
		t.Errorf("the tenant's parent has not the child's completion:\n%s", top)
	}
	var explain map[string]any
	if err := runs.cl.Call(t.Context(), "sandbox.explain", map[string]any{"agentId": "main", "sessionKey": acc.ChildSessionKey}, &explain); err != nil {
		t.Fatal(err)
	}
	if p, _ := explain["plan"].(map[string]any); p["sandboxed"] != true {
		t.Errorf("sandbox.explain of the child's session: %v", explain)
	}
}

// TestSubagentRestart: the registry is in memory. A shutdown cuts a
// running child short like any run, and announces nothing (the gateway
// starts no run while it stops); after the restart the child's session
// and task are still there, subagents lists nothing, and the parent that
// yielded for it is not stuck: its next turn runs as any turn.
func TestSubagentRestart(t *testing.T) {
	m := newHeldLLM(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{"gateway":{"auth":{"token":"`+wsToken+`"}}`+heldMembers(m, "")+`}`))
	quick := func(o *Options) { o.ShutdownTimeout = time.Millisecond }
	ts := startServerWith(t, dir, nil, quick)
	runs := followRuns(dialWS(t, "ws"+strings.TrimPrefix(ts.url, "http")))
	const parent = "agent:main:main"

	ev := runs.send(t, parent, "r-1", "/call sessions_spawn {\"task\":\"Outlive the gateway.\",\"model\":\"held/m\"}\n/call sessions_yield {}")
	if ev.terminal().State != "final" || ev.terminal().text() != "" {
		t.Fatalf("the yielded turn: %+v", ev.terminal())
	}
	call := m.next(t)
	ts.stop()
	call.ended(t)

	ts = startServerWith(t, dir, nil, quick)
	runs = followRuns(dialWS(t, "ws"+strings.TrimPrefix(ts.url, "http")))
	list := runs.send(t, parent, "r-2", `/call subagents {"action":"list"}`).terminal()
	if list.State != "final" || !strings.Contains(list.text(), `"total":0`) {
		t.Errorf("subagents list after the restart: %+v", list)
	}
	h := historyText(t, runs.cl, parent)
	if strings.Contains(h, "[Internal task completion event]") {
		t.Errorf("a completion event for a child cut short by the shutdown:\n%s", h)
	}
	var sessions struct {
		Sessions []struct{ Key, SpawnedBy string } `json:"sessions"`
	}
	if err := runs.cl.Call(t.Context(), "sessions.list", map[string]any{}, &sessions); err != nil {
		t.Fatal(err)
	}
	var child string
	for _, s := range sessions.Sessions {
		if s.SpawnedBy == parent {
			child = s.Key
		}
	}
	if child == "" || !strings.Contains(historyText(t, runs.cl, child), "Outlive the gateway.") {
		t.Errorf("the child's session after the restart: %q in %+v", child, sessions.Sessions)
	}
}
