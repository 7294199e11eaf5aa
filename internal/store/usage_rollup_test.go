package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/internal/sqlitedb"
)

// naiveUsage is the sum the roll-up must give: every call of calls in
// [since, until) of agent (all when ""), grouped by by in loc.
func naiveUsage(calls []*Call, since, until int64, agent, by string, loc *time.Location) (UsageTotals, []UsageGroup) {
	var total UsageTotals
	byKey := map[string]*UsageTotals{}
	var keys []string
	for _, c := range calls {
		if c.At < since || (until > 0 && c.At >= until) || (agent != "" && c.AgentID != agent) {
			continue
		}
		t := UsageTotals{Calls: 1, Input: c.Input, Output: c.Output, CacheRead: c.CacheRead, CacheWrite: c.CacheWrite}
		if c.Priced {
			t.Cost = c.Cost
		} else {
			t.Unpriced = 1
		}
		total.Add(&t)
		var k string
		switch by {
		case "":
			continue
		case ByAgent:
			k = c.AgentID
		case ByModel:
			k = c.Provider + "/" + c.Model
		case ByKind:
			k = c.Kind
		case ByDay:
			k = time.UnixMilli(c.At).In(loc).Format(time.DateOnly)
		}
		if byKey[k] == nil {
			byKey[k] = &UsageTotals{}
			keys = append(keys, k)
		}
		byKey[k].Add(&t)
	}
	var groups []UsageGroup
	for _, k := range keys {
		groups = append(groups, UsageGroup{Key: k, UsageTotals: *byKey[k]})
	}
	if by == "" {
		return total, nil
	}
	return total, merge(groups)
}

// randomCalls are n calls over days from start, of 3 agents, 2 models
// and 2 kinds, some unpriced.
func randomCalls(n int, start time.Time, days int) []*Call {
	rng := rand.New(rand.NewPCG(24, 9))
	calls := make([]*Call, n)
	for i := range calls {
		calls[i] = &Call{At: start.UnixMilli() + rng.Int64N(int64(days)*24*3600*1000),
			AgentID: fmt.Sprintf("a%d", rng.IntN(3)), Kind: []string{CallTurn, CallCron}[rng.IntN(2)],
			Provider: "p", Model: fmt.Sprintf("m%d", rng.IntN(2)), Input: rng.Int64N(1000), Output: rng.Int64N(100),
			CacheRead: rng.Int64N(50), CacheWrite: rng.Int64N(5), Cost: rng.Int64N(10000), Priced: rng.IntN(5) != 0}
	}
	return calls
}

// TestUsageRollUp: sums read from the hourly roll-up, the ledger's ends
// and the rows waiting for the roll-up equal the sums of the calls
// themselves, for ranges that start and end inside an hour, every
// grouping, one agent, and days in zones offset by whole, half and
// quarter hours and across a DST change; with every row waiting, some,
// and none.
func TestUsageRollUp(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 3, 26, 0, 0, 0, 0, time.UTC)
	calls := randomCalls(3000, start, 6)
	for _, stage := range []struct {
		name   string
		rolled int // calls recorded, then rolled up, before the rest
	}{{"none rolled up", 0}, {"some rolled up", 1700}, {"all rolled up", 3000}} {
		t.Run(stage.name, func(t *testing.T) {
			db := openTest(t)
			db.rolls.every = 1 << 40 // roll-ups only here
			if err := db.RecordCalls(ctx, calls[:stage.rolled]...); err != nil {
				t.Fatal(err)
			}
			if err := db.rollUp(ctx); err != nil {
				t.Fatal(err)
			}
			if err := db.RecordCalls(ctx, calls[stage.rolled:]...); err != nil {
				t.Fatal(err)
			}
			checkUsage(t, db, calls, start)
		})
	}
}

