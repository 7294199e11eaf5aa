package sqlitedb

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	}{
		{"empty", "", "FULL", "opening test db: empty path"},
		{"question mark", filepath.Join(t.TempDir(), "a?b.db"), "FULL", "may not contain '?'"},
		{"directory in the way", t.TempDir(), "FULL", "opening test db"},
		{"bad synchronous", filepath.Join(t.TempDir(), "x.db"), "OFF", "synchronous must be FULL or NORMAL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(c.path, Options{What: "test db", Synchronous: c.sync})
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
