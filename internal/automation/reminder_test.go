package automation

import (
	"strings"
	"testing"
)

// TestWithContext is R7.1: the last n user and assistant lines, each
// at most 220 characters, at most 700 together, under "Recent context:",
// replacing a context the text had.
func TestWithContext(t *testing.T) {
	long := strings.Repeat("a", 300)
	chat := []ChatLine{{"user", "first"}, {"tool", "ignored"}, {"assistant", "  "}, {"user", "call Bob at five"}, {"assistant", "Noted."}}
	tests := []struct {
		name, text string
		lines      []ChatLine
		n          int
		want       string
	}{
		{"none asked", "Call Bob", chat, 0, "Call Bob"},
		{"the last two", "Call Bob", chat, 2, "Call Bob\n\nRecent context:\n- User: call Bob at five\n- Assistant: Noted."},
		{"more than there are", "Call Bob", chat, 10, "Call Bob\n\nRecent context:\n- User: first\n- User: call Bob at five\n- Assistant: Noted."},
		{"capped at 10", "x", repeat(ChatLine{"user", "m"}, 12), 50, "x\n\nRecent context:\n" + strings.TrimSuffix(strings.Repeat("- User: m\n", 10), "\n")},
		{"a long line is cut", "x", []ChatLine{{"user", long}}, 1, "x\n\nRecent context:\n- User: " + strings.Repeat("a", 217) + "..."},
		{"700 in all", "x", repeat(ChatLine{"user", long}, 4), 4,
			"x\n\nRecent context:\n" + strings.TrimSuffix(strings.Repeat("- User: "+strings.Repeat("a", 217)+"...\n", 3), "\n")},
		{"an old context is replaced", "Call Bob\n\nRecent context:\n- User: old", chat, 1, "Call Bob\n\nRecent context:\n- Assistant: Noted."},
		{"no lines: as it was", "Call Bob", nil, 3, "Call Bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithContext(tt.text, tt.lines, tt.n); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func repeat(l ChatLine, n int) []ChatLine {
	out := make([]ChatLine, n)
	for i := range out {
		out[i] = l
	}
	return out
}
