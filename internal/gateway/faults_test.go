package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/llm"
	"talon/internal/session"
)

// The fault tests run a real gateway against a model on loopback that
// speaks the OpenAI wire protocol and misbehaves on purpose. For every
// fault, streamed and not, they check what the client gets, what the
// transcript keeps, that the next turn on the session works and sends a
// history the API accepts, and that no goroutine or upstream request
// outlives the turn.

// faultTimeout is the timeoutSeconds of provider "quick", which the
// turns that must time out use: short, so that they end quickly, and only
// on those turns, so that a slow machine cannot make a healthy answer
// time out. The other faulty turns use "flaky", with the default timeouts.
const faultTimeout = "1"

// settleTimeout bounds every wait for something to wind down; it is a
// deadline against hanging, not a claim about speed.
const settleTimeout = 15 * time.Second

// fault answers one request to the model, streamed or not, wrongly.
type fault func(f *faultyLLM, w http.ResponseWriter, r *http.Request, stream bool)

// faultyLLM is the scripted model of harness_test.go behind a front that
// can replace its answers with a fault, and that watches its connections.
type faultyLLM struct {
	*scriptedLLM

	mu sync.Mutex
	// fault answers the requests after the first `healthy` ones while set.
	fault   fault
	healthy int
	seen    int         // requests since the fault was armed
	arrived []time.Time // when each faulted request arrived
	ended   int         // faulted requests whose context the client ended
	conns   map[net.Conn]http.ConnState
	quit    chan struct{} // ends handlers that would otherwise wait forever
}

func newFaultyLLM(t *testing.T) *faultyLLM {
	f := &faultyLLM{scriptedLLM: &scriptedLLM{}, conns: map[net.Conn]http.ConnState{}, quit: make(chan struct{})}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if s == http.StateClosed || s == http.StateHijacked {
			delete(f.conns, c)
			return
		}
		f.conns[c] = s
	}
	f.srv.Start()
	t.Cleanup(func() {
		close(f.quit)
		f.srv.Close()
	})
	return f
}

func (f *faultyLLM) arm(healthy int, fl fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.healthy, f.seen, f.arrived, f.ended = fl, healthy, 0, nil, 0
}

// disarm ends the fault; the counts stay for the test to read.
func (f *faultyLLM) disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = nil
}

func (f *faultyLLM) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fl := f.fault
	if fl != nil {
		f.seen++
		if f.seen <= f.healthy {
			fl = nil
		} else {
			f.arrived = append(f.arrived, time.Now())
		}
	}
	f.mu.Unlock()
	if fl == nil {
		f.scriptedLLM.serve(w, r)
		return
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad request body", http.StatusBadRequest)
		return
	}
	fl(f, w, r, body.Stream)
}

// hang waits until the client ends the request, counting it, or the test
// ends.
func (f *faultyLLM) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
		f.mu.Lock()
		f.ended++
		f.mu.Unlock()
	case <-f.quit:
	}
}

func (f *faultyLLM) stats() (attempts, ended int, arrived []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.arrived), f.ended, slices.Clone(f.arrived)
}

// busyConns counts connections with a request in progress.
func (f *faultyLLM) busyConns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.conns {
		if s != http.StateIdle {
			n++
		}
	}
	return n
}

