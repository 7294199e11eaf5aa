package api

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/store"
	"talon/internal/usage"
)

// TestUsage: a tenant reads its own usage ledger, in the JSON of talon
// usage; its token is refused another tenant's usage and the
// all-tenants view; the admin reads any tenant's and the all-tenants
// view, whose sum is the tenants'.
func TestUsage(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	acme, beta := e.createTenant(t, "acme"), e.createTenant(t, "beta")
	e.createTenant(t, "idle")
	at := time.Now().Add(-time.Hour).UnixMilli()
	record := func(id string, calls ...*store.Call) {
		db, err := store.Open(filepath.Join(e.state, "tenants", id, store.File))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.RecordCalls(context.Background(), calls...); err != nil {
			t.Fatal(err)
		}
	}
	record("acme",
		&store.Call{At: at, AgentID: "main", Kind: store.CallTurn, Provider: "p", Model: "m", Input: 10, Output: 2, Cost: 500_000, Priced: true},
		&store.Call{At: at, AgentID: "ops", Kind: store.CallCron, Provider: "p", Model: "m", Input: 5, Output: 1, CacheRead: 4, Cost: 250_000, Priced: true})
	record("beta", &store.Call{At: at, AgentID: "main", Kind: store.CallTurn, Provider: "q", Model: "n", Input: 100, Output: 7})

	acmeTotals := usage.Totals{Calls: 2, InputTokens: 15, OutputTokens: 3, CacheReadTokens: 4, TotalTokens: 22, CostUsd: 0.75}
	betaTotals := usage.Totals{Calls: 1, InputTokens: 100, OutputTokens: 7, TotalTokens: 107, UnpricedCalls: 1}
	get := func(t *testing.T, path, token string, want int, out any) []byte {
		t.Helper()
		resp, data := e.do(t, "GET", path, token, "", "")
		if resp.StatusCode != want {
			t.Fatalf("GET %s: status %d, want %d: %s", path, resp.StatusCode, want, data)
		}
		if out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				t.Fatalf("%v in %s", err, data)
			}
		}
		return data
	}

	t.Run("a tenant's own, by agent", func(t *testing.T) {
		var rep usage.Report
		get(t, "/api/tenants/acme/usage?by=agent", acme, http.StatusOK, &rep)
		want := []usage.Row{
			{Agent: "main", Totals: usage.Totals{Calls: 1, InputTokens: 10, OutputTokens: 2, TotalTokens: 12, CostUsd: 0.5}},
			{Agent: "ops", Totals: usage.Totals{Calls: 1, InputTokens: 5, OutputTokens: 1, CacheReadTokens: 4, TotalTokens: 10, CostUsd: 0.25}},
		}
		if diff := cmp.Diff(acmeTotals, rep.Totals); diff != "" {
			t.Errorf("totals (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, rep.Rows); diff != "" {
			t.Errorf("rows (-want +got):\n%s", diff)
		}
	})
	t.Run("since leaves older calls out", func(t *testing.T) {
		var rep usage.Report
		get(t, "/api/tenants/acme/usage?since=30m", acme, http.StatusOK, &rep)
		if rep.Totals != (usage.Totals{}) || rep.Rows != nil {
			t.Errorf("%+v; want nothing since 30 minutes ago", rep)
		}
	})

	refused := []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"another tenant's usage", "/api/tenants/beta/usage", acme, http.StatusForbidden, "forbidden"},
		{"another tenant's usage, by model", "/api/tenants/acme/usage?by=model", beta, http.StatusForbidden, "forbidden"},
		{"the all-tenants view with a tenant token", "/api/usage", acme, http.StatusForbidden, "forbidden"},
		{"no token", "/api/tenants/acme/usage", "", http.StatusUnauthorized, "unauthorized"},
		{"an unknown tenant", "/api/tenants/nope/usage", adminTok, http.StatusNotFound, "no_tenant"},
		{"an unknown grouping", "/api/tenants/acme/usage?by=session", acme, http.StatusBadRequest, "invalid_by"},
		{"a since that is neither a date nor a span", "/api/tenants/acme/usage?since=lately", acme, http.StatusBadRequest, "invalid_since"},
		{"rows in the all-tenants view", "/api/usage?by=agent", adminTok, http.StatusBadRequest, "invalid_by"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			data := get(t, tc.path, tc.token, tc.status, nil)
			if code, _ := errorCode(t, data); code != tc.code {
				t.Errorf("code %q, want %q: %s", code, tc.code, data)
			}
		})
	}

	t.Run("the admin reads any tenant's", func(t *testing.T) {
		var rep usage.Report
		get(t, "/api/tenants/beta/usage?by=model", adminTok, http.StatusOK, &rep)
		if rep.Totals != betaTotals || len(rep.Rows) != 1 || rep.Rows[0].Model != "q/n" {
			t.Errorf("%+v", rep)
		}
	})
	t.Run("the admin's all-tenants view", func(t *testing.T) {
		var rep usage.AllReport
		get(t, "/api/usage?since="+time.Now().AddDate(0, 0, -3).Format(time.DateOnly), adminTok, http.StatusOK, &rep)
		want := []usage.TenantRow{{Tenant: "acme", Totals: acmeTotals}, {Tenant: "beta", Totals: betaTotals}, {Tenant: "idle"}}
		if diff := cmp.Diff(want, rep.Tenants); diff != "" {
			t.Errorf("tenants (-want +got):\n%s", diff)
		}
		sum := usage.Totals{Calls: 3, InputTokens: 115, OutputTokens: 10, CacheReadTokens: 4, TotalTokens: 129, CostUsd: 0.75, UnpricedCalls: 1}
		if diff := cmp.Diff(sum, rep.Totals); diff != "" {
			t.Errorf("sum (-want +got):\n%s", diff)
		}
	})
}
