package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"talon/internal/tools"
	"talon/internal/tools/core"
)

// scriptedLLM is a fake model at the outside edge: an OpenAI-compatible
// /v1/chat/completions on loopback that answers from a queue, streaming
// when asked, and records every request it receives.
type scriptedLLM struct {
	srv *httptest.Server

	mu       sync.Mutex
	queue    []scripted
	requests [][]byte
	// block, when set, makes the next request wait until its context ends.
	block chan struct{}
	// cancelled counts requests whose context ended while blocked.
	cancelled int
}

type scripted struct {
	Content   string `json:"content"`
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"tool_calls"`
}

func newScriptedLLM(t *testing.T) *scriptedLLM {
	l := &scriptedLLM{}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *scriptedLLM) push(s scripted) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue = append(l.queue, s)
}

func (l *scriptedLLM) request(n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 1 || n > len(l.requests) {
		return nil
	}
	return l.requests[n-1]
}

func (l *scriptedLLM) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.requests)
}

func (l *scriptedLLM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	l.mu.Lock()
	l.requests = append(l.requests, body)
	block := l.block
	l.block = nil
	var s scripted
	ok := len(l.queue) > 0
	if ok {
		s, l.queue = l.queue[0], l.queue[1:]
	}
	l.mu.Unlock()
	if block != nil {
		close(block)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"thinking"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		l.mu.Lock()
		l.cancelled++
		l.mu.Unlock()
		return
	}
	if !ok {
		http.Error(w, `{"error":{"message":"script exhausted","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	calls := []map[string]any{}
	for i, c := range s.ToolCalls {
		args := string(c.Arguments)
		if args == "" {
			args = "{}"
		}
		calls = append(calls, map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", len(l.requests), i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": args}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": s.Content}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion", "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	for _, word := range strings.SplitAfter(s.Content, " ") {
		if word != "" {
			send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": word}}}})
		}
	}
	if len(calls) > 0 {
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": calls}}}})
	}
	send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// testServer is a gateway on loopback over a state dir.
type testServer struct {
	t     testing.TB
	dir   string
	srv   *Server
	url   string
	errc  chan error
	env   map[string]string
	stopd bool
}

func startServer(t testing.TB, dir string, env map[string]string) *testServer {
	t.Helper()
	return startServerWith(t, dir, env, nil)
}

// startServerWith is startServer with options set changes (nil: none).
func startServerWith(t testing.TB, dir string, env map[string]string, set func(*Options)) *testServer {
	t.Helper()
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		StateDir: dir, Addr: "127.0.0.1:0", Tools: reg,
		Env:    func(k string) string { return env[k] },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if set != nil {
		set(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, dir: dir, srv: srv, url: "http://" + ln.Addr().String(), errc: make(chan error, 1), env: env}
	go func() { ts.errc <- srv.Serve(ln) }()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	if ts.stopd {
		return
	}
	ts.stopd = true
	if err := ts.srv.Shutdown(context.Background()); err != nil {
		ts.t.Errorf("shutdown: %v", err)
	}
	if err := <-ts.errc; err != nil {
		ts.t.Errorf("serve: %v", err)
	}
}

// reply is a chat response as a client sees it, streamed or not.
type reply struct {
	status    int
	body      string
	content   string
	finish    string
	toolCalls []string // name + " " + arguments
}

func (ts *testServer) post(headers map[string]string, body string) reply {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json") // unless headers say otherwise
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	rep := reply{status: resp.StatusCode, body: string(data)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || line == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content   string         `json:"content"`
						ToolCalls []wireToolCall `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(line), &chunk); err != nil {
				ts.t.Fatalf("bad chunk %q: %v", line, err)
			}
			for _, c := range chunk.Choices {
				rep.content += c.Delta.Content
				for _, tc := range c.Delta.ToolCalls {
					rep.toolCalls = append(rep.toolCalls, tc.Function.Name+" "+tc.Function.Arguments)
				}
				if c.FinishReason != nil {
					rep.finish = *c.FinishReason
				}
			}
		}
		return rep
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content   string         `json:"content"`
				ToolCalls []wireToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &out) == nil && len(out.Choices) > 0 {
		rep.content, rep.finish = out.Choices[0].Message.Content, out.Choices[0].FinishReason
		for _, tc := range out.Choices[0].Message.ToolCalls {
			rep.toolCalls = append(rep.toolCalls, tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	return rep
}

// freePort is only used to make addresses that nothing listens on.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// unquote reads a Go-quoted string, or takes the text as it is.
func unquote(_ *testing.T, s string) string {
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		return u
	}
	return s
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// readBody reads and closes a response body.
func readBody(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func mustRegistry(t *testing.T) *tools.Registry {
	r, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
