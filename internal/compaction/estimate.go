package compaction

import (
	"slices"
	"unicode/utf8"

	"talon/internal/llm"
)

// This file is token estimation (spec context.md §3): OpenClaw's
// characters-per-token heuristic with its CJK weights, per message, and
// anchored on the usage the provider reported for the last call.

// imageChars is what one image counts as: 2 000 tokens (R3.2).
const imageChars = 8_000

type cjkRange struct {
	lo, hi rune
	weight int64
}

// cjkWeights are OpenClaw 2026.9.6's weighted ranges (normalization-core
// cjk-chars.ts): the number of "characters" a code point counts as, so
// that ceil(chars/4) stays a conservative token count for CJK text. A code
// point outside them counts as its UTF-16 length: 1, or 2 above the BMP.
var cjkWeights = []cjkRange{
	// Common ideographs, kana, Hangul syllables, full-width forms: 1 token.
	{0xB7, 0xB7, 4}, {0x3000, 0x319F, 4}, {0x4E00, 0x9FA5, 4}, {0xAC00, 0xD7AF, 4}, {0xFF01, 0xFF60, 4},
	// Rare BMP CJK: 3 tokens.
	{0x1100, 0x11FF, 12}, {0x2E80, 0x2FFF, 12}, {0x31A0, 0x4DFF, 12}, {0x9FA6, 0x9FFF, 12}, {0xA000, 0xA4FF, 12},
	{0xA700, 0xA707, 12}, {0xA960, 0xA97F, 12}, {0xD7B0, 0xD7FF, 12}, {0xF900, 0xFAFF, 12},
	// Width and compatibility forms, spacing modifiers: 2 tokens.
	{0x2C7, 0x2C7, 8}, {0x2C9, 0x2CB, 8}, {0x2D9, 0x2D9, 8}, {0x2EA, 0x2EB, 8}, {0x305, 0x305, 8}, {0x323, 0x323, 8},
	{0xFE10, 0xFE4F, 8}, {0xFF61, 0xFFDC, 8}, {0xFFE0, 0xFFE6, 8},
	// Supplementary: counting tally marks 3 tokens, ideographs 4.
	{0x1D360, 0x1D371, 12},
	{0x16FE0, 0x16FFF, 16}, {0x1AFF0, 0x1AFFF, 16}, {0x1B000, 0x1B16F, 16}, {0x1F200, 0x1F2FF, 16},
	{0x20000, 0x2FA1F, 16}, {0x30000, 0x3347F, 16},
}

// cjkSorted is cjkWeights in code point order, for a binary search.
var cjkSorted = func() []cjkRange {
	s := slices.Clone(cjkWeights)
	slices.SortFunc(s, func(a, b cjkRange) int { return int(a.lo - b.lo) })
	return s
}()

// runeChars is the number of characters r counts as.
func runeChars(r rune) int64 {
	if r < 0xB7 {
		return 1
	}
	i, _ := slices.BinarySearchFunc(cjkSorted, r, func(w cjkRange, r rune) int { return int(w.lo - r) })
	if i < len(cjkSorted) && cjkSorted[i].lo == r {
		return cjkSorted[i].weight
	}
	if i > 0 && r <= cjkSorted[i-1].hi {
		return cjkSorted[i-1].weight
	}
	if r > 0xFFFF {
		return 2
	}
	return 1
}

