// Package agent runs one agent turn: it assembles the system prompt from
// the agent workspace's bootstrap files, asks the tool policy which tools
// the model may see, calls the model, executes the tool calls it makes —
// re-checking the policy for every call — and loops until the model
// answers, persisting the transcript as it goes.
//
// Exec approvals reach a session as system events (SystemEvent: "System: …"
// user messages, written by TranscriptSink). A Run holds its session in the
// approvals service for as long as it works, so an event arriving
// meanwhile is written after the turn, never between a tool call and its
// result; the approved command itself runs outside any turn.
//
// A Runner is safe for concurrent use; each Run is independent. Runs on the
// same session are not serialised here: the caller (the gateway) does that.
package agent
