package ceiling

import (
	"fmt"
	"path/filepath"
	"strconv"

	"talon/internal/config"
)

// Budget is the monthly budget the operator sets for tenant id:
// tenants.budgets.<id>, else tenants.budget; nil when neither is set.
func (c *Ceiling) Budget(id string) *config.Budget {
	if b, ok := c.budgets[id]; ok {
		return &b
	}
	return c.budget
}

// budgetKeys are usage.budget's keys, each a maximum the tenant may lower.
var budgetKeys = []struct {
	key string
	of  func(*config.Budget) *float64
}{
	{"monthlyTokens", func(b *config.Budget) *float64 { return b.MonthlyTokens }},
	{"monthlyCostUsd", func(b *config.Budget) *float64 { return b.MonthlyCostUSD }},
	{"alertAt", func(b *config.Budget) *float64 { return b.AlertAt }},
}

// budget holds the tenant's usage.budget to the operator's: a tenant pays
// for what its agents spend only within what the operator grants it, and
// may want to stop (or be warned) earlier, never later. The tenant is
// the base name of its directory (STATE/tenants/ID).
func (a *applier) budget() {
	op := a.c.Budget(filepath.Base(a.dir))
	if op == nil {
		return
	}
	t := a.res.Tree
	for _, k := range budgetKeys {
		limit := k.of(op)
		if limit == nil {
			continue
		}
		at := "usage.budget." + k.key
		max := strconv.FormatFloat(*limit, 'f', -1, 64)
		v := t.Lookup("usage", "budget", k.key)
		switch {
		case v == nil:
			object(object(t, "usage", true), "budget", true).Set(k.key, config.NewNumber(max))
			a.setDefault(at, fmt.Sprintf("%s: the operator's budget for this tenant", max))
		case v.Kind != config.Number:
			// not a number: the config's own validation says so
		default:
			if n, err := strconv.ParseFloat(v.Num, 64); err != nil || n > *limit {
				a.violate(at, fmt.Sprintf("the operator's budget for this tenant is %s (tenants.budgets.<id>, else tenants.budget; got %s): a tenant may lower it, not raise it", max, v.Num))
				t.Lookup("usage", "budget").Set(k.key, config.NewNumber(max))
			}
		}
	}
}
