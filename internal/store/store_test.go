package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"talon/internal/provider"
)

// crashEnv names the database a re-executed test binary appends to until
// it is killed (TestCrashSafety).
const crashEnv = "TALON_STORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
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
	if err := db.AppendMessages(context.Background(), "s", provider.Message{Role: provider.RoleUser, Content: "x"}); err != nil {
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
		if err := db.AppendMessages(ctx, "s", provider.Message{Role: provider.RoleUser, Content: fmt.Sprint(i)}); err != nil {
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
