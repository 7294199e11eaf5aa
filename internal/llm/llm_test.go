package llm

import (
	"encoding/json"
	"testing"
)

// TestMessageJSON pins the field names of the stored transcript form,
// which OpenClaw's transcripts share (stopReason, errorMessage, images
// with mimeType and base64 data): a renamed tag would make the store
// unable to read what it wrote before.
func TestMessageJSON(t *testing.T) {
	cases := []struct {
		name string
		m    Message
		want string
	}{
		{"user with an image", Message{Role: RoleUser, Content: "look", Images: []Image{{MIME: "image/png", Data: []byte{1, 2}}}},
			`{"role":"user","content":"look","images":[{"mimeType":"image/png","data":"AQI="}]}`},
		{"assistant calling a tool", Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a"}`}}},
			`{"role":"assistant","tool_calls":[{"id":"c1","name":"read","arguments":"{\"path\":\"a\"}"}]}`},
		{"a failed tool result", Message{Role: RoleTool, ToolCallID: "c1", Name: "read", Content: "no such file", IsError: true},
			`{"role":"tool","content":"no such file","tool_call_id":"c1","name":"read","is_error":true}`},
		{"an aborted turn", Message{Role: RoleAssistant, Content: "half", StopReason: StopAborted, Error: "context canceled"},
			`{"role":"assistant","content":"half","stopReason":"aborted","errorMessage":"context canceled"}`},
		{"an answer with its reasoning", Message{Role: RoleAssistant, Content: "4", Reasoning: []Reasoning{{Text: "2+2", Signature: "sig"}, {Redacted: "enc"}}},
			`{"role":"assistant","content":"4","reasoning":[{"text":"2+2","signature":"sig"},{"redacted":"enc"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("encoded %s\nwant    %s", b, tc.want)
			}
			var back Message
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != tc.want {
				t.Errorf("round trip: %s", again)
			}
		})
	}
}

func TestReasoningText(t *testing.T) {
	cases := []struct {
		name string
		r    []Reasoning
		want string
	}{
		{"none", nil, ""},
		{"one block", []Reasoning{{Text: "a"}}, "a"},
		{"blocks joined, redacted skipped", []Reasoning{{Text: "a"}, {Redacted: "x"}, {Text: "b"}}, "a\n\nb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Message{Role: RoleAssistant, Reasoning: tc.r}
			if got := m.ReasoningText(); got != tc.want {
				t.Errorf("ReasoningText() = %q, want %q", got, tc.want)
			}
		})
	}
}
