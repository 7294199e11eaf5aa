package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

func testAnthropic(t *testing.T, f *fakeServer, opts AnthropicOptions) (*Anthropic, *waits) {
	t.Helper()
	if opts.BaseURL == "" {
		opts.BaseURL = f.URL
	}
	c := NewAnthropic(opts)
	return c, instant(&c.t)
}

// ephemeralJSON is a cache breakpoint as a decoded body holds it.
var ephemeralJSON = map[string]any{"type": "ephemeral"}

const anOK = `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`

func TestAnthropicRequestBody(t *testing.T) {
	temp := 0.2
	tests := []struct {
		name   string
		req    *Request
		opts   AnthropicOptions
		stream bool
		want   map[string]any
	}{
		{
			name: "full conversation",
			req: &Request{
				Model:  "claude-x",
				System: "be brief",
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "read both"},
					{Role: llm.RoleAssistant, Content: "sure", ToolCalls: []llm.ToolCall{
						{ID: "t1", Name: "read", Arguments: `{ "path": "a" }`},
						{ID: "t2", Name: "read", Arguments: `not json`},
					}},
					{Role: llm.RoleTool, ToolCallID: "t1", Name: "read", Content: "A"},
					{Role: llm.RoleTool, ToolCallID: "t2", Name: "read", Content: "no such file", IsError: true},
					{Role: llm.RoleUser, Content: "and now?"},
					{Role: llm.RoleAssistant, Content: "done"},
					{Role: llm.RoleUser, Content: "thanks"},
				},
				Tools: []llm.ToolSpec{
					{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
					{Name: "now"},
				},
				Temperature: &temp,
			},
			want: map[string]any{
				"model":      "claude-x",
				"system":     []any{map[string]any{"type": "text", "text": "be brief", "cache_control": ephemeralJSON}},
				"max_tokens": 4096.0,
				"messages": []any{
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "read both"}}},
					map[string]any{"role": "assistant", "content": []any{
						map[string]any{"type": "text", "text": "sure"},
						map[string]any{"type": "tool_use", "id": "t1", "name": "read", "input": map[string]any{"path": "a"}},
						map[string]any{"type": "tool_use", "id": "t2", "name": "read", "input": map[string]any{}},
					}},
					map[string]any{"role": "user", "content": []any{
						map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "A"},
						map[string]any{"type": "tool_result", "tool_use_id": "t2", "content": "no such file", "is_error": true},
						map[string]any{"type": "text", "text": "and now?"},
					}},
					map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "done"}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "thanks"}}},
				},
				"tools": []any{
					map[string]any{"name": "read", "description": "read a file", "input_schema": map[string]any{
						"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"},
					}},
					map[string]any{"name": "now", "input_schema": map[string]any{"type": "object", "properties": map[string]any{}}, "cache_control": ephemeralJSON},
				},
				"temperature": 0.2,
			},
		},
		{
			name: "thinking: budget, max tokens raised, no temperature, the loop's signed reasoning sent back",
			req: &Request{
				Model: "Claude-R", Thinking: "medium", Temperature: &temp, MaxTokens: 1000,
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "a"},
					{Role: llm.RoleAssistant, Content: "old", Reasoning: []llm.Reasoning{{Text: "old thought", Signature: "s0"}}},
					{Role: llm.RoleUser, Content: "b"},
					{Role: llm.RoleAssistant, Reasoning: []llm.Reasoning{{Text: "", Signature: "s1"}, {Redacted: "enc"}, {Text: "from elsewhere"}},
						ToolCalls: []llm.ToolCall{{ID: "t1", Name: "ls", Arguments: "{}"}}},
					{Role: llm.RoleTool, ToolCallID: "t1", Name: "ls", Content: "x"},
				},
			},
			opts: AnthropicOptions{Models: map[string]ModelInfo{"claude-r": {Reasoning: true}}},
			want: map[string]any{
				"model": "Claude-R", "max_tokens": 9192.0, "thinking": map[string]any{"type": "enabled", "budget_tokens": 8192.0},
				"messages": []any{
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "a"}}},
					map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "old"}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "b"}}},
					map[string]any{"role": "assistant", "content": []any{
						map[string]any{"type": "thinking", "thinking": "", "signature": "s1"},
						map[string]any{"type": "redacted_thinking", "data": "enc"},
						map[string]any{"type": "tool_use", "id": "t1", "name": "ls", "input": map[string]any{}},
					}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "x"}}},
				},
			},
		},
		{
			name: "thinking: a tool call of the loop without signed reasoning sends none",
			req: &Request{
				Model: "claude-r", Thinking: "high",
				Messages: []llm.Message{
					{Role: llm.RoleUser, Content: "a"},
					{Role: llm.RoleAssistant, Reasoning: []llm.Reasoning{{Text: "another API's"}}, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "ls", Arguments: "{}"}}},
					{Role: llm.RoleTool, ToolCallID: "t1", Name: "ls", Content: "x"},
				},
			},
			opts: AnthropicOptions{Models: map[string]ModelInfo{"claude-r": {Reasoning: true}}},
			want: map[string]any{
				"model": "claude-r", "max_tokens": 4096.0,
				"messages": []any{
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "a"}}},
					map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "ls", "input": map[string]any{}}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "x"}}},
				},
			},
		},
		{
			name: "thinking: the budget is cut to the model's maxTokens",
			req:  &Request{Model: "claude-r", Thinking: "xhigh", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			opts: AnthropicOptions{Models: map[string]ModelInfo{"claude-r": {Reasoning: true, MaxTokens: 8000}}},
			want: map[string]any{
				"model": "claude-r", "max_tokens": 8000.0, "thinking": map[string]any{"type": "enabled", "budget_tokens": 6976.0},
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			},
		},
		{
			name: "thinking: a model that does not reason is sent none",
			req:  &Request{Model: "claude-plain", Thinking: "high", Temperature: &temp, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			opts: AnthropicOptions{Models: map[string]ModelInfo{"claude-r": {Reasoning: true}, "claude-plain": {}}},
			want: map[string]any{
				"model": "claude-plain", "max_tokens": 4096.0, "temperature": 0.2,
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			},
		},
		{
			name: "thinking off",
			req:  &Request{Model: "claude-r", Thinking: "off", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			opts: AnthropicOptions{Models: map[string]ModelInfo{"claude-r": {Reasoning: true}}},
			want: map[string]any{
				"model": "claude-r", "max_tokens": 4096.0,
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			},
		},
		{
			name:   "stream, max tokens from request, no system",
			req:    &Request{Model: "m", MaxTokens: 77, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			stream: true,
			want: map[string]any{
				"model": "m", "max_tokens": 77.0, "stream": true,
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			},
		},
		{
			name: "max tokens from options",
			req:  &Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			opts: AnthropicOptions{MaxTokens: 1000},
			want: map[string]any{
				"model": "m", "max_tokens": 1000.0,
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			handler := jsonReply(200, anOK)
			if tc.stream {
				handler = sseReply(event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`))
			}
			f := newFakeServer(t, handler)
			tc.opts.APIKey = "sk-ant"
			c, _ := testAnthropic(t, f, tc.opts)
			var onDelta func(string)
			if tc.stream {
				onDelta = func(string) {}
			}
			if _, err := c.Chat(context.Background(), tc.req, onDelta); err != nil {
				t.Fatal(err)
			}
			got := f.requests()[0]
			if diff := cmp.Diff(tc.want, got.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if got.Path != "/v1/messages" {
				t.Errorf("path = %q", got.Path)
			}
			for k, v := range map[string]string{"X-Api-Key": "sk-ant", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"} {
				if g := got.Header.Get(k); g != v {
					t.Errorf("header %s = %q, want %q", k, g, v)
				}
			}
			if g := got.Header.Get("Authorization"); g != "" {
				t.Errorf("Authorization sent: %q", g)
			}
		})
	}
}

func TestAnthropicNonStream(t *testing.T) {
	tests := []struct {
		name, body string
		want       *Response
	}{
		{
			name: "text blocks joined",
			body: `{"type":"message","content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":3}}`,
			want: &Response{Content: "Hello, world", FinishReason: FinishStop, Usage: Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15}},
		},
		{
			name: "tool use",
			body: `{"type":"message","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Looking."},
				{"type":"tool_use","id":"toolu_1","name":"read","input":{ "path" : "a.txt" }},
				{"type":"tool_use","id":"toolu_2","name":"now","input":{}},
				{"type":"web_search_tool_result","tool_use_id":"x","content":[{"type":"web_search_result"}]}],
				"stop_reason":"tool_use","usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}}`,
			want: &Response{
				Content:      "Looking.",
				ToolCalls:    []llm.ToolCall{{ID: "toolu_1", Name: "read", Arguments: `{"path":"a.txt"}`}, {ID: "toolu_2", Name: "now", Arguments: `{}`}},
				FinishReason: FinishToolCalls, Usage: Usage{PromptTokens: 105, CompletionTokens: 7, TotalTokens: 112, CacheReadTokens: 100},
				Reasoning: []llm.Reasoning{{Text: "hm", Signature: "s"}},
			},
		},
		{
			name: "max tokens",
			body: `{"type":"message","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":9}}`,
			want: &Response{Content: "cut", FinishReason: FinishLength, Usage: Usage{PromptTokens: 1, CompletionTokens: 9, TotalTokens: 10}},
		},
		{
			name: "stop sequence",
			body: `{"type":"message","content":[],"stop_reason":"stop_sequence","usage":{}}`,
			want: &Response{FinishReason: FinishStop},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, jsonReply(200, tc.body))
			c, _ := testAnthropic(t, f, AnthropicOptions{})
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

// anStream is a realistic Messages stream: text, then a tool_use whose
// input arrives in pieces.
func anStream(tail ...string) []string {
	s := []string{
		event("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`),
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		event("ping", `{"type": "ping"}`),
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"check."}}`),
		event("content_block_stop", `{"type":"content_block_stop","index":0}`),
		event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"a\"}"}}`),
		event("content_block_stop", `{"type":"content_block_stop","index":1}`),
		event("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"now","input":{}}}`),
		event("content_block_stop", `{"type":"content_block_stop","index":2}`),
	}
	return append(s, tail...)
}

var anStreamEnd = []string{
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`),
	event("message_stop", `{"type":"message_stop"}`),
}

func TestAnthropicStream(t *testing.T) {
	wantTools := &Response{
		Content: "Let me check.",
		ToolCalls: []llm.ToolCall{
			{ID: "toolu_1", Name: "read", Arguments: `{"path": "a"}`},
			{ID: "toolu_2", Name: "now", Arguments: `{}`},
		},
		FinishReason: FinishToolCalls,
		Usage:        Usage{PromptTokens: 25, CompletionTokens: 42, TotalTokens: 67},
	}
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		want      *Response
		wantFrags []string
	}{
		{
			name:      "text and tool use with input_json_delta",
			handler:   sseReply(anStream(anStreamEnd...)...),
			want:      wantTools,
			wantFrags: []string{"Let me ", "check."},
		},
		{
			name: "events without event lines, in one write",
			handler: sseReply(strings.Join(func() []string {
				var out []string
				for _, e := range anStream(anStreamEnd...) {
					_, d, _ := strings.Cut(e, "\n")
					out = append(out, d)
				}
				return out
			}(), "")),
			want:      wantTools,
			wantFrags: []string{"Let me ", "check."},
		},
		{
			name: "end_turn",
			handler: sseReply(
				event("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}`),
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`),
				event("content_block_stop", `{"type":"content_block_stop","index":0}`),
				event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`),
				event("message_stop", `{"type":"message_stop"}`),
			),
			want:      &Response{Content: "hi", FinishReason: FinishStop, Usage: Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
			wantFrags: []string{"hi"},
		},
		{
			// Thinking streams as its own blocks (thinking_delta, its
			// signature last), never as the answer; the cache counts come
			// in message_start.
			name: "thinking, redacted thinking and cache usage",
			handler: sseReply(
				event("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":4,"cache_creation_input_tokens":2000,"cache_read_input_tokens":300,"output_tokens":1}}}`),
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Two and "}}`),
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"two."}}`),
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`),
				event("content_block_stop", `{"type":"content_block_stop","index":0}`),
				event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"ENC"}}`),
				event("content_block_stop", `{"type":"content_block_stop","index":1}`),
				event("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`),
				event("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"4"}}`),
				event("content_block_stop", `{"type":"content_block_stop","index":2}`),
				event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":30}}`),
				event("message_stop", `{"type":"message_stop"}`),
			),
			want: &Response{Content: "4", FinishReason: FinishStop,
				Reasoning: []llm.Reasoning{{Text: "Two and two.", Signature: "EqQB"}, {Redacted: "ENC"}},
				Usage:     Usage{PromptTokens: 2304, CompletionTokens: 30, TotalTokens: 2334, CacheReadTokens: 300, CacheWriteTokens: 2000}},
			wantFrags: []string{"4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handler)
			c, _ := testAnthropic(t, f, AnthropicOptions{})
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

func TestAnthropicErrors(t *testing.T) {
	ok := jsonReply(200, anOK)
	okStream := sseReply(
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`),
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`),
		event("message_stop", `{"type":"message_stop"}`),
	)
	overloaded := event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	tests := []struct {
		name         string
		handlers     []http.HandlerFunc
		stream       bool
		wantAttempts int
		wantErr      string // empty: success with content "ok"
		wantTemp     bool
		wantFrags    []string
	}{
		{
			name:         "400 not retried",
			handlers:     []http.HandlerFunc{jsonReply(400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}`), ok},
			wantAttempts: 1,
			wantErr:      "anthropic: 400 invalid_request_error: max_tokens: field required",
		},
		{
			name:         "529 overloaded then success",
			handlers:     []http.HandlerFunc{jsonReply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), ok},
			wantAttempts: 2,
		},
		{
			name:         "429 exhausted",
			handlers:     []http.HandlerFunc{jsonReply(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "Retry-After", "2")},
			wantAttempts: 3,
			wantErr:      "anthropic: 429 rate_limit_error: slow down",
			wantTemp:     true,
		},
		{
			name:         "stream: error event before text is retried",
			handlers:     []http.HandlerFunc{sseReply(event("message_start", `{"type":"message_start","message":{"usage":{}}}`), overloaded), okStream},
			stream:       true,
			wantAttempts: 2,
			wantFrags:    []string{"ok"},
		},
		{
			name:         "stream: error event after text is not retried",
			handlers:     []http.HandlerFunc{sseReply(anStream(overloaded)...), okStream},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "anthropic: 529 overloaded_error: Overloaded",
			wantTemp:     true,
			wantFrags:    []string{"Let me ", "check."},
		},
		{
			name:         "stream: invalid request error event",
			handlers:     []http.HandlerFunc{sseReply(event("error", `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)), okStream},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "anthropic: 400 invalid_request_error: bad",
		},
		{
			name:         "stream: ended early",
			handlers:     []http.HandlerFunc{sseReply(anStream()...)},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "anthropic: stream ended early: no message_stop and no stop_reason",
			wantFrags:    []string{"Let me ", "check."},
		},
		{
			name:         "stream: cut mid-event",
			handlers:     []http.HandlerFunc{sseThenCut(anStream(`event: content_block_delta` + "\n" + `data: {"type":"content_bl`)...)},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "anthropic: stream ended early: unexpected EOF",
			wantFrags:    []string{"Let me ", "check."},
		},
		{
			name:         "stream: malformed event",
			handlers:     []http.HandlerFunc{sseReply(event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text"`))},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "anthropic: malformed JSON in content_block_start event: unexpected end of JSON input",
		},
		{
			name:         "stream: delta for a block never started",
			handlers:     []http.HandlerFunc{sseReply(event("content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`))},
			stream:       true,
			wantAttempts: 1,
			wantErr:      "anthropic: malformed content_block_delta event: no block 3 started",
		},
		{
			name:         "malformed body",
			handlers:     []http.HandlerFunc{jsonReply(200, `{"type":"message","content":[{"type":"text","text":1}]}`)},
			wantAttempts: 1,
			wantErr:      "anthropic: malformed JSON in response body: json: cannot unmarshal number",
		},
		{
			name:         "error body with 200",
			handlers:     []http.HandlerFunc{jsonReply(200, `{"type":"error","error":{"type":"api_error","message":"internal"}}`), ok},
			wantAttempts: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handlers...)
			c, _ := testAnthropic(t, f, AnthropicOptions{})
			var col collector
			var onDelta func(string)
			if tc.stream {
				onDelta = col.add
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
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tc.wantErr)
				}
				var e *Error
				if temp := errors.As(err, &e) && e.Temporary(); temp != tc.wantTemp {
					t.Errorf("Temporary() = %v, want %v", temp, tc.wantTemp)
				}
			}
			if diff := cmp.Diff(tc.wantFrags, col.all()); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnthropicIdleAndCancel(t *testing.T) {
	start := event("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":1}}}`)
	t.Run("idle timeout, pings count as activity only while they come", func(t *testing.T) {
		f := newFakeServer(t, sseThenHang(start, event("ping", `{"type":"ping"}`)))
		c, _ := testAnthropic(t, f, AnthropicOptions{IdleTimeout: 100 * time.Millisecond})
		_, err := c.Chat(context.Background(), simpleRequest(), func(string) {})
		if err == nil || err.Error() != "anthropic: stream idle for longer than 100ms" {
			t.Fatalf("err = %v", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("attempts = %d, want 1", n)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		f := newFakeServer(t, sseThenHang(start))
		c, _ := testAnthropic(t, f, AnthropicOptions{})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Chat(ctx, simpleRequest(), func(string) {})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	})
}
