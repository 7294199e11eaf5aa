package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/budget"
	"talon/internal/store"
	"talon/protocol"
	"talon/protocol/client"
)

func budgetMonth() string { return budget.MonthKey(time.Now()) }

// TestBudget: a tenant's monthly budget lets the turn that crosses it
// complete and refuses the next before any model call — HTTP 402 (plain
// and streamed), BUDGET_EXCEEDED on chat.send and agent, a skipped cron
// run, a channel's reply — and fires its alert once. A tenant's usage.budget
// above the operator's is held to it; one below it is in force.
func TestBudget(t *testing.T) {
	model := newScriptedLLM(t) // every answer reports 10 + 5 tokens
	dir := t.TempDir()
	providers := `models:{providers:{fake:{baseUrl:"` + model.srv.URL + `/v1"}}},agents:{defaults:{model:"fake/scripted"}}`
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"root-token"}},
		tenants:{network:{allowHosts:["`+strings.TrimPrefix(model.srv.URL, "http://")+`"]},
			budget:{monthlyTokens:20, alertAt:0.5}, budgets:{beta:{monthlyTokens:1000}}},`+providers+`}`))
	// acme asks for far more than the operator grants; beta for less.
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway:{auth:{token:"acme-token"}},usage:{budget:{monthlyTokens:1000000, alertAt:1}},`+providers+`}`))
	writeFile(t, filepath.Join(dir, "tenants", "beta", "talon.json"), []byte(`{gateway:{auth:{token:"beta-token"}},usage:{budget:{monthlyTokens:10}},`+providers+`}`))
	ts := startServer(t, dir, nil)
	url := "ws" + strings.TrimPrefix(ts.url, "http")
	watcher := dialTenant(t, url, "acme", "acme-token")
	operator := dialTenant(t, url, "", "root-token")

	post := func(tenant, body string) reply {
		return ts.post(map[string]string{"Authorization": "Bearer " + tenant + "-token", "X-Tenant-ID": tenant}, body)
	}
	const turn = `{"model":"openclaw","user":"u1","messages":[{"role":"user","content":"work"}]}`
	for i, want := range []int{200, 200} { // 15 tokens, then 30: the second crosses 20
		model.push(scripted{Content: "done"})
		if rep := post("acme", turn); rep.status != want {
			t.Fatalf("acme turn %d: status %d, want %d: %s", i+1, rep.status, want, rep.body)
		}
	}
	calls := model.count()
	refusals := []struct {
		name string
		body string
	}{
		{"plain", turn},
		{"streamed", `{"model":"openclaw","user":"u1","stream":true,"messages":[{"role":"user","content":"work"}]}`},
	}
	for _, r := range refusals {
		t.Run("http "+r.name, func(t *testing.T) {
			rep := post("acme", r.body)
			var e struct {
				Error struct {
					Type, Code, Message string
					Details             map[string]any
				}
			}
			if err := json.Unmarshal([]byte(rep.body), &e); err != nil || rep.status != 402 {
				t.Fatalf("status %d body %s, want 402 JSON", rep.status, rep.body)
			}
			if e.Error.Type != "budget_exceeded" || !strings.Contains(e.Error.Message, "monthly usage budget reached: 30 tokens") ||
				e.Error.Details["monthlyTokens"] != float64(20) || e.Error.Details["usedTokens"] != float64(30) {
				t.Errorf("error %+v", e.Error)
			}
		})
	}
	acme := dialTenant(t, url, "acme", "acme-token")
	for _, m := range []struct{ method, key string }{{"chat.send", "sessionKey"}, {"agent", "sessionKey"}} {
		t.Run("ws "+m.method, func(t *testing.T) {
			_, err := callErr(acme, m.method, map[string]any{m.key: "main", "message": "work", "idempotencyKey": "k-" + m.method})
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeBudgetExceeded || !strings.Contains(pe.Message, "monthly usage budget reached") {
				t.Fatalf("%s: %v, want %s", m.method, err, protocol.CodeBudgetExceeded)
			}
		})
	}
	var st struct {
		Budget struct {
			MonthlyTokens int64
			AlertAt       float64
		}
		Used     struct{ Tokens int64 }
		Fraction float64
		Reached  bool
	}
	mustRPC(t, acme, "usage.budget", nil, &st)
	if st.Budget.MonthlyTokens != 20 || st.Budget.AlertAt != 0.5 || st.Used.Tokens != 30 || st.Fraction != 1.5 || !st.Reached {
		t.Errorf("usage.budget %+v, want 30 of the operator's 20 tokens, reached", st)
	}
	t.Run("cron", func(t *testing.T) {
		added := mustCall[map[string]any](t, acme, "cron.add", map[string]any{"name": "report",
			"schedule": map[string]any{"kind": "every", "everyMs": 3_600_000}, "payload": map[string]any{"kind": "agentTurn", "message": "report"}})
		id, _ := added["id"].(string)
		mustCall[map[string]any](t, acme, "cron.run", map[string]any{"id": id})
		type runs struct {
			Entries []struct{ Status, Error string }
		}
		var r runs
		waitFor(t, "the job's run", func() bool {
			r = mustCall[runs](t, acme, "cron.runs", map[string]any{"id": id})
			return len(r.Entries) == 1
		})
		if e := r.Entries[0]; e.Status != "skipped" || !strings.HasPrefix(e.Error, "budget-exceeded: monthly usage budget reached") {
			t.Errorf("cron run %+v, want skipped for the budget", e)
		}
	})
	t.Run("config.patch raising the budget", func(t *testing.T) {
		hash := mustCall[configSnapshot](t, acme, "config.get", nil).Hash
		pe := callFails(t, acme, "config.patch", map[string]any{"baseHash": hash, "raw": `{usage: {budget: {monthlyTokens: 21}}}`}, "invalid config: ")
		if !strings.Contains(pe.Message, "usage.budget.monthlyTokens: beyond the operator's ceiling for tenants: the operator's budget for this tenant is 20") {
			t.Errorf("config.patch: %s", pe.Message)
		}
	})
	t.Run("channel", func(t *testing.T) {
		ten, err := ts.srv.lookup("acme")
		if err != nil {
			t.Fatal(err)
		}
		reply, _, err := ts.srv.channelTurn(context.Background(), ten, "main", "agent:main:telegram:direct:42", "hello", nil, false, nil)
		if err != nil || !strings.HasPrefix(reply, "This assistant has used its monthly usage budget and cannot answer until ") {
			t.Errorf("channel reply %q, %v: want the budget's reply", reply, err)
		}
	})
	if n := model.count(); n != calls {
		t.Errorf("the model was called %d times after the budget was spent", n-calls)
	}

	// beta: its own 10 is in force under the operator's 1000.
	model.push(scripted{Content: "done"})
	if rep := post("beta", turn); rep.status != 200 {
		t.Fatalf("beta's first turn: %d %s", rep.status, rep.body)
	}
	if rep := post("beta", turn); rep.status != 402 {
		t.Errorf("beta's second turn: %d %s, want 402 (its own lower budget)", rep.status, rep.body)
	}

	// The alert fired once for acme, to acme's clients and, with its id,
	// to the operator's: a round trip after the last refusal orders any
	// later event before its answer.
	for _, c := range []struct {
		name   string
		cl     *client.Client
		tenant string
	}{{"tenant", watcher, ""}, {"operator", operator, "acme"}} {
		mustRPC(t, c.cl, "usage.status", nil, nil)
		var got []map[string]any
	drain:
		for {
			select {
			case f := <-c.cl.Events():
				var p map[string]any
				if f.Event == EventBudget && json.Unmarshal(f.Payload, &p) == nil && (c.tenant == "" || p["tenant"] == c.tenant) {
					got = append(got, p)
				}
			default:
				break drain
			}
		}
		if len(got) != 1 || got[0]["alertAt"] != 0.5 || got[0]["usedTokens"] != float64(15) {
			t.Errorf("%s saw the alerts %v, want one, at 15 of 20 tokens with alertAt 0.5 (the tenant's 1 held to it)", c.name, got)
		}
	}
	db, err := store.Open(filepath.Join(dir, "tenants", "acme", StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if first, err := db.MarkAlert(context.Background(), budgetMonth()); err != nil || first {
		t.Errorf("the month's alert is not recorded (first %v, err %v): a restart would send it again", first, err)
	}
}
