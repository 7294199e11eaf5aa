package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

func TestInspect(t *testing.T) {
	tools := []llm.ToolSpec{
		{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "exec"},
		{Name: "web_fetch"},
	}
	user := func(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
	tests := []struct {
		name string
		req  *Request
		want *Response // Usage is checked separately
	}{
		{
			name: "/tools lists tool names in order",
			req:  &Request{Tools: tools, Messages: []llm.Message{user("  /tools\n")}},
			want: &Response{Content: "read\nexec\nweb_fetch", FinishReason: FinishStop},
		},
		{
			name: "/tools without tools",
			req:  &Request{Messages: []llm.Message{user("/tools")}},
			want: &Response{Content: "(no tools)", FinishReason: FinishStop},
		},
		{
			name: "/tools must be the whole message",
			req:  &Request{System: "sys", Tools: tools, Messages: []llm.Message{user("/tools please")}},
			want: &Response{Content: "inspect: system prompt 3 bytes, 3 tools, 1 messages", FinishReason: FinishStop},
		},
		{
			name: "/call with arguments",
			req:  &Request{Messages: []llm.Message{user(`/call read {"path": "a.txt"}`)}},
			want: &Response{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path": "a.txt"}`}}, FinishReason: FinishToolCalls},
		},
		{
			name: "/call without arguments",
			req:  &Request{Messages: []llm.Message{user("/call exec")}},
			want: &Response{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "exec", Arguments: `{}`}}, FinishReason: FinishToolCalls},
		},
		{
			name: "/call lines among other text, arguments glued to the name",
			req:  &Request{Messages: []llm.Message{user("please run these:\n  /call read{\"path\":\"x\"}\nthen\n/call exec {\"cmd\":\"ls\"}\r\n/caller no\n/call\n")}},
			want: &Response{ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "read", Arguments: `{"path":"x"}`},
				{ID: "call_2", Name: "exec", Arguments: `{"cmd":"ls"}`},
			}, FinishReason: FinishToolCalls},
		},
		{
			name: "/call arguments are passed verbatim, even invalid",
			req:  &Request{Messages: []llm.Message{user(`/call read {"path":`)}},
			want: &Response{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path":`}}, FinishReason: FinishToolCalls},
		},
		{
			name: "ids continue after earlier calls",
			req: &Request{Messages: []llm.Message{
				user("/call a\n/call b"),
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "a"}, {ID: "call_2", Name: "b"}}},
				{Role: llm.RoleTool, ToolCallID: "call_1", Content: "A"},
				{Role: llm.RoleTool, ToolCallID: "call_2", Content: "B"},
				{Role: llm.RoleAssistant, Content: "A\n\nB"},
				user("/call c"),
			}},
			want: &Response{ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "c", Arguments: `{}`}}, FinishReason: FinishToolCalls},
		},
		{
			name: "one tool result is answered verbatim",
			req: &Request{Messages: []llm.Message{
				user("/call read"),
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "read"}}},
				{Role: llm.RoleTool, ToolCallID: "call_1", Content: "  file\ncontents\n"},
			}},
			want: &Response{Content: "  file\ncontents\n", FinishReason: FinishStop},
		},
		{
			name: "several tool results after the last assistant turn are joined",
			req: &Request{Messages: []llm.Message{
				{Role: llm.RoleTool, ToolCallID: "old", Content: "old result"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1"}, {ID: "call_2"}, {ID: "call_3"}}},
				{Role: llm.RoleTool, ToolCallID: "call_1", Content: "one"},
				{Role: llm.RoleTool, ToolCallID: "call_2", Content: "two", IsError: true},
				{Role: llm.RoleTool, ToolCallID: "call_3", Content: "three"},
			}},
			want: &Response{Content: "one\n\ntwo\n\nthree", FinishReason: FinishStop},
		},
		{
			name: "no messages",
			req:  &Request{System: "héllo", Tools: tools},
			want: &Response{Content: "inspect: system prompt 6 bytes, 3 tools, 0 messages", FinishReason: FinishStop},
		},
		{
			name: "plain user message",
			req:  &Request{System: strings.Repeat("x", 1234), Messages: []llm.Message{user("a"), {Role: llm.RoleAssistant, Content: "b"}, user("hello")}},
			want: &Response{Content: "inspect: system prompt 1234 bytes, 0 tools, 3 messages", FinishReason: FinishStop},
		},
		{
			name: "last message from the assistant",
			req:  &Request{Messages: []llm.Message{user("/tools"), {Role: llm.RoleAssistant, Content: "x"}}},
			want: &Response{Content: "inspect: system prompt 0 bytes, 0 tools, 2 messages", FinishReason: FinishStop},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Inspect{}.Chat(context.Background(), tc.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			got.Usage = Usage{}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}

			// Streaming gives the same response, its text in a few
			// fragments that end on word boundaries.
			var frags []string
			streamed, err := Inspect{}.Chat(context.Background(), tc.req, func(s string) { frags = append(frags, s) })
			if err != nil {
				t.Fatal(err)
			}
			streamed.Usage = Usage{}
			if diff := cmp.Diff(got, streamed); diff != "" {
				t.Errorf("streamed response differs (-plain +streamed):\n%s", diff)
			}
			if joined := strings.Join(frags, ""); joined != got.Content {
				t.Errorf("fragments join to %q, want %q", joined, got.Content)
			}
			if len(frags) > 4 {
				t.Errorf("%d fragments, want at most 4", len(frags))
			}
		})
	}
}

func TestInspectStreamChunks(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"inspect: system prompt 0 bytes, 0 tools, 1 messages", []string{"inspect: system prompt ", "0 bytes, 0 ", "tools, 1 messages"}},
		{"a\n\nb", []string{"a\n\n", "b"}},
		{" lead  and trail ", []string{" lead  ", "and ", "trail "}},
		{"a b c d e f g h", []string{"a b ", "c d ", "e f ", "g h"}},
		{"\n\n", []string{"\n\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, wordChunks(tc.text, 4)); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInspectUsage(t *testing.T) {
	req := &Request{
		System: "12345",                                                         // 5
		Tools:  []llm.ToolSpec{{Name: "ab", Description: "c", Parameters: nil}}, // 3
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "/call ab {}"},                                                      // 11
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "ab", Arguments: "{}"}}}, // 4
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "result"},                                     // 6
		},
	}
	got, err := Inspect{}.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Prompt 29 bytes → 8 tokens; completion "result" 6 bytes → 2.
	if diff := cmp.Diff(Usage{PromptTokens: 8, CompletionTokens: 2, TotalTokens: 10}, got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestInspectDeterministic(t *testing.T) {
	req := &Request{
		System:   "sys",
		Tools:    []llm.ToolSpec{{Name: "a"}, {Name: "b"}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "/call a {\"x\":1}\n/call b"}},
	}
	first, err := Inspect{}.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			got, err := Inspect{}.Chat(context.Background(), req, func(string) {})
			if err != nil {
				t.Error(err)
				return
			}
			if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("answer changed (-first +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
}

func TestInspectCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Inspect{}.Chat(ctx, &Request{}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
