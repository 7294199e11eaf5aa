package pg

import (
	"context"
	"testing"

	"talon/internal/store/catalog/catalogtest"
	"talon/internal/store/pg/pgtest"
)

// catalogBenchTenants is how many tenants BenchmarkCatalogTenant writes.
const catalogBenchTenants = 1000

// BenchmarkCatalogTenant measures the PostgreSQL catalog's size per
// tenant: a tenant placed on a node with two employees of five shipped
// files each (catalogtest.Fill), the tenants', placements' and
// installations' tables with their indexes and TOAST, after VACUUM,
// divided by the tenants. docs/scaling.md sizes a deployment with it.
func BenchmarkCatalogTenant(b *testing.B) {
	c := pgtest.Start(b)
	for b.Loop() {
		s, err := Open(context.Background(), c.NewDB(b))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := catalogtest.Fill(ctx, s, catalogBenchTenants); err != nil {
			b.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
			b.Fatal(err)
		}
		var bytes int64
		err = s.pool.QueryRow(ctx, `SELECT sum(pg_total_relation_size(t))::bigint FROM unnest(
			ARRAY['tenants', 'placements', 'installations', 'installation_files']::regclass[]) AS t`).Scan(&bytes)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bytes)/catalogBenchTenants, "bytes/tenant")
		s.Close()
	}
}
