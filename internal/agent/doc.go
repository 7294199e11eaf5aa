// Package agent runs one agent turn: it assembles the system prompt from
// the agent workspace's bootstrap files, asks the tool policy which tools
// the model may see, calls the model, executes the tool calls it makes —
// re-checking the policy for every call — and loops until the model
// answers, persisting the transcript as it goes.
//
// It also owns the agent workspace: the bootstrap files a new one starts
// with (SeedWorkspace), the identity in its IDENTITY.md, and Workspaces,
// the file work of agents.create/update/delete — where a workspace may
// go, preparing it, moving a deleted agent's to the trash — through an
// os.Root of a tenant's directory.
//
// Exec approvals reach a session as system events (SystemEvent: "System: …"
// user messages, written by TranscriptSink). A Run holds its session in the
// approvals service for as long as it works, so an event arriving
// meanwhile is written after the turn, never between a tool call and its
// result; the approved command itself runs outside any turn.
//
// A Runner is safe for concurrent use; each Run is independent, and so
// are calls on a Workspaces. Runs on the
// same session are not serialised here: the caller (the gateway) does that.
package agent