// sseChunk writes one chat.completion.chunk event and flushes it.
func sseChunk(w http.ResponseWriter, delta map[string]any, finish any) {
	b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

// The faults.
var (
	faultRateLimited fault = func(_ *faultyLLM, w http.ResponseWriter, _ *http.Request, _ bool) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
	}
	faultServerError fault = func(_ *faultyLLM, w http.ResponseWriter, _ *http.Request, _ bool) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"The server had an error while processing your request","type":"server_error"}}`)
	}
	faultMalformedJSON fault = func(_ *faultyLLM, w http.ResponseWriter, _ *http.Request, stream bool) {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"x"}`)
	}
	// faultCutMidChunk sends part of the answer, then drops the connection in
	// the middle of an event (or of the JSON body).
	faultCutMidChunk fault = func(_ *faultyLLM, w http.ResponseWriter, _ *http.Request, stream bool) {
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			sseChunk(w, map[string]any{"role": "assistant", "content": "Hello, wor"}, nil)
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"ld`)
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "400")
			fmt.Fprint(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, wor`)
		}
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the server closes the connection as it is
	}
)

// TestProviderFaults: for each way the model misbehaves, streamed and
// not, the client gets a clear OpenAI-shaped error, the transcript keeps
// the input and a record of the failure, the next turn works and sends a
// valid history, and nothing outlives the turn.
func TestProviderFaults(t *testing.T) {
	model := newFaultyLLM(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workspace", "notes.txt"), []byte("remember the milk"))
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{
		models: { providers: {
			fake: { baseUrl: "`+model.srv.URL+`/v1" },
			flaky: { baseUrl: "`+model.srv.URL+`/v1" },
			quick: { baseUrl: "`+model.srv.URL+`/v1", timeoutSeconds: `+faultTimeout+` },
		} },
		agents: { defaults: { model: "fake/scripted" } },
	}`))
	ts := startServer(t, dir, nil)
	warmUp(t, ts, model)

	type want struct {
		attempts int    // requests the model got for the turn (1 + retries)
		ended    int    // of which the client ended (cancelled) itself
		err      string // in the message the client gets, after the provider that the turn uses
		partial  string // the text streamed before the fault, kept in the transcript
	}
	cases := []struct {
		name     string
		fault    fault
		toolCall bool // the model calls read first, and the fault hits the second call
		// retryAfter: the fault asks for a 1 s wait before a retry.
		retryAfter bool
		plain      want // a non-streamed turn
		streamed   want // a streamed turn
	}{
		{
			name:       "429 with Retry-After",
			fault:      faultRateLimited,
			retryAfter: true,
			plain:      want{attempts: 3, err: "flaky: 429 rate_limit_exceeded: Rate limit reached for requests"},
			streamed:   want{attempts: 3, err: "flaky: 429 rate_limit_exceeded: Rate limit reached for requests"},
		},
		{
			name:     "500",
			fault:    faultServerError,
			plain:    want{attempts: 3, err: "flaky: 500 server_error: The server had an error"},
			streamed: want{attempts: 3, err: "flaky: 500 server_error: The server had an error"},
		},
		{
			name:     "500 after a tool call",
			fault:    faultServerError,
			toolCall: true,
			plain:    want{attempts: 3, err: "flaky: 500 server_error"},
			streamed: want{attempts: 3, err: "flaky: 500 server_error"},
		},
		{
			name:     "no answer within timeoutSeconds",
			fault:    func(f *faultyLLM, _ http.ResponseWriter, r *http.Request, _ bool) { f.hang(r) },
			plain:    want{attempts: 3, ended: 3, err: "quick: request timed out after 1s"},
			streamed: want{attempts: 3, ended: 3, err: "quick: request timed out after 1s"},
		},
		{
			name:     "malformed JSON",
			fault:    faultMalformedJSON,
			plain:    want{attempts: 1, err: "flaky: malformed JSON in response body"},
			streamed: want{attempts: 1, err: "flaky: malformed JSON in stream chunk"},
		},
		{
			name:     "connection cut mid-chunk",
			fault:    faultCutMidChunk,
			plain:    want{attempts: 1, err: "flaky: reading response body: unexpected EOF"},
			streamed: want{attempts: 1, err: "flaky: stream ended early: unexpected EOF", partial: "Hello, wor"},
		},
		{
			name: "stream that never ends",
			fault: func(f *faultyLLM, w http.ResponseWriter, r *http.Request, stream bool) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					sseChunk(w, map[string]any{"role": "assistant", "content": "Still thinking"}, nil)
				} else {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"id":"x","choices":[`)
					w.(http.Flusher).Flush()
				}
				f.hang(r)
			},
			plain:    want{attempts: 1, ended: 1, err: "quick: request timed out after 1s"},
			streamed: want{attempts: 1, ended: 1, err: "quick: stream idle for longer than 1s", partial: "Still thinking"},
		},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			w := c.plain
			name := c.name + "/plain"
			if stream {
				w, name = c.streamed, c.name+"/streamed"
			}
			t.Run(name, func(t *testing.T) {
				baseline := idleGoroutines(model)
				user := strings.NewReplacer(" ", "-", "/", "-").Replace(strings.ToLower(name))
				input := "please answer " + user
				healthy := 0
				if c.toolCall {
					healthy = 1
					model.push(scripted{ToolCalls: []struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					}{{Name: "read", Arguments: json.RawMessage(`{"path":"notes.txt"}`)}}})
				}
				model.arm(healthy, c.fault)
				prov, _, _ := strings.Cut(w.err, ":")
				rep := ts.post(map[string]string{"X-OpenClaw-Model": prov + "/scripted"}, chatBody(user, input, stream))
				model.disarm()

				// What the client got.
				msg := "model provider error: " + w.err
				if stream {
					if rep.status != http.StatusOK || !strings.HasSuffix(rep.body, "data: [DONE]\n\n") {
						t.Fatalf("streamed reply: status %d, body %q; want 200 ending with [DONE]", rep.status, rep.body)
					}
					if !strings.HasPrefix(rep.content, w.partial+"Error: "+msg) || rep.finish != "stop" {
						t.Errorf("streamed reply: content %q finish %q; want %q then the error %q, finish stop", rep.content, rep.finish, w.partial, msg)
					}
				} else {
					var env struct {
						Error struct{ Message, Type string } `json:"error"`
					}
					if err := json.Unmarshal([]byte(rep.body), &env); err != nil || rep.status != http.StatusBadGateway ||
						env.Error.Type != errAPI || !strings.HasPrefix(env.Error.Message, msg) {
						t.Errorf("reply: status %d body %s; want 502 with an api_error starting %q", rep.status, rep.body, msg)
					}
				}

				// What the model saw: the retries (after the server's
				// Retry-After, when it sent one) and requests ended by the
				// gateway rather than left hanging.
				attempts, _, arrived := model.stats()
				if attempts != w.attempts {
					t.Errorf("the model got %d requests for the turn, want %d", attempts, w.attempts)
				}
				if c.retryAfter {
					for i := 1; i < len(arrived); i++ {
						if gap := arrived[i].Sub(arrived[i-1]); gap < time.Second {
							t.Errorf("retry %d came %v after the previous request; Retry-After asked for 1s", i, gap)
						}
					}
				}
				waitFor(t, "the model's requests to be ended by the gateway", func() bool { _, ended, _ := model.stats(); return ended >= w.ended })
				if _, ended, _ := model.stats(); ended != w.ended {
					t.Errorf("the gateway ended %d of the model's requests, want %d", ended, w.ended)
				}

				// What the transcript kept: the input, what ran, the record.
				key := session.OpenAIUser("main", user)
				wantLog := []string{"user: " + input}
				if c.toolCall {
					wantLog = append(wantLog, "assistant: [read]", "tool: remember the milk")
				}
				wantLog = append(wantLog, fmt.Sprintf("assistant(error): %s", w.partial))
				msgs := transcriptOf(t, ts, key)
				if got := describe(msgs); !slices.Equal(got, wantLog) {
					t.Errorf("transcript:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(wantLog, "\n  "))
				}
				if last := msgs[len(msgs)-1]; !strings.Contains(last.Error, w.err) {
					t.Errorf("the failure record says %q, want it to contain %q", last.Error, w.err)
				}

				// The next turn works and sends the model a valid history.
				n := model.count()
				model.push(scripted{Content: "recovered"})
				next := ts.post(nil, chatBody(user, "are you there?", stream))
				if next.status != http.StatusOK || next.content != "recovered" {
					t.Fatalf("next turn: status %d content %q body %s", next.status, next.content, next.body)
				}
				wantSent := []string{"system", "user: " + input}
				if c.toolCall {
					wantSent = append(wantSent, "assistant: [read]", "tool: remember the milk")
				}
				if w.partial != "" {
					wantSent = append(wantSent, "assistant: "+w.partial)
				}
				wantSent = append(wantSent, "user: are you there?")
				checkSentHistory(t, model.request(n+1), wantSent)

				settle(t, model, baseline)
			})
		}
	}
}

// TestClientDisconnect: a client that leaves mid-turn cancels the run and
// the model request; the transcript records the abort with what had been
// streamed; the session's next turn works.
func TestClientDisconnect(t *testing.T) {
	model := newFaultyLLM(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(fakeModelConfig(model.scriptedLLM, "")))
	ts := startServer(t, dir, nil)
	warmUp(t, ts, model)

	cases := []struct {
		name    string
		stream  bool
		partial string // what the model streams before it stalls
	}{
		{"while the model thinks", false, ""},
		{"while the model thinks, streamed", true, ""},
		{"mid-stream", true, "Once upon a time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			baseline := idleGoroutines(model)
			user := strings.NewReplacer(" ", "-", ",", "").Replace(c.name)
			asked := make(chan struct{})
			model.arm(0, func(f *faultyLLM, w http.ResponseWriter, r *http.Request, stream bool) {
				if stream {
					w.Header().Set("Content-Type", "text/event-stream")
					if c.partial != "" {
						sseChunk(w, map[string]any{"role": "assistant", "content": c.partial}, nil)
					} else {
						w.(http.Flusher).Flush()
					}
				}
				close(asked)
				f.hang(r)
			})
			ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/chat/completions", strings.NewReader(chatBody(user, "tell me a story", c.stream)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			// The client reads the stream until the model's text has come
			// through, then stays until it leaves (cancel).
			read, left := make(chan error, 1), make(chan struct{})
			go func() {
				defer close(left)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					read <- err
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for c.partial != "" && sc.Scan() {
					if strings.Contains(sc.Text(), c.partial) {
						break
					}
				}
				read <- sc.Err()
				<-ctx.Done()
			}()
			select {
			case <-asked:
			case <-ctx.Done():
				t.Fatal("the model was never asked")
			}
			if c.stream {
				if err := <-read; err != nil {
					t.Fatalf("reading the stream: %v", err)
				}
			}
			cancel() // the client leaves
			<-left
			waitFor(t, "the model request to be cancelled", func() bool { _, ended, _ := model.stats(); return ended == 1 })
			model.disarm()

			key := session.OpenAIUser("main", user)
			var msgs []llm.Message
			// The run records the abort as it winds down, after the client
			// has gone.
			waitFor(t, "the aborted turn to be recorded", func() bool {
				var err error
				msgs, err = readTranscript(ts, key)
				return err == nil && len(msgs) == 2
			})
			if got, want := describe(msgs), []string{"user: tell me a story", "assistant(aborted): " + c.partial}; !slices.Equal(got, want) {
				t.Errorf("transcript %q, want %q", got, want)
			}
			if !strings.Contains(msgs[1].Error, "context canceled") {
				t.Errorf("abort record error %q, want context canceled", msgs[1].Error)
			}

			n := model.count()
			model.push(scripted{Content: "The end."})
			next := ts.post(nil, chatBody(user, "go on", c.stream))
			if next.status != http.StatusOK || next.content != "The end." {
				t.Fatalf("next turn: status %d content %q body %s", next.status, next.content, next.body)
			}
			want := []string{"system", "user: tell me a story"}
			if c.partial != "" {
				want = append(want, "assistant: "+c.partial)
			}
			checkSentHistory(t, model.request(n+1), append(want, "user: go on"))

			settle(t, model, baseline)
		})
	}
}

// TestUnansweredClientToolCall: a client that gets tool_calls back and
// then sends a new user message instead of the results leaves calls
// without results in the transcript; they are not sent to the model.
func TestUnansweredClientToolCall(t *testing.T) {
	model := newScriptedLLM(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(fakeModelConfig(model, "")))
	ts := startServer(t, dir, nil)
	model.push(scripted{Content: "Checking the weather.", ToolCalls: []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}}})
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],`
	rep := ts.post(nil, `{"model":"openclaw","user":"w",`+tools+`"messages":[{"role":"user","content":"weather?"}]}`)
	if rep.finish != "tool_calls" {
		t.Fatalf("first turn: finish %q body %s", rep.finish, rep.body)
	}
	model.push(scripted{Content: "Hello."})
	rep = ts.post(nil, `{"model":"openclaw","user":"w","messages":[{"role":"user","content":"never mind, hi"}]}`)
	if rep.status != http.StatusOK || rep.content != "Hello." {
		t.Fatalf("second turn: status %d content %q", rep.status, rep.content)
	}
	checkSentHistory(t, model.request(2), []string{"system", "user: weather?", "assistant: Checking the weather.", "user: never mind, hi"})
}

func chatBody(user, content string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": "openclaw", "user": user, "stream": stream,
		"messages": []any{map[string]string{"role": "user", "content": content}}})
	return string(b)
}

