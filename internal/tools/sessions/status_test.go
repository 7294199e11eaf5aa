package sessions

import (
	"encoding/json"
	"strings"
	"testing"

	"talon/internal/session"
)

// TestStatusOf: session_status reads the entry's counters, and says what
// it does not know — the window of a model the config gives none — and
// where to state it.
func TestStatusOf(t *testing.T) {
	used := session.Entry{SessionID: "s1", UpdatedAt: 5, InputTokens: 1200, OutputTokens: 80, TotalTokens: 700,
		CumulativeInputTokens: 5000, CumulativeOutputTokens: 400, CumulativeTotalTokens: 5400}
	compacted := used
	stale := false
	compacted.TotalTokens, compacted.TotalTokensFresh, compacted.CompactionCount = 2500, &stale, 2
	tests := []struct {
		name   string
		e      session.Entry
		model  string
		window int64
		text   string
		json   string // a fragment of the JSON
	}{
		{"known window", used, "local/m", 128000,
			"Tokens since the last reset: 5000 in, 400 out, 5400 total. Last turn: 1200 in, 80 out. Context: 700/128k (1%). Compactions: 0.",
			`"context":{"used":700,"window":128000}`},
		{"after a compaction", compacted, "local/m", 32768,
			"Tokens since the last reset: 5000 in, 400 out, 5400 total. Last turn: 1200 in, 80 out. Context: ~2.5k/33k (8%). Compactions: 2.",
			`"context":{"used":2500,"window":32768,"estimated":true}},"compactions":2`},
		{"unknown window of a provider model", used, "openai/gpt-5.2", 0,
			`Tokens since the last reset: 5000 in, 400 out, 5400 total. Last turn: 1200 in, 80 out. Context: 700 tokens in use; the context window of openai/gpt-5.2 is unknown (models.providers.openai.models[] has no contextWindow for "gpt-5.2"). Compactions: 0.`,
			`"context":{"used":700,"window":null}`},
		{"the offline model", session.Entry{SessionID: "s2"}, "inspect", 0,
			"No token usage recorded since the session started or was last reset. Context: 0 tokens in use; the context window of inspect is unknown. Compactions: 0.",
			`"sinceReset":{"input":0,"output":0,"total":0}`},
		{"over the window", session.Entry{SessionID: "s3", TotalTokens: 9000, CumulativeTotalTokens: 9000, CumulativeInputTokens: 9000}, "a/b", 4000,
			"Tokens since the last reset: 9000 in, 0 out, 9000 total. Last turn: 0 in, 0 out. Context: 9.0k/4.0k (225%). Compactions: 0.",
			`"lastTurn":{"input":0,"output":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := StatusOf("agent:main:main", tc.e, tc.model, tc.window)
			if st.Text != tc.text {
				t.Errorf("text %q\nwant %q", st.Text, tc.text)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.json) || !strings.Contains(string(b), `"sessionId":"`+tc.e.SessionID+`"`) {
				t.Errorf("JSON %s lacks %s", b, tc.json)
			}
		})
	}
}
