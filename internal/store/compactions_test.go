package store

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/internal/session"
	"talon/internal/sqlitedb"
)

const agentMain, keyMain = "main", "agent:main:main"

// turn appends a user message and an assistant answer with usage to the
// session, as the runner commits a turn, and returns the transcript id.
func turn(t testing.TB, db *DB, text string, usage int64) string {
	t.Helper()
	tok := &session.Tokens{Window: 32768}
	tok.Count(usage, 10, usage+10)
	id, err := db.StartTurn(context.Background(), agentMain, keyMain, false, tok, []Item{
		{Message: user(text)},
		{Message: llm.Message{Role: llm.RoleAssistant, Content: "re: " + text}, Usage: compaction.Usage{Input: usage, Output: 10, Total: usage + 10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// seqs are the numbers of records, with a letter for each kind that is
// not a message (c compaction, r reset, p projection).
func seqs(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID() + [...]string{"", "c", "r", "p"}[r.Kind]
	}
	return out
}

// TestReadView: a turn reads from the last boundary's first kept entry on
// — the whole transcript before any compaction, the kept tail and what
// came after one, only the boundary on when a compaction keeps nothing or
// after a reset row — the same through the tail cache as from the
// database, with the stored size of what it read.
func TestReadView(t *testing.T) {
	ctx := context.Background()
	type step struct {
		compact *compaction.Compaction // else a turn
		reset   bool
	}
	kept := func(id string) *compaction.Compaction {
		return &compaction.Compaction{Summary: "s", FirstKeptEntryID: id}
	}
	cases := []struct {
		name  string
		steps []step
		want  []string
	}{
		{"no boundary", []step{{}, {}}, []string{"1", "2", "3", "4"}},
		{"a compaction keeps a tail", []step{{}, {}, {compact: kept("3")}, {}}, []string{"3", "4", "5c", "6", "7"}},
		{"a compaction keeps nothing", []step{{}, {compact: kept("")}, {}}, []string{"3c", "4", "5"}},
		{"a first kept entry after the boundary is not believed", []step{{}, {compact: kept("9")}}, []string{"3c"}},
		{"the last of two compactions", []step{{}, {}, {compact: kept("3")}, {}, {compact: kept("6")}, {}},
			[]string{"6", "7", "8c", "9", "10"}},
		{"a reset", []step{{}, {reset: true}, {}}, []string{"3r", "4", "5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, cached := range []bool{false, true} {
				db := openTest(t)
				var sid string
				for i, s := range c.steps {
					switch {
					case s.compact != nil:
						if _, _, err := db.AppendCompaction(ctx, agentMain, keyMain, sid, *s.compact, 100); err != nil {
							t.Fatal(err)
						}
					case s.reset:
						if err := db.write(ctx, func(tx *sql.Tx) error {
							_, err := db.appendRow(ctx, tx, sid, roleReset, "{}")
							return err
						}); err != nil {
							t.Fatal(err)
						}
					default:
						sid = turn(t, db, fmt.Sprint("turn ", i), 1000)
					}
					if cached {
						if _, err := db.ReadView(ctx, sid); err != nil {
							t.Fatal(err)
						}
					}
				}
				v, err := db.ReadView(ctx, sid)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(c.want, seqs(v.Records)); d != "" {
					t.Errorf("cached %v: view (-want +got):\n%s", cached, d)
				}
				all, _, err := db.readRecords(ctx, db.readStmt, sid, -1)
				if err != nil {
					t.Fatal(err)
				}
				want := all[len(all)-len(v.Records):]
				if d := cmp.Diff(want, v.Records); d != "" {
					t.Errorf("cached %v: records differ from the database's (-db +view):\n%s", cached, d)
				}
				var size int64
				if err := db.r.QueryRow(`SELECT coalesce(sum(length(message) + coalesce(length(usage), 0)), 0) FROM transcripts WHERE session_id = ? AND seq >= ?`,
					sid, v.Records[0].Seq).Scan(&size); err != nil {
					t.Fatal(err)
				}
				if v.Bytes != size {
					t.Errorf("cached %v: view of %d bytes, stored %d", cached, v.Bytes, size)
				}
			}
		})
	}
}

// TestReadViewUsesTheBoundaryIndex: finding the last boundary does not
// scan a transcript.
func TestReadViewUsesTheBoundaryIndex(t *testing.T) {
	db := openTest(t)
	rows, err := db.r.Query(`EXPLAIN QUERY PLAN `+boundarySQL, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "transcripts_boundaries") {
		t.Errorf("query plan %q does not use transcripts_boundaries", p)
	}
}

// TestItemsRoundTrip: usage stays with its assistant message, a
// projection is a hidden row, and Transcript returns messages only.
func TestItemsRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	u := compaction.Usage{Input: 900, Output: 50, CacheRead: 100, Total: 1050}
	proj := compaction.Projection{{EntryID: "3", Head: 10, Tail: 10}, {EntryID: "5", Placeholder: "[cleared]"}}
	id, err := db.StartTurn(ctx, agentMain, keyMain, false, nil, []Item{
		ProjectionItem(proj), {Message: user("q")}, {Message: llm.Message{Role: llm.RoleAssistant, Content: "a"}, Usage: u},
		ProjectionItem(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := db.TranscriptRecords(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Seq: 1, Kind: KindProjection, Projection: proj},
		{Seq: 2, Message: user("q")},
		{Seq: 3, Message: llm.Message{Role: llm.RoleAssistant, Content: "a"}, Usage: u},
		{Seq: 4, Kind: KindProjection, Projection: compaction.Projection{}},
	}
	for i := range recs {
		recs[i].CreatedAt = 0
	}
	if d := cmp.Diff(want, recs); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	msgs, err := db.Transcript(ctx, id, 0)
	if err != nil || len(msgs) != 2 {
		t.Errorf("Transcript = %v, %v; want the two messages", msgs, err)
	}
	for _, r := range recs {
		e, ok := r.Entry()
		if ok != (r.Kind != KindProjection) || ok && e.ID != r.ID() {
			t.Errorf("record %d as an entry: %+v, %v", r.Seq, e, ok)
		}
	}
}

// TestAppendCompaction: the compaction row and the session counters in
// one commit; the next model call's counts make totalTokens fresh again;
// a session that changed refuses it; a failure between the row and the
// session row leaves neither; a memory flush records the cycle.
func TestAppendCompaction(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	sid := turn(t, db, "one", 5000)
	turn(t, db, "two", 9000)
	c := compaction.Compaction{Summary: "## Goal\nx", FirstKeptEntryID: "3", TokensBefore: 9010, Details: compaction.Details{ReadFiles: []string{}, ModifiedFiles: []string{"a.go"}}}

	e, seq, err := db.AppendCompaction(ctx, agentMain, keyMain, sid, c, 2500)
	if err != nil {
		t.Fatal(err)
	}
	stale := false
	if seq != 5 || e.CompactionCount != 1 || e.TotalTokens != 2500 || !cmp.Equal(e.TotalTokensFresh, &stale) {
		t.Fatalf("compaction %d, entry %+v", seq, e)
	}
	recs, _ := db.TranscriptRecords(ctx, sid, 1)
	if d := cmp.Diff(&c, recs[0].Compaction); d != "" || recs[0].TokensAfter != 2500 || recs[0].Kind != KindCompaction {
		t.Errorf("stored compaction %+v (-want +got):\n%s", recs[0], d)
	}

	f, err := db.RecordFlush(ctx, agentMain, keyMain, sid, time.UnixMilli(1234))
	if err != nil || f.MemoryFlushAt != 1234 || f.MemoryFlushCompactionCount == nil || *f.MemoryFlushCompactionCount != 1 {
		t.Fatalf("flush record %+v, %v", f, err)
	}

	turn(t, db, "three", 3000)
	if e, _ := db.GetSession(ctx, agentMain, keyMain); e.TotalTokensFresh != nil || e.TotalTokens != 3000 || e.CompactionCount != 1 {
		t.Errorf("after the next turn: %+v", e)
	}

	t.Run("a failure between the rows leaves neither", func(t *testing.T) {
		before, _ := db.TranscriptRecords(ctx, sid, 0)
		testHookCompacting = func() error { return errors.New("killed") }
		defer func() { testHookCompacting = nil }()
		if _, _, err := db.AppendCompaction(ctx, agentMain, keyMain, sid, c, 1); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("error %v", err)
		}
		after, _ := db.TranscriptRecords(ctx, sid, 0)
		if len(after) != len(before) {
			t.Errorf("%d rows after a failed compaction, %d before", len(after), len(before))
		}
		if e, _ := db.GetSession(ctx, agentMain, keyMain); e.CompactionCount != 1 {
			t.Errorf("compactionCount %d after a failed compaction", e.CompactionCount)
		}
	})
	t.Run("a reset session refuses it", func(t *testing.T) {
		if _, err := db.ResetSession(ctx, agentMain, keyMain, time.Now()); err != nil {
			t.Fatal(err)
		}
		_, _, errCompact := db.AppendCompaction(ctx, agentMain, keyMain, sid, c, 1)
		_, errFlush := db.RecordFlush(ctx, agentMain, keyMain, sid, time.Now())
		for name, err := range map[string]error{"compaction": errCompact, "flush": errFlush} {
			if !errors.Is(err, ErrSessionChanged) {
				t.Errorf("%s on the old transcript: %v", name, err)
			}
		}
		if e, _ := db.GetSession(ctx, agentMain, keyMain); e.CompactionCount != 0 || e.MemoryFlushCompactionCount != nil {
			t.Errorf("after the reset: %+v", e)
		}
	})
}

// TestMigrationFromV2 opens a store written by schema version 2: its
// transcripts read as messages without usage, and the new columns and
// rows work on them.
func TestMigrationFromV2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "talon.db")
	ctx := context.Background()
	sdb, err := sqlitedb.Open(path, sqlitedb.Options{What: "store", Synchronous: "FULL"})
	if err != nil {
		t.Fatal(err)
	}
	err = writeTx(ctx, sdb.W, func(tx *sql.Tx) error {
		if err := applyMigrations(ctx, tx, "schema_migrations", migrations[:2], time.UnixMilli(1)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions VALUES ('main', ?, 'old', NULL, 5, '{"sessionId":"old","updatedAt":5,"compactionCount":3}')`, keyMain); err != nil {
			return err
		}
		for i, m := range []string{`{"role":"user","content":"q"}`, `{"role":"assistant","content":"a"}`} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO transcripts VALUES ('old', ?, 0, ?, ?)`, i+1, []string{"user", "assistant"}[i], m); err != nil {
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
	if got := migrationVersions(t, db); len(got) != SchemaVersion || SchemaVersion < 3 {
		t.Fatalf("schema_migrations = %v, want 1..%d", got, SchemaVersion)
	}
	v, err := db.ReadView(ctx, "old")
	if err != nil || len(v.Records) != 2 || v.Records[1].Usage != (compaction.Usage{}) || v.Records[1].Message.Content != "a" {
		t.Fatalf("view after the migration: %+v, %v", v, err)
	}
	e, err := db.GetSession(ctx, agentMain, keyMain)
	if err != nil || e.CompactionCount != 3 {
		t.Fatalf("entry after the migration: %+v, %v", e, err)
	}
	if _, _, err := db.AppendCompaction(ctx, agentMain, keyMain, "old", compaction.Compaction{Summary: "s", FirstKeptEntryID: "2"}, 10); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.ReadView(ctx, "old"); !cmp.Equal(seqs(v.Records), []string{"2", "3c"}) {
		t.Errorf("view after a compaction: %v", seqs(v.Records))
	}
}

// compactCrashEnv names the database a re-executed test binary runs turns
// and compactions on until it is killed (TestCompactionCrashSafety).
const compactCrashEnv = "TALON_STORE_COMPACT_CRASH_CHILD"

// compactCrashChild runs a turn and then a compaction, over and over,
// printing "acked k" after the k-th compaction has committed.
func compactCrashChild(path string) {
	db, err := Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for k := 1; k <= 1_000_000; k++ {
		id, err := db.StartTurn(ctx, agentMain, keyMain, false, nil, Items(user(fmt.Sprint(k)), llm.Message{Role: llm.RoleAssistant, Content: "ok"}))
		if err == nil {
			_, _, err = db.AppendCompaction(ctx, agentMain, keyMain, id, compaction.Compaction{Summary: fmt.Sprint("summary ", k)}, int64(k))
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Printf("acked %d\n", k)
	}
	os.Exit(0)
}

// TestCompactionCrashSafety kills a process that compacts in a loop: every
// compaction it acknowledged is there after reopening, and the session's
// compactionCount is exactly the number of compaction rows, its
// totalTokens the last one's: the session is before or after a
// compaction, never between.
func TestCompactionCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "talon.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), compactCrashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const killAfter = 60
	acked := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		k, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "acked "))
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("child said %q", sc.Text())
		}
		acked = k
		if k == killAfter {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL, mid-loop
				t.Fatal(err)
			}
		}
	}
	if werr := cmd.Wait(); werr == nil {
		t.Fatal("child was not killed")
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := db.GetSession(context.Background(), agentMain, keyMain)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := db.TranscriptRecords(context.Background(), e.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	var last *Record
	for i := range recs {
		if recs[i].Kind == KindCompaction {
			rows, last = rows+1, &recs[i]
		}
	}
	if rows < int64(acked) {
		t.Fatalf("%d compactions survived, %d were acknowledged", rows, acked)
	}
	if e.CompactionCount != rows || last == nil || e.TotalTokens != last.TokensAfter {
		t.Fatalf("compactionCount %d, totalTokens %d; %d compaction rows, the last %+v", e.CompactionCount, e.TotalTokens, rows, last)
	}
	t.Logf("killed after %d acknowledged compactions; %d survived", acked, rows)
}