// warmUp runs one streamed and one plain turn, so that everything the
// gateway starts once (stores, pools) is running before goroutines are
// counted.
func warmUp(t *testing.T, ts *testServer, model *faultyLLM) {
	t.Helper()
	for _, stream := range []bool{false, true} {
		model.push(scripted{Content: "warm"})
		if rep := ts.post(nil, chatBody("warm-up", "hi", stream)); rep.status != http.StatusOK {
			t.Fatalf("warm-up turn: %d %s", rep.status, rep.body)
		}
	}
}

// idleGoroutines closes idle connections and returns the number of
// goroutines once what they ran has wound down: the lowest count seen over
// a short while. Counted in the subtest, it includes the subtest's own.
func idleGoroutines(model *faultyLLM) int {
	closeIdle(model)
	low := goruntime.NumGoroutine()
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		low = min(low, goruntime.NumGoroutine())
	}
	return low
}

func closeIdle(model *faultyLLM) {
	http.DefaultClient.CloseIdleConnections()
	model.srv.CloseClientConnections()
}

// settle checks that the turn left nothing behind: no request still open
// at the model, and, once idle keep-alive connections are closed, no more
// goroutines than before the turn.
func settle(t *testing.T, model *faultyLLM, baseline int) {
	t.Helper()
	waitFor(t, "the model's connections to be idle", func() bool { return model.busyConns() == 0 })
	closeIdle(model)
	deadline := time.Now().Add(settleTimeout)
	for goruntime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines after the turn, %d before it:\n%s", goruntime.NumGoroutine(), baseline, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds, failing the test at settleTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", settleTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func transcriptOf(t *testing.T, ts *testServer, key string) []llm.Message {
	t.Helper()
	msgs, err := readTranscript(ts, key)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// readTranscript reads a session of agent main through the gateway's own
// store.
func readTranscript(ts *testServer, key string) ([]llm.Message, error) {
	rt, err := ts.srv.defaultTenant.current(ts.srv)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	e, err := rt.runner.Store.GetSession(ctx, "main", key)
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", key, err)
	}
	msgs, err := rt.runner.Store.Transcript(ctx, e.SessionID, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the transcript of %s: %w", key, err)
	}
	return msgs, nil
}

// describe writes transcript messages one per line: "role: content",
// "role(stopReason): content", "assistant: [tool names]", "tool: result".
func describe(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		role := string(m.Role)
		if m.StopReason != "" {
			role += "(" + m.StopReason + ")"
		}
		text := m.Content
		if len(m.ToolCalls) > 0 {
			var names []string
			for _, c := range m.ToolCalls {
				names = append(names, c.Name)
			}
			text = strings.TrimSpace(text + " [" + strings.Join(names, " ") + "]")
		}
		out[i] = role + ": " + text
	}
	return out
}

