package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/protocol"
	"talon/protocol/client"
)

// Deadlines in these tests only turn a hang into a failure; nothing is
// timed.
const chatTestWait = 15 * time.Second

// stepLLM is a model at the outside edge that streams what the test
// feeds it: each fragment sent on next goes out as one chunk, and the
// empty string ends the answer. It makes the throttled chat deltas
// deterministic: the test sends the next fragment once it has seen the
// last one arrive.
type stepLLM struct {
	srv  *httptest.Server
	next chan string
}

func newStepLLM(t *testing.T) *stepLLM {
	l := &stepLLM{next: make(chan string)}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		for {
			select {
			case <-r.Context().Done():
				return
			case f := <-l.next:
				if f == "" {
					send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
					fmt.Fprint(w, "data: [DONE]\n\n")
					return
				}
				send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": f}}}})
			}
		}
	}))
	t.Cleanup(l.srv.Close)
	return l
}

// feed sends the next fragment ("" ends the answer).
func (l *stepLLM) feed(t *testing.T, frag string) {
	t.Helper()
	select {
	case l.next <- frag:
	case <-time.After(chatTestWait):
		t.Fatalf("the model was not asked for fragment %q", frag)
	}
}

// modelMembers are config members that point the default agent at a
// model server.
func modelMembers(url string) string {
	return `,"models":{"providers":{"fake":{"baseUrl":"` + url + `/v1"}}},"agents":{"defaults":{"model":"fake/scripted"}}`
}

// Decoded events.
type (
	gotChat struct {
		RunID, SessionKey, State, DeltaText, StopReason, ErrorMessage, ErrorKind string
		Seq                                                                      int64
		Replace                                                                  bool
		Usage                                                                    map[string]int
		Message                                                                  *struct {
			Role            string
			Content         []struct{ Type, Text string }
			Provider, Model string
		}
	}
	gotAgent struct {
		RunID, Stream, SessionKey string
		Seq, Ts                   int64
		Data                      map[string]any
	}
	// runEvents are one run's events as a client saw them, in order.
	runEvents struct {
		all   []protocol.Frame
		chat  []gotChat
		agent []gotAgent
	}
)

func (g gotChat) text() string {
	if g.Message == nil || len(g.Message.Content) == 0 {
		return ""
	}
	return g.Message.Content[0].Text
}

// ended reports whether the run's terminal chat and lifecycle events
// have both arrived.
func (e *runEvents) ended() bool {
	chatDone, lifeDone := false, false
	for _, c := range e.chat {
		chatDone = chatDone || c.State != "delta"
	}
	for _, a := range e.agent {
		lifeDone = lifeDone || a.Stream == "lifecycle" && a.Data["phase"] != "start"
	}
	return chatDone && lifeDone
}

func (e *runEvents) terminal() gotChat {
	for _, c := range e.chat {
		if c.State != "delta" {
			return c
		}
	}
	return gotChat{}
}

func (e *runEvents) lifecycle() []string {
	var out []string
	for _, a := range e.agent {
		if a.Stream == "lifecycle" {
			out = append(out, fmt.Sprint(a.Data["phase"]))
		}
	}
	return out
}

// watch reads a client's events of one run until until says stop.
func watch(t *testing.T, cl *client.Client, runID string, ev *runEvents, until func(*runEvents) bool) {
	t.Helper()
	deadline := time.After(chatTestWait)
	for !until(ev) {
		select {
		case f, ok := <-cl.Events():
			if !ok {
				t.Fatalf("connection closed while waiting for run %s: %v", runID, cl.Err())
			}
			record(t, f, runID, ev)
		case <-deadline:
			t.Fatalf("run %s: gave up waiting; saw chat %+v agent %+v", runID, ev.chat, ev.agent)
		}
	}
}

func record(t *testing.T, f protocol.Frame, runID string, ev *runEvents) {
	t.Helper()
	switch f.Event {
	case protocol.EventChat:
		var c gotChat
		if err := json.Unmarshal(f.Payload, &c); err != nil {
			t.Fatalf("chat event %s: %v", f.Payload, err)
		}
		if c.RunID == runID {
			ev.chat = append(ev.chat, c)
			ev.all = append(ev.all, f)
		}
	case protocol.EventAgent:
		var a gotAgent
		if err := json.Unmarshal(f.Payload, &a); err != nil {
			t.Fatalf("agent event %s: %v", f.Payload, err)
		}
		if a.RunID == runID {
			ev.agent = append(ev.agent, a)
			ev.all = append(ev.all, f)
		}
	}
}

