package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"talon/internal/llm"
	"talon/internal/sqlitedb"

	"github.com/google/go-cmp/cmp"
)

// crashEnv names the database a re-executed test binary appends to until
// it is killed (TestCrashSafety).
const crashEnv = "TALON_STORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	if path := os.Getenv(compactCrashEnv); path != "" {
		compactCrashChild(path)
		return
	}
	os.Exit(m.Run())
}

// openTest opens a fresh database in a temporary directory with a fixed
// clock, and closes it when the test ends.
func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.Now = fixedClock(time.UnixMilli(1_700_000_000_000))
	t.Cleanup(func() { db.Close() })
	return db
}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tenant", "state")
	path := filepath.Join(dir, "talon.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	if err := db.AppendMessages(context.Background(), "s", llm.Message{Role: llm.RoleUser, Content: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want os.FileMode
	}{
		{dir, 0o700 | os.ModeDir},
		{path, 0o600},
		{path + "-wal", 0o600},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != c.want {
			t.Errorf("mode of %s = %v, want %v", filepath.Base(c.path), got, c.want)
		}
	}

	var mode string
	var sync, fk int
	if err := db.w.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := db.w.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 || fk != 1 {
		t.Errorf("journal_mode=%s synchronous=%d foreign_keys=%d, want wal 2 (FULL) 1", mode, sync, fk)
	}
	if _, err := db.r.Exec("CREATE TABLE x (a)"); err == nil {
		t.Error("a reader connection accepted a write")
	}
}

