package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/store"
	"talon/internal/usage"
)

// ledgerAt writes calls into the database at path, as a gateway's
// turns would have.
func ledgerAt(t *testing.T, path string, calls ...*store.Call) {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.RecordCalls(context.Background(), calls...); err != nil {
		t.Fatal(err)
	}
}

// TestUsage: talon usage sums one tenant's ledger, read from its
// database with no gateway running: the totals in the JSON, the
// rows asked for, a --since that leaves older calls out; another
// tenant's calls are never in it, and a tenant with no database yet has
// zero totals (and is not given one).
func TestUsage(t *testing.T) {
	state := t.TempDir()
	for _, id := range []string{"acme", "beta", "fresh"} {
		if err := os.MkdirAll(filepath.Join(state, "tenants", id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	day := func(d int) int64 { return now.Add(-time.Duration(d) * 24 * time.Hour).UnixMilli() }
	ledgerAt(t, filepath.Join(state, "tenants", "acme", store.File),
		&store.Call{At: day(1), AgentID: "main", Kind: store.CallTurn, Provider: "anthropic", Model: "claude", Input: 100, Output: 10, CacheRead: 50, CacheWrite: 5, Cost: 1_250_000, Priced: true},
		&store.Call{At: day(2), AgentID: "ops", Kind: store.CallCron, Provider: "local", Model: "m", Input: 7, Output: 3},
		&store.Call{At: day(40), AgentID: "main", Kind: store.CallTurn, Provider: "anthropic", Model: "claude", Input: 1000, Cost: 9, Priced: true})
	ledgerAt(t, filepath.Join(state, "tenants", "beta", store.File),
		&store.Call{At: day(1), AgentID: "main", Kind: store.CallTurn, Provider: "anthropic", Model: "claude", Input: 555, Cost: 5, Priced: true})

	want := usage.Totals{Calls: 2, InputTokens: 107, OutputTokens: 13, CacheReadTokens: 50, CacheWriteTokens: 5, TotalTokens: 175, CostUsd: 1.25, UnpricedCalls: 1}
	cases := []struct {
		name string
		args []string
		tot  usage.Totals
		rows []string
	}{
		{"totals of 30 days", nil, want, nil},
		{"by agent", []string{"--by", "agent"}, want, []string{"main", "ops"}},
		{"by model", []string{"--by", "model", "--since", "30d"}, want, []string{"anthropic/claude", "local/m"}},
		{"since a date", []string{"--since", now.AddDate(0, 0, -60).Format(time.DateOnly), "--by", "day"},
			usage.Totals{Calls: 3, InputTokens: 1107, OutputTokens: 13, CacheReadTokens: 50, CacheWriteTokens: 5, TotalTokens: 1175, CostUsd: 1.250009, UnpricedCalls: 1},
			[]string{time.UnixMilli(day(40)).UTC().Format(time.DateOnly), time.UnixMilli(day(2)).UTC().Format(time.DateOnly), time.UnixMilli(day(1)).UTC().Format(time.DateOnly)}},
		{"since 36 hours", []string{"--since", "36h"}, usage.Totals{Calls: 1, InputTokens: 100, OutputTokens: 10, CacheReadTokens: 50, CacheWriteTokens: 5, TotalTokens: 165, CostUsd: 1.25}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := talon(t, "", append([]string{"usage", "--state-dir", state, "--tenant", "acme", "--json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var rep usage.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if diff := cmp.Diff(tc.tot, rep.Totals); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
			var keys []string
			var sum usage.Totals
			for _, r := range rep.Rows {
				keys = append(keys, r.Key())
				sum.Calls += r.Calls
			}
			if diff := cmp.Diff(tc.rows, keys); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if tc.rows != nil && sum.Calls != rep.Totals.Calls {
				t.Errorf("rows count %d calls, totals %d", sum.Calls, rep.Totals.Calls)
			}
		})
	}

	t.Run("the issue's JSON keys", func(t *testing.T) {
		out, _, _ := talon(t, "", "usage", "--state-dir", state, "--tenant", "acme", "--json", "--by", "agent")
		var raw map[string]map[string]any
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(`{"totals":`+string(doc["totals"])+`}`), &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"calls", "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "totalTokens", "costUsd"} {
			if _, ok := raw["totals"][k]; !ok {
				t.Errorf("totals has no %q: %s", k, doc["totals"])
			}
		}
		if _, ok := doc["rows"]; !ok {
			t.Errorf("no rows: %s", out)
		}
	})

	t.Run("table", func(t *testing.T) {
		out, errOut, code := talon(t, "", "usage", "--state-dir", state, "--tenant", "acme", "--by", "model")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 5 || !strings.HasPrefix(lines[0], "since ") {
			t.Fatalf("table:\n%s", out)
		}
		for i, want := range [][]string{
			{"model", "calls", "input"},
			{"anthropic/claude", "1", "100", "10", "50", "5", "165", "1.250000", "0"},
			{"local/m", "1", "7", "3", "0", "0", "10", "0.000000", "1"},
			{"total", "2", "107", "13", "50", "5", "175", "1.250000", "1"},
		} {
			if got := strings.Fields(lines[i+1]); !strings.HasPrefix(strings.Join(got, " "), strings.Join(want, " ")) {
				t.Errorf("line %d: %q, want %q", i+1, got, want)
			}
		}
	})

	t.Run("a tenant with no calls", func(t *testing.T) {
		out, errOut, code := talon(t, "", "usage", "--state-dir", state, "--tenant", "fresh", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rep usage.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Totals != (usage.Totals{}) {
			t.Errorf("%+v, %v; want zero totals", rep.Totals, err)
		}
		if _, err := os.Stat(filepath.Join(state, "tenants", "fresh", store.File)); err == nil {
			t.Error("reading usage made a database")
		}
	})

	refusals := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown tenant", []string{"--tenant", "nope"}, `talon: usage: no tenant "nope" under ` + state + "\n"},
		{"a tenant id that is a path", []string{"--tenant", "../acme"}, `talon: usage: --tenant "../acme" is not a tenant id` + "\n"},
		{"an unknown grouping", []string{"--by", "kind"}, `talon: usage: --by: "kind" is not agent, model or day` + "\n"},
		{"a since that is neither", []string{"--since", "yesterday"}, `talon: usage: --since: "yesterday" is not a date (YYYY-MM-DD) or a span such as 30d or 12h` + "\n"},
		{"a negative span", []string{"--since", "-5d"}, `talon: usage: --since: "-5d": a span must be positive and at most 36600 days` + "\n"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := talon(t, "", append([]string{"usage", "--state-dir", state}, tc.args...)...)
			if code == 0 || errOut != tc.want {
				t.Errorf("exit %d, stderr %q; want %q", code, errOut, tc.want)
			}
		})
	}
}