// checkUsage compares every query of a matrix with naiveUsage over calls.
func checkUsage(t *testing.T, db *DB, calls []*Call, start time.Time) {
	t.Helper()
	ctx := context.Background()
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	ms := func(d time.Duration) int64 { return start.Add(d).UnixMilli() }
	ranges := []struct {
		name         string
		since, until int64
	}{
		{"everything", 0, 0},
		{"inside one hour", ms(26*time.Hour + 5*time.Minute), ms(26*time.Hour + 50*time.Minute)},
		{"ends inside hours", ms(7*time.Hour + 17*time.Minute), ms(100*time.Hour + 1)},
		{"whole hours", ms(24 * time.Hour), ms(72 * time.Hour)},
		{"open end", ms(50*time.Hour + 30*time.Second), 0},
	}
	for _, r := range ranges {
		for _, by := range []string{"", ByAgent, ByModel, ByKind, ByDay} {
			for _, loc := range []*time.Location{nil, zone("Asia/Kolkata"), zone("Asia/Kathmandu"), zone("Europe/Paris"), zone("America/St_Johns")} {
				for _, agent := range []string{"", "a1"} {
					name := fmt.Sprintf("%s/%s/%v/%s", r.name, by, loc, agent)
					q := UsageQuery{Since: r.since, Until: r.until, AgentID: agent, By: by, Location: loc}
					total, groups, err := db.Usage(ctx, q)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					wantTotal, wantGroups := naiveUsage(calls, r.since, r.until, agent, by, orUTC(loc))
					if diff := cmp.Diff(wantTotal, total); diff != "" {
						t.Errorf("%s: totals (-want +got):\n%s", name, diff)
					}
					if diff := cmp.Diff(wantGroups, groups); diff != "" {
						t.Errorf("%s: groups (-want +got):\n%s", name, diff)
					}
				}
			}
		}
	}
}

