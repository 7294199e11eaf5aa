package compaction

import (
	"testing"

	"talon/internal/llm"
)

// TestEstimateText: R3.1, each weight class of OpenClaw's cjk-chars.ts.
func TestEstimateText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
	}{
		{"empty", "", 0},
		{"ascii rounds up", "abcde", 2},
		{"ascii exact", "abcd", 1},
		{"latin accents count once", "éééé", 1},
		{"common ideographs are a token each", "你好世界", 4},
		{"kana", "こんにちは", 5},
		{"hangul", "안녕", 2},
		{"middle dot", "·", 1},
		{"full-width forms", "ＡＢ", 2},
		{"rare BMP CJK are three tokens", "\u3400\u3401", 6},   // CJK extension A
		{"hangul jamo", "\u1100", 3},                           // rare BMP
		{"half-width forms are two tokens", "\uFF61\uFF62", 4}, // compat
		{"spacing modifier", "\u02C7", 2},
		{"counting rods are three tokens", "\U0001D360", 3},
		{"supplementary ideographs are four tokens", "\U00020000\U0002A6D6", 8},
		{"emoji count their UTF-16 length", "😀😀", 1},
		{"mixed", "ab你c", 2}, // 3 + 4 = 7 chars
		{"invalid UTF-8 counts per byte", "\xff\xfe\xfd\xfc", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EstimateText(tc.in); got != tc.want {
				t.Errorf("EstimateText(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// TestEstimateMessage: R3.2 per role.
func TestEstimateMessage(t *testing.T) {
	tests := []struct {
		name string
		m    llm.Message
		want int64
	}{
		{"user text", user(chars(400)), 100},
		{"user image is 2 000 tokens", llm.Message{Role: llm.RoleUser, Content: "abcd", Images: []llm.Image{{MIME: "image/png", Data: []byte{1}}}}, 2_001},
		{"assistant text and calls", llm.Message{Role: llm.RoleAssistant, Content: "abcd",
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a"}`}}}, 5}, // 4 + 4 + 12 = 20
		{"tool result", result("c1", "read", chars(8)), 2},
		{"an error record without text", llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopError, Error: "boom"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EstimateMessage(&tc.m); got != tc.want {
				t.Errorf("EstimateMessage = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestEstimate: R3.3, usage anchoring over entries.
func TestEstimate(t *testing.T) {
	anchored := func(u Usage, role llm.Role, stop string) []Entry {
		es := entries(user(chars(40)), llm.Message{Role: role, Content: chars(40), StopReason: stop}, user(chars(400)))
		es[1].Usage = u
		return es
	}
	tests := []struct {
		name string
		es   []Entry
		want Tokens
	}{
		{"total is the anchor", anchored(Usage{Total: 1_000, Input: 1}, llm.RoleAssistant, ""), Tokens{1_000, 100}},
		{"without a total the parts add up", anchored(Usage{Input: 700, Output: 100, CacheRead: 150, CacheWrite: 50}, llm.RoleAssistant, ""), Tokens{1_000, 100}},
		{"no usage: everything is estimated", anchored(Usage{}, llm.RoleAssistant, ""), Tokens{0, 120}},
		{"an aborted answer does not anchor", anchored(Usage{Total: 1_000}, llm.RoleAssistant, llm.StopAborted), Tokens{0, 120}},
		{"an errored answer does not anchor", anchored(Usage{Total: 1_000}, llm.RoleAssistant, llm.StopError), Tokens{0, 120}},
		{"an unavailable usage is a barrier", func() []Entry {
			es := anchored(Usage{Total: 1_000}, llm.RoleAssistant, "")
			es = append(es, Entry{ID: "x", Kind: KindMessage, Message: says("ok"), Usage: Usage{Unavailable: true}})
			return es
		}(), Tokens{0, 121}},
		{"usage before the last boundary measured another context", func() []Entry {
			es := anchored(Usage{Total: 50_000}, llm.RoleAssistant, "")
			return append(es, compacted("c", "S", "e3"))
		}(), Tokens{0, EstimateMessage(&[]llm.Message{SummaryMessage("S")}[0]) + 100}},
		{"usage after the boundary counts", func() []Entry {
			es := append(entries(user("a")), compacted("c", "S", ""))
			more := entries(user("q"), says("r"), user(chars(40)))
			more[1].Usage = Usage{Total: 3_000}
			for i := range more {
				more[i].ID = "m" + more[i].ID
			}
			return append(es, more...)
		}(), Tokens{3_000, 10}},
		{"empty", nil, Tokens{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Estimate(tc.es); got != tc.want {
				t.Errorf("Estimate = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTokensIncremental: Add and Report keep an estimate current without
// re-walking, and a report with nothing in it changes nothing.
func TestTokensIncremental(t *testing.T) {
	var tok Tokens
	tok.Add(user(chars(400)))
	if tok.Total() != 100 {
		t.Fatalf("after Add: %+v", tok)
	}
	tok.Report(Usage{Input: 900, Output: 100})
	tok.Add(result("c", "read", chars(40)))
	if tok != (Tokens{Reported: 1_000, Estimated: 10}) {
		t.Errorf("after Report and Add: %+v", tok)
	}
	tok.Report(Usage{})
	tok.Report(Usage{Total: 5, Unavailable: true})
	if tok.Total() != 1_010 {
		t.Errorf("an empty or unavailable report changed the estimate: %+v", tok)
	}
}
