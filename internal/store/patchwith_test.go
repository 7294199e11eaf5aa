package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"talon/internal/llm"
	"talon/internal/session"
)

// TestPatchSessionWith: the caller's hook sees the entry before and after
// the patch inside the transaction; its validation errors come back
// unwrapped and write nothing, other errors are wrapped.
func TestPatchSessionWith(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const key = "agent:main:main"
	setModel := func(prev session.Entry, next *session.Entry) error {
		if prev.ModelOverride != "" {
			return &session.ValidationError{Message: "model already set"}
		}
		next.ProviderOverride, next.ModelOverride = "p", "m"
		return nil
	}
	e, err := db.PatchSessionWith(ctx, "main", key, []byte(`{"key":"main","model":"p/m","label":"L"}`), t0, setModel)
	if err != nil || e.ModelOverride != "m" || e.ProviderOverride != "p" || e.Label != "L" {
		t.Fatalf("first patch = %+v, %v", e, err)
	}
	_, err = db.PatchSessionWith(ctx, "main", key, []byte(`{"label":"M"}`), t0, setModel)
	var ve *session.ValidationError
	if !errors.As(err, &ve) || err.Error() != "model already set" {
		t.Fatalf("second patch: %v, want the hook's validation error unwrapped", err)
	}
	if got, _ := db.GetSession(ctx, "main", key); got.Label != "L" {
		t.Errorf("a refused patch was written: label %q", got.Label)
	}
	boom := errors.New("boom")
	_, err = db.PatchSessionWith(ctx, "main", key, []byte(`{}`), t0, func(session.Entry, *session.Entry) error { return boom })
	if !errors.Is(err, boom) || errors.As(err, &ve) {
		t.Errorf("hook failure = %v, want it wrapped", err)
	}
}

// TestTranscriptHead reads the first messages in order, whatever the
// tail cache holds.
func TestTranscriptHead(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var msgs []llm.Message
	for i := 1; i <= 5; i++ {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprint("m", i)})
	}
	if err := db.AppendMessages(ctx, "s", msgs...); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Transcript(ctx, "s", 2); err != nil { // fills the tail cache
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n    int
		want []string
	}{{0, nil}, {2, []string{"m1", "m2"}}, {9, []string{"m1", "m2", "m3", "m4", "m5"}}} {
		recs, err := db.TranscriptHead(ctx, "s", tc.n)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, r := range recs {
			if r.Seq != int64(i+1) {
				t.Errorf("n=%d: record %d has seq %d", tc.n, i, r.Seq)
			}
			got = append(got, r.Message.Content)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("TranscriptHead(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if recs, err := db.TranscriptHead(ctx, "nobody", 3); err != nil || len(recs) != 0 {
		t.Errorf("unknown session: %v, %v", recs, err)
	}
}