func callOK(t *testing.T, cl *client.Client, method string, params any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chatTestWait)
	defer cancel()
	var out map[string]any
	if err := cl.Call(ctx, method, params, &out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

// TestChatSendStream follows one chat.send run: the immediate answer,
// the lifecycle, every fragment as an agent event, chat deltas with the
// cumulative text and the new fragment, and the final; a reader sees the
// same chat events, a client without read scope none.
func TestChatSendStream(t *testing.T) {
	model := newStepLLM(t)
	ts, url := startWS(t, modelMembers(model.srv.URL))
	sender := dialWS(t, url, protocol.ScopeWrite)
	reader := dialWS(t, url, protocol.ScopeRead)
	blind := dialWS(t, url, []string{}...)

	got := callOK(t, sender, "chat.send", map[string]any{"sessionKey": "main", "message": "  say hello  ", "idempotencyKey": "run-stream"})
	if want := map[string]any{"runId": "run-stream", "status": "started"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("chat.send = %v, want %v", got, want)
	}
	var ev, seen runEvents
	steps := []struct {
		frag  string
		delta string // the chat delta's text once the fragment is in
	}{
		{"Hello", "Hello"},
		{" wide", "Hello wide"},
		{" world", "Hello wide world"},
	}
	for _, st := range steps {
		model.feed(t, st.frag)
		watch(t, sender, "run-stream", &ev, func(e *runEvents) bool {
			return len(e.chat) > 0 && e.chat[len(e.chat)-1].text() == st.delta
		})
	}
	model.feed(t, "")
	watch(t, sender, "run-stream", &ev, (*runEvents).ended)
	watch(t, reader, "run-stream", &seen, (*runEvents).ended)

	// Chat: deltas with cumulative text whose deltaTexts add up, then the
	// final; seq counts the run's chat events.
	var joined string
	for i, c := range ev.chat {
		if c.Seq != int64(i+1) || c.SessionKey != "agent:main:main" {
			t.Errorf("chat event %d: seq %d key %q", i, c.Seq, c.SessionKey)
		}
		if c.State == "delta" {
			joined += c.DeltaText
			if c.text() != joined || c.Message.Role != "assistant" || c.Replace {
				t.Errorf("delta %d: text %q deltaText %q (joined %q) replace %v", i, c.text(), c.DeltaText, joined, c.Replace)
			}
		}
	}
	final := ev.chat[len(ev.chat)-1]
	if final.State != "final" || final.text() != "Hello wide world" || final.StopReason != "stop" || len(ev.chat) != 4 {
		t.Fatalf("chat events %+v", ev.chat)
	}
	// Agent: lifecycle start, one assistant event per fragment with the
	// cumulative text and the fragment, lifecycle end.
	if l := ev.lifecycle(); !reflect.DeepEqual(l, []string{"start", "end"}) {
		t.Errorf("lifecycle %v", l)
	}
	var assistant []string
	for i, a := range ev.agent {
		if a.Seq != int64(i+1) || a.SessionKey != "agent:main:main" || a.Ts == 0 {
			t.Errorf("agent event %d = %+v", i, a)
		}
		if a.Stream == "assistant" {
			assistant = append(assistant, fmt.Sprint(a.Data["text"], "|", a.Data["delta"]))
		}
	}
	if want := []string{"Hello|Hello", "Hello wide| wide", "Hello wide world| world"}; !reflect.DeepEqual(assistant, want) {
		t.Errorf("assistant events %q, want %q", assistant, want)
	}
	if a := ev.agent[0]; a.Data["startedAt"] == nil {
		t.Errorf("lifecycle start %+v", a.Data)
	}
	// The reader saw the same chat events.
	if !reflect.DeepEqual(seen.chat, ev.chat) {
		t.Errorf("reader saw %+v", seen.chat)
	}
	// A client without read scope saw none: every event before this
	// answer would have been queued before it.
	if err := blind.Call(context.Background(), "health", nil, nil); err != nil {
		t.Fatal(err)
	}
	for len(blind.Events()) > 0 {
		if f := <-blind.Events(); f.Event == protocol.EventChat || f.Event == protocol.EventAgent {
			t.Fatalf("a client without read scope got %s", f.Event)
		}
	}
	// The turn is in the session's transcript, as the HTTP path leaves it.
	msgs := transcriptOf(t, ts, "agent:main:main")
	if len(msgs) != 2 || msgs[0].Content != "say hello" || msgs[1].Content != "Hello wide world" {
		t.Fatalf("transcript %+v", msgs)
	}
}

// TestChatIdempotency: a retry of a finished chat.send gets its outcome
// without a second run; a retry while it runs gets in_flight.
func TestChatIdempotency(t *testing.T) {
	model := newScriptedLLM(t)
	_, url := startWS(t, modelMembers(model.srv.URL))
	cl := dialWS(t, url)
	model.push(scripted{Content: "first answer"})
	send := map[string]any{"sessionKey": "agent:main:idem", "message": "hi", "idempotencyKey": "k1"}
	callOK(t, cl, "chat.send", send)
	var ev runEvents
	watch(t, cl, "k1", &ev, (*runEvents).ended)

	cases := []struct {
		name   string
		params map[string]any
		want   map[string]any
	}{
		{"replay", send, map[string]any{"runId": "k1", "status": "ok"}},
		{"replay with another message", map[string]any{"sessionKey": "agent:main:idem", "message": "other", "idempotencyKey": "k1"}, map[string]any{"runId": "k1", "status": "ok"}},
	}
	for _, tc := range cases {
		if got := callOK(t, cl, "chat.send", tc.params); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := model.count(); n != 1 {
		t.Fatalf("the model was called %d times, want 1", n)
	}

	// In flight: the model holds the run.
	started := make(chan struct{})
	model.mu.Lock()
	model.block = started
	model.mu.Unlock()
	inflight := map[string]any{"sessionKey": "agent:main:idem", "message": "long", "idempotencyKey": "k2"}
	callOK(t, cl, "chat.send", inflight)
	<-started
	if got := callOK(t, cl, "chat.send", inflight); !reflect.DeepEqual(got, map[string]any{"runId": "k2", "status": "in_flight"}) {
		t.Fatalf("in-flight retry = %v", got)
	}
	// An agent request may not take a chat run's id.
	err := cl.Call(context.Background(), "agent", map[string]any{"message": "x", "idempotencyKey": "k2"}, nil)
	if err == nil || !strings.Contains(err.Error(), `idempotencyKey "k2" is the runId of a chat run still in flight`) {
		t.Fatalf("agent with a chat run's key: %v", err)
	}
	callOK(t, cl, "chat.abort", map[string]any{"sessionKey": "agent:main:idem"})
	if got := callOK(t, cl, "chat.send", inflight); !reflect.DeepEqual(got, map[string]any{"runId": "k2", "status": "aborted", "stopReason": "rpc"}) {
		t.Fatalf("retry after the abort = %v", got)
	}
	if n := model.count(); n != 2 {
		t.Fatalf("the model was called %d times, want 2", n)
	}
}

// TestChatAbort aborts runs held by the model, every way a client can,
// and checks the refusals.
func TestChatAbort(t *testing.T) {
	model := newScriptedLLM(t)
	ts, url := startWS(t, modelMembers(model.srv.URL))
	cl := dialWS(t, url)
	cases := []struct {
		name       string
		abort      func(runID string) (map[string]any, error)
		want       map[string]any // the abort's answer
		stopReason string
	}{
		{"chat.abort with runId", func(id string) (map[string]any, error) {
			return callErr(cl, "chat.abort", map[string]any{"sessionKey": "agent:main:abort", "runId": id})
		}, map[string]any{"ok": true, "aborted": true, "runIds": []any{"a-chat.abort with runId"}}, "rpc"},
		{"chat.abort of the session", func(string) (map[string]any, error) {
			return callErr(cl, "chat.abort", map[string]any{"sessionKey": "AGENT:main:Abort"})
		}, map[string]any{"ok": true, "aborted": true, "runIds": []any{"a-chat.abort of the session"}}, "rpc"},
		{"stop command", func(string) (map[string]any, error) {
			return callErr(cl, "chat.send", map[string]any{"sessionKey": "agent:main:abort", "message": " /STOP! ", "idempotencyKey": "stop-1"})
		}, map[string]any{"ok": true, "aborted": true, "runIds": []any{"a-stop command"}}, "stop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{})
			model.mu.Lock()
			model.block = started
			model.mu.Unlock()
			id := "a-" + tc.name
			callOK(t, cl, "chat.send", map[string]any{"sessionKey": "agent:main:abort", "message": "long task", "idempotencyKey": id})
			<-started
			var ev runEvents
			watch(t, cl, id, &ev, func(e *runEvents) bool { return len(e.chat) > 0 }) // the "thinking" delta
			got, err := tc.abort(id)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("abort = %v, %v; want %v", got, err, tc.want)
			}
			watch(t, cl, id, &ev, (*runEvents).ended)
			end := ev.terminal()
			if end.State != "aborted" || end.StopReason != tc.stopReason || end.text() != "thinking" {
				t.Fatalf("terminal chat event %+v", end)
			}
			last := ev.agent[len(ev.agent)-1]
			if last.Data["phase"] != "end" || last.Data["aborted"] != true || last.Data["stopReason"] != tc.stopReason {
				t.Fatalf("lifecycle end %+v", last.Data)
			}
		})
	}
	// The session's transcript keeps each input and an aborted record.
	msgs := transcriptOf(t, ts, "agent:main:abort")
	if len(msgs) != 2*len(cases) {
		t.Fatalf("transcript %+v", msgs)
	}
	for i := 0; i < len(msgs); i += 2 {
		if msgs[i].Content != "long task" || msgs[i+1].StopReason != llm.StopAborted {
			t.Errorf("transcript %d: %+v %+v", i, msgs[i], msgs[i+1])
		}
	}

	// Refusals and no-ops.
	started := make(chan struct{})
	model.mu.Lock()
	model.block = started
	model.mu.Unlock()
	callOK(t, cl, "chat.send", map[string]any{"sessionKey": "agent:main:other", "message": "long", "idempotencyKey": "busy"})
	<-started
	refusals := []struct {
		name   string
		params map[string]any
		want   map[string]any
		err    string
	}{
		{"runId of another session", map[string]any{"sessionKey": "agent:main:abort", "runId": "busy"}, nil, "runId does not match sessionKey"},
		{"unknown runId", map[string]any{"sessionKey": "agent:main:abort", "runId": "nope"}, map[string]any{"ok": true, "aborted": false, "runIds": []any{}}, ""},
		{"idle session", map[string]any{"sessionKey": "agent:main:idle"}, map[string]any{"ok": true, "aborted": false, "runIds": []any{}}, ""},
		{"stop on an idle session", nil, map[string]any{"ok": true, "aborted": false, "runIds": []any{}}, ""},
	}
	for _, tc := range refusals {
		var got map[string]any
		var err error
		if tc.params == nil {
			got, err = callErr(cl, "chat.send", map[string]any{"sessionKey": "agent:main:idle", "message": "stop", "idempotencyKey": "stop-2"})
		} else {
			got, err = callErr(cl, "chat.abort", tc.params)
		}
		var pe *protocol.Error
		switch {
		case tc.err != "" && (!errors.As(err, &pe) || pe.Code != protocol.CodeInvalidRequest || pe.Message != tc.err):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || !reflect.DeepEqual(got, tc.want)):
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	callOK(t, cl, "chat.abort", map[string]any{"sessionKey": "agent:main:other", "runId": "busy"})
}

func callErr(cl *client.Client, method string, params any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), chatTestWait)
	defer cancel()
	var out map[string]any
	err := cl.Call(ctx, method, params, &out)
	return out, err
}