// checkSentHistory checks a Chat Completions request body against the
// API's rules for a conversation (an assistant message says something or
// calls tools; every call is answered by the tool messages right after it,
// and only those), and its messages against want ("system" for the
// system prompt, else as describe writes them).
func checkSentHistory(t *testing.T, body []byte, want []string) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("the model's request is not JSON: %v\n%s", err, body)
	}
	var got []string
	var open []string // calls of the last assistant message not answered yet
	for i, m := range req.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		if m.Role != "tool" && len(open) > 0 {
			t.Errorf("message %d (%s): tool calls %v have no results", i, m.Role, open)
			open = nil
		}
		switch m.Role {
		case "system":
			got = append(got, "system")
			continue
		case "user":
		case "assistant":
			if text == "" && len(m.ToolCalls) == 0 {
				t.Errorf("message %d: an assistant message with no content and no tool calls", i)
			}
			var names []string
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
				names = append(names, c.Function.Name)
			}
			if len(names) > 0 {
				text = strings.TrimSpace(text + " [" + strings.Join(names, " ") + "]")
			}
		case "tool":
			j := slices.Index(open, m.ToolCallID)
			if j < 0 {
				t.Errorf("message %d: a result for call %q, which the assistant message before did not make", i, m.ToolCallID)
			} else {
				open = slices.Delete(open, j, j+1)
			}
		default:
			t.Errorf("message %d: role %q", i, m.Role)
		}
		got = append(got, m.Role+": "+text)
	}
	if len(open) > 0 {
		t.Errorf("tool calls %v have no results", open)
	}
	if !slices.Equal(got, want) {
		t.Errorf("history sent to the model:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
