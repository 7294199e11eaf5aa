package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/fakellm"
	"talon/internal/llm"
	"talon/internal/store"
	"talon/internal/talonproc"
)

// The density test: many tenants on a gateway that may open few files.
const (
	densityTenants = 300
	densityFiles   = 256 // RLIMIT_NOFILE, hard and soft
	densityClients = 8
	densityIdle    = 2 * time.Second
	// densitySettle bounds the wait for the idle tenants to close.
	densitySettle = 30 * time.Second
	// densitySlack is what the descriptors open after the idle close may
	// exceed those before the first turn by: connections the runtime
	// keeps (the model's, the clients') come and go.
	densitySlack = 16
)

// TestDensity: densityTenants tenants, one turn each, on a gateway whose
// process may open densityFiles files — fewer than the tenants would hold
// if each kept its databases open — all succeed; once they idle past
// --tenant-idle the warm ones close and the descriptors return to where
// they were; an idle tenant's next turn works and lands in its session.
func TestDensity(t *testing.T) {
	needCommands(t, "prlimit")
	llm, err := fakellm.Start(fakellm.Options{Reply: "noted"})
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()
	dir := t.TempDir()
	writeDensityConfigs(t, dir, llm.URL)
	p, err := talonproc.Start(talonproc.Options{
		Bin: "prlimit", StateDir: dir, ReadyTimeout: readyTimeout,
		Env: cleanEnv("TALON_GATEWAY_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"),
		Args: func(port int) []string {
			return []string{fmt.Sprintf("--nofile=%d:%d", densityFiles, densityFiles), talonBin, "gateway",
				"--state-dir", dir, "--port", strconv.Itoa(port), "--tenant-idle", densityIdle.String()}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = p.Stop(shutdownTimeout)
		}
	}()
	tr := &http.Transport{MaxIdleConnsPerHost: densityClients}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	before := runtimeFigures(t, p.URL, true)

	failures := oneTurnEach(t, c, p.URL)
	if len(failures) > 0 {
		t.Fatalf("%d of %d first turns failed; the first: %s\nlog:\n%s", len(failures), densityTenants, failures[0], tail(p.Log.String(), 4000))
	}
	busy := runtimeFigures(t, p.URL, false)
	t.Logf("after %d first turns: %d warm, %d files open (before: %d)", densityTenants, busy.Tenants.Warm, busy.OpenFiles, before.OpenFiles)

	tr.CloseIdleConnections()
	deadline := time.Now().Add(densitySettle)
	idle := runtimeFigures(t, p.URL, true)
	for idle.Tenants.Warm > 0 && time.Now().Before(deadline) {
		time.Sleep(densityIdle / 4)
		idle = runtimeFigures(t, p.URL, true)
	}
	if idle.Tenants.Warm != 0 {
		t.Fatalf("%d tenants still warm %v after they idled (--tenant-idle %v)", idle.Tenants.Warm, densitySettle, densityIdle)
	}
	if idle.OpenFiles > before.OpenFiles+densitySlack {
		t.Errorf("%d files open once every tenant idled, %d before the first turn", idle.OpenFiles, before.OpenFiles)
	}
	t.Logf("idle: %d tenants known, %d files open, heap %+.1f KB a tenant over the empty gateway's",
		idle.Tenants.Known, idle.OpenFiles, float64(idle.HeapBytes-before.HeapBytes)/densityTenants/1024)

	// A tenant closed by idleness answers its next turn in its session.
	if err := densityTurn(context.Background(), c, p.URL, "t7", "and again"); err != nil {
		t.Fatalf("t7's turn after it idled: %v", err)
	}
	stopped = true
	if err := p.Stop(shutdownTimeout); err != nil {
		t.Fatalf("%v; its log:\n%s", err, p.Log)
	}
	checkTwoTurns(t, filepath.Join(dir, "tenants", "t7", store.File))
}

// writeDensityConfigs writes the operator's config (a token, the fake
// model, which tenants may reach) and densityTenants tenants t0… each
// with its own token.
func writeDensityConfigs(t *testing.T, dir, llmURL string) {
	t.Helper()
	type obj = map[string]any
	providers := obj{"fake": obj{"baseUrl": llmURL + "/v1", "api": "openai-completions"}}
	writeJSONFile(t, filepath.Join(dir, "talon.json"), obj{
		"gateway": obj{"auth": obj{"token": defaultToken}},
		"tenants": obj{"network": obj{"allowHosts": []string{strings.TrimPrefix(llmURL, "http://")}}},
		"models":  obj{"providers": providers},
		"agents":  obj{"defaults": obj{"model": "fake/" + fakellm.Model}},
	})
	for i := range densityTenants {
		id := fmt.Sprintf("t%d", i)
		writeJSONFile(t, filepath.Join(dir, "tenants", id, "talon.json"), obj{
			"gateway": obj{"auth": obj{"token": "tok-" + id}},
			"models":  obj{"providers": providers},
			"agents":  obj{"defaults": obj{"model": "fake/" + fakellm.Model}},
		})
	}
}

// oneTurnEach gives every tenant one turn from densityClients clients and
// returns what failed.
func oneTurnEach(t *testing.T, c *http.Client, base string) []string {
	t.Helper()
	ids := make(chan string)
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	for range densityClients {
		wg.Go(func() {
			for id := range ids {
				if err := densityTurn(context.Background(), c, base, id, "hello"); err != nil {
					mu.Lock()
					failures = append(failures, id+": "+err.Error())
					mu.Unlock()
				}
			}
		})
	}
	for i := range densityTenants {
		ids <- fmt.Sprintf("t%d", i)
	}
	close(ids)
	wg.Wait()
	return failures
}

// densityTurn posts one turn to tenant id's session "u".
func densityTurn(ctx context.Context, c *http.Client, base, id, text string) error {
	body, _ := json.Marshal(map[string]any{"model": "openclaw", "user": "u",
		"messages": []any{map[string]string{"role": "user", "content": text}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok-"+id)
	req.Header.Set("X-Tenant-ID", id)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "noted") {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return nil
}

// figures is GET /debug/runtime's answer.
type figures struct {
	Goroutines int   `json:"goroutines"`
	HeapBytes  int64 `json:"heapBytes"`
	OpenFiles  int   `json:"openFiles"`
	Tenants    struct {
		Known int `json:"known"`
		Warm  int `json:"warm"`
	} `json:"tenants"`
}

// runtimeFigures asks the gateway for its figures, after a GC when gc.
func runtimeFigures(t *testing.T, base string, gc bool) figures {
	t.Helper()
	url := base + "/debug/runtime"
	if gc {
		url += "?gc=1"
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+defaultToken)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET /debug/runtime: %v", err)
	}
	defer resp.Body.Close()
	var f figures
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/runtime: status %d, %v", resp.StatusCode, err)
	}
	return f
}

// checkTwoTurns checks that the store at path holds one session with two
// turns: the one before the tenant closed and the one after.
func checkTwoTurns(t *testing.T, path string) {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := db.GetSession(context.Background(), "main", "agent:main:openai-user:u")
	if err != nil {
		t.Fatalf("the session of the turns: %v", err)
	}
	msgs, err := db.Transcript(context.Background(), e.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, m := range msgs {
		if m.Role == llm.RoleUser || m.Role == llm.RoleAssistant {
			said = append(said, string(m.Role)+": "+m.Content)
		}
	}
	want := []string{"user: hello", "assistant: noted", "user: and again", "assistant: noted"}
	if strings.Join(said, "|") != strings.Join(want, "|") {
		t.Errorf("the session holds %q, want %q", said, want)
	}
}
