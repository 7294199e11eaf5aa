package compaction

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

func TestReplayable(t *testing.T) {
	user := func(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
	says := func(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }
	calls := func(text string, ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant, Content: text}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "read", Arguments: "{}"})
		}
		return m
	}
	result := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "read", Content: "r-" + id}
	}
	ended := func(reason, text string) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, Content: text, StopReason: reason, Error: "calling the model: boom"}
	}
	cases := []struct {
		name     string
		in, want []llm.Message
	}{
		{"a clean conversation is kept whole",
			[]llm.Message{user("a"), calls("", "c1", "c2"), result("c1"), result("c2"), says("done"), user("b")},
			[]llm.Message{user("a"), calls("", "c1", "c2"), result("c1"), result("c2"), says("done"), user("b")}},
		{"an aborted turn with nothing said is left out",
			[]llm.Message{user("a"), ended(llm.StopAborted, ""), user("b")},
			[]llm.Message{user("a"), user("b")}},
		{"an error record with nothing said is left out",
			[]llm.Message{user("a"), ended(llm.StopError, ""), user("b")},
			[]llm.Message{user("a"), user("b")}},
		{"text streamed before the end is kept",
			[]llm.Message{user("a"), ended(llm.StopAborted, "half an ans"), user("b")},
			[]llm.Message{user("a"), ended(llm.StopAborted, "half an ans"), user("b")}},
		{"calls without results are dropped, and the message with them",
			[]llm.Message{user("a"), calls("", "c1"), user("b")},
			[]llm.Message{user("a"), user("b")}},
		{"calls without results are dropped, text stays",
			[]llm.Message{user("a"), calls("let me look", "c1"), user("b")},
			[]llm.Message{user("a"), says("let me look"), user("b")}},
		{"only the answered calls stay",
			[]llm.Message{user("a"), calls("", "c1", "c2"), result("c2"), ended(llm.StopAborted, "")},
			[]llm.Message{user("a"), calls("", "c2"), result("c2")}},
		{"results after the next assistant message do not count",
			[]llm.Message{user("a"), calls("", "c1"), says("x"), result("c1")},
			[]llm.Message{user("a"), says("x")}},
		{"a result whose call is outside the window is dropped",
			[]llm.Message{result("c0"), says("done"), user("b")},
			[]llm.Message{says("done"), user("b")}},
		{"a reused call id matches its own turn only",
			[]llm.Message{calls("", "call_1"), user("b"), calls("", "call_1"), result("call_1"), says("ok")},
			[]llm.Message{user("b"), calls("", "call_1"), result("call_1"), says("ok")}},
		{"client tool results sent as the new input match the call",
			[]llm.Message{user("a"), calls("", "c9"), result("c9")},
			[]llm.Message{user("a"), calls("", "c9"), result("c9")}},
		{"a second result for one call is dropped",
			[]llm.Message{user("a"), calls("", "c1"), result("c1"), result("c1"), says("ok")},
			[]llm.Message{user("a"), calls("", "c1"), result("c1"), says("ok")}},
		{"an empty answer without a record stays as it was",
			[]llm.Message{user("a"), says(""), user("b")},
			[]llm.Message{user("a"), says(""), user("b")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := cmp.Diff(nil, c.in)
			got := Replayable(c.in)
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("Replayable (-want +got):\n%s", d)
			}
			if after := cmp.Diff(nil, c.in); after != before {
				t.Error("Replayable modified its input")
			}
		})
	}
}
