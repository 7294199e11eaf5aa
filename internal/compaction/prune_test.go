package compaction

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

// TestPruningFor: defaults (off) and the keys of §7.
func TestPruningFor(t *testing.T) {
	if p := PruningFor(nil, "main"); p.On || p.TTL != 5*time.Minute || p.KeepLastAssistants != 3 || p.Placeholder != defaultPlaceholder ||
		p.SoftTrimMaxChars != 4_000 || p.HeadChars != 1_500 || p.MinPrunableToolChars != 50_000 || !p.HardClear {
		t.Errorf("defaults: %+v", p)
	}
	cfg := parseConfig(t, `{agents: {defaults: {contextPruning: {mode: "cache-ttl", ttl: "1h", tools: {deny: ["Browser", "canvas*"]},
		hardClear: {placeholder: "[gone]"}, softTrim: {headChars: 100}}},
		list: [{id: "ops", contextPruning: {ttl: "30", keepLastAssistants: 1, hardClear: {enabled: false}}}]}}`)
	p := PruningFor(cfg, "main")
	if !p.On || p.TTL != time.Hour || p.Placeholder != "[gone]" || p.HeadChars != 100 || p.TailChars != 1_500 || !cmp.Equal(p.Deny, []string{"browser", "canvas*"}) {
		t.Errorf("defaults' block: %+v", p)
	}
	o := PruningFor(cfg, "ops")
	if !o.On || o.TTL != 30*time.Minute || o.KeepLastAssistants != 1 || o.HardClear || o.Placeholder != "[gone]" {
		t.Errorf("agent's block: %+v", o)
	}
	for name, want := range map[string]bool{"read": true, "browser": false, "BROWSER": false, "canvas_snapshot": false} {
		if got := p.prunable(name); got != want {
			t.Errorf("prunable(%q) = %v", name, got)
		}
	}
	p.Allow = []string{"exec"}
	if p.prunable("read") || !p.prunable("exec") {
		t.Error("allow list ignored")
	}
}

