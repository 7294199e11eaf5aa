package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

func testOpenAI(t *testing.T, f *fakeServer, opts OpenAIOptions) (*OpenAI, *waits) {
	t.Helper()
	if opts.BaseURL == "" {
		opts.BaseURL = f.URL + "/v1"
	}
	c := NewOpenAI(opts)
	return c, instant(&c.t)
}

func simpleRequest() *Request {
	return &Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
}

func TestOpenAIRequestBody(t *testing.T) {
	temp := 0.5
	req := &Request{
		Model:  "gpt-x",
		System: "be brief",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "read it"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a"}`}, {ID: "c2", Name: "ls"}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Name: "read", Content: "A"},
			{Role: llm.RoleTool, ToolCallID: "c2", Name: "ls", Content: "boom", IsError: true},
			{Role: llm.RoleAssistant, Content: "done"},
		},
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "ls"},
		},
		MaxTokens:   100,
		Temperature: &temp,
	}
	wantMessages := []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "read it"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "read", "arguments": `{"path":"a"}`}},
			map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "ls", "arguments": `{}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "A"},
		map[string]any{"role": "tool", "tool_call_id": "c2", "content": "boom"},
		map[string]any{"role": "assistant", "content": "done"},
	}
	wantTools := []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "read", "description": "read a file",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "ls",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
	}
	tests := []struct {
		name   string
		stream bool
		want   map[string]any
	}{
		{"non-stream", false, map[string]any{
			"model": "gpt-x", "messages": wantMessages, "tools": wantTools, "max_tokens": 100.0, "temperature": 0.5,
		}},
		{"stream", true, map[string]any{
			"model": "gpt-x", "messages": wantMessages, "tools": wantTools, "max_tokens": 100.0, "temperature": 0.5,
			"stream": true, "stream_options": map[string]any{"include_usage": true},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t,
				jsonReply(200, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
			c, _ := testOpenAI(t, f, OpenAIOptions{})
			var onDelta func(string)
			if tc.stream {
				onDelta = func(string) {}
			}
			if _, err := c.Chat(context.Background(), req, onDelta); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			if got.Path != "/v1/chat/completions" {
				t.Errorf("path = %q", got.Path)
			}
			if diff := cmp.Diff(tc.want, got.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIBaseURL(t *testing.T) {
	tests := []struct{ base, want string }{
		{"/v1", "/v1/chat/completions"},
		{"/v1/", "/v1/chat/completions"},
		{"/api/v1", "/api/v1/chat/completions"},
		{"", "/chat/completions"},
		{"/openai/deployments/x", "/openai/deployments/x/chat/completions"},
	}
	for _, tc := range tests {
		t.Run(tc.base, func(t *testing.T) {
			f := newFakeServer(t, jsonReply(200, `{"choices":[{"message":{"content":"ok"}}]}`))
			c, _ := testOpenAI(t, f, OpenAIOptions{BaseURL: f.URL + tc.base})
			if _, err := c.Chat(context.Background(), simpleRequest(), nil); err != nil {
				t.Fatal(err)
			}
			if got := f.requests()[0].Path; got != tc.want {
				t.Errorf("path = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOpenAINonStream(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Response
	}{
		{
			name: "text",
			body: `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			want: &Response{Content: "pong", FinishReason: FinishStop, Usage: Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}},
		},
		{
			name: "tool calls",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"}},
				{"id":"call_b","type":"function","function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
			want: &Response{
				ToolCalls:    []llm.ToolCall{{ID: "call_a", Name: "read", Arguments: `{"path":"x"}`}, {ID: "call_b", Name: "ls", Arguments: `{}`}},
				FinishReason: FinishToolCalls, Usage: Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
			},
		},
		{
			name: "length",
			body: `{"choices":[{"message":{"content":"trunc"},"finish_reason":"length"}]}`,
			want: &Response{Content: "trunc", FinishReason: FinishLength},
		},
		{
			name: "tool calls reported as stop, object arguments",
			body: `{"choices":[{"message":{"content":"","tool_calls":[{"id":"1","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"stop"}]}`,
			want: &Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: "f", Arguments: `{"a":1}`}}, FinishReason: FinishToolCalls},
		},
		{
			name: "content parts",
			body: `{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`,
			want: &Response{Content: "ab", FinishReason: FinishStop},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, jsonReply(200, tc.body))
			c, _ := testOpenAI(t, f, OpenAIOptions{})
			got, err := c.Chat(context.Background(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

func TestOpenAIStream(t *testing.T) {
	usage := `{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		want      *Response
		wantFrags []string
	}{
		{
			name: "text deltas",
			handler: sseReply(
				data(chunk(`{"role":"assistant","content":""}`, "")),
				data(chunk(`{"content":"Hel"}`, "")),
				data(chunk(`{"content":"lo, "}`, ""), chunk(`{"content":"world"}`, "")),
				data(chunk(`{}`, "stop"), usage, "[DONE]"),
			),
			want:      &Response{Content: "Hello, world", FinishReason: FinishStop, Usage: Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}},
			wantFrags: []string{"Hel", "lo, ", "world"},
		},
		{
			name: "parallel tool calls assembled by index",
			handler: sseReply(data(
				chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"exec","arguments":"{\"cmd\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"x\"}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"ls\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				usage,
				"[DONE]",
			)),
			want: &Response{
				ToolCalls: []llm.ToolCall{
					{ID: "call_a", Name: "read", Arguments: `{"path":"x"}`},
					{ID: "call_b", Name: "exec", Arguments: `{"cmd":"ls"}`},
				},
				FinishReason: FinishToolCalls, Usage: Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
			},
		},
		{
			name: "text then tool call, usage in finish chunk, no [DONE]",
			handler: sseReply(data(
				chunk(`{"content":"let me look"}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"t1","function":{"name":"ls","arguments":"{}"}}]}`, ""),
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
			)),
			want: &Response{
				Content:      "let me look",
				ToolCalls:    []llm.ToolCall{{ID: "t1", Name: "ls", Arguments: `{}`}},
				FinishReason: FinishToolCalls, Usage: Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
			},
			wantFrags: []string{"let me look"},
		},
		{
			name: "keep-alive comments, CRLF, no space after colon",
			handler: sseReply(
				": OPENROUTER PROCESSING\r\n\r\n",
				"data:"+chunk(`{"content":"a"}`, "")+"\r\n\r\n",
				data(chunk(`{"content":"b"}`, "length"), "[DONE]"),
			),
			want:      &Response{Content: "ab", FinishReason: FinishLength},
			wantFrags: []string{"a", "b"},
		},
		{
			name: "SSE labelled text/plain",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				io.WriteString(w, data(chunk(`{"content":"plain"}`, "stop"), "[DONE]"))
			},
			want:      &Response{Content: "plain", FinishReason: FinishStop},
			wantFrags: []string{"plain"},
		},
		{
			name:      "server ignores stream and answers JSON",
			handler:   jsonReply(200, `{"choices":[{"message":{"content":"whole"},"finish_reason":"stop"}]}`),
			want:      &Response{Content: "whole", FinishReason: FinishStop},
			wantFrags: []string{"whole"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handler)
			c, _ := testOpenAI(t, f, OpenAIOptions{})
			var col collector
			got, err := c.Chat(context.Background(), simpleRequest(), col.add)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFrags, col.all()); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIHeaders(t *testing.T) {
	ok := jsonReply(200, `{"choices":[{"message":{"content":"ok"}}]}`)
	tests := []struct {
		name    string
		opts    OpenAIOptions
		base    string // with the host openrouter.ai, requests are redirected to the fake server
		want    map[string]string
		wantNot []string
	}{
		{
			name:    "key",
			opts:    OpenAIOptions{APIKey: "sk-1"},
			want:    map[string]string{"Authorization": "Bearer sk-1", "Content-Type": "application/json"},
			wantNot: []string{"Http-Referer", "X-Title"},
		},
		{
			name:    "no key for a local server",
			wantNot: []string{"Authorization"},
		},
		{
			name: "custom headers override",
			opts: OpenAIOptions{APIKey: "sk-1", Headers: map[string]string{"X-Extra": "1", "Authorization": "Token t"}},
			want: map[string]string{"Authorization": "Token t", "X-Extra": "1"},
		},
		{
			name: "openrouter defaults",
			opts: OpenAIOptions{APIKey: "or-1"},
			base: "http://openrouter.ai/api/v1",
			want: map[string]string{"Authorization": "Bearer or-1", "X-Title": "Talon"},
		},
		{
			name: "openrouter configured",
			opts: OpenAIOptions{Referer: "https://example.com/", Title: "Acme"},
			base: "http://openrouter.ai/api/v1/",
			want: map[string]string{"Http-Referer": "https://example.com/", "X-Title": "Acme"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, ok)
			if tc.base != "" {
				tc.opts.BaseURL = tc.base
				tc.opts.HTTPClient = redirectClient(f.Listener.Addr().String())
			}
			c, _ := testOpenAI(t, f, tc.opts)
			if _, err := c.Chat(context.Background(), simpleRequest(), nil); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			for k, v := range tc.want {
				if g := got.Header.Get(k); g != v {
					t.Errorf("header %s = %q, want %q", k, g, v)
				}
			}
			for _, k := range tc.wantNot {
				if _, ok := got.Header[http.CanonicalHeaderKey(k)]; ok {
					t.Errorf("header %s sent: %q", k, got.Header.Get(k))
				}
			}
			if tc.base != "" && got.Path != "/api/v1/chat/completions" {
				t.Errorf("path = %q", got.Path)
			}
		})
	}
}

func TestOpenAIRetries(t *testing.T) {
	ok := jsonReply(200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`)
	okStream := sseReply(data(chunk(`{"content":"ok"}`, "stop"), "[DONE]"))
	rateLimited := jsonReply(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After", "1")
	tests := []struct {
		name         string
		handlers     []http.HandlerFunc
		opts         OpenAIOptions
		stream       bool
		wantAttempts int
		wantErr      string // empty: success
		wantTemp     bool
		checkWaits   func(t *testing.T, w []time.Duration)
	}{
		{
			name:         "429 with Retry-After then success",
			handlers:     []http.HandlerFunc{rateLimited, ok},
			wantAttempts: 2,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if diff := cmp.Diff([]time.Duration{time.Second}, w); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:         "Retry-After capped at 30s",
			handlers:     []http.HandlerFunc{jsonReply(429, `{}`, "Retry-After", "3600"), ok},
			wantAttempts: 2,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if diff := cmp.Diff([]time.Duration{30 * time.Second}, w); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:         "500 then 503 then success, backoff grows",
			handlers:     []http.HandlerFunc{jsonReply(500, `{"error":{"message":"oops","type":"server_error"}}`), jsonReply(503, `busy`), ok},
			wantAttempts: 3,
			checkWaits: func(t *testing.T, w []time.Duration) {
				if len(w) != 2 || w[0] < 250*time.Millisecond || w[0] > 500*time.Millisecond || w[1] < 500*time.Millisecond || w[1] > time.Second {
					t.Errorf("waits = %v, want [250ms..500ms, 500ms..1s]", w)
				}
			},
		},
		{
			name:         "retries exhausted",
			handlers:     []http.HandlerFunc{jsonReply(502, `<html>bad gateway</html>`)},
			wantAttempts: 3,
			wantErr:      "openai: 502: <html>bad gateway</html>",
			wantTemp:     true,
		},
		{
			name:         "MaxRetries negative means none",
			handlers:     []http.HandlerFunc{rateLimited, ok},
			opts:         OpenAIOptions{MaxRetries: -1},
			wantAttempts: 1,
			wantErr:      "openai: 429 rate_limit_exceeded: Rate limit reached",
			wantTemp:     true,
		},
		{
			name:         "400 not retried",
			handlers:     []http.HandlerFunc{jsonReply(400, `{"error":{"message":"bad model","type":"invalid_request_error","code":null}}`), ok},
			wantAttempts: 1,
			wantErr:      "openai: 400 invalid_request_error: bad model",
		},
		{
			name:         "401 not retried",
			handlers:     []http.HandlerFunc{jsonReply(401, `{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}`), ok},
			wantAttempts: 1,
			wantErr:      "openai: 401 invalid_api_key: Incorrect API key",
		},
		{
			name:         "connection closed before response is retried",
			handlers:     []http.HandlerFunc{hangUp, ok},
			wantAttempts: 2,
		},
		{
			name:         "stream: 429 then success",
			handlers:     []http.HandlerFunc{rateLimited, okStream},
			stream:       true,
			wantAttempts: 2,
		},
		{
			name: "stream: error chunk before any text is retried",
			handlers: []http.HandlerFunc{
				sseReply(data(`{"error":{"code":502,"message":"upstream failed"}}`)),
				okStream,
			},
			stream:       true,
			wantAttempts: 2,
		},
		{
			name: "stream: no retry after partial stream",
			handlers: []http.HandlerFunc{
				sseReply(data(chunk(`{"content":"par"}`, ""), `{"error":{"code":502,"message":"upstream failed"}}`)),
				okStream,
			},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "openai: 502: upstream failed",
			wantTemp:     true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handlers...)
			c, w := testOpenAI(t, f, tc.opts)
			var onDelta func(string)
			if tc.stream {
				onDelta = func(string) {}
			}
			got, err := c.Chat(context.Background(), simpleRequest(), onDelta)
			if n := len(f.requests()); n != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", n, tc.wantAttempts)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Content != "ok" {
					t.Errorf("content = %q", got.Content)
				}
			} else {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				var e *Error
				if !errors.As(err, &e) || e.Temporary() != tc.wantTemp {
					t.Errorf("Temporary() = %v, want %v", e != nil && e.Temporary(), tc.wantTemp)
				}
			}
			if tc.checkWaits != nil {
				tc.checkWaits(t, w.list())
			}
		})
	}
}

