package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"talon/internal/fakellm"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/internal/testtier"
)

// ledgerTenants is how many tenants TestLedgerAfterKill runs at once.
const ledgerTenants = 10

// TestLedgerAfterKill is issue 24's check on the real binary: ten
// tenants' turns, streamed and not, each a tool call then an answer, with
// talon serve killed -9 in the middle and started again. Afterwards each
// tenant's ledger holds exactly the calls whose answers its transcripts
// store — counted once, with the tokens the provider reported for them —
// every acknowledged turn's among them; and the provider answered no more
// calls than those plus the ones in flight at the kill. The fast tier
// runs 100 turns, the full one the 1,000.
func TestLedgerAfterKill(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		missing(t, "bwrap is not on PATH (apt-get install -y bubblewrap): a tenant's sessions run in it")
	}
	model, err := fakellm.Start(fakellm.Options{Reply: "noted", ToolCall: &fakellm.ToolCall{Name: "session_status", Arguments: "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	dir := t.TempDir()
	writeFileAt(t, filepath.Join(dir, "talon.json"), fmt.Sprintf(`{tenants: {network: {allowHosts: [%q]}}}`, strings.TrimPrefix(model.URL, "http://")))
	for i := range ledgerTenants {
		writeFileAt(t, filepath.Join(dir, "tenants", ledgerTenant(i), "talon.json"), fmt.Sprintf(`{
			gateway: {auth: {token: "ledger-%d"}},
			models: {providers: {fake: {baseUrl: %q, api: "openai-completions"}}},
			agents: {defaults: {model: "fake/%s"}}}`, i, model.BaseURL(), fakellm.Model))
	}
	perTenant := testtier.Rounds(t, 10, 100)
	acked := make([]atomic.Int64, ledgerTenants)

	// Half the turns, killed -9 while turns are in flight; then the rest.
	p := startTalon(t, dir)
	var killed atomic.Bool
	half := int64(ledgerTenants * perTenant / 2)
	var total atomic.Int64
	ledgerLoad(t, p.URL, perTenant, acked, &killed, func() {
		if total.Add(1) == half {
			killed.Store(true)
			if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("sending SIGKILL: %v", err)
			}
		}
	})
	if !killed.Load() {
		p.Stop(10 * time.Second)
		t.Fatalf("talon serve was not killed: only %d turns acknowledged of %d", total.Load(), half)
	}
	for done, _ := p.Exited(); !done; done, _ = p.Exited() {
		time.Sleep(10 * time.Millisecond)
	}
	p = startTalon(t, dir)
	killed.Store(false)
	ledgerLoad(t, p.URL, perTenant, acked, &killed, func() {})
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping talon serve: %v\n%s", err, p.Log)
	}

	var ledgerCalls, inAnswers int64
	for i := range ledgerTenants {
		calls := checkTenantLedger(t, filepath.Join(dir, "tenants", ledgerTenant(i), store.File), acked[i].Load())
		ledgerCalls += calls
		inAnswers += acked[i].Load()
	}
	reported, _, _ := model.Reported()
	t.Logf("%d turns acknowledged, %d calls in the ledgers, %d answered by the provider", inAnswers, ledgerCalls, reported)
	// At the kill each tenant's client had at most one call in flight,
	// answered by the provider and never stored.
	if ledgerCalls > reported || reported > ledgerCalls+ledgerTenants {
		t.Errorf("the ledgers hold %d calls; the provider answered %d (at most %d in flight at the kill)", ledgerCalls, reported, ledgerTenants)
	}
}

func ledgerTenant(i int) string { return fmt.Sprintf("ledger%d", i) }

// ledgerLoad sends each tenant's turns from its own client until every
// tenant has upto acknowledged or the server is gone after a kill; each
// acknowledgement calls onAck.
func ledgerLoad(t *testing.T, base string, upto int, acked []atomic.Int64, killed *atomic.Bool, onAck func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range ledgerTenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{}
			defer c.CloseIdleConnections()
			for n := acked[i].Load(); n < int64(upto); n = acked[i].Load() {
				err := ledgerTurn(ctx, c, base, i, n)
				if err != nil {
					if !killed.Load() {
						t.Errorf("tenant %d, turn %d: %v", i, n, err)
					}
					return
				}
				acked[i].Add(1)
				onAck()
			}
		}()
	}
	wg.Wait()
}

// ledgerTurn is one turn of tenant i, streamed every other time, on one of
// three sessions; an answer other than the model's is an error.
func ledgerTurn(ctx context.Context, c *http.Client, base string, i int, n int64) error {
	stream := n%2 == 0
	body, _ := json.Marshal(map[string]any{"model": "openclaw", "stream": stream,
		"messages": []any{map[string]string{"role": "user", "content": fmt.Sprintf("turn %d", n)}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", fmt.Sprintf("Bearer ledger-%d", i))
	req.Header.Set("X-Tenant-ID", ledgerTenant(i))
	req.Header.Set("X-OpenClaw-Session-Key", fmt.Sprintf("agent:main:openai-user:u%d", n%3))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte("noted")) {
		return fmt.Errorf("%d %s", resp.StatusCode, raw)
	}
	if stream && !bytes.Contains(raw, []byte("data: [DONE]")) {
		return fmt.Errorf("a stream cut short: %s", raw)
	}
	return nil
}

// checkTenantLedger compares a tenant's ledger with the answers its
// transcripts store: one row per answer, with that answer's tokens; at
// least two calls per acknowledged turn. It returns the ledger's calls.
func checkTenantLedger(t *testing.T, path string, acked int64) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tot, _, err := db.Usage(ctx, store.UsageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := db.ListSessions(ctx, "main", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var answers, prompt, completion int64
	for _, s := range sessions {
		recs, err := db.TranscriptRecords(ctx, s.Entry.SessionID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == store.KindMessage && r.Message.Role == llm.RoleAssistant && r.Message.Error == "" {
				answers++
				prompt += r.Usage.Input
				completion += r.Usage.Output
			}
		}
	}
	if tot.Calls != answers || tot.Input+tot.CacheRead+tot.CacheWrite != prompt || tot.Output != completion {
		t.Errorf("%s: the ledger has %d calls, %d prompt and %d completion tokens; the transcripts' answers %d, %d and %d",
			path, tot.Calls, tot.Input+tot.CacheRead+tot.CacheWrite, tot.Output, answers, prompt, completion)
	}
	if tot.Calls < 2*acked {
		t.Errorf("%s: %d calls in the ledger for %d acknowledged turns of two calls each", path, tot.Calls, acked)
	}
	return tot.Calls
}
