package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/sqlitedb"
	"talon/internal/store/catalog"
	"talon/internal/store/catalog/catalogtest"
)

func openCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCatalogConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalog.Store { return openCatalog(t) })
}

// TestCatalogChecks writes around Go's validation: the database itself
// refuses what Normalize would.
func TestCatalogChecks(t *testing.T) {
	c := openCatalog(t)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.exec(ctx, `INSERT INTO tenants VALUES ('t1', 'T', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.exec(ctx, `INSERT INTO library VALUES ('a', 'A', '', '', '', '', '[]', 1, '', '', 0)`); err != nil {
		t.Fatal(err)
	}
	// Installation t1/c holds the files; t1/a stays free for the checks
	// on installations.
	for _, q := range []string{
		`INSERT INTO library VALUES ('c', 'C', '', '', '', '', '[]', 1, '', '', 0)`,
		`INSERT INTO installations VALUES ('t1', 'c', '', 0, 0, 'ok', '')`,
		`INSERT INTO installation_files VALUES ('t1', 'c', 'skills/s/SKILL.md', '` + hex64 + `', 1)`,
		`INSERT INTO nodes VALUES ('n1', 'http://127.0.0.1:1', 0)`,
	} {
		if _, err := c.exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, c2 := range []struct{ name, sql string }{
		{"upper-case slug", `INSERT INTO library VALUES ('A', 'A', '', '', '', '', '[]', 1, '', '', 0)`},
		{"slug starting with _", `INSERT INTO library VALUES ('_a', 'A', '', '', '', '', '[]', 1, '', '', 0)`},
		{"empty name", `INSERT INTO library VALUES ('b', '', '', '', '', '', '[]', 1, '', '', 0)`},
		{"skills not an array", `INSERT INTO library VALUES ('b', 'B', '', '', '', '', '{}', 1, '', '', 0)`},
		{"public 2", `INSERT INTO library VALUES ('b', 'B', '', '', '', '', '[]', 2, '', '', 0)`},
		{"tenant id with a space", `INSERT INTO tenants VALUES ('t 2', 'T', 0)`},
		{"status unknown", `INSERT INTO installations VALUES ('t1', 'a', '', 0, 0, 'fine', '')`},
		{"error without message", `INSERT INTO installations VALUES ('t1', 'a', '', 0, 0, 'error', '')`},
		{"ok with message", `INSERT INTO installations VALUES ('t1', 'a', '', 0, 0, 'ok', 'x')`},
		{"file of no installation", `INSERT INTO installation_files VALUES ('t1', 'a', 'x', '` + hex64 + `', 0)`},
		{"absolute file path", `INSERT INTO installation_files VALUES ('t1', 'c', '/x', '` + hex64 + `', 0)`},
		{"file path with ..", `INSERT INTO installation_files VALUES ('t1', 'c', 'a/../../x', '` + hex64 + `', 0)`},
		{"file path with .", `INSERT INTO installation_files VALUES ('t1', 'c', './x', '` + hex64 + `', 0)`},
		{"file path ending in /", `INSERT INTO installation_files VALUES ('t1', 'c', 'x/', '` + hex64 + `', 0)`},
		{"empty file path", `INSERT INTO installation_files VALUES ('t1', 'c', '', '` + hex64 + `', 0)`},
		{"bad sha256", `INSERT INTO installation_files VALUES ('t1', 'c', 'x', 'XYZ', 0)`},
		{"exec 2", `INSERT INTO installation_files VALUES ('t1', 'c', 'x', '` + hex64 + `', 2)`},
		{"node id with a slash", `INSERT INTO nodes VALUES ('a/b', 'http://x', 0)`},
		{"node id starting with .", `INSERT INTO nodes VALUES ('.a', 'http://x', 0)`},
		{"node url not http", `INSERT INTO nodes VALUES ('n', 'file:///etc', 0)`},
		{"placement on no node", `INSERT INTO placements VALUES ('t1', 'nope')`},
		{"placement of no tenant", `INSERT INTO placements VALUES ('nope', 'n1')`},
	} {
		t.Run(c2.name, func(t *testing.T) {
			_, err := c.exec(ctx, c2.sql)
			if constraintCode(err) == 0 {
				t.Errorf("database accepted it: %v", err)
			}
		})
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestCatalogReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platform.db")
	c, err := OpenCatalog(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.PutTenant(ctx, catalog.Tenant{ID: "t1", Name: "T"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c, err = OpenCatalog(path)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	ts, err := c.Tenants(ctx)
	if err != nil || len(ts) != 1 {
		t.Errorf("tenants after reopening: %v, %v", ts, err)
	}
	// A catalog from a newer binary is refused.
	if _, err := c.exec(ctx, `INSERT INTO catalog_migrations VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := OpenCatalog(path); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("opening a newer catalog: %v", err)
	}
	// The session store and the catalog keep separate schema versions:
	// a session store file opens as a catalog (its own tables beside) and
	// the session store still opens.
	sp := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(sp)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c, err = OpenCatalog(sp)
	if err != nil {
		t.Fatalf("opening a catalog beside sessions: %v", err)
	}
	c.Close()
	if s, err = Open(sp); err != nil {
		t.Fatalf("reopening sessions: %v", err)
	}
	s.Close()
}

