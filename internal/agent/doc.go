// Package agent runs one agent turn: it assembles the system prompt from
// the agent workspace's bootstrap files, asks the tool policy which tools
// the model may see, calls the model, executes the tool calls it makes —
// re-checking the policy for every call — and loops until the model
// answers, persisting the transcript as it goes.
//
// A Runner is safe for concurrent use; each Run is independent. Runs on the
// same session are not serialised here: the caller (the gateway) does that.
package agent
