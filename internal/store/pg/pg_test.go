package pg

import (
	"context"
	"strings"
	"testing"

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
	} {
		t.Run(c2.name, func(t *testing.T) {
			_, err := s.exec(ctx, c2.sql)
			if pe := pgError(err); pe == nil || pe.Code != c2.code {
				t.Errorf("error %v, want SQLSTATE %s", err, c2.code)
			}
		})
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