// TestCatalogMigrationFromV1 opens a catalog written by schema version 1
// (installations without a record of shipped files): its rows come
// through migration 2 unchanged, with Files nil — "not recorded", which
// the platform treats as such — and a later update records them.
func TestCatalogMigrationFromV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platform.db")
	ctx := context.Background()
	sdb, err := sqlitedb.Open(path, sqlitedb.Options{What: "platform catalog", Synchronous: "FULL", Pragmas: []string{"foreign_keys(1)"}})
	if err != nil {
		t.Fatal(err)
	}
	err = writeTx(ctx, sdb.W, func(tx *sql.Tx) error {
		if err := applyMigrations(ctx, tx, "catalog_migrations", catalogMigrations[:1], time.UnixMilli(1)); err != nil {
			return err
		}
		for _, q := range []string{
			`INSERT INTO tenants VALUES ('acme', 'Acme', 1000)`,
			`INSERT INTO library VALUES ('researcher', 'Researcher', '', '', '', '', '[]', 1, '', 'h1', 1000)`,
			`INSERT INTO installations VALUES ('acme', 'researcher', 'h1', 2000, 3000, 'ok', '')`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sdb.Close()

	c, err := OpenCatalog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var version int
	if err := c.db.R.QueryRow(`SELECT MAX(version) FROM catalog_migrations`).Scan(&version); err != nil || version != len(catalogMigrations) {
		t.Fatalf("catalog version %d (%v), want %d", version, err, len(catalogMigrations))
	}
	ins, err := c.Installations(ctx, catalog.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []catalog.Installation{{TenantID: "acme", Slug: "researcher", TemplateHash: "h1",
		InstalledAt: time.UnixMilli(2000).UTC(), UpdatedAt: time.UnixMilli(3000).UTC(), Status: catalog.StatusOK}}
	if d := cmp.Diff(want, ins); d != "" {
		t.Fatalf("installations after the migration (-want +got):\n%s", d)
	}
	files := []catalog.ShippedFile{{Path: "AGENTS.md", SHA256: hex64}}
	if err := c.UpdateInstallation(ctx, catalog.Installation{TenantID: "acme", Slug: "researcher", TemplateHash: "h1", Files: files}); err != nil {
		t.Fatal(err)
	}
	if ins, err := c.Installations(ctx, catalog.Filter{}); err != nil || len(ins) != 1 || !cmp.Equal(ins[0].Files, files) {
		t.Fatalf("after recording files: %+v, %v", ins, err)
	}
}
