package gateway

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"talon/internal/store"
)

// TestUsageCost: usage.cost sums the tenant's own ledger, OpenClaw's
// shape, per day in the zone asked for, for one agent or all; a tenant
// never sees another's calls; bad ranges are refused naming the field.
func TestUsageCost(t *testing.T) {
	ts, url := startWS(t, `, "agents": {"list": [{"id": "main", "default": true}, {"id": "ops"}]}, "models": {"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1"}}}`)
	today := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	record := func(dir string, calls ...*store.Call) {
		t.Helper()
		db, err := store.Open(filepath.Join(dir, StoreFile))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.RecordCalls(context.Background(), calls...); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"acme", "beta"} {
		writeFile(t, filepath.Join(ts.dir, "tenants", id, "talon.json"), []byte(`{gateway: {auth: {token: "`+id+`-token"}},
			agents: {list: [{id: "main", default: true}, {id: "ops"}]},
			models: {providers: {local: {baseUrl: "http://127.0.0.1:9/v1"}, cloud: {baseUrl: "https://llm.example.com/v1"}}}}`))
	}
	record(filepath.Join(ts.dir, "tenants", "acme"),
		&store.Call{At: today.UnixMilli(), AgentID: "main", Kind: store.CallTurn, Provider: "local", Model: "m", Input: 100, Output: 10, CacheRead: 50, Cost: 1_250_000, Priced: true},
		&store.Call{At: today.AddDate(0, 0, -1).UnixMilli(), AgentID: "ops", Kind: store.CallCron, Provider: "local", Model: "m", Input: 7, Output: 3},
		&store.Call{At: today.AddDate(0, 0, -40).UnixMilli(), AgentID: "main", Kind: store.CallTurn, Provider: "local", Model: "m", Input: 1000, Output: 1000},
	)
	record(filepath.Join(ts.dir, "tenants", "beta"),
		&store.Call{At: today.UnixMilli(), AgentID: "main", Kind: store.CallTurn, Provider: "local", Model: "m", Input: 999_999, Output: 1, Cost: 9, Priced: true},
	)
	acme := dialTenant(t, url, "acme", "acme-token")
	type totals struct {
		Input, Output, CacheRead, CacheWrite, TotalTokens int64
		TotalCost                                         float64
		MissingCostEntries                                int64
	}
	var out struct {
		Days  int
		Daily []struct {
			Date string
			totals
		}
		Totals totals
	}
	mustRPC(t, acme, "usage.cost", map[string]any{}, &out)
	if want := (totals{100, 10, 50, 0, 160, 1.25, 0}); out.Totals != want || out.Days != 30 || len(out.Daily) != 1 || out.Daily[0].Date != today.Format(time.DateOnly) {
		t.Errorf("default agent, 30 days: %+v, want totals %+v over 30 days, today alone", out, want)
	}
	mustRPC(t, acme, "usage.cost", map[string]any{"agentScope": "all", "days": 2}, &out)
	if want := (totals{107, 13, 50, 0, 170, 1.25, 1}); out.Totals != want || out.Days != 2 || len(out.Daily) != 2 {
		t.Errorf("all agents, 2 days: %+v, want totals %+v over 2 days", out, want)
	}
	mustRPC(t, acme, "usage.cost", map[string]any{"agentScope": "all", "range": "all"}, &out)
	if out.Totals.Input != 1107 {
		t.Errorf("all time: input %d, want 1107", out.Totals.Input)
	}
	from := today.AddDate(0, 0, -1).Format(time.DateOnly)
	mustRPC(t, acme, "usage.cost", map[string]any{"agentId": "ops", "startDate": from, "endDate": from, "mode": "specific", "utcOffset": "UTC+5:30"}, &out)
	if out.Totals.Input != 7 || out.Days != 1 {
		t.Errorf("ops on one day: %+v", out)
	}
	beta := dialTenant(t, url, "beta", "beta-token")
	mustRPC(t, beta, "usage.cost", map[string]any{"agentScope": "all", "range": "all"}, &out)
	if out.Totals.Input != 999_999 || out.Totals.TotalCost != 0.000009 {
		t.Errorf("beta sees %+v, want its own call alone", out.Totals)
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"half a range", map[string]any{"startDate": "2026-01-01"}, "startDate and endDate must be provided together"},
		{"bad date", map[string]any{"startDate": "2026-02-30", "endDate": "2026-03-01"}, "invalid startDate: expected a valid YYYY-MM-DD calendar date"},
		{"reversed", map[string]any{"startDate": "2026-03-02", "endDate": "2026-03-01"}, "startDate must not be after endDate"},
		{"bad zone", map[string]any{"mode": "specific", "timeZone": "Mars/Olympus"}, "invalid timeZone: expected a valid IANA time zone"},
		{"bad offset", map[string]any{"mode": "specific", "utcOffset": "UTC+15"}, "invalid utcOffset: expected UTC-12:00 through UTC+14:00"},
		{"both scopes", map[string]any{"agentScope": "all", "agentId": "ops"}, "agentScope=all cannot be combined with agentId"},
		{"unknown agent", map[string]any{"agentId": "ghost"}, `unknown agent id "ghost"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, msg := rpc(t, acme, "usage.cost", tc.params); msg != tc.want {
				t.Errorf("error %q, want %q", msg, tc.want)
			}
		})
	}
	var status struct {
		Providers []struct{ Provider, Error string }
	}
	mustRPC(t, dialWS(t, url), "usage.status", nil, &status)
	if len(status.Providers) != 1 || status.Providers[0].Provider != "local" || status.Providers[0].Error != "Unsupported provider" {
		t.Errorf("usage.status %+v", status)
	}
	// A tenant's provider at a loopback address is removed by the
	// operator's ceiling (netguard), so the tenant cannot call it and
	// usage.status does not list it: the providers listed are those the
	// tenant's turns can reach.
	status.Providers = nil
	mustRPC(t, acme, "usage.status", nil, &status)
	if len(status.Providers) != 1 || status.Providers[0].Provider != "cloud" {
		t.Errorf("tenant usage.status %+v, want cloud alone", status)
	}
}