// TestChatParams checks every refusal of the chat methods' params.
func TestChatParams(t *testing.T) {
	_, url := startWS(t, `,"agents":{"list":[{"id":"main","default":true},{"id":"ops"}]}`)
	admin := dialWS(t, url)
	writer := dialWS(t, url, protocol.ScopeWrite)
	reader := dialWS(t, url, protocol.ScopeRead)
	pngB64 := base64.StdEncoding.EncodeToString(tinyPNG(t))
	big := base64.StdEncoding.EncodeToString(make([]byte, maxAttachmentBytes+10))
	send := func(extra map[string]any) map[string]any {
		p := map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "p1"}
		for k, v := range extra {
			if v == nil {
				delete(p, k)
			} else {
				p[k] = v
			}
		}
		return p
	}
	cases := []struct {
		name   string
		cl     *client.Client
		method string
		params any
		want   string
	}{
		{"no idempotencyKey", admin, "chat.send", send(map[string]any{"idempotencyKey": nil}), "invalid chat.send params: must have required property 'idempotencyKey'"},
		{"blank idempotencyKey", admin, "chat.send", send(map[string]any{"idempotencyKey": "  "}), "invalid chat.send params: idempotencyKey must not be empty"},
		{"idempotencyKey a number", admin, "chat.send", send(map[string]any{"idempotencyKey": 7}), "invalid chat.send params: idempotencyKey must be a string, not number"},
		{"long idempotencyKey", admin, "chat.send", send(map[string]any{"idempotencyKey": strings.Repeat("k", 300)}), "invalid chat.send params: idempotencyKey must be at most 256 bytes"},
		{"no sessionKey", admin, "chat.send", send(map[string]any{"sessionKey": nil}), "invalid chat.send params: must have required property 'sessionKey'"},
		{"no message", admin, "chat.send", send(map[string]any{"message": nil}), "invalid chat.send params: must have required property 'message'"},
		{"blank message", admin, "chat.send", send(map[string]any{"message": " "}), "invalid chat.send params: message or attachment required"},
		{"negative timeout", admin, "chat.send", send(map[string]any{"timeoutMs": -1}), "invalid chat.send params: timeoutMs must be >= 0"},
		{"deliver", admin, "chat.send", send(map[string]any{"deliver": true}), "invalid chat.send params: deliver is not supported (a run started here is not delivered to a chat channel; use send); leave it false"},
		{"reserved key", admin, "chat.send", send(map[string]any{"sessionKey": "agent:main:subagent:x"}), "invalid chat.send params: sessionKey: session key is in a reserved namespace (subagent:, cron:, acp:)"},
		{"unknown agent in key", admin, "chat.send", send(map[string]any{"sessionKey": "agent:nobody:main"}), `invalid chat.send params: sessionKey: unknown agent id "nobody"`},
		{"agentId against key", admin, "chat.send", send(map[string]any{"agentId": "ops", "sessionKey": "agent:main:x"}), `invalid chat.send params: sessionKey: session key belongs to agent "main", not "ops"`},
		{"empty key", admin, "chat.send", send(map[string]any{"sessionKey": ""}), "invalid chat.send params: sessionKey must not be empty"},
		{"key with a control character", admin, "chat.send", send(map[string]any{"sessionKey": "a\x01b"}), "invalid chat.send params: sessionKey: invalid session key: contains a control character"},
		{"chat.abort empty key", admin, "chat.abort", map[string]any{"sessionKey": " "}, "invalid chat.abort params: sessionKey must not be empty"},
		{"attachment not an image", admin, "chat.send", send(map[string]any{"attachments": []any{map[string]any{"mimeType": "application/pdf", "content": pngB64}}}), "invalid chat.send params: attachments[0]: only image attachments are supported, not application/pdf"},
		{"attachment bad base64", admin, "chat.send", send(map[string]any{"attachments": []any{map[string]any{"fileName": "a.png", "content": "!!!"}}}), `invalid chat.send params: attachments[0] ("a.png"): content is not valid base64`},
		{"attachment text bytes", admin, "chat.send", send(map[string]any{"attachments": []any{map[string]any{"content": base64.StdEncoding.EncodeToString([]byte("hello there"))}}}), "invalid chat.send params: attachments[0]: content is text/plain; charset=utf-8, not a PNG, JPEG, GIF or WebP image"},
		{"attachment too big", admin, "chat.send", send(map[string]any{"attachments": []any{map[string]any{"content": big}}}), "invalid chat.send params: attachments[0]: exceeds the size limit"},
		{"attachment without content", admin, "chat.send", send(map[string]any{"attachments": []any{map[string]any{"mimeType": "image/png"}}}), "invalid chat.send params: attachments[0]: content is required (base64)"},
		{"attachment content a number", admin, "chat.send", send(map[string]any{"attachments": []any{map[string]any{"content": 5}}}), "invalid chat.send params: attachments.content must be a string, not number"},
		{"chat.send needs write", reader, "chat.send", send(nil), "missing scope: operator.write"},
		{"chat.abort needs write", reader, "chat.abort", map[string]any{"sessionKey": "main"}, "missing scope: operator.write"},
		{"agent needs write", reader, "agent", map[string]any{"message": "x", "idempotencyKey": "r"}, "missing scope: operator.write"},
		{"chat.abort without sessionKey", admin, "chat.abort", map[string]any{"runId": "x"}, "invalid chat.abort params: must have required property 'sessionKey'"},
		{"agent without message", admin, "agent", map[string]any{"idempotencyKey": "a"}, "invalid agent params: must have required property 'message'"},
		{"agent blank message", admin, "agent", map[string]any{"message": " ", "idempotencyKey": "a"}, "invalid agent params: message must not be empty"},
		{"agent without key", admin, "agent", map[string]any{"message": "x"}, "invalid agent params: must have required property 'idempotencyKey'"},
		{"agent unknown agent", admin, "agent", map[string]any{"message": "x", "idempotencyKey": "a", "agentId": "ghost"}, `invalid agent params: unknown agent id "ghost"`},
		{"agent sessionId alone", admin, "agent", map[string]any{"message": "x", "idempotencyKey": "a", "sessionId": "abc"}, "invalid agent params: sessionId alone is not supported by Talon; name the session with sessionKey"},
		{"agent timeout", admin, "agent", map[string]any{"message": "x", "idempotencyKey": "a", "timeout": -5}, "invalid agent params: timeout must be >= 0"},
		{"agent model needs admin", writer, "agent", map[string]any{"message": "x", "idempotencyKey": "a", "model": "inspect"}, "provider/model overrides are not authorized for this caller."},
		{"agent unknown model", admin, "agent", map[string]any{"message": "x", "idempotencyKey": "a", "model": "nowhere/model"}, `invalid agent params: model "nowhere/model": `},
		{"agent empty label", admin, "agent", map[string]any{"message": "x", "idempotencyKey": "a", "label": ""}, "invalid agent params: invalid label: empty"},
		{"agent.wait without runId", admin, "agent.wait", map[string]any{}, "invalid agent.wait params: must have required property 'runId'"},
		{"agent.wait unknown run", admin, "agent.wait", map[string]any{"runId": "ghost"}, `unknown runId "ghost": no run with this id in the last 5m0s`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callErr(tc.cl, tc.method, tc.params)
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidRequest || !strings.HasPrefix(pe.Message, tc.want) {
				t.Fatalf("err = %v, want INVALID_REQUEST %q", err, tc.want)
			}
		})
	}
	// A refused request leaves its key free for a corrected retry.
	if got := callOK(t, admin, "chat.send", send(nil)); got["status"] != "started" {
		t.Fatalf("corrected retry = %v", got)
	}
}

