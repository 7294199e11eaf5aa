package agent

import (
	"context"
	"strings"

	"talon/internal/approval"
	"talon/internal/llm"
	"talon/internal/store"
)

// SystemEventPrefix starts the text of every system event in a transcript.
const SystemEventPrefix = "System: "

// SystemEvent is the transcript message of a system event — something the
// gateway tells the session, such as an approved command's outcome ("Exec
// finished (gateway id=…, session=…, code 0)" and its output tail).
//
// It is a user message whose text starts with "System: ", which is how
// OpenClaw hands system events to the model (prefixed to the next user
// message). A user message is the one kind every provider replays and
// every transcript reader shows as it is, so the model sees the event on
// the session's next turn, chat.history and sessions_history list it in
// place, and the HTTP endpoint's history (the transcript) carries it. The
// prefix is what tells it from a person's words.
func SystemEvent(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: SystemEventPrefix + text}
}

// IsSystemEvent reports whether m is a system event.
func IsSystemEvent(m llm.Message) bool {
	return m.Role == llm.RoleUser && strings.HasPrefix(m.Content, SystemEventPrefix)
}

// TranscriptSink is the approvals' sink writing to db: each event is
// appended to the session's transcript in one durable transaction that
// also raises the session's updatedAt, as a turn does. The approvals
// service calls it only when no turn of the session runs (see
// approval.Service.Hold, which Runner.Run takes).
func TranscriptSink(db *store.DB) approval.Sink {
	return func(ctx context.Context, agentID, sessionKey, text string) error {
		_, err := db.BeginTurn(ctx, agentID, sessionKey, SystemEvent(text))
		return err
	}
}