// TestPruningDue: R7.1 and Talon's pressure trigger.
func TestPruningDue(t *testing.T) {
	now := time.Date(2026, 9, 24, 12, 0, 0, 0, time.UTC)
	on := Pruning{On: true, TTL: 5 * time.Minute, HardClearRatio: 0.5}
	tests := []struct {
		name   string
		p      Pruning
		touch  time.Time
		tokens int64
		want   bool
	}{
		{"off", Pruning{TTL: time.Minute}, now.Add(-time.Hour), 0, false},
		{"idle past the TTL", on, now.Add(-5 * time.Minute), 0, true},
		{"busy", on, now.Add(-4 * time.Minute), 0, false},
		{"never touched", on, time.Time{}, 0, false},
		{"busy but under pressure", on, now.Add(-time.Second), 50_000, true},
		{"a TTL of 0 never elapses", Pruning{On: true, HardClearRatio: 0.5}, now.Add(-time.Hour), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Due(now, tc.touch, tc.tokens, 100_000); got != tc.want {
				t.Errorf("Due = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPruningRound: hard clear, stickiness, projections of results out
// of view dropped, and what is never touched.
func TestPruningRound(t *testing.T) {
	p := PruningFor(parseConfig(t, `{agents: {defaults: {contextPruning: {mode: "cache-ttl", tools: {deny: ["secret"]}}}}}`), "main")
	view := func(sizes ...int) View {
		v := View{Messages: []llm.Message{user("u1")}, IDs: []string{"u1"}}
		for i, n := range sizes {
			id := string(rune('a' + i))
			name := "exec"
			if n < 0 {
				n, name = -n, "secret"
			}
			v.Messages = append(v.Messages, calls(name, "{}", "c"+id), result("c"+id, name, chars(n)))
			v.IDs = append(v.IDs, "call-"+id, "r-"+id)
		}
		v.Messages = append(v.Messages, says("a"), says("b"), says("c"))
		v.IDs = append(v.IDs, "x", "y", "z")
		return v
	}
	t.Run("large results are trimmed first", func(t *testing.T) {
		v := view(100_000, 100_000, 100_000)
		proj := p.Round(v, 100_000, nil)
		want := Projection{{EntryID: "r-a", Head: 1_500, Tail: 1_500}, {EntryID: "r-b", Head: 1_500, Tail: 1_500}, {EntryID: "r-c", Head: 1_500, Tail: 1_500}}
		if d := cmp.Diff(want, proj); d != "" {
			t.Errorf("projection (-want +got):\n%s", d)
		}
	})
	t.Run("over half the window after trimming: oldest cleared until under", func(t *testing.T) {
		// 60 results of 3 900 chars (too short to trim) and 365 chars
		// besides: 234 365 of 400 000; each clear saves 3 867, so nine.
		sizes := make([]int, 60)
		for i := range sizes {
			sizes[i] = 3_900
		}
		v := view(sizes...)
		proj := p.Round(v, 100_000, nil)
		if len(proj) != 9 {
			t.Fatalf("%d pruned, want 9", len(proj))
		}
		for i, e := range proj {
			if e.EntryID != v.IDs[2+2*i] || e.Placeholder != defaultPlaceholder {
				t.Errorf("pruned %d = %+v", i, e)
			}
		}
		noClear := p
		noClear.HardClear = false
		if proj := noClear.Round(v, 100_000, nil); len(proj) != 0 {
			t.Errorf("hardClear off: %+v", proj)
		}
		few := p
		few.MinPrunableToolChars = 300_000
		if proj := few.Round(v, 100_000, nil); len(proj) != 0 {
			t.Errorf("below minPrunableToolChars: %+v", proj)
		}
	})
	t.Run("denied tools are never pruned", func(t *testing.T) {
		if proj := p.Round(view(-300_000), 100_000, nil); len(proj) != 0 {
			t.Errorf("projection %+v", proj)
		}
	})
	t.Run("sticky: earlier pruning replays, results gone from view are dropped", func(t *testing.T) {
		v := view(10, 10)
		prev := Projection{{EntryID: "r-a", Placeholder: "[old]"}, {EntryID: "gone", Head: 1, Tail: 1}}
		proj := p.Round(v, 100_000, prev)
		if d := cmp.Diff(Projection{{EntryID: "r-a", Placeholder: "[old]"}}, proj); d != "" {
			t.Errorf("projection (-want +got):\n%s", d)
		}
		proj.Apply(&v)
		if v.Messages[2].Content != "[old]" || v.Messages[4].Content != chars(10) {
			t.Errorf("applied: %q %q", v.Messages[2].Content, v.Messages[4].Content)
		}
	})
	t.Run("apply is deterministic and leaves the transcript alone", func(t *testing.T) {
		es := entries(user("u"), calls("exec", "{}", "c1"), result("c1", "exec", chars(10_000)))
		proj := Projection{{EntryID: "e3", Head: 10, Tail: 5}}
		a, b := BuildView(es), BuildView(es)
		proj.Apply(&a)
		proj.Apply(&b)
		if a.Messages[2].Content != b.Messages[2].Content || !strings.HasSuffix(a.Messages[2].Content, "kept first 10 chars and last 5 chars of 10000 chars.]") {
			t.Errorf("applied: %q", a.Messages[2].Content)
		}
		if es[2].Message.Content != chars(10_000) {
			t.Error("Apply changed the transcript")
		}
	})
	t.Run("too few assistants: nothing", func(t *testing.T) {
		v := View{Messages: []llm.Message{user("u"), calls("exec", "{}", "c"), result("c", "exec", chars(400_000))}, IDs: []string{"u", "a", "r"}}
		if proj := p.Round(v, 100_000, nil); len(proj) != 0 {
			t.Errorf("projection %+v", proj)
		}
	})
}
