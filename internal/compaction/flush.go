package compaction

import (
	"strings"
	"time"
)

// This file is the memory flush's texts (spec context.md R6.3): the turn
// before a compaction in which the agent may write durable notes.

// silentReply is the answer that delivers nothing.
const silentReply = "NO_REPLY"

// The hints every flush prompt carries, a configured one too.
const (
	flushTarget   = "Store durable memories only in memory/YYYY-MM-DD.md (create memory/ if needed)."
	flushAppend   = "If memory/YYYY-MM-DD.md already exists, APPEND new content only and do not overwrite existing entries."
	flushReadOnly = "Treat workspace bootstrap/reference files such as MEMORY.md, SOUL.md, TOOLS.md and AGENTS.md as read-only during this flush; never overwrite, replace, or edit them."
)

var flushHints = []string{flushTarget, flushAppend, flushReadOnly}

var (
	defaultFlushPrompt = strings.Join([]string{
		"Pre-compaction memory flush.", flushTarget, flushReadOnly, flushAppend,
		"Do NOT create timestamped variant files (e.g., YYYY-MM-DD-HHMM.md); always use the canonical YYYY-MM-DD.md filename.",
		"If nothing to store, reply with " + silentReply + ".",
	}, " ")
	defaultFlushSystem = strings.Join([]string{
		"Pre-compaction memory flush turn.", "The session is near auto-compaction; capture durable memories to disk.",
		flushTarget, flushReadOnly, flushAppend, "You may reply, but usually " + silentReply + " is correct.",
	}, " ")
)

// FlushTurn is what a memory-flush turn sends: the user prompt, the extra
// system prompt and the file it names.
type FlushTurn struct {
	Prompt, System string
	Path           string // memory/YYYY-MM-DD.md
}

// Prompts builds the flush turn's texts for now in the user's time zone
// loc (agents.defaults.userTimezone; nil is UTC): the configured prompts
// or the built-in ones, each with the file, append-only and read-only
// hints and the silent answer guaranteed, the date filled in, and the
// current time after the prompt.
func (f Flush) Prompts(now time.Time, loc *time.Location) FlushTurn {
	if loc == nil {
		loc = time.UTC
	}
	local := now.In(loc)
	date := local.Format("2006-01-02")
	prompt, system := defaultFlushPrompt, defaultFlushSystem
	if strings.TrimSpace(f.Prompt) != "" {
		prompt = f.Prompt
	}
	if strings.TrimSpace(f.SystemPrompt) != "" {
		system = f.SystemPrompt
	}
	prompt, system = withHints(prompt), withHints(system)
	timeLine := "Current time: " + local.Format("2006-01-02 15:04 MST") + " (" + loc.String() + ")\nReference UTC: " + now.UTC().Format("2006-01-02 15:04") + " UTC"
	return FlushTurn{
		Prompt: strings.ReplaceAll(prompt, "YYYY-MM-DD", date) + "\n" + timeLine,
		System: strings.ReplaceAll(system, "YYYY-MM-DD", date),
		Path:   "memory/" + date + ".md",
	}
}

// withHints adds to text the hints and the silent-answer line it lacks.
func withHints(text string) string {
	t := strings.TrimSpace(text)
	for _, h := range flushHints {
		if !strings.Contains(t, h) {
			t += "\n\n" + h
		}
	}
	if !strings.Contains(t, silentReply) {
		t += "\n\nIf no user-visible reply is needed, start with " + silentReply + "."
	}
	return t
}
