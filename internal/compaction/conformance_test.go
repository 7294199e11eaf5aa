package compaction

import (
	"errors"
	"strings"
	"testing"
	"time"

	"talon/internal/llm"
)

// The conformance vectors of spec/context.md §12 that need no wiring,
// one test each, named after the vector.

// Vector 1: no config, unknown model → window 200 000, reserve 20 000,
// threshold compaction above 180 000 tokens.
func TestVector1DefaultWindow(t *testing.T) {
	w := ResolveWindow(nil, "openai/some-unknown-model")
	if w.Tokens != 200_000 || w.Source != SourceDefault {
		t.Fatalf("window = %+v, want 200000 from the default", w)
	}
	s := SettingsFor(nil, "main")
	if r := s.Reserve(w.Tokens); r != 20_000 {
		t.Errorf("reserve = %d, want 20000", r)
	}
	for _, tc := range []struct {
		tokens int64
		due    bool
	}{{180_000, false}, {180_001, true}} {
		if got := s.CompactDue(Turn{Window: w.Tokens, Tokens: tc.tokens}); got != tc.due {
			t.Errorf("CompactDue at %d = %v, want %v", tc.tokens, got, tc.due)
		}
	}
}

// Vector 2: contextWindow 32768 → reserve 8 192; memory flush from
// 20 576; compaction above 24 576.
func TestVector2SmallWindow(t *testing.T) {
	cfg := parseConfig(t, `{models: {providers: {local: {baseUrl: "http://127.0.0.1:8000/v1", models: [{id: "m", contextWindow: 32768}]}}}}`)
	w := ResolveWindow(cfg, "local/m")
	s := SettingsFor(cfg, "main")
	if w.Tokens != 32_768 || s.Reserve(w.Tokens) != 8_192 {
		t.Fatalf("window %d, reserve %d; want 32768, 8192", w.Tokens, s.Reserve(w.Tokens))
	}
	tests := []struct {
		tokens         int64
		flush, compact bool
	}{
		{20_575, false, false}, {20_576, true, false}, {24_576, true, false}, {24_577, true, true},
	}
	for _, tc := range tests {
		turn := Turn{Window: w.Tokens, Tokens: tc.tokens}
		if got := s.FlushDue(turn); got != tc.flush {
			t.Errorf("FlushDue at %d = %v, want %v", tc.tokens, got, tc.flush)
		}
		if got := s.CompactDue(turn); got != tc.compact {
			t.Errorf("CompactDue at %d = %v, want %v", tc.tokens, got, tc.compact)
		}
	}
}

// Vector 3: contextWindow 3000 → run refused ("Minimum is 4000"); 6000 →
// runs with a warning.
func TestVector3WindowGuard(t *testing.T) {
	cfg := parseConfig(t, `{models: {providers: {local: {baseUrl: "http://127.0.0.1:8000/v1",
		models: [{id: "tiny", contextWindow: 3000}, {id: "small", contextWindow: 6000}]}}}}`)
	_, err := ResolveWindow(cfg, "local/tiny").Check()
	var we *WindowError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "Minimum is 4000") ||
		!strings.HasPrefix(err.Error(), "Model context window too small (3000 tokens; source=modelsConfig).") {
		t.Errorf("3000: err = %v", err)
	}
	warn, err := ResolveWindow(cfg, "local/small").Check()
	if err != nil || !strings.HasPrefix(warn, "low context window: local/small ctx=6000 (warn<8000) source=modelsConfig") {
		t.Errorf("6000: warning %q, err %v", warn, err)
	}
}

// Vector 4: last assistant usage totalTokens 50 000, then one 4 000-char
// user message → estimate 51 000.
func TestVector4UsageAnchor(t *testing.T) {
	es := entries(user("hello"), says("hi"), user(chars(4_000)))
	es[1].Usage = Usage{Total: 50_000}
	if got := Estimate(es).Total(); got != 51_000 {
		t.Errorf("Estimate = %d, want 51000", got)
	}
}

// vector5 is [u1, a1(toolCall), r1(toolResult), u2, a2] with a2 and u2 of
// 25 tokens each and r1 of 100: a Keep of 60 would cut on r1.
func vector5() []Entry {
	return entries(user("u1"), calls("read", `{"path":"a.txt"}`, "c1"), result("c1", "read", chars(400)), user(chars(100)), says(chars(100)))
}

