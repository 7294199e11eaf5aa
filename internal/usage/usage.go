package usage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"talon/internal/store"
)

// DefaultSince is the range a report covers when no since is given, as
// usage.cost's default.
const DefaultSince = "30d"

// Query is what a report covers: calls from Since on, grouped By
// (store.ByAgent, store.ByModel, store.ByDay, or "" for totals alone).
type Query struct {
	Since time.Time
	By    string
}

// CheckBy refuses a grouping a report does not make.
func CheckBy(by string) error {
	switch by {
	case "", store.ByAgent, store.ByModel, store.ByDay:
		return nil
	}
	return fmt.Errorf("%q is not agent, model or day", by)
}

// maxSpan bounds a span back from now: a century, as usage.cost's.
const maxSpan = 36600 * 24 * time.Hour

// ParseSince reads a report's start as the CLI's flag and the API's
// query parameter give it: a date (YYYY-MM-DD, midnight UTC), an RFC 3339
// time, or a span back from now ("30d", "12h", "90m"); empty is
// DefaultSince.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = DefaultSince
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	var span time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD) or a span such as 30d or 12h", s)
		}
		span = time.Duration(min(max(days, -1), 36601)) * 24 * time.Hour
	} else {
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD) or a span such as 30d or 12h", s)
		}
		span = d
	}
	if span <= 0 || span > maxSpan {
		return time.Time{}, fmt.Errorf("%q: a span must be positive and at most %d days", s, int(maxSpan/(24*time.Hour)))
	}
	return now.Add(-span), nil
}

// Totals are a range's sums, in the JSON of the issue: Calls counts the
// model calls that answered; CostUsd leaves out the UnpricedCalls, made
// to models with no price in models.providers.*.models[].cost.
type Totals struct {
	Calls            int64   `json:"calls"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	TotalTokens      int64   `json:"totalTokens"`
	CostUsd          float64 `json:"costUsd"`
	UnpricedCalls    int64   `json:"unpricedCalls"`
}

// TotalsOf is t in the report's shape; micro-dollars become dollars.
func TotalsOf(t *store.UsageTotals) Totals {
	return Totals{Calls: t.Calls, InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.CacheRead,
		CacheWriteTokens: t.CacheWrite, TotalTokens: t.Tokens(), CostUsd: float64(t.Cost) / 1e6, UnpricedCalls: t.Unpriced}
}

// Row is one group of a report: its key under the name of its grouping
// ("agent", "model" as provider/model, or "day" as YYYY-MM-DD in UTC).
type Row struct {
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	Day   string `json:"day,omitempty"`
	Totals
}

// Key is the row's key, whichever grouping it is of.
func (r *Row) Key() string { return r.Agent + r.Model + r.Day }

// Report is a tenant's usage from Since on: the totals and, with By, its
// rows in key order.
type Report struct {
	Since  time.Time `json:"since"`
	By     string    `json:"by,omitempty"`
	Totals Totals    `json:"totals"`
	Rows   []Row     `json:"rows,omitempty"`
}

// Read reports the usage the tenant database at path records. A missing
// file is a tenant that has made no call yet: zero totals, and no file
// made.
func Read(ctx context.Context, path string, q Query) (Report, error) {
	total, groups, err := read(ctx, path, store.UsageQuery{Since: q.Since.UnixMilli(), By: q.By})
	if err != nil {
		return Report{}, err
	}
	rep := Report{Since: q.Since.UTC(), By: q.By, Totals: TotalsOf(&total)}
	if q.By != "" {
		rep.Rows = make([]Row, 0, len(groups))
	}
	for i := range groups {
		row := Row{Totals: TotalsOf(&groups[i].UsageTotals)}
		switch q.By {
		case store.ByAgent:
			row.Agent = groups[i].Key
		case store.ByModel:
			row.Model = groups[i].Key
		case store.ByDay:
			row.Day = groups[i].Key
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func read(ctx context.Context, path string, q store.UsageQuery) (store.UsageTotals, []store.UsageGroup, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return store.UsageTotals{}, nil, nil
	} else if err != nil {
		return store.UsageTotals{}, nil, fmt.Errorf("reading usage: %w", err)
	}
	db, err := store.Open(path)
	if err != nil {
		return store.UsageTotals{}, nil, fmt.Errorf("reading usage: %w", err)
	}
	defer db.Close()
	return db.Usage(ctx, q)
}

// Tenant is one tenant's database, for All.
type Tenant struct {
	ID, Path string
}

// TenantRow is one tenant's totals in All's report.
type TenantRow struct {
	Tenant string `json:"tenant"`
	Totals
}

// AllReport is the usage of every tenant from Since on: the sum, and
// one row per tenant in the order given.
type AllReport struct {
	Since   time.Time   `json:"since"`
	Totals  Totals      `json:"totals"`
	Tenants []TenantRow `json:"tenants"`
}

// All reports each tenant's totals from since on and their sum (summed
// in micro-dollars, so the sum's cost is the rows' to the cent). A
// tenant whose database cannot be read fails the report, naming it: a
// sum that silently left one out would under-bill.
func All(ctx context.Context, since time.Time, tenants []Tenant) (AllReport, error) {
	rep := AllReport{Since: since.UTC(), Tenants: make([]TenantRow, 0, len(tenants))}
	var sum store.UsageTotals
	for _, t := range tenants {
		total, _, err := read(ctx, t.Path, store.UsageQuery{Since: since.UnixMilli()})
		if err != nil {
			return AllReport{}, fmt.Errorf("tenant %q: %w", t.ID, err)
		}
		sum.Add(&total)
		rep.Tenants = append(rep.Tenants, TenantRow{Tenant: t.ID, Totals: TotalsOf(&total)})
	}
	rep.Totals = TotalsOf(&sum)
	return rep, nil
}
