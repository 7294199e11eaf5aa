package config

import (
	"fmt"
	"math"
)

// Budget is a monthly usage budget: Talon's own `usage.budget` of a
// config, and the operator's `tenants.budget` and `tenants.budgets.<id>`.
// An absent limit is no limit.
type Budget struct {
	// MonthlyTokens bounds the tokens of a calendar month (UTC): input,
	// output and cache reads and writes.
	MonthlyTokens *float64 `json:"monthlyTokens"`
	// MonthlyCostUSD bounds the month's cost in US dollars, as the
	// ledger prices it (calls of unpriced models cost nothing here).
	MonthlyCostUSD *float64 `json:"monthlyCostUsd"`
	// AlertAt is the fraction of a limit whose crossing raises the
	// month's alert; default DefaultAlertAt.
	AlertAt *float64 `json:"alertAt"`
}

// Usage is Talon's own `usage` section.
type Usage struct {
	Budget *Budget `json:"budget"`
}

// DefaultAlertAt is alertAt when a budget sets none.
const DefaultAlertAt = 0.8

// MaxBudgetTokens and MaxBudgetUSD bound a budget's limits so that they
// fit the ledger's int64 counts (cost in micro-dollars).
const (
	MaxBudgetTokens = 1e15
	MaxBudgetUSD    = 1e9
)

// budget checks a budget's values: limits from 0 (nothing may be spent)
// to their maxima, alertAt above 0 and at most 1.
func (k *checker) budget(path string, b *Budget) {
	if b == nil {
		return
	}
	if v := b.MonthlyTokens; v != nil && !(*v >= 0 && *v <= MaxBudgetTokens && *v == math.Trunc(*v)) {
		k.fail(path+".monthlyTokens", fmt.Sprintf("expected a whole number of tokens from 0 to %g (got %v)", float64(MaxBudgetTokens), *v))
	}
	if v := b.MonthlyCostUSD; v != nil && !(*v >= 0 && *v <= MaxBudgetUSD) {
		k.fail(path+".monthlyCostUsd", fmt.Sprintf("expected US dollars from 0 to %g (got %v)", float64(MaxBudgetUSD), *v))
	}
	if v := b.AlertAt; v != nil && !(*v > 0 && *v <= 1) {
		k.fail(path+".alertAt", fmt.Sprintf("expected a fraction of the budget above 0 and at most 1 (got %v)", *v))
	}
}

// budgets checks the operator's budgets: the default and each tenant's.
func (k *checker) budgets(t *Tenants) {
	k.budget("tenants.budget", t.Budget)
	for id, b := range t.Budgets {
		k.budget(JoinKey("tenants.budgets", id), &b)
	}
}