// TestRetryAfterHonoured checks with the real clock that the client waits
// as long as the server asks.
func TestRetryAfterHonoured(t *testing.T) {
	f := newFakeServer(t,
		jsonReply(503, `{}`, "Retry-After-Ms", "80"),
		jsonReply(200, `{"choices":[{"message":{"content":"ok"}}]}`))
	c := NewOpenAI(OpenAIOptions{BaseURL: f.URL})
	start := time.Now()
	if _, err := c.Chat(context.Background(), simpleRequest(), nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("retried after %v, want ≥ 80ms", d)
	}
}

func TestOpenAIStreamFailures(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		opts      OpenAIOptions
		ctx       func() (context.Context, context.CancelFunc)
		wantErr   string // substring
		wantIs    error
		wantFrags []string
	}{
		{
			name:      "cut mid-chunk",
			handler:   sseThenCut(data(chunk(`{"content":"a"}`, "")), `data: {"choices":[{"index":0,"delta":{"content":"b`),
			wantErr:   "openai: stream ended early",
			wantFrags: []string{"a"},
		},
		{
			name:      "clean end without [DONE] or finish_reason",
			handler:   sseReply(data(chunk(`{"content":"a"}`, ""))),
			wantErr:   "openai: stream ended early: no [DONE] and no finish_reason",
			wantFrags: []string{"a"},
		},
		{
			name:      "malformed chunk",
			handler:   sseReply(data(chunk(`{"content":"a"}`, ""), `{"choices":[{"delta":`)),
			wantErr:   "openai: malformed JSON in stream chunk",
			wantFrags: []string{"a"},
		},
		{
			name:      "idle timeout",
			handler:   sseThenHang(data(chunk(`{"content":"a"}`, ""))),
			opts:      OpenAIOptions{IdleTimeout: 100 * time.Millisecond},
			wantErr:   "openai: stream idle for longer than 100ms",
			wantFrags: []string{"a"},
		},
		{
			name:    "context deadline",
			handler: sseThenHang(data(chunk(`{"content":"a"}`, ""))),
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			},
			wantErr:   "openai: context deadline exceeded",
			wantIs:    context.DeadlineExceeded,
			wantFrags: []string{"a"},
		},
		{
			name:    "line too long",
			handler: sseReply("data: " + strings.Repeat("x", maxSSELine+1) + "\n\n"),
			wantErr: "openai: SSE line longer than",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handler)
			c, _ := testOpenAI(t, f, tc.opts)
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			var col collector
			_, err := c.Chat(ctx, simpleRequest(), col.add)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.wantIs)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("attempts = %d, want 1", n)
			}
			if diff := cmp.Diff(tc.wantFrags, col.all()); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAICancel(t *testing.T) {
	t.Run("cancel mid-stream", func(t *testing.T) {
		f := newFakeServer(t, sseThenHang(data(chunk(`{"content":"a"}`, ""))))
		c, _ := testOpenAI(t, f, OpenAIOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := c.Chat(ctx, simpleRequest(), func(string) { cancel() })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("no retry once the context is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			cancel()
			jsonReply(503, `{}`)(w, r)
		})
		c, w := testOpenAI(t, f, OpenAIOptions{})
		_, err := c.Chat(ctx, simpleRequest(), nil)
		if err == nil {
			t.Fatal("no error")
		}
		if n := len(f.requests()); n != 1 || len(w.list()) != 0 {
			t.Errorf("attempts = %d, waits = %v; want 1 attempt, no waits", n, w.list())
		}
	})
	t.Run("cancelled during backoff", func(t *testing.T) {
		f := newFakeServer(t, jsonReply(503, `{}`, "Retry-After", "20"))
		c := NewOpenAI(OpenAIOptions{BaseURL: f.URL})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Chat(ctx, simpleRequest(), nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Fatalf("err = %v after %v, want deadline exceeded promptly", err, time.Since(start))
		}
	})
}

