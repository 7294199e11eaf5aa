package platform

import (
	"context"
	"fmt"
	"math"
	"time"

	"talon/internal/usage"
)

// Usage reports a tenant's usage ledger, read by its node from its
// database: the gateway need not run the tenant. The caller has checked
// that the caller may read this tenant's.
func (p *Platform) Usage(ctx context.Context, tenant string, q usage.Query) (usage.Report, error) {
	_, n, err := p.nodeOf(ctx, tenant)
	if err != nil {
		return usage.Report{}, err
	}
	return n.Usage(ctx, tenant, q)
}

// AllUsage reports every tenant of the catalog's totals since then, and
// their sum: the admin's view. A tenant whose usage cannot be read (its
// node down) fails the report, naming it: a sum that silently left one
// out would under-bill.
func (p *Platform) AllUsage(ctx context.Context, since time.Time) (usage.AllReport, error) {
	list, err := p.o.Store.Tenants(ctx)
	if err != nil {
		return usage.AllReport{}, err
	}
	rep := usage.AllReport{Since: since.UTC(), Tenants: make([]usage.TenantRow, 0, len(list))}
	var cost int64 // micro-dollars, so the sum's cost is the rows' to the cent
	for _, t := range list {
		r, err := p.Usage(ctx, t.ID, usage.Query{Since: since})
		if err != nil {
			return usage.AllReport{}, fmt.Errorf("tenant %q: %w", t.ID, err)
		}
		rep.Tenants = append(rep.Tenants, usage.TenantRow{Tenant: t.ID, Totals: r.Totals})
		s, x := &rep.Totals, r.Totals
		s.Calls += x.Calls
		s.InputTokens += x.InputTokens
		s.OutputTokens += x.OutputTokens
		s.CacheReadTokens += x.CacheReadTokens
		s.CacheWriteTokens += x.CacheWriteTokens
		s.TotalTokens += x.TotalTokens
		s.UnpricedCalls += x.UnpricedCalls
		cost += int64(math.Round(x.CostUsd * 1e6))
	}
	rep.Totals.CostUsd = float64(cost) / 1e6
	return rep, nil
}
