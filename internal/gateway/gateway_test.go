package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/llm"
	"talon/internal/store"
)

func fakeModelConfig(model *scriptedLLM, extra string) string {
	return `{models:{providers:{fake:{baseUrl:"` + model.srv.URL + `/v1"}}},agents:{defaults:{model:"fake/scripted"}` + extra + `}}`
}

// TestAbort: when the client goes away mid-run, the model call is
// cancelled, the user's message stays in the transcript and a record says
// the turn was aborted.
func TestAbort(t *testing.T) {
	model := newScriptedLLM(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(fakeModelConfig(model, "")))
	ts := startServer(t, dir, nil)
	started := make(chan struct{})
	model.mu.Lock()
	model.block = started
	model.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/chat/completions",
			strings.NewReader(`{"model":"openclaw","stream":true,"user":"abort","messages":[{"role":"user","content":"long task"}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = readBody(resp)
		}
		done <- err
	}()
	<-started
	cancel()
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for {
		model.mu.Lock()
		n := model.cancelled
		model.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the model call was not cancelled after the client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.stop()
	db, err := store.Open(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := db.GetSession(context.Background(), "main", "agent:main:openai-user:abort")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.Transcript(context.Background(), e.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The user's message, then the record of the abort keeping what the
	// model had streamed: "thinking", or nothing when the client left
	// before that chunk came through (TestClientDisconnect waits for it).
	if len(msgs) != 2 || msgs[0].Content != "long task" ||
		msgs[1].Role != llm.RoleAssistant || msgs[1].StopReason != llm.StopAborted ||
		(msgs[1].Content != "thinking" && msgs[1].Content != "") ||
		!strings.Contains(msgs[1].Error, "context canceled") {
		t.Errorf("transcript = %+v, want the user message and an aborted record", msgs)
	}
}

// TestShutdownFinishesRuns: Shutdown waits for a run in flight, which
// completes normally.
func TestShutdownFinishesRuns(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"finished"},"finish_reason":"stop"}]}`))
	}))
	defer slow.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{models:{providers:{fake:{baseUrl:"`+slow.URL+`/v1"}}},agents:{defaults:{model:"fake/slow"}}}`))
	ts := startServer(t, dir, nil)
	got := make(chan reply, 1)
	go func() { got <- ts.post(nil, `{"model":"openclaw","messages":[{"role":"user","content":"hi"}]}`) }()
	<-arrived
	stopped := make(chan struct{})
	go func() { ts.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("shutdown returned while a run was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	rep := <-got
	<-stopped
	if rep.status != 200 || rep.content != "finished" {
		t.Errorf("in-flight run: status %d content %q body %s", rep.status, rep.content, rep.body)
	}
}

// TestTenantIsolation: tenants have their own tokens, sessions and files;
// every way across fails, and an unknown tenant looks like a bad token. A
// tenant config written by hand beyond the operator's ceiling is held to
// it: its workspaces stay in its own directory.
func TestTenantIsolation(t *testing.T) {
	model := newScriptedLLM(t)
	dir := t.TempDir()
	providers := `models:{providers:{fake:{baseUrl:"` + model.srv.URL + `/v1"}}},`
	// The fake LLM is on loopback: the operator opens its address to tenants.
	ceiling := `tenants:{network:{allowHosts:["` + strings.TrimPrefix(model.srv.URL, "http://") + `"]}},`
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"root-token"}},`+ceiling+providers+`agents:{defaults:{model:"fake/scripted"}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "clawdbot.json"), []byte(`{gateway:{auth:{token:"acme-token"}},`+providers+`agents:{defaults:{model:"fake/scripted"},list:[{id:"somi"}]}}`))
	writeFile(t, filepath.Join(dir, "tenants", "beta", "clawdbot.json"), []byte(`{gateway:{auth:{token:"beta-token"}},`+providers+`agents:{defaults:{model:"fake/scripted"},list:[{id:"somi"}]}}`))
	writeFile(t, filepath.Join(dir, "tenants", "evil", "clawdbot.json"), []byte(`{gateway:{auth:{token:"evil-token"}},`+providers+`agents:{defaults:{model:"fake/scripted"},list:[{id:"somi",workspace:"../acme/workspace-somi"}]}}`))
	writeFile(t, filepath.Join(dir, "tenants", "evilbox", "clawdbot.json"), []byte(`{gateway:{auth:{token:"evilbox-token"}},`+providers+`agents:{defaults:{model:"fake/scripted",sandbox:{mode:"all",workspaceRoot:"../acme"}},list:[{id:"somi"}]}}`))
	writeFile(t, filepath.Join(dir, "tenants", "notoken", "clawdbot.json"), []byte(`{`+providers+`agents:{defaults:{model:"fake/scripted"}}}`))
	ts := startServer(t, dir, nil)
	body := `{"model":"openclaw/somi","user":"u1","messages":[{"role":"user","content":"secret plan"}]}`
	cases := []struct {
		name   string
		tenant string
		token  string
		body   string
		status int
	}{
		{"acme with its token", "acme", "acme-token", body, 200},
		{"beta with acme's token", "beta", "acme-token", body, 401},
		{"acme with the root token", "acme", "root-token", body, 401},
		{"root with acme's token", "", "acme-token", `{"model":"openclaw","messages":[{"role":"user","content":"x"}]}`, 401},
		{"unknown tenant", "nobody", "acme-token", body, 401},
		{"path traversal tenant", "../tenants/acme", "acme-token", body, 401},
		{"dot tenant", ".", "acme-token", body, 401},
		{"tenant without a token", "notoken", "", body, 401},
		{"workspace outside the tenant", "evil", "evil-token", body, 200},
		{"sandbox workspaces outside the tenant", "evilbox", "evilbox-token", body, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.status == 200 {
				model.push(scripted{Content: "ok"})
			}
			h := map[string]string{"Authorization": "Bearer " + c.token}
			if c.tenant != "" {
				h["X-Tenant-ID"] = c.tenant
			}
			rep := ts.post(h, c.body)
			if rep.status != c.status {
				t.Fatalf("status %d, want %d: %s", rep.status, c.status, rep.body)
			}
			if c.status == 401 && !strings.Contains(rep.body, `"Unauthorized"`) {
				t.Errorf("401 body %s does not look like every other 401", rep.body)
			}
		})
	}
	// Beta uses acme's session key: it gets a session of its own, empty.
	model.push(scripted{Content: "ok"})
	n := model.count()
	rep := ts.post(map[string]string{"Authorization": "Bearer beta-token", "X-Tenant-ID": "beta", "X-OpenClaw-Session-Key": "agent:somi:openai-user:u1"},
		`{"model":"openclaw/somi","messages":[{"role":"user","content":"what was the plan?"}]}`)
	if rep.status != 200 {
		t.Fatalf("beta: %d %s", rep.status, rep.body)
	}
	if strings.Contains(string(model.request(n+1)), "secret plan") {
		t.Error("beta's run saw acme's transcript")
	}
	for _, p := range []string{"tenants/acme/talon.db", "tenants/beta/talon.db"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tenants", "acme", "workspace")); err != nil {
		t.Errorf("acme's agent workspace should be inside the tenant: %v", err)
	}
	// evil and evilbox ran in workspaces of their own, held to the ceiling.
	for _, p := range []string{"tenants/evil/workspace", "tenants/evilbox/workspace"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "tenants", "acme"))
	for _, e := range entries {
		if n := e.Name(); n != "clawdbot.json" && n != "workspace" && !strings.HasPrefix(n, "talon.db") && !strings.HasPrefix(n, "memory.sqlite") {
			t.Errorf("tenants/acme/%s: written by another tenant?", e.Name())
		}
	}
}