func TestOpenAIMalformed(t *testing.T) {
	tests := []struct {
		name, body, wantErr string
	}{
		{"truncated JSON", `{"choices":[{"message":`, "openai: malformed JSON in response body: unexpected end of JSON input"},
		{"not an object", `[1,2]`, "openai: malformed JSON in response body"},
		{"no choices", `{"choices":[]}`, "openai: malformed response body: no choices"},
		{"bad content type", `{"choices":[{"message":{"content":42}}]}`, "openai: malformed message content in response body"},
		{"error in 200 body", `{"error":{"message":"no credits","code":402}}`, "openai: 402: no credits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, jsonReply(200, tc.body))
			c, _ := testOpenAI(t, f, OpenAIOptions{})
			_, err := c.Chat(context.Background(), simpleRequest(), nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want prefix %q", err, tc.wantErr)
			}
			// An *Error, so the gateway tells the client it was the provider.
			if e := (*Error)(nil); !errors.As(err, &e) || e.Temporary() {
				t.Errorf("err = %#v, want a final *Error", err)
			}
			if len(f.requests()) != 1 {
				t.Errorf("malformed response was retried")
			}
		})
	}
}

func TestOpenAITimeout(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	f := newFakeServer(t, slow, jsonReply(200, `{"choices":[{"message":{"content":"ok"}}]}`))
	c, w := testOpenAI(t, f, OpenAIOptions{Timeout: 100 * time.Millisecond})
	got, err := c.Chat(context.Background(), simpleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "ok" || len(f.requests()) != 2 || len(w.list()) != 1 {
		t.Errorf("content %q, attempts %d, waits %v; want ok after one timed-out attempt", got.Content, len(f.requests()), w.list())
	}

	f = newFakeServer(t, slow)
	c, _ = testOpenAI(t, f, OpenAIOptions{Timeout: 50 * time.Millisecond, MaxRetries: -1})
	_, err = c.Chat(context.Background(), simpleRequest(), nil)
	var e *Error
	if !errors.As(err, &e) || !e.Temporary() || !strings.Contains(err.Error(), "openai: request timed out after 50ms") {
		t.Errorf("err = %v, want a temporary timeout", err)
	}
}

func TestOpenAIBodyTooLarge(t *testing.T) {
	f := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mib := []byte(strings.Repeat(" ", 1<<20))
		for range maxBody>>20 + 1 {
			if _, err := w.Write(mib); err != nil {
				return
			}
		}
	})
	c, _ := testOpenAI(t, f, OpenAIOptions{})
	_, err := c.Chat(context.Background(), simpleRequest(), nil)
	if err == nil || !strings.Contains(err.Error(), "openai: response body larger than 32 MiB") {
		t.Fatalf("err = %v", err)
	}
}

