package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"talon/internal/llm"
)

// oaRequest is a Chat Completions request as a typed struct: the
// reference the assembled body must equal byte for byte once decoded into
// it and encoded again.
type oaRequest struct {
	Model         string       `json:"model"`
	Messages      []oaMessage  `json:"messages"`
	Tools         []oaTool     `json:"tools,omitempty"`
	MaxTokens     int          `json:"max_tokens,omitempty"`
	Temperature   *float64     `json:"temperature,omitempty"`
	Effort        string       `json:"reasoning_effort,omitempty"`
	Stream        bool         `json:"stream,omitempty"`
	StreamOptions *oaStreamOpt `json:"stream_options,omitempty"`
}

type oaStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireRequests cover every member an encoder writes and the values that
// need escaping.
func wireRequests() map[string]*Request {
	temp := 0.25
	spaced := json.RawMessage("{ \"type\": \"object\",\n \"properties\": {\"q\": {\"type\": \"string\"}} }")
	return map[string]*Request{
		"minimal": {Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
		"everything": {
			Model: "gpt-x", System: "be <brief> & \"exact\"\n\u2028é", MaxTokens: 77, Temperature: &temp,
			Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "run it"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a.txt"}`}, {ID: "c2", Name: "ls", Arguments: " "}}},
				{Role: llm.RoleTool, ToolCallID: "c1", Name: "read", Content: "<file>"},
				{Role: llm.RoleTool, ToolCallID: "c2", Name: "ls", Content: "x", IsError: true},
				{Role: llm.RoleAssistant, Content: "done"},
				{Role: llm.RoleUser, Content: ""},
			},
			Tools: []llm.ToolSpec{
				{Name: "read", Description: "Read a <file>.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
				{Name: "ls"},
				{Name: "null_params", Parameters: json.RawMessage("null")},
				{Name: "client", Description: "spaced schema", Parameters: spaced},
			},
		},
		"no messages": {Model: "m", System: "sys"},
		"a tool loop, thinking": {
			Model: "thinker", System: "sys", Thinking: "medium", Temperature: &temp,
			Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "look"},
				{Role: llm.RoleAssistant, Reasoning: []llm.Reasoning{{Text: "first \"this\"", Signature: "c2ln"}, {Redacted: "ZW5j"}, {Text: "unsigned"}},
					ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ls", Arguments: "{}"}}},
				{Role: llm.RoleTool, ToolCallID: "c1", Name: "ls", Content: "a"},
			},
			Tools: []llm.ToolSpec{{Name: "ls"}},
		},
	}
}

// wireModels is the catalog the wire tests' clients know.
var wireModels = map[string]ModelInfo{"thinker": {Reasoning: true}}

// TestOpenAIEncodeIsWireStruct checks that the body assembled from cached
// fragments is byte for byte what encoding/json writes for the same
// request decoded into the typed wire struct: same members, same order,
// same escaping, compact schemas.
func TestOpenAIEncodeIsWireStruct(t *testing.T) {
	c := NewOpenAI(OpenAIOptions{Models: wireModels})
	for name, req := range wireRequests() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				for round := range 2 { // the second round comes from the cache
					body, err := c.encode(req, stream)
					if err != nil {
						t.Fatal(err)
					}
					var w oaRequest
					if err := json.Unmarshal(body, &w); err != nil {
						t.Fatalf("round %d: body is not a request: %v\n%s", round, err, body)
					}
					want, _ := json.Marshal(w)
					if !bytes.Equal(body, want) {
						t.Fatalf("round %d:\n got %s\nwant %s", round, body, want)
					}
					if sys, _ := w.Messages[0].Content.(*string); req.System != "" && (w.Messages[0].Role != "system" || sys == nil || *sys != req.System) {
						t.Errorf("first message %+v, want the system prompt", w.Messages[0])
					}
					if got, want := len(w.Messages), len(req.Messages)+min(1, len(req.System)); got != want {
						t.Errorf("%d messages, want %d", got, want)
					}
					if len(w.Tools) != len(req.Tools) {
						t.Errorf("%d tools, want %d", len(w.Tools), len(req.Tools))
					}
				}
			})
		}
	}
}

func TestAnthropicEncodeIsWireStruct(t *testing.T) {
	c := NewAnthropic(AnthropicOptions{Models: wireModels})
	for name, req := range wireRequests() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				for round := range 2 {
					body, err := c.encode(req, stream)
					if err != nil {
						t.Fatal(err)
					}
					var w anRequest
					if err := json.Unmarshal(body, &w); err != nil {
						t.Fatalf("round %d: body is not a request: %v\n%s", round, err, body)
					}
					want, _ := json.Marshal(w)
					if !bytes.Equal(body, want) {
						t.Fatalf("round %d:\n got %s\nwant %s", round, body, want)
					}
					if (req.System != "") != (len(w.System) == 1) || len(w.System) == 1 && w.System[0].Text != req.System ||
						len(w.Tools) != len(req.Tools) || w.Stream != stream {
						t.Errorf("system %+v tools %d stream %v", w.System, len(w.Tools), w.Stream)
					}
				}
			})
		}
	}
}

// TestFragCache checks that a changed schema under the same name and
// description is not served from the cache, and that the cache stays
// within its bounds.
func TestFragCache(t *testing.T) {
	var c fragCache
	wrap := func(name, desc string, params json.RawMessage) any {
		return map[string]any{"name": name, "p": params}
	}
	a, _ := c.tool(llm.ToolSpec{Name: "t", Parameters: json.RawMessage(`{"a":1}`)}, wrap)
	b, _ := c.tool(llm.ToolSpec{Name: "t", Parameters: json.RawMessage(`{"b":2}`)}, wrap)
	if !strings.Contains(string(a), `"a":1`) || !strings.Contains(string(b), `"b":2`) {
		t.Fatalf("a %s, b %s", a, b)
	}
	big := strings.Repeat("x", 1<<20)
	for i := range 3 * maxFragEntries {
		s := fmt.Sprint(i)
		if i%maxFragEntries == 0 {
			s += big
		}
		got, err := c.text(s, func(s string) ([]byte, error) { return json.Marshal(s) })
		if err != nil || string(got) != `"`+s+`"` {
			t.Fatalf("text(%.10q) = %.10q, %v", s, got, err)
		}
		if n := len(c.texts) + len(c.tools); n > maxFragEntries || c.size > maxFragBytes {
			t.Fatalf("after %d: %d entries, %d bytes", i, n, c.size)
		}
	}
	if _, err := c.text("bad", func(string) ([]byte, error) { return nil, fmt.Errorf("boom") }); err == nil {
		t.Error("an encoding error was not returned")
	}
	if _, ok := c.texts["bad"]; ok {
		t.Error("a failed encoding was cached")
	}
}