// TestModelsEndpoint lists agents as models, behind auth.
func TestModelsEndpoint(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway:{auth:{token:"k"}},agents:{list:[{id:"main"},{id:"Ops Team"}]}}`))
	ts := startServer(t, dir, nil)
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, ts.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := readBody(resp)
		return resp.StatusCode, b
	}
	if code, _ := get("/v1/models", "wrong"); code != 401 {
		t.Errorf("bad token: %d", code)
	}
	code, body := get("/v1/models", "k")
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.Unmarshal([]byte(body), &list)
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if code != 200 || strings.Join(ids, ",") != "openclaw,openclaw/main,openclaw/ops-team" {
		t.Errorf("models: %d %v", code, ids)
	}
	if code, _ := get("/v1/models/openclaw/ops-team", "k"); code != 200 {
		t.Errorf("one model: %d", code)
	}
	if code, _ := get("/v1/models/openclaw/nope", "k"); code != 404 {
		t.Errorf("missing model: %d", code)
	}
	if code, body := get("/healthz", ""); code != 200 {
		t.Errorf("healthz: %d %s", code, body)
	}
	if code, body := get("/readyz", ""); code != 200 {
		t.Errorf("readyz: %d %s", code, body)
	}
}

// TestListenRefusesOpenNonLoopback: binding beyond loopback without a token
// fails with a message saying how to fix it.
func TestListenRefusesOpenNonLoopback(t *testing.T) {
	reg := mustRegistry(t)
	srv, err := New(Options{StateDir: t.TempDir(), Addr: "0.0.0.0:0", Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Listen(); err == nil || !strings.Contains(err.Error(), "without auth") {
		t.Fatalf("Listen = %v, want a refusal", err)
	}
}

// TestBodyLimit: a body over the limit is refused with 413 before it is
// parsed.
func TestBodyLimit(t *testing.T) {
	dir := t.TempDir()
	srv, err := New(Options{StateDir: dir, Addr: "127.0.0.1:0", Tools: mustRegistry(t), MaxBodyBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	body := `{"model":"openclaw","messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readBody(resp)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(got, "Payload too large") {
		t.Errorf("status %d body %s, want 413", resp.StatusCode, got)
	}
}
