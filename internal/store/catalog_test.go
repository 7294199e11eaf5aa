package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
	} {
		t.Run(c2.name, func(t *testing.T) {
			_, err := c.exec(ctx, c2.sql)
			if constraintCode(err) == 0 {
				t.Errorf("database accepted it: %v", err)
			}
		})
	}
}

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
