package compaction

import (
	"fmt"
	"strings"
	"testing"

	"talon/internal/llm"
)

// TestToolResultLimit: R8.1's limit per window size.
func TestToolResultLimit(t *testing.T) {
	for window, want := range map[int64]int64{
		4_000: 4_800, 8_000: 9_600, 32_768: 16_000, 99_999: 16_000, 100_000: 32_000, 199_999: 32_000,
		200_000: 64_000, 1_000_000: 64_000, 10: 12, 0: 1,
	} {
		if got := ToolResultLimit(window); got != want {
			t.Errorf("ToolResultLimit(%d) = %d, want %d", window, got, want)
		}
	}
}

// TestCapToolResult: the head, the important tail, the note, the limit.
func TestCapToolResult(t *testing.T) {
	lines := func(n int, last string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "line %05d of the output\n", i)
		}
		return b.String() + last
	}
	tests := []struct {
		name           string
		text           string
		window         int64
		same, tail     bool
		notePrefix     string
		mustKeepSuffix string
	}{
		{"under the limit", chars(15_999), 32_768, true, false, "", ""},
		{"head only", lines(2_000, "more lines"), 32_768, false, false, "\n[... ", ""},
		{"an error at the end keeps a tail", lines(2_000, "FATAL: exit code 2"), 32_768, false, true, "\n[... ", "FATAL: exit code 2"},
		{"a closing brace keeps a tail", lines(2_000, `{"ok": false}`), 32_768, false, true, "\n[... ", `{"ok": false}`},
		{"CJK counts weighted", strings.Repeat("你", 5_000), 32_768, false, false, "\n[... ", ""},
		{"a tiny window still caps", chars(10_000), 4_000, false, false, "\n[... ", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CapToolResult(tc.text, tc.window)
			if tc.same {
				if got != tc.text {
					t.Error("changed")
				}
				return
			}
			limit := ToolResultLimit(tc.window)
			if n := textChars(got); n > limit {
				t.Errorf("%d chars, limit %d", n, limit)
			}
			if !strings.Contains(got, "more characters truncated; rerun with narrower args if needed]") || !strings.Contains(got, tc.notePrefix) {
				t.Errorf("no truncation note: %.200q", got[max(0, len(got)-200):])
			}
			if tc.tail != strings.Contains(got, "⚠️ [... middle content omitted — showing head and tail ...]") {
				t.Errorf("tail kept: %v, want %v", !tc.tail, tc.tail)
			}
			if tc.mustKeepSuffix != "" && !strings.Contains(got, tc.mustKeepSuffix) {
				t.Errorf("lost %q", tc.mustKeepSuffix)
			}
			if !strings.HasPrefix(tc.text, got[:100]) {
				t.Error("the head is not the text's")
			}
		})
	}
}

// TestCapToolResults: R8.2, the oldest elided beyond the aggregate, the
// newest kept; other roles untouched.
func TestCapToolResults(t *testing.T) {
	var msgs []llm.Message
	for i := range 12 {
		id := fmt.Sprint("c", i)
		msgs = append(msgs, calls("read", "{}", id), result(id, "read", chars(15_000)))
	}
	msgs = append(msgs, user(chars(100_000)))
	// Window 32 768: 16 000 per result, 65 536 in all: 12 × 15 000 is
	// 180 000, so the oldest eight go.
	n := CapToolResults(msgs, 32_768)
	var total int64
	elidedCount := 0
	for i, m := range msgs {
		if m.Role != llm.RoleTool {
			continue
		}
		total += textChars(m.Content)
		if m.Content == elided {
			elidedCount++
			if i > 16 {
				t.Errorf("a recent result (%d) was elided", i)
			}
		}
	}
	if elidedCount != 8 || n != 8 || total > 65_536 {
		t.Errorf("%d elided (%d changed), %d chars in all", elidedCount, n, total)
	}
	if msgs[len(msgs)-1].Content != chars(100_000) {
		t.Error("a user message was capped")
	}
}
