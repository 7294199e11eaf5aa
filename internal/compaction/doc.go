// Package compaction holds every rule of context management that needs no
// network, store or model (spec/context.md): the context window of a
// model, token estimation, the request view of a transcript, when and how
// to compact it, the memory flush before a compaction, session pruning,
// the live tool-result caps, and the texts the user and the summariser
// see. The runner, the store and the gateway do the I/O around it.
//
// # Contract
//
// The package is pure: no I/O, no clock (time is passed in), no state
// between calls, no globals that change. Every function and method is
// safe for concurrent use (a Job does not change once built); none
// modifies its arguments but CapToolResults and Projection.Apply, which
// rewrite the messages they are given (a View's own copies). No
// transcript makes it panic.
//
// # A turn
//
// The caller reads the transcript tail from the last boundary's first kept
// entry on (Entry; the store keeps entries append-only, compactions and
// resets included) and:
//
//	win := ResolveWindow(cfg, ref)           // R2.1; re-resolved every run
//	warn, err := win.Check()                 // R2.2: *WindowError refuses the run
//	set, prune := SettingsFor(cfg, agentID), PruningFor(cfg, agentID)
//	v := BuildView(entries)                  // R4: summary + kept tail + the rest, paired
//	tok := Estimate(entries)                 // R3.3: usage anchor + what came after
//	tok.Add(input...)
//	turn := Turn{Window: win.Tokens, Tokens: tok.Total() + fixed, ViewBytes: n, ...}
//	set.FlushDue(turn)                       // R6.2: set.Flush.Prompts on a detached copy first
//	set.CompactDue(turn)                     // R5.2, R5.5: compact before the request
//	if prune.Due(now, lastTouch, tok.Total(), win.Tokens) { proj = prune.Round(v, win.Tokens, proj) } // R7
//	proj.Apply(&v)                           // R7.3: the sticky projection, persisted by the caller
//	CapToolResults(v.Messages, win.Tokens)   // R8
//
// After each model call, tok.Report(usage) re-anchors the estimate and
// the usage is stored on the assistant entry; tool results go through
// CapToolResult before the next request. A failed call is put to
// ParseOverflow (R5.3): an overflow that is not Terminal compacts and
// retries the same request, at most three times.
//
// # A compaction
//
//	plan, err := Prepare(entries, set.Budget(win.Tokens, fixed), pending) // R5.9
//	job, err := plan.Job(set, win.Tokens, Summarizer{...}, focus)           // R5.10
//	prev := plan.PreviousSummary
//	for i := range job.Stages() { prev = call(job.Request(i, prev)) }     // Check, Retry
//	prefix := ""; if r, ok := job.PrefixRequest(); ok { prefix = call(r) }
//	c := job.Compaction(prev, prefix)                                     // R5.11
//
// and when summarising fails (or Job says ErrSummarizerTooSmall),
// c := plan.HardTrim(): a deterministic stub that still takes the oldest
// turns out of view, so the next turn always fits (better-item 1). The
// caller appends c as a KindCompaction entry and tells the user
// (NoticeCompacted; Prepare's ErrAlreadyCompacted and ErrNothingToCompact
// are NoticeSkipped's reasons, R9).
//
// # What the caller stores
//
// Usage per assistant message (Entry.Usage), since an estimate is
// anchored on it; compaction entries (Compaction, whose JSON is
// OpenClaw's); the pruning Projection; and the session counters the
// decisions read (Turn.Flushed).
package compaction
