package budget

import (
	"testing"
	"time"

	"talon/internal/config"
)

func f(v float64) *float64 { return &v }

// TestBudget: the limits a config sets, when a month's usage reaches
// them (the turn after the one that crossed), and when the alert is due.
func TestBudget(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name              string
		cfg               *config.Budget
		used              Used
		reached, alerting bool
	}{
		{"no budget", nil, Used{Tokens: 1 << 40}, false, false},
		{"below the alert", &config.Budget{MonthlyTokens: f(100)}, Used{Tokens: 79}, false, false},
		{"at the default alert", &config.Budget{MonthlyTokens: f(100)}, Used{Tokens: 80}, false, true},
		{"one short of the limit", &config.Budget{MonthlyTokens: f(100), AlertAt: f(1)}, Used{Tokens: 99}, false, false},
		{"at the limit", &config.Budget{MonthlyTokens: f(100)}, Used{Tokens: 100}, true, true},
		{"cost crosses first", &config.Budget{MonthlyTokens: f(1e9), MonthlyCostUSD: f(2.5)}, Used{Tokens: 5, Cost: 2_500_000}, true, true},
		{"cost alert", &config.Budget{MonthlyCostUSD: f(10), AlertAt: f(0.5)}, Used{Cost: 5_000_000}, false, true},
		{"a zero budget refuses the first turn", &config.Budget{MonthlyTokens: f(0)}, Used{}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Of(tc.cfg)
			if got := b.Reached(tc.used); got != tc.reached {
				t.Errorf("Reached = %v, want %v", got, tc.reached)
			}
			if got := b.Alerting(tc.used); got != tc.alerting {
				t.Errorf("Alerting = %v, want %v", got, tc.alerting)
			}
			e := b.Check(tc.used, now)
			if (e != nil) != tc.reached {
				t.Fatalf("Check = %v, want a refusal: %v", e, tc.reached)
			}
			if e != nil && !e.Resets.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("resets %v, want the first of next month", e.Resets)
			}
		})
	}
}

// TestMonth: months are UTC calendar months, whatever zone the time is in.
func TestMonth(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	for _, tc := range []struct {
		at         time.Time
		start, key string
	}{
		{time.Date(2026, 12, 1, 8, 0, 0, 0, tokyo), "2026-11-01", "2026-11"}, // still November in UTC
		{time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), "2026-12-01", "2026-12"},
		{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), "2027-01-01", "2027-01"},
	} {
		start, end := Month(tc.at)
		if start.Format(time.DateOnly) != tc.start || MonthKey(tc.at) != tc.key || !end.Equal(start.AddDate(0, 1, 0)) {
			t.Errorf("Month(%v) = %v, %v (%s); want %s, %s", tc.at, start, end, MonthKey(tc.at), tc.start, tc.key)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		b    Budget
		want string
	}{
		{Of(nil), "no budget"},
		{Of(&config.Budget{MonthlyTokens: f(5000), MonthlyCostUSD: f(12.5)}), "5000 tokens, $12.50 a month"},
		{Of(&config.Budget{MonthlyCostUSD: f(0.0001)}), "$0.000100 a month"},
	} {
		if got := tc.b.Describe(); got != tc.want {
			t.Errorf("Describe = %q, want %q", got, tc.want)
		}
	}
}
