package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/authlimit"
	"talon/internal/gateway"
	"talon/internal/platform/template"
	_ "talon/internal/standard" // the modules talon serve ships
	"talon/internal/tools/core"
)

const testToken = "node-token-0123456789abcdef"

// testNode is a real gateway on loopback with the node API mounted, as
// `talon gateway` runs it with TALON_NODE_TOKEN set.
type testNode struct {
	dir    string
	url    string // http://127.0.0.1:PORT
	srv    *gateway.Server
	client *Client
}

// startNode serves a gateway over a new state dir whose root config lets
// tenants reach the model at llm (empty: no model) and caps drains at
// drain (0: the default).
func startNode(t testing.TB, llm string, drain time.Duration) *testNode {
	t.Helper()
	return startNodeGuard(t, llm, drain, nil)
}

// startNodeGuard is startNode with the failed-auth throttle limit (nil:
// the handler's own).
func startNodeGuard(t testing.TB, llm string, drain time.Duration, limit *authlimit.Guard) *testNode {
	t.Helper()
	dir := t.TempDir()
	root := `{gateway:{auth:{token:"root-token-0123456789"}}}`
	if llm != "" {
		root = `{gateway:{auth:{token:"root-token-0123456789"}},tenants:{network:{allowHosts:["` + strings.TrimPrefix(llm, "http://") + `"]}}}`
	}
	writeFile(t, filepath.Join(dir, "talon.json"), root)
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := NewHandler(Options{StateDir: dir, Token: testToken, Version: "test", Log: log, AuthLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gateway.New(gateway.Options{StateDir: dir, Addr: "127.0.0.1:0", Tools: reg, Node: h, DrainTimeout: drain,
		Env: func(string) string { return "" }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h.Attach(srv)
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
	u := "http://" + ln.Addr().String()
	return &testNode{dir: dir, url: u, srv: srv, client: New(u, testToken)}
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// modelConfig is a tenant config with token tok whose agents run on the
// model at llm.
// Its HTTP hooks are on (hook token "hooks-token-0123456789").
func modelConfig(tok, llm string) string {
	return `{gateway:{auth:{mode:"token",token:"` + tok + `"}},models:{providers:{fake:{baseUrl:"` + llm + `/v1"}}},agents:{defaults:{model:"fake/scripted"}},
		hooks:{enabled:true,token:"hooks-token-0123456789"}}`
}

// chat posts a non-streamed turn of user on tenant's session and returns
// the status, the Retry-After header and the body.
func (n *testNode) chat(t *testing.T, tenant, tok, user, text string) (int, string, string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"openclaw","user":%q,"messages":[{"role":"user","content":%q}]}`, user, text)
	req, err := http.NewRequest(http.MethodPost, n.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Tenant-ID", tenant)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// gatedLLM is the model at the outside edge: it answers "reply to: <the
// last user message>"; while gated, each call signals started and waits
// for release (or for the caller to go away, which it counts).
type gatedLLM struct {
	srv     *httptest.Server
	mu      sync.Mutex
	gate    chan struct{} // nil: answer at once
	started chan struct{}
	gaveUp  chan struct{} // a call the caller went away from
	bodies  []string
}

func newGatedLLM(t *testing.T) *gatedLLM {
	l := &gatedLLM{started: make(chan struct{}, 16), gaveUp: make(chan struct{}, 16)}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(l.srv.Close)
	return l
}

// hold makes the next calls wait until the returned function is called.
func (l *gatedLLM) hold() (release func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.gate = ch
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.gate = nil
			l.mu.Unlock()
			close(ch)
		})
	}
}

func (l *gatedLLM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	l.mu.Lock()
	l.bodies = append(l.bodies, string(body))
	gate := l.gate
	l.mu.Unlock()
	if gate != nil {
		l.started <- struct{}{}
		select {
		case <-gate:
		case <-r.Context().Done():
			l.gaveUp <- struct{}{}
			return
		}
	}
	last := ""
	for _, m := range req.Messages {
		if s, ok := m.Content.(string); ok && m.Role == "user" {
			last = s
		}
	}
	text := "reply to: " + last
	if !req.Stream {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion", "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, v := range []any{
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}}}},
		map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
	} {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (l *gatedLLM) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.bodies) == 0 {
		return ""
	}
	return l.bodies[len(l.bodies)-1]
}

// v1 and v2 are two versions of the template "demo".
var (
	v1 = map[string]string{
		"template.yaml":     "type: demo\nname: Demo\ndescription: A demo employee.\nrequiredTools: {alsoAllow: [web_fetch]}\n",
		"AGENTS.md":         "agents v1\n",
		"SOUL.md":           "soul v1\n",
		"IDENTITY.md":       "identity v1\n",
		"skills/s/SKILL.md": "---\nname: s\ndescription: Skill s.\n---\nbody\n",
		"skills/s/x.sh":     "#!/bin/sh\necho v1\n",
		"MEMORY.md":         "seed memory\n",
		"memory/seed.md":    "seed\n",
	}
	v2 = map[string]string{
		"template.yaml":  "type: demo\nname: Demo Two\ndescription: A demo employee, improved.\nrequiredTools: {alsoAllow: [memory_get]}\n",
		"AGENTS.md":      "agents v2\n",
		"SOUL.md":        "soul v1\n",
		"IDENTITY.md":    "identity v2\n",
		"HEARTBEAT.md":   "heartbeat v2\n",
		"MEMORY.md":      "another seed\n",
		"memory/seed.md": "other seed\n",
	}
)

// loadTemplateFiles writes files as template "demo" and loads it.
func loadTemplateFiles(t testing.TB, files map[string]string) *template.Template {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	for p, body := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), body)
	}
	if strings.HasPrefix(files["skills/s/x.sh"], "#!") {
		if err := os.Chmod(filepath.Join(dir, "skills", "s", "x.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// entries lists a directory's names.
func entries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
