package compaction

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"talon/internal/llm"
)

// FuzzEstimate: the estimator and the text caps take any text: no panic,
// a character counts from once to four times per byte (CapToolResult's
// fast path relies on it), and a capped result fits its limit.
func FuzzEstimate(f *testing.F) {
	for _, s := range []string{"", "abc", "你好", "\U00020000x", "\xff\xfe", "😀", strings.Repeat("é", 5000), "a\nError: x\n}"} {
		f.Add(s, int64(32_768))
	}
	f.Fuzz(func(t *testing.T, s string, window int64) {
		if len(s) > 50_000 {
			s = s[:50_000] // enough to cross every cap
		}
		n := textChars(s)
		if n < int64(utf8.RuneCountInString(s)) || n > 4*int64(len(s)) {
			t.Fatalf("textChars(%q) = %d", s, n)
		}
		if EstimateText(s) != (n+3)/4 {
			t.Fatal("EstimateText is not ceil(chars/4)")
		}
		window = window%2_000_000 + 1
		if window < 0 {
			window = -window
		}
		if c := CapToolResult(s, window); textChars(c) > ToolResultLimit(window) && c != s {
			t.Fatalf("capped to %d chars, limit %d", textChars(c), ToolResultLimit(window))
		}
		_ = clipToolResult(s, toolResultChars)
		_ = callArgs(s)
		_, _ = ParseOverflow(413, s, s)
		m := llm.Message{Role: llm.RoleAssistant, Content: s, ToolCalls: []llm.ToolCall{{ID: "c", Name: s, Arguments: s}}}
		if EstimateMessage(&m) < 2*EstimateText(s)-1 {
			t.Fatal("a message counts less than its parts")
		}
	})
}

// fuzzEntries turns bytes into a transcript: each byte one entry, its low
// bits the kind and the tool-call ids, so that calls, results, orphans,
// boundaries and usage all occur.
func fuzzEntries(data []byte) []Entry {
	var es []Entry
	for i, b := range data {
		id := fmt.Sprint("e", i)
		call := fmt.Sprint("c", b>>5)
		e := Entry{ID: id, Kind: KindMessage}
		switch b % 8 {
		case 0, 1:
			e.Message = user(strings.Repeat("u", int(b)/4))
		case 2:
			e.Message = says(strings.Repeat("a", int(b)/4))
			e.Usage = Usage{Total: int64(b) * 10}
		case 3:
			e.Message = calls("read", `{"path":"f"}`, call, fmt.Sprint("c", b>>6))
		case 4, 5:
			e.Message = result(call, "read", strings.Repeat("r", int(b)*2))
		case 6:
			kept := ""
			if i > 0 && b&16 != 0 {
				kept = fmt.Sprint("e", int(b)%i)
			}
			e = compacted(id, strings.Repeat("s", int(b)/4), kept)
		case 7:
			if b&8 != 0 {
				e.Kind = KindReset
			} else {
				e.Message = llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopAborted}
			}
		}
		es = append(es, e)
	}
	return es
}

// checkPaired fails unless every result answers a call of the last
// assistant message before it (once) and every call is answered.
func checkPaired(t *testing.T, v View) {
	t.Helper()
	if len(v.IDs) != len(v.Messages) {
		t.Fatalf("%d ids for %d messages", len(v.IDs), len(v.Messages))
	}
	if len(v.Messages) > 0 && v.Messages[0].Role == llm.RoleTool {
		t.Fatal("the view starts with a tool result")
	}
	var open map[string]bool
	for i, m := range v.Messages {
		switch m.Role {
		case llm.RoleAssistant:
			for id, waiting := range open {
				if waiting {
					t.Fatalf("call %s unanswered before message %d", id, i)
				}
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case llm.RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("message %d answers %s, which is not open", i, m.ToolCallID)
			}
			open[m.ToolCallID] = false
		}
	}
	for id, waiting := range open {
		if waiting {
			t.Fatalf("call %s unanswered at the end", id)
		}
	}
}

// FuzzView: whatever a transcript holds, the view is paired and never
// starts with a tool result; estimating, planning, summarising and hard
// trimming it do not panic; and after a hard trim the view is paired too
// and its summary within bounds.
func FuzzView(f *testing.F) {
	f.Add([]byte{0, 3, 4, 2, 1, 6, 0, 2})
	f.Add([]byte{4, 4, 3, 4, 4, 2, 15, 0, 35, 36, 2})
	f.Add([]byte{22, 0, 3, 12, 2, 0, 2})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 200 {
			data = data[:200] // longer inputs test nothing more
		}
		es := fuzzEntries(data)
		v := BuildView(es)
		checkPaired(t, v)
		_ = Estimate(es)
		p, err := Prepare(es, Budget{Keep: int64(len(data)), MaxTail: int64(len(data)) * 5}, []llm.Message{user("pending")})
		if err != nil {
			return
		}
		if job, err := p.Job(SettingsFor(nil, "main"), 32_768, Summarizer{Window: 32_768}, string(data)); err == nil {
			for i := range job.Stages() {
				_ = job.Request(i, "prev")
			}
			_, _ = job.PrefixRequest()
			if c := job.Compaction(string(data), "p"); runeLen(c.Summary) > maxSummaryChars {
				t.Fatalf("summary of %d chars", runeLen(c.Summary))
			}
		}
		c := p.HardTrim()
		after := BuildView(append(es, Entry{ID: "hard", Kind: KindCompaction, Compaction: &c}))
		checkPaired(t, after)
		if len(after.Messages) == 0 || after.IDs[0] != "" {
			t.Fatal("the view after a hard trim does not start with its summary")
		}
	})
}
