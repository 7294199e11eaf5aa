// Package budget decides a tenant's monthly usage budget: whether the
// month's usage has reached it (new turns are refused) and whether it has
// crossed the alert fraction (the month's alert fires).
//
// A month is a calendar month in UTC, the same for every tenant, so that
// what a tenant is refused for and what it is billed for agree. The
// package is pure: it reads no clock and does no I/O; callers pass the
// time and the month's totals (store.DB.MonthUsage).
package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"talon/internal/config"
)

// None is a limit that is not set.
const None = -1

// Budget is a budget in the ledger's units. The zero Budget refuses
// everything; Of(nil) is no budget.
type Budget struct {
	// Tokens and Cost (micro-dollars) are the month's limits, None when
	// unset.
	Tokens, Cost int64
	// AlertAt is the fraction of a limit whose crossing fires the alert.
	AlertAt float64
}

// Of is the budget a config block sets; nil sets none.
func Of(b *config.Budget) Budget {
	out := Budget{Tokens: None, Cost: None, AlertAt: config.DefaultAlertAt}
	if b == nil {
		return out
	}
	if b.MonthlyTokens != nil {
		out.Tokens = int64(math.Max(*b.MonthlyTokens, 0))
	}
	if b.MonthlyCostUSD != nil {
		out.Cost = int64(math.Round(math.Max(*b.MonthlyCostUSD, 0) * 1e6))
	}
	if b.AlertAt != nil && *b.AlertAt > 0 && *b.AlertAt <= 1 {
		out.AlertAt = *b.AlertAt
	}
	return out
}

// Set reports whether b limits anything.
func (b Budget) Set() bool { return b.Tokens != None || b.Cost != None }

// Used is a month's usage in the ledger's units.
type Used struct {
	Tokens int64
	Cost   int64 // micro-dollars
}

// Reached reports whether u has used the whole of a limit: the turn that
// crosses it completes, the next is refused.
func (b Budget) Reached(u Used) bool {
	return b.Tokens != None && u.Tokens >= b.Tokens || b.Cost != None && u.Cost >= b.Cost
}

// Fraction is the largest share of a limit u has used (0 with no limit).
func (b Budget) Fraction(u Used) float64 {
	f := 0.0
	if b.Tokens != None {
		f = max(f, share(u.Tokens, b.Tokens))
	}
	if b.Cost != None {
		f = max(f, share(u.Cost, b.Cost))
	}
	return f
}

func share(used, limit int64) float64 {
	if limit <= 0 {
		return math.Inf(1)
	}
	return float64(used) / float64(limit)
}

// Alerting reports whether u has reached the alert fraction of a limit.
func (b Budget) Alerting(u Used) bool { return b.Set() && b.Fraction(u) >= b.AlertAt }

// Month is the calendar month (UTC) holding t: [start, end).
func Month(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// MonthKey names the month holding t ("2026-11").
func MonthKey(t time.Time) string { return t.UTC().Format("2006-01") }

// Describe says what b limits, as an error or a page shows it:
// "1000 tokens, $5.00 a month".
func (b Budget) Describe() string {
	var parts []string
	if b.Tokens != None {
		parts = append(parts, strconv.FormatInt(b.Tokens, 10)+" tokens")
	}
	if b.Cost != None {
		parts = append(parts, USD(b.Cost))
	}
	if len(parts) == 0 {
		return "no budget"
	}
	return strings.Join(parts, ", ") + " a month"
}

// USD shows micro-dollars as dollars and cents ("$5.00"), with more
// places below a cent.
func USD(micro int64) string {
	d := float64(micro) / 1e6
	if micro != 0 && micro < 10_000 {
		return "$" + strconv.FormatFloat(d, 'f', 6, 64)
	}
	return "$" + strconv.FormatFloat(d, 'f', 2, 64)
}

// Exceeded is the error of a turn refused because the month's usage has
// reached the budget.
type Exceeded struct {
	Budget Budget
	Used   Used
	// Resets is when the next month begins.
	Resets time.Time
}

// Check returns the refusal of a turn at now, or nil when u is within b.
func (b Budget) Check(u Used, now time.Time) *Exceeded {
	if !b.Reached(u) {
		return nil
	}
	_, end := Month(now)
	return &Exceeded{Budget: b, Used: u, Resets: end}
}

func (e *Exceeded) Error() string {
	return fmt.Sprintf("monthly usage budget reached: %d tokens and %s used of %s; new turns are refused until %s",
		e.Used.Tokens, USD(e.Used.Cost), e.Budget.Describe(), e.Resets.Format(time.RFC3339))
}

// Details are the refusal's facts for an error's structured part.
func (e *Exceeded) Details() map[string]any {
	d := map[string]any{"usedTokens": e.Used.Tokens, "usedCostUsd": float64(e.Used.Cost) / 1e6, "resetsAt": e.Resets.Format(time.RFC3339)}
	if e.Budget.Tokens != None {
		d["monthlyTokens"] = e.Budget.Tokens
	}
	if e.Budget.Cost != None {
		d["monthlyCostUsd"] = float64(e.Budget.Cost) / 1e6
	}
	return d
}
