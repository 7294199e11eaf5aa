// Package compaction holds the rules of context management that need no
// network, store or model (spec/context.md): so far the context window of
// a model (ResolveWindow, Window.Check), token estimation (EstimateText,
// EstimateMessage, Estimate and Tokens, anchored on the usage a provider
// reported) and the request view of a transcript from its last boundary
// (BuildView over Entry, Replayable).
//
// The package is pure: no I/O, no clock, no state between calls. Every
// function is safe for concurrent use, and no input makes it panic.
package compaction