func TestOpenErrors(t *testing.T) {
	for _, c := range []struct{ name, path, want string }{
		{"empty", "", "empty path"},
		{"question mark", filepath.Join(t.TempDir(), "a?b.db"), "may not contain '?'"},
		{"directory in the way", t.TempDir(), "opening store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(c.path)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%q) succeeded", c.path)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func migrationVersions(t *testing.T, db *DB) []int {
	t.Helper()
	rows, err := db.r.Query("SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestMigrationsIdempotentOnReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "talon.db")
	ctx := context.Background()
	for i := range 3 {
		db, err := Open(path)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if got := migrationVersions(t, db); len(got) != SchemaVersion || got[len(got)-1] != SchemaVersion {
			t.Errorf("open %d: schema_migrations = %v, want 1..%d", i, got, SchemaVersion)
		}
		if err := db.AppendMessages(ctx, "s", llm.Message{Role: llm.RoleUser, Content: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		msgs, err := db.Transcript(ctx, "s", 0)
		if err != nil || len(msgs) != i+1 {
			t.Errorf("open %d: %d messages, %v; want %d", i, len(msgs), err, i+1)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "talon.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = Open(path)
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded on a newer schema")
	}
	want := fmt.Sprintf("database schema version %d is newer than this binary supports (%d): upgrade talon", SchemaVersion+1, SchemaVersion)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\ndoes not contain %q", err, want)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewID()
		if !uuidV4.MatchString(id) {
			t.Fatalf("NewID() = %q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

// TestMigrationFromV1 opens a store written by schema version 1 (sessions
// as a rowid table with sessions_by_id): its sessions, labels and
// transcripts come through migration 2, which leaves sessions keyed by
// its primary key and without the unused index.
func TestMigrationFromV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "talon.db")
	ctx := context.Background()
	sdb, err := sqlitedb.Open(path, sqlitedb.Options{What: "store", Synchronous: "FULL"})
	if err != nil {
		t.Fatal(err)
	}
	err = writeTx(ctx, sdb.W, func(tx *sql.Tx) error {
		if err := applyMigrations(ctx, tx, "schema_migrations", migrations[:1], time.UnixMilli(1)); err != nil {
			return err
		}
		for i, label := range []any{nil, "work", nil} {
			key := fmt.Sprintf("agent:main:s%d", i)
			entry := fmt.Sprintf(`{"sessionId":"id-%d","updatedAt":%d}`, i, 100+i)
			if label != nil {
				entry = fmt.Sprintf(`{"sessionId":"id-%d","updatedAt":%d,"label":%q}`, i, 100+i, label)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO sessions VALUES ('main', ?, ?, ?, ?, ?)`,
				key, fmt.Sprintf("id-%d", i), label, 100+i, entry); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO transcripts VALUES (?, 1, 0, 'user', ?)`,
				fmt.Sprintf("id-%d", i), fmt.Sprintf(`{"role":"user","content":"q%d"}`, i)); err != nil {
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
	if got := migrationVersions(t, db); len(got) != SchemaVersion {
		t.Fatalf("schema_migrations = %v, want 1..%d", got, SchemaVersion)
	}
	rows, err := db.ListSessions(ctx, "main", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		keys = append(keys, r.Key+"="+r.Entry.SessionID)
	}
	if want := []string{"agent:main:s2=id-2", "agent:main:s1=id-1", "agent:main:s0=id-0"}; !cmp.Equal(keys, want) {
		t.Errorf("sessions after the migration %v, want %v (newest first)", keys, want)
	}
	if e, err := db.GetSession(ctx, "main", "agent:main:s1"); err != nil || e.Label != "work" {
		t.Errorf("labelled session: %+v, %v", e, err)
	}
	if msgs, err := db.Transcript(ctx, "id-0", 0); err != nil || len(msgs) != 1 || msgs[0].Content != "q0" {
		t.Errorf("transcript after the migration: %v, %v", msgs, err)
	}
	var schema string
	if err := db.r.QueryRow(`SELECT group_concat(sql, ';') FROM sqlite_schema WHERE tbl_name = 'sessions'`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(schema, "WITHOUT ROWID") || strings.Contains(schema, "sessions_by_id") ||
		!strings.Contains(schema, "sessions_by_time") || !strings.Contains(schema, "sessions_by_label") {
		t.Errorf("sessions schema after the migration:\n%s", schema)
	}
	// The primary key still refuses a second row for the same session.
	if _, err := db.BeginFreshTurn(ctx, "main", "agent:main:s0", llm.Message{Role: llm.RoleUser, Content: "again"}); err != nil {
		t.Fatal(err)
	}
	if rows, _ := db.ListSessions(ctx, "main", 0, 0); len(rows) != 3 {
		t.Errorf("%d sessions after a turn on an existing key, want 3", len(rows))
	}
}

// TestOpenWithSyncWindow: a store with a sync window commits with
// synchronous=NORMAL and has its syncer fsync the log after a turn; the
// default store fsyncs every commit (FULL).
func TestOpenWithSyncWindow(t *testing.T) {
	for _, c := range []struct {
		name   string
		window time.Duration
		want   int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"every commit", 0, 2}, {"window", 50 * time.Millisecond, 1}} {
		t.Run(c.name, func(t *testing.T) {
			db, err := OpenWith(filepath.Join(t.TempDir(), "talon.db"), Options{SyncWindow: c.window})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var syn int
			if err := db.w.QueryRow("PRAGMA synchronous").Scan(&syn); err != nil || syn != c.want {
				t.Fatalf("synchronous = %d (%v), want %d", syn, err, c.want)
			}
			ctx := context.Background()
			id, err := db.BeginFreshTurn(ctx, "main", "agent:main:x", llm.Message{Role: llm.RoleUser, Content: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if msgs, err := db.Transcript(ctx, id, 0); err != nil || len(msgs) != 1 {
				t.Fatalf("transcript %v, %v", msgs, err)
			}
			if c.window == 0 {
				if n := db.sdb.Syncs(); n != 0 {
					t.Fatalf("%d syncer fsyncs without a window", n)
				}
				return
			}
			// The turn's commit reached the syncer (the bound only keeps a
			// broken one from hanging the test).
			for deadline := time.Now().Add(time.Minute); db.sdb.Syncs() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("no fsync a minute after the turn's commit")
				}
			}
		})
	}
	if _, err := OpenWith(filepath.Join(t.TempDir(), "talon.db"), Options{SyncWindow: -time.Second}); err == nil {
		t.Fatal("a negative sync window was accepted")
	}
}
