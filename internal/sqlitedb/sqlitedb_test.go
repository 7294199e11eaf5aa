package sqlitedb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	for _, sync := range []struct {
		name string
		want int
	}{{"FULL", 2}, {"NORMAL", 1}} {
		t.Run(sync.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "a", "b", "x.db")
			db, err := Open(p, Options{What: "test db", Synchronous: sync.name, Pragmas: []string{"foreign_keys(1)"}})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if db.Path != p {
				t.Errorf("Path = %q, want %q", db.Path, p)
			}
			for f, want := range map[string]os.FileMode{p: 0o600, filepath.Dir(p): 0o700 | os.ModeDir} {
				if fi, err := os.Stat(f); err != nil || fi.Mode() != want {
					t.Errorf("%s: mode %v (%v), want %v", f, fi.Mode(), err, want)
				}
			}
			var mode string
			var syn, fk int
			if err := db.W.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
				t.Fatal(err)
			}
			db.W.QueryRow("PRAGMA synchronous").Scan(&syn)
			db.R.QueryRow("PRAGMA foreign_keys").Scan(&fk)
			if mode != "wal" || syn != sync.want || fk != 1 {
				t.Errorf("journal_mode=%s synchronous=%d foreign_keys=%d", mode, syn, fk)
			}
			// FTS5 is compiled in: package memory needs it.
			if _, err := db.W.Exec("CREATE VIRTUAL TABLE f USING fts5(a)"); err != nil {
				t.Errorf("no FTS5: %v", err)
			}
			if _, err := db.R.Exec("CREATE TABLE x (a)"); err == nil {
				t.Error("a reader connection accepted a write")
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	for _, c := range []struct {
		name, path, sync, want string
		window                 time.Duration
	}{
		{"empty", "", "FULL", "opening test db: empty path", 0},
		{"question mark", filepath.Join(t.TempDir(), "a?b.db"), "FULL", "may not contain '?'", 0},
		{"directory in the way", t.TempDir(), "FULL", "opening test db", 0},
		{"bad synchronous", filepath.Join(t.TempDir(), "x.db"), "OFF", "synchronous must be FULL or NORMAL", 0},
		{"sync window with FULL", filepath.Join(t.TempDir(), "x.db"), "FULL", "a sync window (1s) needs synchronous NORMAL", time.Second},
		{"negative sync window", filepath.Join(t.TempDir(), "x.db"), "NORMAL", "a sync window (-1s) needs", -time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(c.path, Options{What: "test db", Synchronous: c.sync, SyncWindow: c.window})
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

// TestSyncWindow: commits reported with Committed are fsynced, the first
// at once and then at most one fsync per window however many commits come
// meanwhile; Close makes the last one. A database without a window has no
// syncer and Committed does nothing.
func TestSyncWindow(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{What: "test db", Synchronous: "NORMAL", SyncWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.W.Exec("CREATE TABLE t (a)"); err != nil {
		t.Fatal(err)
	}
	db.Committed()
	// The first commit's fsync is not held back: wait for it (the bound
	// only keeps a broken syncer from hanging the test).
	for deadline := time.Now().Add(time.Minute); db.syncer.syncs.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no fsync a minute after the first commit")
		}
	}
	for i := range 100 {
		if _, err := db.W.Exec("INSERT INTO t VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
		db.Committed()
	}
	if n := db.syncer.syncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs within the hour's window, want 1 (the next waits for the window)", n)
	}
	syncer := db.syncer
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := syncer.syncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs after Close, want 2: Close syncs what is pending", n)
	}

	plain, err := Open(filepath.Join(t.TempDir(), "y.db"), Options{What: "test db", Synchronous: "FULL"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.syncer != nil {
		t.Fatal("a syncer without a window")
	}
	plain.Committed()
}