func tinyPNG(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestChatAttachment: an image attachment reaches the model with the
// text (the inspect model describes what it received).
func TestChatAttachment(t *testing.T) {
	_, url := startWS(t, "")
	cl := dialWS(t, url)
	pic := tinyPNG(t)
	forms := []struct{ name, content string }{
		{"base64", base64.StdEncoding.EncodeToString(pic)},
		{"data URL", "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)},
		{"unpadded", base64.RawStdEncoding.EncodeToString(pic)},
	}
	for i, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			id := fmt.Sprint("img-", i)
			callOK(t, cl, "chat.send", map[string]any{"sessionKey": "agent:main:img", "message": "what is this?", "idempotencyKey": id,
				"attachments": []any{map[string]any{"type": "image", "mimeType": "image/jpeg", "fileName": "x.png", "content": f.content}}})
			var ev runEvents
			watch(t, cl, id, &ev, (*runEvents).ended)
			want := fmt.Sprintf(`inspect: 1 image(s): image/png %d bytes; prompt: "what is this?"`, len(pic))
			if got := ev.terminal(); got.State != "final" || got.text() != want {
				t.Fatalf("final %+v, want %q", got, want)
			}
		})
	}
}

// TestAgentTwoPhase reads the agent method's frames raw: the accepted
// answer, the run's events with runId = idempotencyKey and the session
// key, then the final answer; a retry gets the same final answer, and
// agent.wait reports the run.
func TestAgentTwoPhase(t *testing.T) {
	_, url := startWS(t, "")
	r := dialRaw(t, url, nil)
	r.challenge()
	r.send(connectReq(connectParams(wsToken, 4, 4, protocol.ScopeWrite)))
	if f, _, err := r.next(); err != nil || !f.OK {
		t.Fatalf("connect: %+v %v", f, err)
	}
	params := map[string]any{"message": "/call write {\"path\":\"note.txt\",\"content\":\"hi\"}", "idempotencyKey": "ag-1", "sessionKey": "Agent:Main:Tools", "label": "tooling"}
	r.send(map[string]any{"type": "req", "id": "q1", "method": "agent", "params": params})
	var frames []protocol.Frame
	for {
		f, _, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		if f.Type == "res" && len(frames) > 1 {
			break
		}
	}
	var accepted struct {
		RunID, Status, SessionKey string
		AcceptedAt                int64
	}
	if f := frames[0]; f.Type != "res" || f.ID != "q1" || !f.OK || json.Unmarshal(f.Payload, &accepted) != nil ||
		accepted.RunID != "ag-1" || accepted.Status != "accepted" || accepted.AcceptedAt == 0 || accepted.SessionKey != "agent:main:tools" {
		t.Fatalf("first frame %+v (%s)", frames[0], frames[0].Payload)
	}
	var ev runEvents
	for _, f := range frames[1 : len(frames)-1] {
		if f.Type != "event" {
			t.Fatalf("frame between the answers: %+v", f)
		}
		record(t, f, "ag-1", &ev)
		// Tool events go to this client alone, without seq; the others
		// are broadcasts.
		tool := len(ev.agent) > 0 && f.Event == protocol.EventAgent && ev.agent[len(ev.agent)-1].Stream == "tool"
		if (f.Seq == nil) != tool {
			t.Errorf("%s event (tool %v) seq %v", f.Event, tool, f.Seq)
		}
	}
	if !ev.ended() || !reflect.DeepEqual(ev.lifecycle(), []string{"start", "end"}) {
		t.Fatalf("events before the final answer: chat %+v agent %+v", ev.chat, ev.agent)
	}
	var tools []string
	var texts []string
	for _, a := range ev.agent {
		if a.RunID != "ag-1" || a.SessionKey != "agent:main:tools" {
			t.Errorf("agent event %+v", a)
		}
		switch a.Stream {
		case "tool":
			tools = append(tools, fmt.Sprint(a.Data["phase"], " ", a.Data["name"]))
		case "assistant":
			texts = append(texts, fmt.Sprint(a.Data["text"]))
		}
	}
	if !reflect.DeepEqual(tools, []string{"start write", "result write"}) {
		t.Errorf("tool events %v", tools)
	}
	final := frames[len(frames)-1]
	var res struct {
		RunID, Status, Summary string
		Result                 struct {
			Payloads []struct{ Text string }
			Meta     struct {
				DurationMs *int64
				AgentMeta  struct{ SessionID, Provider, Model string }
				StopReason string
			}
		}
	}
	if final.ID != "q1" || !final.OK || json.Unmarshal(final.Payload, &res) != nil || res.RunID != "ag-1" || res.Status != "ok" || res.Summary != "completed" ||
		len(res.Result.Payloads) != 1 || res.Result.Meta.AgentMeta.SessionID == "" || res.Result.Meta.AgentMeta.Model != "inspect" || res.Result.Meta.DurationMs == nil {
		t.Fatalf("final answer %s", final.Payload)
	}
	// The answer after the tool is a new assistant message: its events'
	// text starts afresh.
	if len(texts) == 0 || texts[len(texts)-1] != res.Result.Payloads[0].Text {
		t.Errorf("assistant texts %q, final %q", texts, res.Result.Payloads[0].Text)
	}

	// A retry gets the same final answer, once, and runs nothing.
	r.send(map[string]any{"type": "req", "id": "q2", "method": "agent", "params": params})
	f, _, err := r.next()
	if err != nil || f.ID != "q2" || !f.OK || !bytes.Equal(f.Payload, final.Payload) {
		t.Fatalf("retry = %+v %s, %v", f, f.Payload, err)
	}
	r.send(map[string]any{"type": "req", "id": "q3", "method": "agent.wait", "params": map[string]any{"runId": "ag-1", "timeoutMs": 0}})
	f, _, err = r.next()
	var wait map[string]any
	if err != nil || !f.OK || json.Unmarshal(f.Payload, &wait) != nil || wait["status"] != "ok" || wait["endedAt"] == nil || wait["startedAt"] == nil {
		t.Fatalf("agent.wait = %s, %v", f.Payload, err)
	}
}

