package fakellm

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/provider"
)

const hi = `"messages":[{"role":"user","content":"hi"}]`

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func post(t *testing.T, s *Server, auth, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.BaseURL()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// completion is the part of a chat.completion the tests compare.
type completion struct {
	Object  string
	Model   string
	Choices []struct {
		Message struct {
			Role      string
			Content   *string
			ToolCalls []struct {
				ID, Type string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		FinishReason string `json:"finish_reason"`
	}
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
}

// events reads an SSE body into its data payloads and the time each
// arrived after start.
func events(t *testing.T, resp *http.Response, start time.Time) (data []string, at []time.Duration) {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
			at = append(at, time.Since(start))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return data, at
}

// chunkDelta is a chat.completion.chunk's first choice.
type chunkDelta struct {
	Content   string
	ToolCalls []struct {
		ID       string
		Function struct{ Name, Arguments string }
	} `json:"tool_calls"`
	Finish *string
	Usage  bool
}

func decodeChunk(t *testing.T, data string) chunkDelta {
	t.Helper()
	var c struct {
		Object  string
		Choices []struct {
			Delta struct {
				Content   string
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason *string `json:"finish_reason"`
		}
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil || c.Object != "chat.completion.chunk" {
		t.Fatalf("not a chat.completion.chunk (%v): %s", err, data)
	}
	var d chunkDelta
	if len(c.Choices) > 0 {
		d.Content, d.ToolCalls, d.Finish = c.Choices[0].Delta.Content, c.Choices[0].Delta.ToolCalls, c.Choices[0].FinishReason
	}
	d.Usage = c.Usage != nil && c.Usage.TotalTokens > 0
	return d
}

func TestNonStreamed(t *testing.T) {
	call := &ToolCall{Name: "read", Arguments: `{"path":"a.txt"}`}
	tests := []struct {
		name        string
		opts        Options
		body        string
		wantContent string // "" = a tool call
		wantFinish  string
	}{
		{"default reply", Options{}, `{"model":"m1",` + hi + `}`, DefaultReply, "stop"},
		{"own reply", Options{Reply: "hello there"}, `{"model":"m1",` + hi + `}`, "hello there", "stop"},
		{"sized chunks", Options{Reply: "ab", Chunks: 3, ChunkSize: 3}, `{"model":"m1",` + hi + `}`, "ababababa", "stop"},
		{"tool call first", Options{ToolCall: call}, `{"model":"m1",` + hi + `}`, "", "tool_calls"},
		{"text after the tool result", Options{ToolCall: call},
			`{"model":"m1","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"file text"}]}`,
			DefaultReply, "stop"},
		{"text when a message follows the tool result", Options{ToolCall: call},
			`{"model":"m1","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"file text"},{"role":"user","content":"context"}]}`,
			DefaultReply, "stop"},
		{"a new call in the next turn", Options{ToolCall: call},
			`{"model":"m1","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"file text"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}]}`,
			"", "tool_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, tt.opts)
			resp := post(t, s, "", tt.body)
			var got completion
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			if got.Object != "chat.completion" || got.Model != "m1" || len(got.Choices) != 1 || got.Choices[0].Message.Role != "assistant" {
				t.Fatalf("envelope: %+v", got)
			}
			c := got.Choices[0]
			if c.FinishReason != tt.wantFinish {
				t.Errorf("finish_reason %q, want %q", c.FinishReason, tt.wantFinish)
			}
			if tt.wantContent == "" {
				if c.Message.Content != nil || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "read" ||
					c.Message.ToolCalls[0].Function.Arguments != call.Arguments || c.Message.ToolCalls[0].Type != "function" || c.Message.ToolCalls[0].ID == "" {
					t.Errorf("want one read call and null content, got %+v", c.Message)
				}
				if s.ToolCalls() != 1 {
					t.Errorf("ToolCalls = %d", s.ToolCalls())
				}
			} else if c.Message.Content == nil || *c.Message.Content != tt.wantContent || *c.Message.Content != s.Text() || len(c.Message.ToolCalls) != 0 {
				t.Errorf("content %v, want %q (Text %q)", c.Message.Content, tt.wantContent, s.Text())
			}
			if u := got.Usage; u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage %+v", u)
			}
			if s.Chats() != 1 || s.Rejected() != 0 || s.MaxInFlight() != 1 {
				t.Errorf("Chats %d Rejected %d MaxInFlight %d", s.Chats(), s.Rejected(), s.MaxInFlight())
			}
		})
	}
}

func TestStreamed(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		usage    bool
		wantText []string // content chunks in order; nil = a tool call
		atLeast  time.Duration
	}{
		{"one chunk with usage", Options{}, true, []string{DefaultReply}, 0},
		{"one chunk without usage", Options{}, false, []string{DefaultReply}, 0},
		{"reply cut in three", Options{Reply: "abcdefgh", Chunks: 3}, false, []string{"ab", "cde", "fgh"}, 0},
		{"sized chunks spread over 150 ms after 50 ms", Options{Reply: "xy", Chunks: 3, ChunkSize: 4, Latency: 50 * time.Millisecond, StreamDuration: 150 * time.Millisecond},
			true, []string{"xyxy", "xyxy", "xyxy"}, 200 * time.Millisecond},
		{"tool call", Options{ToolCall: &ToolCall{Name: "read", Arguments: `{"path":"a.txt"}`}}, true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, tt.opts)
			opts := ""
			if tt.usage {
				opts = `,"stream_options":{"include_usage":true}`
			}
			begin := time.Now()
			resp := post(t, s, "", `{"model":"m1","stream":true,`+hi+opts+`}`)
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
			}
			data, at := events(t, resp, begin)
			if len(data) < 3 || data[len(data)-1] != "[DONE]" {
				t.Fatalf("events %q: want role, …, [DONE]", data)
			}
			chunks := data[1 : len(data)-1]
			if tt.usage {
				if !decodeChunk(t, chunks[len(chunks)-1]).Usage {
					t.Errorf("last chunk before [DONE] is not usage: %s", chunks[len(chunks)-1])
				}
				chunks = chunks[:len(chunks)-1]
			}
			last := decodeChunk(t, chunks[len(chunks)-1])
			chunks = chunks[:len(chunks)-1]
			if tt.wantText == nil {
				first, args := decodeChunk(t, chunks[0]), decodeChunk(t, chunks[1])
				if len(chunks) != 2 || len(first.ToolCalls) != 1 || first.ToolCalls[0].ID == "" || first.ToolCalls[0].Function.Name != "read" ||
					args.ToolCalls[0].Function.Arguments != `{"path":"a.txt"}` || last.Finish == nil || *last.Finish != "tool_calls" {
					t.Errorf("tool call events: %q", data)
				}
				return
			}
			var got []string
			for _, c := range chunks {
				got = append(got, decodeChunk(t, c).Content)
			}
			if diff := cmp.Diff(tt.wantText, got); diff != "" || last.Finish == nil || *last.Finish != "stop" {
				t.Errorf("content chunks (-want +got):\n%s\nfinish %v", diff, last.Finish)
			}
			if strings.Join(got, "") != s.Text() {
				t.Errorf("Text() = %q, streamed %q", s.Text(), strings.Join(got, ""))
			}
			// A lower bound only: the sleeps guarantee it, the machine cannot
			// make it flaky.
			if end := at[len(at)-1]; end < tt.atLeast {
				t.Errorf("stream took %v, want at least %v", end, tt.atLeast)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	tests := []struct {
		name, auth, body, want string
		status                 int
	}{
		{"bad JSON", "k", `{`, "invalid JSON body", 400},
		{"data after the object", "k", `{"model":"m",` + hi + `} {}`, "data after the object", 400},
		{"no model", "k", `{` + hi + `}`, "you must provide a model parameter", 400},
		{"no messages", "k", `{"model":"m","messages":[]}`, "at least one message", 400},
		{"unknown role", "k", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, `messages[0].role: "robot"`, 400},
		{"tool result without id", "k", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "needs tool_call_id", 400},
		{"wrong key", "other", `{"model":"m",` + hi + `}`, "Incorrect API key", 401},
		{"no key", "", `{"model":"m",` + hi + `}`, "Incorrect API key", 401},
	}
	s := start(t, Options{APIKey: "k"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, s, tt.auth, tt.body)
			var e struct {
				Error struct{ Message, Type string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || !strings.Contains(e.Error.Message, tt.want) || e.Error.Type != "invalid_request_error" {
				t.Errorf("status %d, error %+v; want %d and %q", resp.StatusCode, e.Error, tt.status, tt.want)
			}
		})
	}
	if s.Chats() != 0 || s.Rejected() != int64(len(tests)) {
		t.Errorf("Chats %d Rejected %d, want 0 and %d", s.Chats(), s.Rejected(), len(tests))
	}
	resp := post(t, s, "k", `{"model":"m",`+hi+`}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || s.Chats() != 1 {
		t.Errorf("the right key: status %d, Chats %d", resp.StatusCode, s.Chats())
	}
}

func TestBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"negative chunks", Options{Chunks: -1}, "chunks -1"},
		{"negative latency", Options{Latency: -time.Second}, "may be negative"},
		{"more chunks than characters", Options{Reply: "ab", Chunks: 3}, "fewer than the 3 chunks"},
		{"sized chunks of a non-ASCII reply", Options{Reply: "héllo", ChunkSize: 2}, "ASCII"},
		{"tool call without a name", Options{ToolCall: &ToolCall{Arguments: `{}`}}, "a name is required"},
		{"tool call arguments not an object", Options{ToolCall: &ToolCall{Name: "read", Arguments: `[1]`}}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(tt.opts)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestModelsAndUnknownPaths(t *testing.T) {
	s := start(t, Options{})
	resp, err := http.Get(s.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string
		Data   []struct{ ID string }
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != Model {
		t.Errorf("GET /v1/models: %+v, %v", list, err)
	}
	for _, u := range []string{s.URL + "/v1/embeddings", s.BaseURL() + "/chat/completions"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("GET %s: 200", u)
		}
	}
}

// TestTalonClient reads the fake with talon's own OpenAI client: streamed
// and not, a text answer and a tool call, so the benchmarks' fake speaks
// what the gateway understands.
func TestTalonClient(t *testing.T) {
	call := &ToolCall{Name: "read", Arguments: `{"path":"a.txt"}`}
	tests := []struct {
		name   string
		opts   Options
		stream bool
	}{
		{"text", Options{Chunks: 3}, false},
		{"text streamed", Options{Chunks: 3}, true},
		{"tool call", Options{ToolCall: call}, false},
		{"tool call streamed", Options{ToolCall: call}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, tt.opts)
			c := provider.NewOpenAI(provider.OpenAIOptions{Name: "fake", BaseURL: s.BaseURL(), APIKey: "sk-test"})
			req := &provider.Request{Model: Model, System: "be brief",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
			var deltas []string
			var onDelta func(string)
			if tt.stream {
				onDelta = func(s string) { deltas = append(deltas, s) }
			}
			out, err := c.Chat(context.Background(), req, onDelta)
			if err != nil {
				t.Fatal(err)
			}
			if out.Usage.TotalTokens <= 0 {
				t.Errorf("usage %+v", out.Usage)
			}
			if tt.opts.ToolCall == nil {
				if out.Content != s.Text() || out.FinishReason != provider.FinishStop || tt.stream && len(deltas) != 3 {
					t.Errorf("answer %+v, deltas %q", out, deltas)
				}
				return
			}
			if len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "read" || out.ToolCalls[0].Arguments != call.Arguments || out.FinishReason != provider.FinishToolCalls {
				t.Fatalf("tool call answer %+v", out)
			}
			req.Messages = append(req.Messages,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: out.ToolCalls},
				llm.Message{Role: llm.RoleTool, ToolCallID: out.ToolCalls[0].ID, Content: "the file"})
			if out, err = c.Chat(context.Background(), req, onDelta); err != nil || out.Content != s.Text() {
				t.Fatalf("after the tool result: %+v, %v", out, err)
			}
			if s.LastToolResult() != "the file" || s.Chats() != 2 || s.ToolCalls() != 1 {
				t.Errorf("LastToolResult %q, Chats %d, ToolCalls %d", s.LastToolResult(), s.Chats(), s.ToolCalls())
			}
		})
	}
}
