package compaction

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"talon/internal/llm"
)

// This file is the live tool-result caps (spec context.md §8): a tool
// result is capped relative to the window before it enters a request, and
// all of a request's results together too. The transcript keeps every
// result whole.

// Marks of the caps (OpenClaw's).
const (
	middleOmitted = "\n\n⚠️ [... middle content omitted — showing head and tail ...]\n\n"
	elided        = "[tool result elided: aggregate tool-result budget exceeded; rerun the command if the output is needed]"
	// minKeepChars is the least of a result a cap keeps.
	minKeepChars = 2_000
)

// ToolResultLimit is the most characters one tool result may take in a
// request to a window of the given size (R8.1): 30 % of the window, at
// most 16 000 characters below 100 000 tokens, 32 000 below 200 000 and
// 64 000 from there.
func ToolResultLimit(window int64) int64 {
	hard := int64(16_000)
	switch {
	case window >= 200_000:
		hard = 64_000
	case window >= 100_000:
		hard = 32_000
	}
	return max(1, min(window*3/10*4, hard))
}

// toolResultsLimit is the most all of a request's results may take (R8.2).
func toolResultsLimit(window int64) int64 {
	return max(4*ToolResultLimit(window), window*2)
}

// CapToolResults caps the tool results of msgs, in place, for a window of
// the given size: each at ToolResultLimit (CapToolResult); then, while all
// of them together take more than four such results or half the window
// (whichever is more, a token being 4 characters), the oldest are replaced
// by a note that they were elided (R8.2). It returns how many it
// changed. Results are strings, so a View built from a transcript can be
// capped without touching the transcript.
func CapToolResults(msgs []llm.Message, window int64) int {
	changed := 0
	var total int64
	for i := range msgs {
		if msgs[i].Role != llm.RoleTool {
			continue
		}
		if c := CapToolResult(msgs[i].Content, window); c != msgs[i].Content {
			msgs[i].Content = c
			changed++
		}
		total += textChars(msgs[i].Content)
	}
	limit := toolResultsLimit(window)
	for i := 0; i < len(msgs) && total > limit; i++ {
		if msgs[i].Role != llm.RoleTool || msgs[i].Content == elided {
			continue
		}
		total += textChars(elided) - textChars(msgs[i].Content)
		msgs[i].Content = elided
		changed++
	}
	return changed
}

// CapToolResult caps one tool result at ToolResultLimit (R8.1): the head
// is kept, and when the end looks important (an error, a summary, a
// closing brace) a tail of up to 30 % (at most 4 000 characters) too,
// with a note of what was left out. Characters are counted as the
// estimator counts them, CJK weighted.
func CapToolResult(text string, window int64) string {
	maxChars := ToolResultLimit(window)
	// A character counts at most 4 per byte (a 4-byte ideograph is 16).
	if 4*int64(len(text)) <= maxChars || textChars(text) <= maxChars {
		return text
	}
	total := utf8.RuneCountInString(text)
	minKeep := min(minKeepChars, max(0, maxChars-textChars(truncationNote(1))))
	initial := headWithin(text, maxChars)
	budget := max(minKeep, maxChars-textChars(truncationNote(total-utf8.RuneCountInString(initial))))
	if importantEnd(text) && budget > 2*minKeep {
		tailBudget := min(budget*3/10, 4_000)
		headBudget := budget - tailBudget - textChars(middleOmitted)
		if headBudget > minKeep {
			head := toLastNewline(headWithin(text, headBudget))
			tail := tailWithin(text, tailBudget)
			if nl := strings.IndexByte(tail, '\n'); nl >= 0 && nl < len(tail)/5 {
				tail = tail[nl+1:]
			}
			if len(head)+len(tail) < len(text) {
				return withNote(head+middleOmitted+tail, total, maxChars)
			}
		}
	}
	return withNote(toLastNewline(headWithin(text, budget)), total, maxChars)
}

// truncationNote says n characters were left out.
func truncationNote(n int) string {
	return fmt.Sprintf("\n[... %d more characters truncated; rerun with narrower args if needed]", max(1, n))
}

// withNote appends the truncation note to kept, shortening kept until both
// fit in maxChars.
func withNote(kept string, total int, maxChars int64) string {
	for {
		note := truncationNote(total - utf8.RuneCountInString(kept))
		if textChars(note) >= maxChars {
			return headWithin(truncationNote(total), maxChars)
		}
		next := headWithin(kept, maxChars-textChars(note))
		if next == kept {
			return kept + note
		}
		kept = next
	}
}

// toLastNewline cuts s after its last line break when that keeps more
// than 80 % of it.
func toLastNewline(s string) string {
	if nl := strings.LastIndexByte(s, '\n'); nl > len(s)*4/5 {
		return s[:nl]
	}
	return s
}

var (
	importantWords = regexp.MustCompile(`\b(error|exception|failed|fatal|traceback|panic|stack trace|errno|exit code)\b`)
	summaryWords   = regexp.MustCompile(`\b(total|summary|result|complete|finished|done)\b`)
)

// importantEnd reports whether the last 2 000 characters of a result
// matter: an error, a total or summary, or a closing brace.
func importantEnd(text string) bool {
	tail := strings.ToLower(lastRunes(text, 2_000))
	return importantWords.MatchString(tail) || strings.HasSuffix(strings.TrimSpace(tail), "}") || summaryWords.MatchString(tail)
}

// headWithin is the longest prefix of s of at most budget characters.
func headWithin(s string, budget int64) string {
	var n int64
	for i, r := range s {
		if n += runeChars(r); n > budget {
			return s[:i]
		}
	}
	return s
}

// tailWithin is the longest suffix of s of at most budget characters.
func tailWithin(s string, budget int64) string {
	var n int64
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if n += runeChars(r); n > budget {
			return s[i:]
		}
		i -= size
	}
	return s
}

// lastRunes is the last n characters of s.
func lastRunes(s string, n int) string {
	for i := len(s); i > 0; {
		if n == 0 {
			return s[i:]
		}
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		n--
	}
	return s
}
