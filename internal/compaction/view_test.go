package compaction

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

// TestBuildView: R4.1–R4.3 over boundaries.
func TestBuildView(t *testing.T) {
	base := entries(user("u1"), says("a1"), user("u2"), calls("read", "{}", "c1"), result("c1", "read", "r1"), says("a2"))
	with := func(es []Entry, more ...Entry) []Entry { return append(append([]Entry(nil), es...), more...) }
	after := func(id string, m llm.Message) Entry { return Entry{ID: id, Kind: KindMessage, Message: m} }
	tests := []struct {
		name    string
		es      []Entry
		ids     string
		summary string // the summary the first message carries; "" for none
	}{
		{"no boundary: everything", base, "e1,e2,e3,e4,e5,e6", ""},
		{"compaction keeps its tail and what follows", with(base, compacted("c", "S1", "e3"), after("e8", user("u3"))), ",e3,e4,e5,e6,e8", "S1"},
		{"a compaction that kept nothing", with(base, compacted("c", "S1", ""), after("e8", user("u3"))), ",e8", "S1"},
		{"only the last boundary counts", with(base, compacted("c1", "S1", "e3"), after("e8", user("u3")), compacted("c2", "S2", "e8"), after("e9", says("a3"))),
			",e8,e9", "S2"},
		{"a reset shows nothing before it, no summary", with(base, compacted("c", "S1", "e3"), Entry{ID: "r", Kind: KindReset}, after("e9", user("new"))), "e9", ""},
		{"a tail given from the first kept entry", with(base[2:], compacted("c", "S1", "e3"), after("e8", user("u3"))), ",e3,e4,e5,e6,e8", "S1"},
		{"a first kept entry missing from what was given keeps all of it", with(base[3:], compacted("c", "S1", "e3"), after("e8", user("u3"))), ",e4,e5,e6,e8", "S1"},
		{"a kept tail that starts with a result drops it", with(base, compacted("c", "S1", "e5")), ",e6", "S1"},
		{"a nil compaction record is a boundary without a summary", with(base, Entry{ID: "c", Kind: KindCompaction}, after("e8", user("u3"))), "e8", ""},
		{"empty", nil, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cmp.Diff(nil, tc.es)
			v := BuildView(tc.es)
			if got := ids(v); got != tc.ids {
				t.Errorf("view ids = %q, want %q", got, tc.ids)
			}
			if len(v.IDs) != len(v.Messages) {
				t.Fatalf("%d ids for %d messages", len(v.IDs), len(v.Messages))
			}
			if tc.summary != "" && (len(v.Messages) == 0 || v.Messages[0].Content != SummaryMessage(tc.summary).Content) {
				t.Errorf("first message = %+v, want the summary %q", v.Messages, tc.summary)
			}
			if cmp.Diff(nil, tc.es) != before {
				t.Error("BuildView modified its input")
			}
		})
	}
}

// TestSummaryMessage: R4.1's wrapping, exactly.
func TestSummaryMessage(t *testing.T) {
	m := SummaryMessage("## Goal\nship it")
	want := "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nship it\n</summary>"
	if m.Role != llm.RoleUser || m.Content != want {
		t.Errorf("SummaryMessage = %+v", m)
	}
	if !strings.HasPrefix(m.Content, SummaryIntro) {
		t.Error("the intro constant does not begin the message")
	}
}
