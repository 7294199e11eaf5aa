package provider

import (
	"fmt"
	"strings"

	"talon/internal/compaction"
)

// This file is the offline model's answer to a compaction's summariser
// request (compaction.SummarySystem): a deterministic summary with the
// headings a summary must have, so that compaction can be tried without a
// model. It keeps what people said — the first request as the goal, every
// user line as critical context, those of the previous summary first —
// within bounds, so a fact stated long ago survives summaries of
// summaries until the bound drops it.

// Bounds of the offline summary.
const (
	inspectLineChars    = 240 // one user line
	inspectContextLines = 60  // critical context lines kept: the oldest and the newest
)

// inspectSummary answers a summariser request whose prompt is prompt.
func inspectSummary(prompt string) string {
	conv := between(prompt, "<conversation>\n", "\n</conversation>")
	prev := between(prompt, "<previous-summary>\n", "\n</previous-summary>")
	var users []string
	turns := 0
	for _, block := range strings.Split(conv, "\n\n") {
		if text, ok := strings.CutPrefix(block, "[User]: "); ok {
			users = append(users, clipLine(text))
		}
		if strings.HasPrefix(block, "[") {
			turns++
		}
	}
	if strings.Contains(prompt, "\n## Original Request\n") {
		return inspectPrefix(users, turns)
	}
	goal := section(prev, "## Goal")
	if len(goal) == 0 && len(users) > 0 {
		goal = []string{"- " + users[0]}
	}
	if len(goal) == 0 {
		goal = []string{"- (none stated)"}
	}
	done := append(section(prev, "### Done"), fmt.Sprintf("- [x] %d messages summarised offline by the inspect model", turns))
	context := section(prev, "## Critical Context")
	for _, u := range users {
		context = append(context, "- "+u)
	}
	if len(context) == 0 {
		context = []string{"- (none)"}
	}
	return strings.Join([]string{
		"## Goal", strings.Join(goal, "\n"), "",
		"## Constraints & Preferences", "- (none)", "",
		"## Progress", "### Done", strings.Join(keepEnds(done, inspectContextLines/2), "\n"), "",
		"### In Progress", "- [ ] (none)", "",
		"### Blocked", "- (none)", "",
		"## Key Decisions", "- (none)", "",
		"## Next Steps", "1. Continue from the latest user request.", "",
		"## Critical Context", strings.Join(keepEnds(context, inspectContextLines), "\n"),
	}, "\n")
}

// inspectPrefix summarises a split turn's start.
func inspectPrefix(users []string, turns int) string {
	request := "- (none stated)"
	if len(users) > 0 {
		request = "- " + users[0]
	}
	return strings.Join([]string{
		"## Original Request", request, "",
		"## Early Progress", fmt.Sprintf("- %d messages of this turn summarised offline by the inspect model", turns), "",
		"## Context for Suffix", "- (none)",
	}, "\n")
}

// between is the text of s between the first open and the close after it,
// "" when s has none.
func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(rest, close)
	return in
}

// section is the list lines ("- …", "1. …") under heading in a summary,
// up to the next heading; placeholders are left out.
func section(summary, heading string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(summary, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == heading:
			in = true
		case strings.HasPrefix(t, "#"):
			in = false
		case in && t != "" && !strings.Contains(t, "(none") && !omission(t):
			out = append(out, t)
		}
	}
	return out
}

// clipLine is text on one line, at most inspectLineChars characters.
func clipLine(text string) string {
	t := strings.Join(strings.Fields(text), " ")
	if r := []rune(t); len(r) > inspectLineChars {
		return string(r[:inspectLineChars]) + "…"
	}
	return t
}

// keepEnds keeps at most n lines: the oldest half and the newest.
func keepEnds(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	head := n / 2
	return append(append(lines[:head:head], fmt.Sprintf("- [%d lines omitted]", len(lines)-n)), lines[len(lines)-(n-head):]...)
}

// omission reports whether a summary line is keepEnds' note.
func omission(line string) bool {
	return strings.HasPrefix(line, "- [") && strings.HasSuffix(line, " lines omitted]")
}

// isSummaryRequest reports whether req is a compaction's summariser call.
func isSummaryRequest(req *Request) bool {
	return req.System == compaction.SummarySystem && len(req.Messages) == 1 && len(req.Tools) == 0
}