// TestAgentViaClient drives agent through the Go client, which skips the
// accepted answer; a model failure (a context overflow) ends in an error
// answer (ok false) after the lifecycle error, and a timeout in
// AGENT_TIMEOUT.
func TestAgentViaClient(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"This model's maximum context length is 10 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	}))
	defer failing.Close()
	model := newScriptedLLM(t)
	members := `,"models":{"providers":{"bad":{"baseUrl":"` + failing.URL + `/v1"},"fake":{"baseUrl":"` + model.srv.URL + `/v1"}}}` +
		`,"agents":{"list":[{"id":"main","default":true},{"id":"broken","model":"bad/m"},{"id":"slow","model":"fake/m"}]}`
	_, url := startWS(t, members)
	cl := dialWS(t, url)
	ctx := context.Background()

	var ok struct {
		Status string
		Result struct{ Payloads []struct{ Text string } }
	}
	if err := cl.Call(ctx, "agent", map[string]any{"message": "/tools", "idempotencyKey": "via-1"}, &ok); err != nil || ok.Status != "ok" || len(ok.Result.Payloads) != 1 {
		t.Fatalf("agent = %+v, %v", ok, err)
	}

	cases := []struct {
		name, agentID string
		timeout       int
		code, msg     string
		status, kind  string
	}{
		// A new session has nothing to compact: the advice at once (R5.4).
		{"model error", "broken", 0, protocol.CodeUnavailable, compaction.OverflowAdvice, "error", "context_length"},
		{"timeout", "slow", 1, protocol.CodeAgentTimeout, "run timed out after 1s", "timeout", "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.agentID == "slow" {
				model.mu.Lock()
				model.block = make(chan struct{})
				model.mu.Unlock()
			}
			id := "via-" + tc.name
			raw, err := cl.CallRaw(ctx, "agent", map[string]any{"message": "hi", "idempotencyKey": id, "agentId": tc.agentID, "timeout": tc.timeout})
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || !strings.HasPrefix(pe.Message, tc.msg) {
				t.Fatalf("agent = %s, %v; want %s %q", raw, err, tc.code, tc.msg)
			}
			var ev runEvents
			watch(t, cl, id, &ev, (*runEvents).ended)
			end := ev.terminal()
			life := ev.agent[len(ev.agent)-1]
			if end.State != "error" || end.ErrorKind != tc.kind || !strings.HasPrefix(end.ErrorMessage, tc.msg) ||
				life.Data["phase"] != "error" || life.Data["error"] != end.ErrorMessage {
				t.Fatalf("chat %+v lifecycle %+v", end, life.Data)
			}
			wait := callOK(t, cl, "agent.wait", map[string]any{"runId": id})
			if wait["status"] != tc.status {
				t.Fatalf("agent.wait = %v", wait)
			}
		})
	}
}

