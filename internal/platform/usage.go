package platform

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"talon/internal/store"
	"talon/internal/tenantid"
	"talon/internal/usage"
)

// Usage reports a tenant's usage ledger, read from its database in the
// state dir, as `talon usage` does: the gateway need not run the tenant.
// The caller has checked that the caller may read this tenant's.
func (p *Platform) Usage(ctx context.Context, tenant string, q usage.Query) (usage.Report, error) {
	path, err := p.tenantDB(tenant)
	if err != nil {
		return usage.Report{}, err
	}
	return usage.Read(ctx, path, q)
}

// AllUsage reports every tenant of the catalog's totals since then, and
// their sum: the admin's view.
func (p *Platform) AllUsage(ctx context.Context, since time.Time) (usage.AllReport, error) {
	list, err := p.o.Store.Tenants(ctx)
	if err != nil {
		return usage.AllReport{}, err
	}
	dbs := make([]usage.Tenant, 0, len(list))
	for _, t := range list {
		path, err := p.tenantDB(t.ID)
		if err != nil {
			return usage.AllReport{}, err
		}
		dbs = append(dbs, usage.Tenant{ID: t.ID, Path: path})
	}
	return usage.All(ctx, since, dbs)
}

// tenantDB is the path of the tenant's database; the id is checked
// again here, as it becomes a path.
func (p *Platform) tenantDB(tenant string) (string, error) {
	if !tenantid.Valid(tenant) {
		return "", fmt.Errorf("tenant %q is not a tenant id", tenant)
	}
	return filepath.Join(p.o.StateDir, "tenants", tenant, store.File), nil
}
