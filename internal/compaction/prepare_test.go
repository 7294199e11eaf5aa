package compaction

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

// TestPrepareCut: R5.9 steps 1–5: the region, the cut, the split turn.
func TestPrepareCut(t *testing.T) {
	big := chars(400) // 100 tokens
	conv := entries(user("u1 "+big), says("a1 "+big), user("u2 "+big), calls("read", `{"path":"x"}`, "c1"), result("c1", "read", big),
		says("a2 "+big), user("u3 "+big), says("a3 "+big))
	tests := []struct {
		name      string
		es        []Entry
		b         Budget
		firstKept string
		history   int // messages to summarise
		prefix    int // messages of the split turn's start
		previous  string
		err       error
	}{
		{"keeps about Keep tokens from a turn's start", conv, Budget{Keep: 200, MaxTail: 10_000}, "e7", 6, 0, "", nil},
		{"a cut on a result moves to its call and splits the turn", conv, Budget{Keep: 350, MaxTail: 10_000}, "e4", 2, 1, "", nil},
		{"a cut on an assistant splits the turn", conv, Budget{Keep: 250, MaxTail: 10_000}, "e6", 2, 3, "", nil},
		{"keep 0 summarises everything", conv, Budget{Keep: 0, MaxTail: 10_000}, "", 8, 0, "", nil},
		{"MaxTail moves the cut forward", conv, Budget{Keep: 10_000, MaxTail: 250}, "e7", 6, 0, "", nil},
		{"MaxTail below the last message keeps nothing", conv, Budget{Keep: 10_000, MaxTail: 50}, "", 8, 0, "", nil},
		{"everything fits: nothing to do", conv, Budget{Keep: 10_000, MaxTail: 10_000}, "", 0, 0, "", ErrNothingToCompact},
		{"a compaction last: already compacted", append(conv[:2:2], compacted("c", "S", "")), Budget{Keep: 1, MaxTail: 10}, "", 0, 0, "", ErrAlreadyCompacted},
		{"a reset last: nothing to do", append(conv[:2:2], Entry{ID: "r", Kind: KindReset}), Budget{Keep: 1, MaxTail: 10}, "", 0, 0, "", ErrNothingToCompact},
		{"empty", nil, Budget{Keep: 1, MaxTail: 10}, "", 0, 0, "", ErrNothingToCompact},
		{"the region starts at the previous first kept entry", func() []Entry {
			es := append(append([]Entry(nil), conv[:6]...), compacted("c", "S0", "e3"))
			return append(es, conv[6:]...)
		}(), Budget{Keep: 200, MaxTail: 10_000}, "e7", 4, 0, "S0", nil},
		{"after a reset only what follows counts", func() []Entry {
			es := append(append([]Entry(nil), conv[:6]...), Entry{ID: "r", Kind: KindReset})
			return append(es, conv[6:]...)
		}(), Budget{Keep: 100, MaxTail: 10_000}, "e8", 0, 1, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Prepare(tc.es, tc.b, nil)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if p.FirstKeptEntryID != tc.firstKept || len(p.History) != tc.history || len(p.TurnPrefix) != tc.prefix || p.PreviousSummary != tc.previous {
				t.Errorf("plan: kept from %q, %d to summarise, %d of a split turn, previous %q; want %q, %d, %d, %q",
					p.FirstKeptEntryID, len(p.History), len(p.TurnPrefix), p.PreviousSummary, tc.firstKept, tc.history, tc.prefix, tc.previous)
			}
			if p.Compacted != tc.history+tc.prefix {
				t.Errorf("Compacted = %d", p.Compacted)
			}
			if p.TokensBefore != Estimate(tc.es).Total() {
				t.Errorf("TokensBefore = %d", p.TokensBefore)
			}
		})
	}
}

// TestPrepareDetails: R5.9 steps 6–7: file operations and the open
// request.
func TestPrepareDetails(t *testing.T) {
	patch := `{"input":"*** Begin Patch\n*** Add File: new.go\n+x\n*** Update File: old.go\n*** Move to: moved.go\n*** Delete File: gone.go\n*** End Patch"}`
	conv := entries(
		user("do it"),
		calls("read", `{"path":"a.go"}`, "c1"), result("c1", "read", "a"),
		calls("read", `{"file_path":"b.go"}`, "c2"), result("c2", "read", "b"),
		calls("edit", `{"filePath":"b.go"}`, "c3"), result("c3", "edit", "ok"),
		calls("write", `{"path":"c.go"}`, "c4"), result("c4", "write", "ok"),
		calls("apply_patch", patch, "c5"), result("c5", "apply_patch", "ok"),
		calls("mcp__fs__read", `{"path":"d.go"}`, "c6"), result("c6", "mcp__fs__read", "d"),
		calls("read", `not json`, "c7"), result("c7", "read", "?"),
		calls("exec", `{"path":"ignored.go"}`, "c8"), result("c8", "exec", "?"),
		says("done"), user("next"), says("ok"),
	)
	prev := compacted("c0", "S0", "")
	prev.Compaction.Details = Details{ReadFiles: []string{"old-read.go", "c.go"}, ModifiedFiles: []string{"old-mod.go"}}
	es := append([]Entry{prev}, conv...)
	p, err := Prepare(es, Budget{Keep: 2, MaxTail: 10_000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Details{
		ReadFiles:     []string{"a.go", "d.go", "old-read.go"},
		ModifiedFiles: []string{"b.go", "c.go", "gone.go", "moved.go", "new.go", "old-mod.go", "old.go"},
	}
	if d := cmp.Diff(want, p.Details); d != "" {
		t.Errorf("details (-want +got):\n%s", d)
	}
}

// TestOpenRequest: the last user request no final answer followed, capped
// at 800 characters.
func TestOpenRequest(t *testing.T) {
	long := strings.Repeat("a", 500) + strings.Repeat("b", 500)
	tests := []struct {
		name    string
		es      []Entry
		pending []llm.Message
		want    string
	}{
		{"answered", entries(user("q"), says("answer")), nil, ""},
		{"in a tool loop", entries(user(" q "), calls("read", "{}", "c"), result("c", "read", "r")), nil, "q"},
		{"an aborted answer leaves it open", entries(user("q"), llm.Message{Role: llm.RoleAssistant, Content: "hal", StopReason: llm.StopAborted}), nil, "q"},
		{"pending input is the open request", entries(user("old"), says("answer")), []llm.Message{user("retry this")}, "retry this"},
		{"long requests keep head and tail", entries(user(long)), nil,
			strings.Repeat("a", 379) + "\n[... latest user request truncated ...]\n" + strings.Repeat("b", 380)},
		{"exactly 800 is kept", entries(user(chars(800))), nil, chars(800)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx := messageIndexes(tc.es, 0)
			if got := openRequest(tc.es, idx, tc.pending); got != tc.want {
				t.Errorf("openRequest = %q, want %q", got, tc.want)
			}
		})
	}
}
