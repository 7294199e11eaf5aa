package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
)

// uncached reads the last limit records straight from the database.
func uncached(t *testing.T, db *DB, id string, limit int) []Record {
	t.Helper()
	if limit <= 0 {
		limit = -1
	}
	recs, _, err := db.readRecords(context.Background(), db.readStmt, id, int64(limit))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestTailCacheMatchesDatabase interleaves appends (through this handle
// and through a second handle on the same file, as another process would)
// with reads of many limits, and checks every cached read against the
// database, while the cache is small enough to evict.
func TestTailCacheMatchesDatabase(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	db.tails = newTails(16 << 10)
	other, err := Open(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"s1", "s2", "s3", "s4"}
	n := 0
	for step := range 300 {
		id := ids[rng.IntN(len(ids))]
		switch rng.IntN(3) {
		case 0: // append
			w := db
			if rng.IntN(4) == 0 {
				w = other
			}
			var msgs []llm.Message
			for range 1 + rng.IntN(4) {
				n++
				msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("message %d of some length", n)})
			}
			if err := w.AppendMessages(ctx, id, msgs...); err != nil {
				t.Fatal(err)
			}
		default: // read
			limit := []int{0, 1, 2, 5, 20, 50, maxTail, maxTail + 1}[rng.IntN(8)]
			got, err := db.TranscriptRecords(ctx, id, limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(uncached(t, db, id, limit), got); diff != "" {
				t.Fatalf("step %d, %s limit %d (-database +cached):\n%s", step, id, limit, diff)
			}
			if len(got) > 0 {
				got[0].Message.Content = "changed by the caller" // must not reach the cache
			}
		}
		c := db.tails
		if c.size > c.max && c.order.Len() > 1 {
			t.Fatalf("step %d: cache holds %d bytes in %d tails, bound %d", step, c.size, c.order.Len(), c.max)
		}
		sum := 0
		for _, tl := range c.byID {
			sum += tl.size
		}
		if sum != c.size {
			t.Fatalf("step %d: cache counts %d bytes, tails hold %d", step, c.size, sum)
		}
	}
}

// TestTailCacheKeepsAtMostMaxTail checks the per-session bound and that a
// read after trimming still matches.
func TestTailCacheKeepsAtMostMaxTail(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	batch := make([]llm.Message, 300)
	for i := range batch {
		batch[i] = llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint(i)}
	}
	for round := range 5 {
		if err := db.AppendMessages(ctx, "long", batch...); err != nil {
			t.Fatal(err)
		}
		got, err := db.TranscriptRecords(ctx, "long", maxTail)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(uncached(t, db, "long", maxTail), got); diff != "" {
			t.Fatalf("round %d (-database +cached):\n%s", round, diff)
		}
		tl := db.tails.byID["long"]
		if len(tl.recs) > maxTail || tl.whole != (300*(round+1) <= maxTail) {
			t.Fatalf("round %d: tail of %d, whole %v", round, len(tl.recs), tl.whole)
		}
	}
}

// TestTailCacheSkipsUnknownSessions checks that reading sessions that have
// no messages caches nothing, so made-up ids cannot fill the cache.
func TestTailCacheSkipsUnknownSessions(t *testing.T) {
	db := openTest(t)
	for i := range 100 {
		if got, err := db.Transcript(context.Background(), fmt.Sprint("nope-", i), 10); err != nil || len(got) != 0 {
			t.Fatal(got, err)
		}
	}
	if n := db.tails.order.Len(); n != 0 {
		t.Errorf("%d tails cached for sessions without messages", n)
	}
}
