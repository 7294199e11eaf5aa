package store

import (
	"context"
	"slices"
	"testing"

	"talon/internal/llm"
	"talon/internal/session"
)

// TestVisible: a hidden row takes out itself and the messages from its
// first row up to it; compactions, resets and projections stay.
func TestVisible(t *testing.T) {
	msg := func(seq int64) Record { return Record{Seq: seq, Kind: KindMessage} }
	hide := func(seq, from int64) Record { return Record{Seq: seq, Kind: KindHidden, HiddenFrom: from} }
	tests := []struct {
		name string
		recs []Record
		want []int64
	}{
		{"none", []Record{msg(1), msg(2)}, []int64{1, 2}},
		{"a quiet turn", []Record{msg(1), msg(2), msg(3), msg(4), hide(5, 3), msg(6)}, []int64{1, 2, 6}},
		{"state rows stay", []Record{msg(1), {Seq: 2, Kind: KindProjection}, {Seq: 3, Kind: KindCompaction}, hide(4, 1)}, []int64{2, 3}},
		{"two", []Record{msg(1), msg(2), hide(3, 2), msg(4), msg(5), hide(6, 4)}, []int64{1}},
		{"from before what was read", []Record{msg(7), msg(8), hide(9, 1), msg(10)}, []int64{10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(tt.recs)
			var got []int64
			for _, r := range Visible(tt.recs) {
				got = append(got, r.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("visible %v, want %v", got, tt.want)
			}
			if !slices.EqualFunc(orig, tt.recs, func(a, b Record) bool { return a.Seq == b.Seq && a.Kind == b.Kind }) {
				t.Errorf("Visible changed its input")
			}
		})
	}
}

// TestHiddenTurn: a turn hidden by HideItem is left out of the view and
// the transcript's messages, and kept in its records.
func TestHiddenTurn(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	id, err := db.StartTurn(ctx, "main", "agent:main:main", false, nil, Items(llm.Message{Role: llm.RoleUser, Content: "hello"}))
	if err != nil {
		t.Fatal(err)
	}
	var tok session.Tokens
	quiet := append(Items(llm.Message{Role: llm.RoleUser, Content: "heartbeat"}, llm.Message{Role: llm.RoleAssistant, Content: "HEARTBEAT_OK"}), HideItem(2))
	if err := db.ContinueTurn(ctx, "main", "agent:main:main", id, &tok, quiet); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendMessages(ctx, id, llm.Message{Role: llm.RoleUser, Content: "later"}); err != nil {
		t.Fatal(err)
	}
	msgs, err := db.Transcript(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Content)
	}
	if !slices.Equal(texts, []string{"hello", "later"}) {
		t.Errorf("transcript %q, want the quiet turn left out", texts)
	}
	v, err := db.ReadView(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Records) != 2 || v.Records[1].Message.Content != "later" {
		t.Errorf("view %+v, want hello and later", v.Records)
	}
	raw, err := db.TranscriptRecords(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 5 || raw[3].Kind != KindHidden || raw[3].HiddenFrom != 2 {
		t.Errorf("raw records %+v, want all five with the hidden row", raw)
	}
}
