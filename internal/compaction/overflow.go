package compaction

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// This file recognises a provider's "the request is too large" (spec
// context.md R5.3), for OpenAI-compatible and Anthropic error shapes.

// Overflow is a provider's refusal of a request as too large.
type Overflow struct {
	// Tokens is the size of the refused request when the provider stated
	// it: a compaction's TokensBefore. 0 when it did not.
	Tokens int64
	// Terminal marks a per-request limit that no compaction can meet (a
	// tokens-per-minute limit below the request, Groq's 413): the turn
	// fails without compacting.
	Terminal bool
}

// overflowText are the case-insensitive substrings of R5.3 and those of
// OpenClaw 2026.9.6's overflow table (packages/ai utils/overflow.ts) that
// are plain text.
var overflowText = []string{
	"request_too_large", "context length exceeded", "context_length_exceeded", "maximum context length",
	"input exceeds the maximum number of tokens", "input token count exceeds the maximum number of input tokens",
	"input is too long for the model", "input is too long for this model", "input is too long for requested model",
	"prompt is too long", "prompt too long", "too many tokens", "ollama error: context length exceeded",
	"exceeds the context window", "exceeds model context window", "context_window_exceeded", "model_context_window_exceeded",
	"reduce the length of the messages", "context window exceeds limit", "exceeded model token limit",
	"token limit exceeded", "greater than the context length", "context size has been exceeded",
	"exceeds the available context size", "request exceeds the maximum size", "exceed context limit",
}

// overflowRE are the patterns ParseOverflow reads an error with,
// compiled at its first error: most processes never see one, and
// compiled regexps are heap for the process's life.
var overflowRE = sync.OnceValue(func() *overflowPatterns {
	return &overflowPatterns{
		// known are the table's patterns that need more than a
		// substring.
		known: regexp.MustCompile(`(?i)` + strings.Join([]string{
			`input length and .?max_tokens.? exceed context limit`,
			`exceeds (?:the )?(?:model'?s )?maximum context length`,
			`input token count.*exceeds the maximum`,
			`maximum prompt length is \d+`,
			`maximum context length is \d+ tokens`,
			`exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?`,
			`input \(\d+ tokens\) is longer than the model'?s context length`,
			`prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?`,
			`tokens? in request more than max tokens? allowed`,
			`prompt exceeds max(?:imum)? length`,
			`too large for model with \d+ maximum context length`,
			`total tokens?.*exceeds? (?:the )?(?:model(?:'s)? )?(?:max|maximum|limit)`,
		}, "|")),
		// tpm marks a tokens-per-minute limit: a rate limit, or a
		// per-request limit when the status says the request is too
		// large.
		tpm: regexp.MustCompile(`(?i)\btpm\b|tokens per minute`),
		// statedSum and statedOne are the ways a provider states the
		// refused request's size (OpenClaw's
		// extractObservedOverflowTokenCount, with OpenAI's wording),
		// tried in order; sums come first.
		statedSum: []*regexp.Regexp{
			regexp.MustCompile(`(?i)input length(?:\s+and\s+max_tokens)?\s+exceed\s+context(?:\s+limit|\s+window)?\s*\(i\.e\s*([\d,]+)\s*\+\s*([\d,]+)\s*>\s*[\d,]+\)`),
			regexp.MustCompile("(?i)input length\\s+and\\s+`max_tokens`\\s+exceed\\s+context\\s+limit:\\s*([\\d,]+)\\s*\\+\\s*([\\d,]+)\\s*>\\s*[\\d,]+"),
		},
		statedOne: []*regexp.Regexp{
			regexp.MustCompile(`(?i)prompt is too long:\s*([\d,]+)\s+tokens\s*>\s*[\d,]+\s+maximum`),
			regexp.MustCompile(`(?i)prompt is too long:\s*([\d,]+)\s*,\s*model maximum context length\s*:\s*[\d,]+`),
			regexp.MustCompile(`(?i)requested\s+([\d,]+)\s+tokens`),
			regexp.MustCompile(`(?i)token limit\s*:\s*[\d,]+\s*\(requested\s*:\s*([\d,]+)\)`),
			regexp.MustCompile(`(?i)resulted in\s+([\d,]+)\s+tokens`),
			regexp.MustCompile(`(?i)requested\s*:?\s*([\d,]+)`),
			regexp.MustCompile(`(?i)prompt has ([\d,]+) tokens?`),
		},
	}
})

type overflowPatterns struct {
	known, tpm           *regexp.Regexp
	statedSum, statedOne []*regexp.Regexp
}

// ParseOverflow reports whether a failed model call is a context
// overflow, from its HTTP status (0 for an error inside a stream), the
// error's code or type and its message (provider.Error's Status, Type and
// Message). A 413 whose message speaks of tokens is one; a 429 never is
// (a rate limit, whatever it says).
func ParseOverflow(status int, code, message string) (Overflow, bool) {
	if status == 429 {
		return Overflow{}, false
	}
	text := strings.ToLower(code + " " + message)
	known := overflowRE().known.MatchString(text) ||
		slices.ContainsFunc(overflowText, func(s string) bool { return strings.Contains(text, s) })
	if !known && !(status == 413 && strings.Contains(text, "token")) {
		return Overflow{}, false
	}
	return Overflow{Tokens: statedTokens(message), Terminal: overflowRE().tpm.MatchString(text)}, true
}

// statedTokens is the refused request's size in message, 0 when it does
// not say.
func statedTokens(message string) int64 {
	for _, re := range overflowRE().statedSum {
		if m := re.FindStringSubmatch(message); m != nil {
			a, b := count(m[1]), count(m[2])
			if a > 0 && b >= 0 {
				return a + b
			}
		}
	}
	for _, re := range overflowRE().statedOne {
		if m := re.FindStringSubmatch(message); m != nil {
			if n := count(m[1]); n > 0 {
				return n
			}
		}
	}
	return 0
}

func count(s string) int64 {
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
