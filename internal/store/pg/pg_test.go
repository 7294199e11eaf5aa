package pg

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

	"talon/internal/store/catalog"
	"talon/internal/store/catalog/catalogtest"
	"talon/internal/store/pg/pgtest"
)

func open(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	c := pgtest.Start(t)
	catalogtest.Run(t, func(t *testing.T) catalog.Store { return open(t, c.NewDB(t)) })
}

// TestChecks writes around Go's validation: the server itself refuses
// what Normalize would.
func TestChecks(t *testing.T) {
	c := pgtest.Start(t)
	s := open(t, c.NewDB(t))
	defer s.Close()
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO tenants VALUES ('t1', 'T', now())`,
		`INSERT INTO library VALUES ('a', 'A', '', '', '', '', '{}', true, '', '', now())`,
		// t1/c holds the files; t1/a stays free for the installation checks.
		`INSERT INTO library VALUES ('c', 'C', '', '', '', '', '{}', true, '', '', now())`,
		`INSERT INTO installations VALUES ('t1', 'c', '', now(), now(), 'ok', '')`,
		`INSERT INTO installation_files VALUES ('t1', 'c', 'skills/s/SKILL.md', '` + hex64 + `', true)`,
		`INSERT INTO nodes VALUES ('n1', 'http://127.0.0.1:1', now())`,
	} {
		if _, err := s.exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, c2 := range []struct{ name, sql, code string }{
		{"upper-case slug", `INSERT INTO library VALUES ('A', 'A', '', '', '', '', '{}', true, '', '', now())`, checkViolation},
		{"empty name", `INSERT INTO library VALUES ('b', '', '', '', '', '', '{}', true, '', '', now())`, checkViolation},
		{"empty skill", `INSERT INTO library VALUES ('b', 'B', '', '', '', '', '{""}', true, '', '', now())`, checkViolation},
		{"null skill", `INSERT INTO library VALUES ('b', 'B', '', '', '', '', '{NULL}', true, '', '', now())`, checkViolation},
		{"tenant id with a space", `INSERT INTO tenants VALUES ('t 2', 'T', now())`, checkViolation},
		{"status unknown", `INSERT INTO installations VALUES ('t1', 'a', '', now(), now(), 'fine', '')`, checkViolation},
		{"error without message", `INSERT INTO installations VALUES ('t1', 'a', '', now(), now(), 'error', '')`, checkViolation},
		{"unknown tenant", `INSERT INTO installations VALUES ('t9', 'a', '', now(), now(), 'ok', '')`, foreignKeyViolation},
		{"file of no installation", `INSERT INTO installation_files VALUES ('t1', 'a', 'x', '` + hex64 + `', false)`, foreignKeyViolation},
		{"absolute file path", `INSERT INTO installation_files VALUES ('t1', 'c', '/x', '` + hex64 + `', false)`, checkViolation},
		{"file path with ..", `INSERT INTO installation_files VALUES ('t1', 'c', 'a/../../x', '` + hex64 + `', false)`, checkViolation},
		{"file path with .", `INSERT INTO installation_files VALUES ('t1', 'c', './x', '` + hex64 + `', false)`, checkViolation},
		{"file path ending in /", `INSERT INTO installation_files VALUES ('t1', 'c', 'x/', '` + hex64 + `', false)`, checkViolation},
		{"empty file path", `INSERT INTO installation_files VALUES ('t1', 'c', '', '` + hex64 + `', false)`, checkViolation},
		{"bad sha256", `INSERT INTO installation_files VALUES ('t1', 'c', 'x', 'XYZ', false)`, checkViolation},
		{"node id with a slash", `INSERT INTO nodes VALUES ('a/b', 'http://x', now())`, checkViolation},
		{"node url not http", `INSERT INTO nodes VALUES ('n', 'file:///etc', now())`, checkViolation},
		{"placement on no node", `INSERT INTO placements VALUES ('t1', 'nope')`, foreignKeyViolation},
		{"placement of no tenant", `INSERT INTO placements VALUES ('nope', 'n1')`, foreignKeyViolation},
	} {
		t.Run(c2.name, func(t *testing.T) {
			_, err := s.exec(ctx, c2.sql)
			if pe := pgError(err); pe == nil || pe.Code != c2.code {
				t.Errorf("error %v, want SQLSTATE %s", err, c2.code)
			}
		})
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestMigrationFromV1 opens a catalog written by schema version 1
// (installations without a record of shipped files): its rows come
// through migration 2 with Files nil, and a later update records them.
func TestMigrationFromV1(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDB(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, pool, migrations[:1], time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO tenants VALUES ('acme', 'Acme', now())`,
		`INSERT INTO library VALUES ('researcher', 'Researcher', '', '', '', '', '{}', true, '', 'h1', now())`,
		`INSERT INTO installations VALUES ('acme', 'researcher', 'h1', now(), now(), 'ok', '')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pool.Close()

	s := open(t, dsn)
	defer s.Close()
	var version int
	if err := s.pool.QueryRow(ctx, `SELECT MAX(version) FROM catalog_migrations`).Scan(&version); err != nil || version != len(migrations) {
		t.Fatalf("catalog version %d (%v), want %d", version, err, len(migrations))
	}
	ins, err := s.Installations(ctx, catalog.Filter{})
	if err != nil || len(ins) != 1 || ins[0].Slug != "researcher" || ins[0].TemplateHash != "h1" || ins[0].Files != nil {
		t.Fatalf("installations after the migration: %+v, %v", ins, err)
	}
	files := []catalog.ShippedFile{{Path: "AGENTS.md", SHA256: hex64}}
	if err := s.UpdateInstallation(ctx, catalog.Installation{TenantID: "acme", Slug: "researcher", TemplateHash: "h1", Files: files}); err != nil {
		t.Fatal(err)
	}
	if ins, err := s.Installations(ctx, catalog.Filter{}); err != nil || len(ins) != 1 || !cmp.Equal(ins[0].Files, files) {
		t.Fatalf("after recording files: %+v, %v", ins, err)
	}
}

func TestReopen(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDB(t)
	ctx := context.Background()
	s := open(t, dsn)
	if err := s.PutTenant(ctx, catalog.Tenant{ID: "t1", Name: "T"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dsn)
	if ts, err := s.Tenants(ctx); err != nil || len(ts) != 1 {
		t.Errorf("tenants after reopening: %v, %v", ts, err)
	}
	if _, err := s.exec(ctx, `INSERT INTO catalog_migrations VALUES (99, now())`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, dsn); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("opening a newer catalog: %v", err)
	}
	if _, err := Open(ctx, "host=/nonexistent password=hunter2 port=x"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("opening a bad connection string: %v", err)
	}
}