// TestChatShutdown: runs in flight when the gateway stops are waited for;
// those still going at the deadline are aborted, their clients told
// before the shutdown event, and their turns keep an aborted record.
func TestChatShutdown(t *testing.T) {
	t.Run("finishes", func(t *testing.T) {
		model := newStepLLM(t)
		ts, url := startWS(t, modelMembers(model.srv.URL))
		cl := dialWS(t, url)
		callOK(t, cl, "chat.send", map[string]any{"sessionKey": "main", "message": "hi", "idempotencyKey": "sd-1"})
		model.feed(t, "almost")
		stopped := make(chan error, 1)
		ts.stopd = true
		go func() { stopped <- ts.srv.Shutdown(context.Background()) }()
		// Once the gateway is stopping no new run starts; sd-1 goes on.
		for closing := false; !closing; {
			ts.srv.runs.mu.Lock()
			closing = ts.srv.runs.closing
			ts.srv.runs.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		_, err := callErr(cl, "chat.send", map[string]any{"sessionKey": "agent:main:x", "message": "more", "idempotencyKey": "sd-2"})
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeUnavailable || !pe.Retryable {
			t.Fatalf("chat.send while stopping: %v", err)
		}
		model.feed(t, " done")
		model.feed(t, "")
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		<-ts.errc
		var ev runEvents
		var order []string
		for f := range cl.Events() {
			record(t, f, "sd-1", &ev)
			if f.Event == protocol.EventShutdown || f.Event == protocol.EventChat && ev.terminal().State != "" {
				order = append(order, f.Event)
			}
		}
		if got := ev.terminal(); got.State != "final" || got.text() != "almost done" || !reflect.DeepEqual(order, []string{"chat", "shutdown"}) {
			t.Fatalf("final %+v, order %v", got, order)
		}
	})
	t.Run("aborted", func(t *testing.T) {
		model := newScriptedLLM(t)
		ts, url := startWS(t, modelMembers(model.srv.URL))
		dir := ts.dir
		cl := dialWS(t, url)
		started := make(chan struct{})
		model.mu.Lock()
		model.block = started
		model.mu.Unlock()
		callOK(t, cl, "chat.send", map[string]any{"sessionKey": "main", "message": "long task", "idempotencyKey": "sd-3"})
		<-started
		now, cancel := context.WithCancel(context.Background())
		cancel() // no grace: abort at once
		ts.stopd = true
		_ = ts.srv.Shutdown(now)
		<-ts.errc
		var ev runEvents
		var shutdownAfterEnd bool
		for f := range cl.Events() {
			record(t, f, "sd-3", &ev)
			if f.Event == protocol.EventShutdown {
				shutdownAfterEnd = ev.ended()
			}
		}
		if got := ev.terminal(); got.State != "aborted" || got.StopReason != "restart" || !shutdownAfterEnd {
			t.Fatalf("terminal %+v; shutdown after the end: %v", got, shutdownAfterEnd)
		}
		if code := websocket.CloseStatus(errors.Unwrap(cl.Err())); code != protocol.CloseRestart {
			t.Errorf("close = %d (%v), want 1012", code, cl.Err())
		}
		db, err := store.Open(filepath.Join(dir, StoreFile))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		e, err := db.GetSession(context.Background(), "main", "agent:main:main")
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := db.Transcript(context.Background(), e.SessionID, 0)
		if err != nil || len(msgs) != 2 || msgs[1].StopReason != llm.StopAborted {
			t.Fatalf("transcript %+v, %v", msgs, err)
		}
	})
}

// TestIdemCache checks the cache's bounds: answers expire after the TTL,
// the oldest go beyond the cap, pending entries stay, and a forgotten
// entry frees its key.
func TestIdemCache(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	cases := []struct {
		name string
		run  func(c *idemCache) string // returns a failure, or ""
	}{
		{"replay", func(c *idemCache) string {
			e, _ := c.begin("chat:a", nil, t0)
			c.finish(e, "answer", nil, t0)
			e2, fresh := c.begin("chat:a", nil, t0.Add(idemTTL-time.Second))
			if p, _, ok := c.answer(e2); fresh || !ok || p != "answer" {
				return fmt.Sprintf("fresh %v answer %v %v", fresh, p, ok)
			}
			return ""
		}},
		{"expiry", func(c *idemCache) string {
			e, _ := c.begin("chat:a", nil, t0)
			c.finish(e, "answer", nil, t0)
			if _, fresh := c.begin("chat:a", nil, t0.Add(idemTTL)); !fresh {
				return "an expired answer was replayed"
			}
			return ""
		}},
		{"pending never expires", func(c *idemCache) string {
			c.begin("chat:p", nil, t0)
			if _, fresh := c.begin("chat:p", nil, t0.Add(time.Hour)); fresh {
				return "a pending entry was dropped"
			}
			return ""
		}},
		{"cap", func(c *idemCache) string {
			for i := range idemMax + 5 {
				e, _ := c.begin(fmt.Sprint("chat:", i), nil, t0)
				c.finish(e, i, nil, t0)
			}
			if n := c.len(); n != idemMax {
				return fmt.Sprintf("%d entries, want %d", n, idemMax)
			}
			if c.lookup("chat:4", t0) != nil || c.lookup("chat:5", t0) == nil {
				return "not the oldest were dropped"
			}
			return ""
		}},
		{"forget", func(c *idemCache) string {
			e, _ := c.begin("agent:f", nil, t0)
			c.forget(e)
			if _, fresh := c.begin("agent:f", nil, t0); !fresh {
				return "a forgotten key is still taken"
			}
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if msg := tc.run(&idemCache{}); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

// TestStopCommand lists what stops a session and what is a message.
func TestStopCommand(t *testing.T) {
	for text, want := range map[string]bool{
		"/stop": true, "STOP": true, " stop! ": true, "please   stop.": true, "abort": true, "Esc": true,
		"stop the music": false, "/stopwatch": false, "don't stop": false, "": false,
	} {
		if got := isStopCommand(text); got != want {
			t.Errorf("isStopCommand(%q) = %v, want %v", text, got, want)
		}
	}
}