// TestMigrationRollsUpTheLedger: a ledger written by schema version 8
// is rolled up by this binary's roll-up, and new calls add to the same
// hours.
func TestMigrationRollsUpTheLedger(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "talon.db")
	sdb, err := sqlitedb.Open(path, sqlitedb.Options{What: "store", Synchronous: "FULL"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	calls := randomCalls(500, start, 2)
	err = writeTx(ctx, sdb.W, func(tx *sql.Tx) error {
		if err := applyMigrations(ctx, tx, "schema_migrations", migrations[:8], time.UnixMilli(1)); err != nil {
			return err
		}
		for _, c := range calls[:400] {
			var cost any
			if c.Priced {
				cost = c.Cost
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO usage (at, agent_id, kind, provider, model, input, output, cache_read, cache_write, cost)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.At, c.AgentID, c.Kind, c.Provider, c.Model, c.Input, c.Output, c.CacheRead, c.CacheWrite, cost); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sdb.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.RecordCalls(ctx, calls[400:]...); err != nil {
		t.Fatal(err)
	}
	if err := db.rollUp(ctx); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{ByAgent, ByDay} {
		total, groups, err := db.Usage(ctx, UsageQuery{Since: start.UnixMilli(), By: by})
		if err != nil {
			t.Fatal(err)
		}
		wantTotal, wantGroups := naiveUsage(calls, start.UnixMilli(), 0, "", by, time.UTC)
		if diff := cmp.Diff(wantTotal, total); diff != "" {
			t.Errorf("by %s: totals (-want +got):\n%s", by, diff)
		}
		if diff := cmp.Diff(wantGroups, groups); diff != "" {
			t.Errorf("by %s: groups (-want +got):\n%s", by, diff)
		}
	}
	var rolled int64
	if err := db.r.QueryRowContext(ctx, `SELECT sum(calls) FROM usage_hourly`).Scan(&rolled); err != nil || rolled != 500 {
		t.Errorf("usage_hourly holds %d calls (%v), want 500", rolled, err)
	}
}

// TestRollUpStartsItself: a commit that leaves enough rows waiting
// starts a roll-up, Close waits for it, and opening a database with
// rows waiting starts one too; the sums never change.
func TestRollUpStartsItself(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "talon.db")
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	calls := randomCalls(rollEvery+300, start, 2)
	upto := func(db *DB) int64 {
		t.Helper()
		var n int64
		if err := db.r.QueryRowContext(ctx, `SELECT upto FROM usage_rolled`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	reopen := func(db *DB) *DB {
		t.Helper()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.rolls.every = 100
	if err := db.RecordCalls(ctx, calls[:150]...); err != nil {
		t.Fatal(err)
	}
	db = reopen(db) // Close waited for the roll-up the commit started
	if got := upto(db); got != 150 {
		t.Fatalf("after a commit of 150 rows with a roll-up every 100, upto = %d, want 150", got)
	}
	db.rolls.every = 1 << 40
	if err := db.RecordCalls(ctx, calls[150:]...); err != nil {
		t.Fatal(err)
	}
	db = reopen(db) // rollEvery+150 rows wait: the open starts a roll-up
	db = reopen(db)
	defer db.Close()
	if got, want := upto(db), int64(len(calls)); got != want {
		t.Fatalf("after reopening with %d rows waiting, upto = %d, want %d", len(calls)-150, got, want)
	}
	checkUsage(t, db, calls, start)
}

// TestUsageDuringRollUps: a query running while batches commit and roll
// up sees each batch whole, once: never a row both in its hour and
// among the waiting ones, never neither.
func TestUsageDuringRollUps(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	db.rolls.every = 1 << 40
	const batches, size = 30, 50
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var recorded atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := range batches {
			batch := make([]*Call, size)
			for j := range batch {
				batch[j] = &Call{At: start.UnixMilli() + int64(i*size+j)*60_000, AgentID: "a", Kind: CallTurn, Provider: "p", Model: "m", Input: 1}
			}
			// Counted before its commit: a query may see the batch as
			// soon as it commits.
			recorded.Add(size)
			if err := db.RecordCalls(ctx, batch...); err != nil {
				done <- err
				return
			}
			if i%3 == 0 {
				if err := db.rollUp(ctx); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		tot, _, err := db.Usage(ctx, UsageQuery{Since: start.UnixMilli() + 30*60_000})
		if err != nil {
			t.Fatal(err)
		}
		after := recorded.Load()
		// Rows from minute 30 on: every batch but the first counts whole.
		if tot.Input != tot.Calls || tot.Calls > after || (tot.Calls+30)%size != 0 && tot.Calls != 0 {
			t.Fatalf("a query saw %d calls (%d input) with %d recorded: a batch counted twice or in part", tot.Calls, tot.Input, after)
		}
	}
}

// TestCallsCommitWithTheirEffect: the model calls behind a compaction, a
// memory flush and a tool's result go into the ledger in the commit that
// stores what they produced, under the session's transcript; a commit
// that fails writes none of them.
func TestCallsCommitWithTheirEffect(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const key = "agent:main:c"
	sid, err := db.BeginTurn(ctx, "main", key, llm.Message{Role: llm.RoleUser, Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(kind string) *Call { return &Call{Kind: kind, Provider: "p", Model: "m", Input: 7, Output: 1} }
	rows := func() map[string]int {
		t.Helper()
		got := map[string]int{}
		rs, err := db.r.QueryContext(ctx, `SELECT kind, session_key, session_id FROM usage`)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var kind, k, id string
			if err := rs.Scan(&kind, &k, &id); err != nil {
				t.Fatal(err)
			}
			if k != key || id != sid {
				t.Errorf("a %s row under %q/%q, want the session's %q/%q", kind, k, id, key, sid)
			}
			got[kind]++
		}
		return got
	}

	testHookCompacting = func() error { return errors.New("killed") }
	_, _, err = db.AppendCompaction(ctx, "main", key, sid, compaction.Compaction{Summary: "s"}, 10, call(CallSummary))
	testHookCompacting = nil
	if err == nil {
		t.Fatal("a compaction whose commit fails: no error")
	}
	if got := rows(); len(got) != 0 {
		t.Fatalf("after a failed compaction commit the ledger has %v, want nothing", got)
	}
	if _, _, err := db.AppendCompaction(ctx, "main", key, sid, compaction.Compaction{Summary: "s"}, 10, call(CallSummary), call(CallSummary)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordFlush(ctx, "main", key, sid, time.Now(), call(CallMemoryFlush)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordFlush(ctx, "main", key, "another-transcript", time.Now(), call(CallMemoryFlush)); !errors.Is(err, ErrSessionChanged) {
		t.Fatalf("a flush of a replaced transcript: %v, want ErrSessionChanged", err)
	}
	result := Item{Message: llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Name: "image", Content: "a cat"}, Also: []*Call{call(CallImage), call(CallPDF)}}
	if err := db.ContinueTurn(ctx, "main", key, sid, nil, []Item{result}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{CallSummary: 2, CallMemoryFlush: 1, CallImage: 1, CallPDF: 1}
	if got := rows(); !maps.Equal(got, want) {
		t.Errorf("ledger rows by kind %v, want %v", got, want)
	}
}