// TestOpenAIReasoningEffort checks which requests carry reasoning_effort:
// a reasoning model of the catalog at a level other than off, whatever
// the case of its id; and that reasoning kept in the history is never
// sent back.
func TestOpenAIReasoningEffort(t *testing.T) {
	models := map[string]ModelInfo{"O-Think": {Reasoning: true}, "plain": {}}
	tests := []struct {
		name, model, level string
		want               any // nil: no member
	}{
		{"minimal", "o-think", "minimal", "minimal"},
		{"low", "o-think", "low", "low"},
		{"medium", "O-THINK", "medium", "medium"},
		{"high", "o-think", "high", "high"},
		{"xhigh", "o-think", "xhigh", "xhigh"},
		{"off", "o-think", "off", nil},
		{"unset", "o-think", "", nil},
		{"not a reasoning model", "plain", "high", nil},
		{"not in the catalog", "other", "high", nil},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				f := newFakeServer(t, jsonReply(200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
				c, _ := testOpenAI(t, f, OpenAIOptions{Models: models})
				req := &Request{Model: tc.model, Thinking: tc.level, Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "a"},
					{Role: llm.RoleAssistant, Content: "b", Reasoning: []llm.Reasoning{{Text: "secret thought", Signature: "s"}}},
					{Role: llm.RoleUser, Content: "c"},
				}}
				var onDelta func(string)
				if stream {
					onDelta = func(string) {}
				}
				if _, err := c.Chat(context.Background(), req, onDelta); err != nil {
					t.Fatal(err)
				}
				body := f.requests()[0].Body
				if got := body["reasoning_effort"]; got != tc.want {
					t.Errorf("reasoning_effort = %v, want %v", got, tc.want)
				}
				want := map[string]any{"role": "assistant", "content": "b"}
				if diff := cmp.Diff(want, body["messages"].([]any)[1]); diff != "" {
					t.Errorf("replayed assistant message (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestOpenAIReasoningAndCache checks that reasoning text, under each name
// servers give it, comes back apart from the answer (and is never
// streamed as it), and that cached prompt tokens are read from each
// usage shape.
func TestOpenAIReasoningAndCache(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		stream    bool
		want      *Response
		wantFrags []string
	}{
		{
			name: "reasoning_content and OpenAI's cached_tokens",
			handler: jsonReply(200, `{"choices":[{"message":{"content":"4","reasoning_content":"2+2"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":1500,"completion_tokens":20,"total_tokens":1520,"prompt_tokens_details":{"cached_tokens":1024}}}`),
			want: &Response{Content: "4", FinishReason: FinishStop, Reasoning: []llm.Reasoning{{Text: "2+2"}},
				Usage: Usage{PromptTokens: 1500, CompletionTokens: 20, TotalTokens: 1520, CacheReadTokens: 1024}},
		},
		{
			name: "reasoning (OpenRouter) and cache writes",
			handler: jsonReply(200, `{"choices":[{"message":{"content":"ok","reasoning":"hmm"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":3000,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":2900}}}`),
			want: &Response{Content: "ok", FinishReason: FinishStop, Reasoning: []llm.Reasoning{{Text: "hmm"}},
				Usage: Usage{PromptTokens: 3000, CompletionTokens: 2, TotalTokens: 3002, CacheWriteTokens: 2900}},
		},
		{
			name: "a server's impossible cache counts are clamped to the prompt",
			handler: jsonReply(200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102,"prompt_tokens_details":{"cached_tokens":80,"cache_write_tokens":-5000}}}`),
			want: &Response{Content: "ok", FinishReason: FinishStop, Usage: Usage{PromptTokens: 100, CompletionTokens: 2, TotalTokens: 102, CacheReadTokens: 80}},
		},
		{
			name: "more cached than prompted",
			handler: jsonReply(200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102,"prompt_tokens_details":{"cached_tokens":90,"cache_write_tokens":50}}}`),
			want: &Response{Content: "ok", FinishReason: FinishStop, Usage: Usage{PromptTokens: 100, CompletionTokens: 2, TotalTokens: 102, CacheReadTokens: 90, CacheWriteTokens: 10}},
		},
		{
			name: "DeepSeek's prompt_cache_hit_tokens",
			handler: jsonReply(200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":800,"completion_tokens":2,"total_tokens":802,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":160}}`),
			want: &Response{Content: "ok", FinishReason: FinishStop, Usage: Usage{PromptTokens: 800, CompletionTokens: 2, TotalTokens: 802, CacheReadTokens: 640}},
		},
		{
			name:   "streamed reasoning deltas are kept, not streamed",
			stream: true,
			handler: sseReply(data(
				chunk(`{"role":"assistant","content":null,"reasoning_content":"Let me "}`, ""),
				chunk(`{"reasoning_content":"think."}`, ""),
				chunk(`{"reasoning":null,"content":"Done"}`, ""),
				chunk(`{}`, "stop"),
				`{"choices":[],"usage":{"prompt_tokens":2000,"completion_tokens":9,"total_tokens":2009,"prompt_tokens_details":{"cached_tokens":1920}}}`,
				"[DONE]",
			)),
			want: &Response{Content: "Done", FinishReason: FinishStop, Reasoning: []llm.Reasoning{{Text: "Let me think."}},
				Usage: Usage{PromptTokens: 2000, CompletionTokens: 9, TotalTokens: 2009, CacheReadTokens: 1920}},
			wantFrags: []string{"Done"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handler)
			c, _ := testOpenAI(t, f, OpenAIOptions{})
			var col collector
			var onDelta func(string)
			if tc.stream {
				onDelta = col.add
			}
			got, err := c.Chat(context.Background(), simpleRequest(), onDelta)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFrags, col.all()); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}