// textChars counts s as OpenClaw's estimateStringChars does. ASCII, nearly
// every byte a model sees, takes the fast path.
func textChars(s string) int64 {
	var n int64
	for i := 0; i < len(s); {
		if i+8 <= len(s) && (s[i]|s[i+1]|s[i+2]|s[i+3]|s[i+4]|s[i+5]|s[i+6]|s[i+7]) < utf8.RuneSelf {
			n += 8
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeChars(r)
		i += size
	}
	return n
}

// tokensOf is ceil(chars/4).
func tokensOf(chars int64) int64 { return (chars + 3) / 4 }

// EstimateText is the estimated number of tokens of s: ceil(chars/4),
// with CJK characters weighted (R3.1).
func EstimateText(s string) int64 { return tokensOf(textChars(s)) }

// EstimateMessage is the estimated number of tokens of one message
// (R3.2): its text, 2 000 per image, and for an assistant message the
// name and argument JSON of each tool call.
func EstimateMessage(m *llm.Message) int64 { return tokensOf(messageChars(m)) }

func messageChars(m *llm.Message) int64 {
	n := textChars(m.Content) + int64(len(m.Images))*imageChars
	for i := range m.ToolCalls {
		n += textChars(m.ToolCalls[i].Name) + textChars(m.ToolCalls[i].Arguments)
	}
	return n
}

// Usage is what a provider reported for the model call that produced an
// assistant message. Unavailable marks a call whose backend reports no
// usage at all: an estimate must not reach back past it (R3.3).
type Usage struct {
	Input       int64 `json:"input,omitempty"`
	Output      int64 `json:"output,omitempty"`
	CacheRead   int64 `json:"cacheRead,omitempty"`
	CacheWrite  int64 `json:"cacheWrite,omitempty"`
	Total       int64 `json:"totalTokens,omitempty"`
	Unavailable bool  `json:"unavailable,omitempty"`
}

// Tokens is the context the call used: its total, else the sum of its
// parts.
func (u Usage) Tokens() int64 {
	if u.Total > 0 {
		return u.Total
	}
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// Tokens is a context-size estimate anchored on provider usage (R3.3):
// what the provider reported for the last call whose answer is in the
// view, plus an estimate of every message after it. It grows turn by turn
// (Add, Report), so nobody re-walks a transcript to keep it current.
type Tokens struct {
	Reported  int64 // the last call's usage; 0 when none counts
	Estimated int64 // the messages after it, estimated
}

// Total is the estimate.
func (t Tokens) Total() int64 { return t.Reported + t.Estimated }

// Add counts messages appended after the anchor.
func (t *Tokens) Add(msgs ...llm.Message) {
	for i := range msgs {
		t.Estimated += EstimateMessage(&msgs[i])
	}
}

// Report anchors the estimate on a call that answered: its usage covers
// everything before and including the answer. A usage with nothing in it
// changes nothing: the answer still has to be counted with Add.
func (t *Tokens) Report(u Usage) {
	if n := u.Tokens(); n > 0 && !u.Unavailable {
		t.Reported, t.Estimated = n, 0
	}
}

// usable reports whether e anchors an estimate: an assistant message that
// finished, with usage.
func usable(e *Entry) bool {
	m := &e.Message
	return e.Kind == KindMessage && m.Role == llm.RoleAssistant && m.StopReason == "" && !e.Usage.Unavailable && e.Usage.Tokens() > 0
}

// Estimate is the context size of the view of entries (R3.3): the usage
// of the last assistant message after the last boundary that has usage,
// plus the messages after it. It walks back only to that message. Usage
// recorded before the last boundary measured a context that no longer
// exists, so it never counts; without usable usage (or past an
// Unavailable barrier) every message in view is estimated, the
// boundary's summary included. The estimate covers messages only: the
// system prompt and tool definitions are in the provider's usage but not
// in a count made without it.
func Estimate(entries []Entry) Tokens {
	var t Tokens
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if e.Kind != KindMessage {
			break
		}
		if usable(e) {
			t.Reported = e.Usage.Tokens()
			return t
		}
		if e.Usage.Unavailable {
			break
		}
		t.Estimated += EstimateMessage(&e.Message)
	}
	b := lastBoundary(entries)
	t = Tokens{}
	if b >= 0 && entries[b].Kind == KindCompaction && entries[b].Compaction != nil {
		t.Estimated = tokensOf(summaryWrapChars + textChars(entries[b].Compaction.Summary))
	}
	for i := region(entries, b); i < len(entries); i++ {
		if entries[i].Kind == KindMessage {
			t.Estimated += EstimateMessage(&entries[i].Message)
		}
	}
	return t
}

// summaryWrapChars are the characters SummaryMessage adds to a summary.
var summaryWrapChars = textChars(SummaryMessage("").Content)