// Vector 5: the cut would land on r1 → firstKeptEntryId is a1 (or
// earlier), never r1.
func TestVector5CutNeverOnToolResult(t *testing.T) {
	p, err := Prepare(vector5(), Budget{Keep: 60, MaxTail: 10_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.FirstKeptEntryID != "e2" {
		t.Errorf("FirstKeptEntryID = %q, want e2 (a1)", p.FirstKeptEntryID)
	}
}

// Vector 6 (the view): after compaction the request view starts with one
// user message that begins with the intro and holds <summary>…</summary>,
// followed by the kept tail; the transcript still holds u1.
func TestVector6ViewAfterCompaction(t *testing.T) {
	es := vector5()
	p, err := Prepare(es, Budget{Keep: 60, MaxTail: 10_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.HardTrim()
	es = append(es, Entry{ID: "e6", Kind: KindCompaction, Compaction: &c})
	v := BuildView(es)
	first := v.Messages[0]
	if first.Role != llm.RoleUser || !strings.HasPrefix(first.Content, "The conversation history before this point was compacted into the following summary:") ||
		!strings.Contains(first.Content, "<summary>\n"+c.Summary+"\n</summary>") {
		t.Errorf("first message = %+v", first)
	}
	if got := ids(v); got != ",e2,e3,e4,e5" {
		t.Errorf("view ids = %q, want the summary then e2…e5", got)
	}
	if es[0].Message.Content != "u1" {
		t.Error("the transcript lost u1")
	}
}

// Vector 7: a summary of 20 000 chars → stored summary ≤ 16 000 chars,
// ending with the file tags and holding the truncation marker.
func TestVector7SummaryCap(t *testing.T) {
	es := entries(user("edit it"), calls("edit", `{"path":"src/main.go"}`, "c1"), result("c1", "edit", "ok"),
		calls("read", `{"path":"README.md"}`, "c2"), result("c2", "read", "text"), says("done"), user("next"), says("ok"))
	p, err := Prepare(es, Budget{Keep: 1, MaxTail: 10_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	job, err := p.Job(SettingsFor(nil, "main"), 200_000, Summarizer{Window: 200_000}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := job.Compaction(strings.Repeat("s", 20_000), "")
	tags := "<read-files>\nREADME.md\n</read-files>\n\n<modified-files>\nsrc/main.go\n</modified-files>"
	if n := runeLen(c.Summary); n > 16_000 {
		t.Errorf("summary is %d chars", n)
	}
	if !strings.HasSuffix(c.Summary, tags) || !strings.Contains(c.Summary, "[Compaction summary truncated to fit budget]") {
		t.Errorf("summary ends %q", c.Summary[len(c.Summary)-200:])
	}
}

// vector10 is [u1, a1, r1, a2, r2, a3, a4, a5] with results of n chars.
func vector10(n int) View {
	msgs := []llm.Message{user("u1"), calls("exec", "{}", "c1"), result("c1", "exec", chars(n)), calls("exec", "{}", "c2"),
		result("c2", "exec", chars(n)), says("a3"), says("a4"), says("a5")}
	return View{Messages: msgs, IDs: []string{"u1", "a1", "r1", "a2", "r2", "a3", "a4", "a5"}}
}

// Vector 10: pruning (defaults, TTL elapsed), window 100 000 tokens.
func TestVector10Pruning(t *testing.T) {
	p := PruningFor(parseConfig(t, `{agents: {defaults: {contextPruning: {mode: "cache-ttl"}}}}`), "main")
	now := time.Date(2026, 9, 24, 12, 0, 0, 0, time.UTC)
	if !p.Due(now, now.Add(-5*time.Minute), 0, 100_000) {
		t.Fatal("TTL elapsed, but the round is not due")
	}
	trimmed := chars(1500) + "\n...\n" + chars(1500) + "\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of 60000 chars.]"
	t.Run("60 000-char results are soft-trimmed, not cleared", func(t *testing.T) {
		v := vector10(60_000)
		proj := p.Round(v, 100_000, nil)
		proj.Apply(&v)
		if v.Messages[2].Content != trimmed || v.Messages[4].Content != trimmed {
			t.Errorf("r1 %q…, r2 %q…", v.Messages[2].Content[:20], v.Messages[4].Content[:20])
		}
		if len(proj) != 2 || proj[0].Placeholder != "" || proj[1].Placeholder != "" {
			t.Errorf("projection = %+v, want two trims", proj)
		}
	})
	t.Run("10 000-char results are under 30 % and unchanged", func(t *testing.T) {
		v := vector10(10_000)
		if proj := p.Round(v, 100_000, nil); len(proj) != 0 {
			t.Errorf("projection = %+v", proj)
		}
	})
	t.Run("results before u1 or after a3 are never touched", func(t *testing.T) {
		msgs := []llm.Message{result("c0", "exec", chars(60_000)), user("u1"), calls("exec", "{}", "c1"), result("c1", "exec", chars(60_000)),
			says("a3"), calls("exec", "{}", "c3"), result("c3", "exec", chars(60_000)), says("a4"), says("a5")}
		v := View{Messages: msgs, IDs: []string{"r0", "u1", "a1", "r1", "a3", "a3b", "r3", "a4", "a5"}}
		proj := p.Round(v, 100_000, nil)
		if len(proj) != 1 || proj[0].EntryID != "r1" {
			t.Errorf("projection = %+v, want r1 only", proj)
		}
	})
}
