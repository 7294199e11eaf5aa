package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"talon/internal/tools"
	"talon/protocol"
	"talon/protocol/client"
)

// denseServer starts a gateway over n tenants t0…t{n-1}, each with its
// own token ("tok-tN") and the fake model, which the operator's ceiling
// lets them reach.
func denseServer(t *testing.T, n int, set func(*Options)) (*testServer, *scriptedLLM) {
	t.Helper()
	model := newScriptedLLM(t)
	dir := t.TempDir()
	providers := `models:{providers:{fake:{baseUrl:"` + model.srv.URL + `/v1"}}},`
	ceiling := `tenants:{network:{allowHosts:["` + strings.TrimPrefix(model.srv.URL, "http://") + `"]}},`
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"root-token"}},`+ceiling+providers+`agents:{defaults:{model:"fake/scripted"}}}`))
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		writeFile(t, filepath.Join(dir, "tenants", id, "talon.json"), []byte(`{gateway:{auth:{token:"tok-`+id+`"}},`+providers+`agents:{defaults:{model:"fake/scripted"}}}`))
	}
	return startServerWith(t, dir, nil, set), model
}

// turn posts one message to tenant id's session "u".
func (ts *testServer) turn(model *scriptedLLM, id, text string) reply {
	ts.t.Helper()
	model.push(scripted{Content: "ok " + text})
	return ts.post(map[string]string{"Authorization": "Bearer tok-" + id, "X-Tenant-ID": id},
		`{"model":"openclaw","user":"u","messages":[{"role":"user","content":"`+text+`"}]}`)
}

// tenantFiles counts the process's descriptors on files of tenant id.
func (ts *testServer) tenantFiles(t *testing.T, id string) int {
	t.Helper()
	dir := filepath.Join(ts.dir, "tenants", id) + "/"
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, dir) {
			n++
		}
	}
	return n
}

// TestWarmIdle: a tenant idle past the timeout has its files closed and
// its record kept; its next turn opens it again and sees its history.
func TestWarmIdle(t *testing.T) {
	ts, model := denseServer(t, 3, func(o *Options) { o.TenantIdle = time.Hour; o.SyncWindow = time.Hour })
	for i := range 3 {
		if rep := ts.turn(model, fmt.Sprintf("t%d", i), "first"); rep.status != 200 {
			t.Fatalf("t%d: %d %s", i, rep.status, rep.body)
		}
	}
	if n := ts.srv.warm.len(); n != 3 {
		t.Fatalf("warm = %d after three turns, want 3", n)
	}
	ts.srv.sweep(time.Now().Add(30 * time.Minute))
	if n := ts.srv.warm.len(); n != 3 {
		t.Fatalf("warm = %d before the timeout, want 3", n)
	}
	ts.srv.sweep(time.Now().Add(2 * time.Hour))
	if n := ts.srv.warm.len(); n != 0 {
		t.Fatalf("warm = %d after the timeout, want 0", n)
	}
	for i := range 3 {
		if n := ts.tenantFiles(t, fmt.Sprintf("t%d", i)); n != 0 {
			t.Errorf("t%d has %d files open after it idled", i, n)
		}
	}
	if _, err := ts.srv.lookup("t0"); err != nil {
		t.Fatal(err)
	}
	n := model.count()
	if rep := ts.turn(model, "t0", "second"); rep.status != 200 || rep.content != "ok second" {
		t.Fatalf("the turn after idling: %d %s", rep.status, rep.body)
	}
	if req := string(model.request(n + 1)); !strings.Contains(req, "first") || !strings.Contains(req, "ok first") {
		t.Errorf("the turn after idling lost the history: %s", req)
	}
	if got := ts.srv.warm.len(); got != 1 {
		t.Errorf("warm = %d, want 1", got)
	}
}

// TestWarmBound: at MaxWarmTenants the least recently used closes for
// the next; every turn is served and history survives.
func TestWarmBound(t *testing.T) {
	ts, model := denseServer(t, 5, func(o *Options) { o.MaxWarmTenants = 2 })
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		if rep := ts.turn(model, id, "hello "+id); rep.status != 200 {
			t.Fatalf("%s: %d %s", id, rep.status, rep.body)
		}
		if n := ts.srv.warm.len(); n > 2 {
			t.Fatalf("warm = %d after %s, bound 2", n, id)
		}
	}
	for _, id := range []string{"t0", "t1", "t2"} {
		if n := ts.tenantFiles(t, id); n != 0 {
			t.Errorf("%s, least recently used, has %d files open", id, n)
		}
	}
	if n := ts.tenantFiles(t, "t4"); n == 0 {
		t.Error("t4, just used, has no file open")
	}
	n := model.count()
	if rep := ts.turn(model, "t0", "again"); rep.status != 200 {
		t.Fatalf("t0 again: %d %s", rep.status, rep.body)
	}
	if req := string(model.request(n + 1)); !strings.Contains(req, "hello t0") {
		t.Errorf("t0 reopened without its history: %s", req)
	}
}

// TestWarmKeeps: what keeps a tenant warm past the idle timeout and out
// of the LRU's reach, and that it closes once that ends.
func TestWarmKeeps(t *testing.T) {
	cases := []struct {
		name string
		// hold starts what keeps t0 warm and returns what ends it.
		hold func(t *testing.T, ts *testServer, model *scriptedLLM) (end func())
	}{
		{"a WebSocket client", func(t *testing.T, ts *testServer, _ *scriptedLLM) func() {
			c := dialTenant(t, wsURL(ts), "t0", "tok-t0")
			return func() { c.Close() }
		}},
		{"a run in flight", func(t *testing.T, ts *testServer, model *scriptedLLM) func() {
			started := make(chan struct{})
			model.mu.Lock()
			model.block = started
			model.mu.Unlock()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/chat/completions",
					strings.NewReader(`{"model":"openclaw","user":"u","messages":[{"role":"user","content":"long"}]}`))
				req.Header.Set("Authorization", "Bearer tok-t0")
				req.Header.Set("X-Tenant-ID", "t0")
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					body, _ := readBody(resp)
					err = fmt.Errorf("status %d: %s", resp.StatusCode, body)
				}
				select {
				case <-started:
				default:
					t.Errorf("the run ended before the model was asked: %v", err)
					close(started)
				}
			}()
			<-started
			return func() { cancel(); <-done }
		}},
		{"a background command", func(t *testing.T, ts *testServer, model *scriptedLLM) func() {
			needBwrap(t)
			var call scripted
			call.ToolCalls = append(call.ToolCalls, struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}{"exec", json.RawMessage(`{"command":"sleep 300","background":true}`)})
			model.push(call)
			if rep := ts.turn(model, "t0", "start it"); rep.status != 200 {
				t.Fatalf("starting the command: %d %s", rep.status, rep.body)
			}
			unpinned(t, ts, "t0")
			return func() {
				for _, tool := range ts.srv.tools.All() {
					if f, ok := tool.(tools.Forgetter); ok {
						f.Forget(filepath.Join(ts.dir, "tenants", "t0"))
					}
				}
			}
		}},
		{"a cron job due within a minute", func(t *testing.T, ts *testServer, _ *scriptedLLM) func() {
			c := dialTenant(t, wsURL(ts), "t0", "tok-t0")
			job := mustCall[map[string]any](t, c, "cron.add", map[string]any{"name": "soon",
				"schedule": map[string]any{"kind": "every", "everyMs": 50 * 1000},
				"payload":  map[string]any{"kind": "agentTurn", "message": "hi"}})
			c.Close()
			unpinned(t, ts, "t0")
			return func() {
				c := dialTenant(t, wsURL(ts), "t0", "tok-t0")
				defer c.Close()
				mustCall[map[string]any](t, c, "cron.remove", map[string]any{"id": job["id"]})
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, model := denseServer(t, 2, func(o *Options) { o.TenantIdle = time.Hour; o.MaxWarmTenants = 1 })
			ts.srv.warm.wait = 50 * time.Millisecond
			if rep := ts.turn(model, "t0", "first"); rep.status != 200 {
				t.Fatalf("t0: %d %s", rep.status, rep.body)
			}
			end := tc.hold(t, ts, model)
			later := time.Now().Add(2 * time.Hour)
			ts.srv.sweep(later)
			if ts.tenantFiles(t, "t0") == 0 {
				t.Fatal("t0 closed while it was held")
			}
			// At the bound with t0 held, t1 is refused with a clear 503.
			rep := ts.turn(model, "t1", "hi")
			if rep.status != http.StatusServiceUnavailable || !strings.Contains(rep.body, "retry") {
				t.Fatalf("t1 while t0 holds the only place: %d %s, want 503", rep.status, rep.body)
			}
			model.mu.Lock()
			model.queue = nil // the refused turn's answer was never asked for
			model.mu.Unlock()
			// Over WebSocket the refusal is UNAVAILABLE, retryable.
			if _, err := client.Dial(context.Background(), wsURL(ts), client.Options{Tenant: "t1", Token: "tok-t1"}); err == nil ||
				!strings.Contains(err.Error(), protocol.CodeUnavailable) || !strings.Contains(err.Error(), "retry") {
				t.Fatalf("a WebSocket client of t1 while t0 holds the only place: %v, want UNAVAILABLE", err)
			}
			end()
			unpinned(t, ts, "t0")
			ts.srv.sweep(time.Now().Add(2 * time.Hour))
			if n := ts.tenantFiles(t, "t0"); n != 0 {
				t.Errorf("t0 still has %d files open once released", n)
			}
			if rep := ts.turn(model, "t1", "hi"); rep.status != 200 {
				t.Errorf("t1 once t0 let go: %d %s", rep.status, rep.body)
			}
		})
	}
}

// TestWarmCronWake: a tenant whose cron job is due later than the
// horizon closes, leaves the scheduler, and its wake timer gives it back.
func TestWarmCronWake(t *testing.T) {
	ts, _ := denseServer(t, 1, func(o *Options) { o.TenantIdle = time.Hour })
	c := dialTenant(t, wsURL(ts), "t0", "tok-t0")
	mustCall[map[string]any](t, c, "cron.add", map[string]any{"name": "daily",
		"schedule": map[string]any{"kind": "every", "everyMs": 24 * 3600 * 1000},
		"payload":  map[string]any{"kind": "agentTurn", "message": "hi"}})
	c.Close()
	unpinned(t, ts, "t0")
	before, err := ts.srv.cron.Status("t0")
	if err != nil || before.NextWakeAtMs == nil {
		t.Fatalf("t0's cron status: %+v, %v", before, err)
	}
	ts.srv.sweep(time.Now().Add(2 * time.Hour))
	if n := ts.srv.warm.len(); n != 0 {
		t.Fatalf("warm = %d, want t0 closed", n)
	}
	if _, err := ts.srv.cron.Status("t0"); err == nil {
		t.Fatal("the scheduler still has t0's store after it closed")
	}
	tn, _ := ts.srv.lookup("t0")
	tn.mu.Lock()
	armed := tn.wake != nil
	tn.mu.Unlock()
	if !armed {
		t.Fatal("no wake timer for t0's next job")
	}
	ts.srv.wakeTenant(tn) // what the timer does when it fires
	st, err := ts.srv.cron.Status("t0")
	if err != nil || st.Jobs != 1 || st.NextWakeAtMs == nil || *st.NextWakeAtMs != *before.NextWakeAtMs {
		t.Fatalf("after the wake the scheduler has %+v, %v; want t0's job, due at %d as before", st, err, *before.NextWakeAtMs)
	}
}

// TestWarmOutOfFiles: a tenant that cannot open for want of descriptors
// gets a 503 with Retry-After and is left closed; the next request, with
// descriptors back, opens it whole.
func TestWarmOutOfFiles(t *testing.T) {
	ts, model := denseServer(t, 1, nil)
	// A first request opens the connection the next ones reuse: none
	// needs a descriptor to reach the gateway.
	if rep := ts.post(map[string]string{"Authorization": "Bearer root-token"}, `{"model":"openclaw","messages":[{"role":"user","content":"x"}]}`); rep.status == 0 {
		t.Fatal("no answer")
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	open, err := openFiles()
	if err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(open + 3) // the config reads, the store cannot open
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Fatal(err)
		}
	}
	defer restore()
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"openclaw","user":"u","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer tok-t0")
	req.Header.Set("X-Tenant-ID", "t0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := readBody(resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("out of descriptors: %d (Retry-After %q) %s; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := ts.tenantFiles(t, "t0"); n != 0 || ts.srv.warm.len() != 0 {
		t.Fatalf("the refused tenant was left half open: %d files, %d warm", n, ts.srv.warm.len())
	}
	if rep := ts.turn(model, "t0", "hi"); rep.status != 200 || rep.content != "ok hi" {
		t.Fatalf("the retry: %d %s", rep.status, rep.body)
	}
}

// unpinned waits until nothing pins tenant id: a closed connection lets
// go of it when its server side ends.
func unpinned(t *testing.T, ts *testServer, id string) {
	t.Helper()
	tn, err := ts.srv.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, id+" to be let go", func() bool {
		tn.mu.Lock()
		defer tn.mu.Unlock()
		return tn.pins == 0
	})
}

// wsURL is the server's WebSocket URL.
func wsURL(ts *testServer) string { return "ws" + strings.TrimPrefix(ts.url, "http") }

// TestWarmFigures holds filesPerTenant to what a tenant that has talked
// really keeps open, and that an idle one keeps none; it logs the heap
// of each (go test -v -run TestWarmFigures).
func TestWarmFigures(t *testing.T) {
	const n = 50
	ts, model := denseServer(t, n, func(o *Options) { o.TenantIdle = time.Hour })
	heap := func() float64 {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		return float64(m.HeapAlloc)
	}
	files := func() float64 {
		n, err := openFiles()
		if err != nil {
			t.Fatal(err)
		}
		return float64(n)
	}
	if rep := ts.post(map[string]string{"Authorization": "Bearer root-token"}, `{"model":"openclaw","messages":[{"role":"user","content":"x"}]}`); rep.status == 0 {
		t.Fatal("no answer")
	}
	f0, h0 := files(), heap()
	for i := range n {
		if rep := ts.turn(model, fmt.Sprintf("t%d", i), "hi"); rep.status != 200 {
			t.Fatalf("t%d: %d %s", i, rep.status, rep.body)
		}
	}
	f1, h1 := files(), heap()
	warmTurn := medianTurn(t, ts, model, n)
	ts.srv.sweep(time.Now().Add(2 * time.Hour))
	model.mu.Lock()
	model.requests = nil // the fake model's log is not the gateway's
	model.mu.Unlock()
	f2, h2 := files(), heap()
	coldTurn := medianTurn(t, ts, model, n)
	warmFiles, idleFiles := (f1-f0)/n, (f2-f0)/n
	t.Logf("a warm tenant: %.2f files, %.1f KB of heap; an idle one: %.2f files, %.2f KB", warmFiles, (h1-h0)/n/1024, idleFiles, (h2-h0)/n/1024)
	t.Logf("a turn: %v warm, %v the first after closing (p50)", warmTurn, coldTurn)
	if warmFiles > filesPerTenant+0.5 {
		t.Errorf("a warm tenant holds %.2f files, filesPerTenant says %d", warmFiles, filesPerTenant)
	}
	if idleFiles > 0.1 {
		t.Errorf("an idle tenant holds %.2f files, want none", idleFiles)
	}
}

// medianTurn is the median time of a turn of each of tenants t0… in turn.
func medianTurn(t *testing.T, ts *testServer, model *scriptedLLM, n int) time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		if rep := ts.turn(model, fmt.Sprintf("t%d", i), "again"); rep.status != 200 {
			t.Fatalf("t%d: %d %s", i, rep.status, rep.body)
		}
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	return took[n/2]
}

// TestWarmBoundConcurrent: many clients over more tenants than may be
// warm; every turn is served and the bound holds (run it with -race).
func TestWarmBoundConcurrent(t *testing.T) {
	const tenants, clients, turns = 10, 8, 12
	ts, model := denseServer(t, tenants, func(o *Options) { o.MaxWarmTenants = 3 })
	for range clients * turns {
		model.push(scripted{Content: "ok"})
	}
	var wg sync.WaitGroup
	errs := make(chan string, clients*turns)
	for c := range clients {
		wg.Go(func() {
			for i := range turns {
				id := fmt.Sprintf("t%d", (c*turns+i)%tenants)
				rep := ts.post(map[string]string{"Authorization": "Bearer tok-" + id, "X-Tenant-ID": id},
					`{"model":"openclaw","user":"u","messages":[{"role":"user","content":"hi"}]}`)
				if rep.status != 200 {
					errs <- fmt.Sprintf("%s: %d %s", id, rep.status, rep.body)
				}
				if n := ts.srv.warm.len(); n > 3 {
					errs <- fmt.Sprintf("%d warm, bound 3", n)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestWarmWrongSecretOpensNothing: a client without a tenant's secret,
// or knocking where the tenant takes nothing, does not make the gateway
// open it (and close another for room).
func TestWarmWrongSecretOpensNothing(t *testing.T) {
	ts, _ := denseServer(t, 1, nil)
	rep := ts.post(map[string]string{"Authorization": "Bearer tok-wrong", "X-Tenant-ID": "t0"},
		`{"model":"openclaw","user":"u","messages":[{"role":"user","content":"hi"}]}`)
	if rep.status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s", rep.status, rep.body)
	}
	if _, err := client.Dial(context.Background(), wsURL(ts), client.Options{Tenant: "t0", Token: "tok-wrong"}); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("WebSocket with a wrong token: %v", err)
	}
	// Nor does a hook request to a tenant whose hooks are off.
	req, _ := http.NewRequest(http.MethodPost, ts.url+"/hooks/t0/hooks/wake", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := readBody(resp); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a hook of a tenant without hooks: %d %s", resp.StatusCode, body)
	}
	if n, files := ts.srv.warm.len(), ts.tenantFiles(t, "t0"); n != 0 || files != 0 {
		t.Errorf("after refused clients: %d warm, %d of t0's files open; want none", n, files)
	}
}

// TestWarmHeartbeatKept: a tenant whose heartbeat is due later than the
// horizon closes with its heartbeat still scheduled at the same time,
// and keeps that time when it opens again (it is not pushed back by an
// opening, which would keep it from ever running).
func TestWarmHeartbeatKept(t *testing.T) {
	ts, model := denseServer(t, 1, func(o *Options) { o.TenantIdle = time.Hour })
	writeFile(t, filepath.Join(ts.dir, "tenants", "t0", "talon.json"), []byte(`{gateway:{auth:{token:"tok-t0"}},`+
		`models:{providers:{fake:{baseUrl:"`+model.srv.URL+`/v1"}}},agents:{defaults:{model:"fake/scripted",heartbeat:{every:"6h"}}}}`))
	if rep := ts.turn(model, "t0", "hi"); rep.status != 200 {
		t.Fatalf("t0: %d %s", rep.status, rep.body)
	}
	tn, _ := ts.srv.lookup("t0")
	next := func() time.Time {
		_, at, _ := ts.srv.nextWork(tn)
		return at
	}
	before := next()
	if before.IsZero() {
		t.Fatal("no heartbeat scheduled for t0")
	}
	ts.srv.sweep(time.Now().Add(2 * time.Hour))
	if ts.srv.warm.len() != 0 {
		t.Fatal("t0, its heartbeat hours away, did not close")
	}
	if got := next(); !got.Equal(before) {
		t.Fatalf("closed, its heartbeat is at %v, want %v", got, before)
	}
	ts.srv.wakeTenant(tn)
	if got := next(); !got.Equal(before) {
		t.Errorf("opened again, its heartbeat is at %v, want %v", got, before)
	}
	// Due within the horizon (a minute), it stays open; due later, not.
	ts.srv.sweep(before.Add(-30 * time.Second))
	if ts.srv.warm.len() != 1 {
		t.Error("t0 closed with its heartbeat due within a minute")
	}
	ts.srv.sweep(before.Add(-5 * time.Minute))
	if ts.srv.warm.len() != 0 {
		t.Error("t0 stayed open with its heartbeat 5 minutes away")
	}
}

// TestStartServesWhileLoading: the gateway serves before the start-up has
// loaded the tenants with cron work (it may have thousands to open), a
// tenant asked for meanwhile is served, and Shutdown waits for the
// loading to stop.
func TestStartServesWhileLoading(t *testing.T) {
	model := newScriptedLLM(t)
	dir := t.TempDir()
	providers := `models:{providers:{fake:{baseUrl:"` + model.srv.URL + `/v1"}}},`
	ceiling := `tenants:{network:{allowHosts:["` + strings.TrimPrefix(model.srv.URL, "http://") + `"]}},`
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"root-token"}},`+ceiling+providers+`agents:{defaults:{model:"fake/scripted"}}}`))
	for _, id := range []string{"t0", "t1"} {
		writeFile(t, filepath.Join(dir, "tenants", id, "talon.json"), []byte(`{gateway:{auth:{token:"tok-`+id+`"}},`+providers+
			`agents:{defaults:{model:"fake/scripted",heartbeat:{every:"6h"}}}}`))
	}
	loading, release := make(chan string, 2), make(chan struct{})
	testHookLoading = func(id string) {
		loading <- id
		<-release
	}
	defer func() { testHookLoading = nil }()
	ts := startServer(t, dir, nil)
	first := <-loading // the loading holds before its first tenant
	select {
	case <-ts.srv.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway is not ready while the start-up loads tenants")
	}
	if rep := ts.turn(model, "t1", "hi"); rep.status != 200 || rep.content != "ok hi" {
		t.Fatalf("a tenant asked for while %s loads: %d %s", first, rep.status, rep.body)
	}
	stopped := make(chan struct{})
	go func() { ts.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Shutdown returned while the start-up's loading still ran")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
}
