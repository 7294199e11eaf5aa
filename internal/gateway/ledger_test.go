package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"talon/internal/fakellm"
	"talon/internal/store"
	"talon/internal/testtier"
)

// TestLedgerSumsMatchTheProvider is issue 24's check: across ten tenants'
// turns, streamed and not, each with a tool call, the usage ledgers add
// up to exactly what the provider reported, call for call. The full tier
// runs the 1,000 turns.
func TestLedgerSumsMatchTheProvider(t *testing.T) {
	needBwrap(t) // tenants' sessions run sandboxed
	model, err := fakellm.Start(fakellm.Options{Reply: "noted", ToolCall: &fakellm.ToolCall{Name: "session_status", Arguments: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	ts, _ := startWS(t, `,tenants: {network: {allowHosts: ["`+strings.TrimPrefix(model.URL, "http://")+`"]}}`)
	const tenants = 10
	perTenant := testtier.Rounds(t, 5, 100)
	for i := range tenants {
		writeFile(t, filepath.Join(ts.dir, "tenants", fmt.Sprintf("t%d", i), "talon.json"), []byte(fmt.Sprintf(`{
			gateway: {auth: {token: "ledger-token-%d"}},
			models: {providers: {fake: {baseUrl: %q, api: "openai-completions"}}},
			agents: {defaults: {model: "fake/%s"}}}`, i, model.BaseURL(), fakellm.Model)))
	}
	var wg sync.WaitGroup
	errs := make(chan string, tenants)
	for i := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := map[string]string{"Authorization": fmt.Sprintf("Bearer ledger-token-%d", i), "X-Tenant-ID": fmt.Sprintf("t%d", i)}
			for n := range perTenant {
				h["X-OpenClaw-Session-Key"] = fmt.Sprintf("agent:main:openai-user:u%d", n%3)
				body := fmt.Sprintf(`{"model":"openclaw","stream":%v,"messages":[{"role":"user","content":"turn %d"}]}`, n%2 == 0, n)
				if rep := ts.post(h, body); rep.status != 200 || rep.content != "noted" {
					errs <- fmt.Sprintf("tenant t%d turn %d: %d %q %s", i, n, rep.status, rep.content, rep.body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	var calls, prompt, completion int64
	for i := range tenants {
		tn, err := ts.srv.lookup(fmt.Sprintf("t%d", i))
		if err != nil {
			t.Fatal(err)
		}
		tot, _, err := tn.store.Usage(context.Background(), store.UsageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if tot.Calls != int64(2*perTenant) {
			t.Errorf("tenant t%d: %d calls in its ledger, want %d (a tool call and an answer a turn)", i, tot.Calls, 2*perTenant)
		}
		calls += tot.Calls
		prompt += tot.Input + tot.CacheRead + tot.CacheWrite
		completion += tot.Output
	}
	rc, rp, rco := model.Reported()
	t.Logf("%d turns: the provider reported %d calls, %d prompt and %d completion tokens", tenants*perTenant, rc, rp, rco)
	if calls != rc || prompt != rp || completion != rco {
		t.Errorf("ledgers: %d calls, %d prompt and %d completion tokens; the provider reported %d, %d and %d", calls, prompt, completion, rc, rp, rco)
	}
}
