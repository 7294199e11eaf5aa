package platform

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"talon/internal/store"
)

// BenchmarkSync200 is the start-up sync of one changed template installed
// in 200 tenants (SQLite catalog): each op re-syncs all 200 (Recover, Plan,
// Update with its journaled swap, catalog record), alternating between two
// template versions so every op has work. Run with -benchtime 3x.
func BenchmarkSync200(b *testing.B) {
	ctx := context.Background()
	state, tpl := b.TempDir(), b.TempDir()
	writeTemplate(b, tpl, "helper", helperV1())
	st, err := store.OpenCatalog(filepath.Join(b.TempDir(), "platform.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	p, err := New(ctx, Options{StateDir: state, Templates: tpl, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		id := fmt.Sprintf("t%03d", i)
		if _, err := p.CreateTenant(ctx, id, id, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Install(ctx, id, "helper"); err != nil {
			b.Fatal(err)
		}
	}
	versions := []map[string]string{helperV2(), helperV1()}
	i := 0
	for b.Loop() {
		b.StopTimer()
		writeTemplate(b, tpl, "helper", versions[i%2])
		i++
		if err := p.Reload(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := p.Sync(ctx, "helper", false)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Error != "" || len(r.Summary) == 0 {
				b.Fatalf("%s: %+v", r.Tenant, r)
			}
		}
		if len(res) != 200 {
			b.Fatalf("%d results", len(res))
		}
	}
}
