package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/provider"
)

func TestReplayable(t *testing.T) {
	user := func(s string) provider.Message { return provider.Message{Role: provider.RoleUser, Content: s} }
	says := func(s string) provider.Message { return provider.Message{Role: provider.RoleAssistant, Content: s} }
	calls := func(text string, ids ...string) provider.Message {
		m := provider.Message{Role: provider.RoleAssistant, Content: text}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, provider.ToolCall{ID: id, Name: "read", Arguments: "{}"})
		}
		return m
	}
	result := func(id string) provider.Message {
		return provider.Message{Role: provider.RoleTool, ToolCallID: id, Name: "read", Content: "r-" + id}
	}
	ended := func(reason, text string) provider.Message {
		return provider.Message{Role: provider.RoleAssistant, Content: text, StopReason: reason, Error: "calling the model: boom"}
	}
	cases := []struct {
		name     string
		in, want []provider.Message
	}{
		{"a clean conversation is kept whole",
			[]provider.Message{user("a"), calls("", "c1", "c2"), result("c1"), result("c2"), says("done"), user("b")},
			[]provider.Message{user("a"), calls("", "c1", "c2"), result("c1"), result("c2"), says("done"), user("b")}},
		{"an aborted turn with nothing said is left out",
			[]provider.Message{user("a"), ended(provider.StopAborted, ""), user("b")},
			[]provider.Message{user("a"), user("b")}},
		{"an error record with nothing said is left out",
			[]provider.Message{user("a"), ended(provider.StopError, ""), user("b")},
			[]provider.Message{user("a"), user("b")}},
		{"text streamed before the end is kept",
			[]provider.Message{user("a"), ended(provider.StopAborted, "half an ans"), user("b")},
			[]provider.Message{user("a"), ended(provider.StopAborted, "half an ans"), user("b")}},
		{"calls without results are dropped, and the message with them",
			[]provider.Message{user("a"), calls("", "c1"), user("b")},
			[]provider.Message{user("a"), user("b")}},
		{"calls without results are dropped, text stays",
			[]provider.Message{user("a"), calls("let me look", "c1"), user("b")},
			[]provider.Message{user("a"), says("let me look"), user("b")}},
		{"only the answered calls stay",
			[]provider.Message{user("a"), calls("", "c1", "c2"), result("c2"), ended(provider.StopAborted, "")},
			[]provider.Message{user("a"), calls("", "c2"), result("c2")}},
		{"results after the next assistant message do not count",
			[]provider.Message{user("a"), calls("", "c1"), says("x"), result("c1")},
			[]provider.Message{user("a"), says("x")}},
		{"a result whose call is outside the window is dropped",
			[]provider.Message{result("c0"), says("done"), user("b")},
			[]provider.Message{says("done"), user("b")}},
		{"a reused call id matches its own turn only",
			[]provider.Message{calls("", "call_1"), user("b"), calls("", "call_1"), result("call_1"), says("ok")},
			[]provider.Message{user("b"), calls("", "call_1"), result("call_1"), says("ok")}},
		{"client tool results sent as the new input match the call",
			[]provider.Message{user("a"), calls("", "c9"), result("c9")},
			[]provider.Message{user("a"), calls("", "c9"), result("c9")}},
		{"an empty answer without a record stays as it was",
			[]provider.Message{user("a"), says(""), user("b")},
			[]provider.Message{user("a"), says(""), user("b")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := cmp.Diff(nil, c.in)
			got := replayable(c.in)
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("replayable (-want +got):\n%s", d)
			}
			if after := cmp.Diff(nil, c.in); after != before {
				t.Error("replayable modified its input")
			}
		})
	}
}
