package compaction

import (
	"fmt"
	"strconv"
)

// This file is what the user is told (spec context.md §9).

// Notices of automatic compaction (R9.2) and the guidance after overflow
// recovery gave up (R5.4).
const (
	NoticeStarting = "🧹 Compacting context..."
	NoticeDone     = "🧹 Compaction complete"
	OverflowAdvice = "Context is too large and auto-compaction could not recover this turn. Try again, use /compact, or use /new"
	// ErrorKind is the chat error kind of a context overflow (R9.4).
	ErrorKind = "context_length"
)

// Reasons a compaction ran (R9.4).
const (
	ReasonManual    = "manual"
	ReasonThreshold = "threshold"
	ReasonOverflow  = "overflow"
)

// FormatTokens writes a token count compactly, as OpenClaw's status does:
// 950, 5.5k, 145k, 1.1m.
func FormatTokens(n int64) string {
	switch {
	case n <= 0:
		return "0"
	case n < 1_000:
		return strconv.FormatInt(n, 10)
	case n < 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	case n < 999_500:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "m"
}

// ContextUsage is "Context <used>/<window> (<pct>%)", "?" for an unknown
// (non-positive) count (R9.1, R9.3).
func ContextUsage(used, window int64) string {
	w := "?"
	if window > 0 {
		w = FormatTokens(window)
	}
	if used <= 0 {
		return "Context ?/" + w
	}
	if window <= 0 {
		return "Context " + FormatTokens(used) + "/?"
	}
	pct := min(999, (used*100+window/2)/window)
	return fmt.Sprintf("Context %s/%s (%d%%)", FormatTokens(used), w, pct)
}

// NoticeCompacted is the /compact reply after a compaction (R9.1).
func NoticeCompacted(before, after, window int64) string {
	return fmt.Sprintf("⚙️ Compacted (%s → %s) • %s", FormatTokens(before), FormatTokens(after), ContextUsage(after, window))
}

// NoticeSkipped is the /compact reply when there was nothing to do.
func NoticeSkipped(reason string, used, window int64) string {
	return "⚙️ Compaction skipped: " + reason + " • " + ContextUsage(used, window)
}

// NoticeFailed is the /compact reply when the compaction failed.
func NoticeFailed(reason string, used, window int64) string {
	return "⚙️ Compaction failed: " + reason + " • " + ContextUsage(used, window)
}

// NoticeUnavailable is the /compact reply when it cannot run now (a run
// of the session is active).
func NoticeUnavailable(reason string) string { return "⚙️ Compaction unavailable: " + reason + "." }
