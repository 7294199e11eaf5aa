package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"talon/internal/store/catalog/catalogtest"
)

// catalogBenchTenants is how many tenants BenchmarkCatalogTenant writes.
const catalogBenchTenants = 1000

// BenchmarkCatalogTenant measures the SQLite catalog's size per tenant:
// a tenant placed on a node with two employees of five shipped files
// each (catalogtest.Fill), the file's bytes once its log is checkpointed,
// divided by the tenants. docs/scaling.md sizes a deployment with it.
func BenchmarkCatalogTenant(b *testing.B) {
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "platform.db")
		c, err := OpenCatalog(path)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := catalogtest.Fill(ctx, c, catalogBenchTenants); err != nil {
			b.Fatal(err)
		}
		if _, err := c.db.W.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/catalogBenchTenants, "bytes/tenant")
		c.Close()
	}
}
