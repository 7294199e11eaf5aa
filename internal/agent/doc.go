// Package agent runs one agent turn: it assembles the system prompt from
// the agent workspace's bootstrap files, asks the tool policy which tools
// the model may see, calls the model, executes the tool calls it makes —
// re-checking the policy for every call — and loops until the model
// answers, persisting the transcript as it goes. The model is the run's
// chain (provider.ModelChain: the chosen model and its fallbacks), called
// through a provider.Chain with the runner's Cooldowns; Result.Model is
// the model that answered.
//
// What the model is sent is kept inside its context window (spec
// context.md; the rules are package compaction's, the I/O is here): a
// run reads the transcript from the last compaction on (store.ReadView),
// builds the request view with the sticky pruning projection and the
// tool-result caps, and before the request — and after a successful
// turn — runs the memory flush (a silent turn on a detached copy, which
// may write memory/) and compacts when the estimate, anchored on the
// usage stored with each answer, crosses the threshold. A request the
// provider refuses as too large is compacted and sent again, at most
// three times, then the run ends with OverflowError's advice on the same
// session. Summaries come from compaction.model (else the run's model)
// within compaction.timeoutSeconds; when summarising fails the hard trim
// commits instead. Compact and TrimLines are /compact and sessions.compact.
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
// are calls on a Workspaces. Runs on the same session, and compactions
// of it (Compact, TrimLines), are not serialised here: the caller (the
// gateway's session lock) does that, and other sessions never wait.
package agent
