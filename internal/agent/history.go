package agent

import (
	"slices"

	"talon/internal/llm"
)

// replayable is the part of a session's messages that a model API accepts
// as history. A transcript may hold what no API takes back: the record of
// a turn that failed or was aborted with nothing said (an assistant
// message with only a StopReason), tool calls whose results never came (a
// crash between the model's answer and the tools' results, or a client
// that did not send its tools' results), and results whose call fell off
// the front of the history window. Those are left out; everything else is
// kept in order. msgs is not modified.
//
// A call's results are the tool messages between its assistant message and
// the next assistant message, which is where every provider wants them.
func replayable(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	// answered holds the ids of the calls kept from the last assistant
	// message; results for other ids are orphans.
	var answered []string
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			answered = answered[:0]
			if len(m.ToolCalls) > 0 {
				results := resultIDs(msgs[i+1:])
				kept := make([]llm.ToolCall, 0, len(m.ToolCalls))
				for _, c := range m.ToolCalls {
					if slices.Contains(results, c.ID) {
						kept = append(kept, c)
						answered = append(answered, c.ID)
					}
				}
				m.ToolCalls = kept
				if len(kept) == 0 {
					m.ToolCalls = nil
				}
			}
			if m.Content == "" && len(m.ToolCalls) == 0 && (m.StopReason != "" || len(msgs[i].ToolCalls) > 0) {
				continue // nothing left to say
			}
		case llm.RoleTool:
			if !slices.Contains(answered, m.ToolCallID) {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// resultIDs are the call ids of the tool messages before the next
// assistant message.
func resultIDs(rest []llm.Message) []string {
	var ids []string
	for _, m := range rest {
		if m.Role == llm.RoleAssistant {
			break
		}
		if m.Role == llm.RoleTool {
			ids = append(ids, m.ToolCallID)
		}
	}
	return ids
}
