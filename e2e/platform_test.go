package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/talonproc"
)

// TestPlatformThroughServe: `talon serve` runs the workforce platform
// beside the gateway: with an admin token, a client creates a tenant,
// installs an employee from the templates directory and chats with it over
// SSE, the platform reaching the gateway over its WebSocket protocol.
func TestPlatformThroughServe(t *testing.T) {
	dir, tpl := t.TempDir(), t.TempDir()
	for name, content := range map[string]string{
		"template.yaml": "type: helper\nname: Helper\ndescription: Helps\nemoji: \"🧩\"\ncategory: general\nskills: []\nmodel: inspect\n",
		"AGENTS.md":     "# Helper\n", "SOUL.md": "Calm.\n", "IDENTITY.md": "- Name: Helper\n",
	} {
		p := filepath.Join(tpl, "helper", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const admin = "platform-admin-secret"
	s := startPlatformServer(t, dir, tpl, admin)

	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if library := waitPlatform(t, s, admin); !strings.Contains(library, `"slug":"helper"`) {
		t.Fatalf("library: %s", library)
	}
	if code, _ := call("GET", "/api/tenants", "", ""); code != 401 {
		t.Errorf("without a token: %d, want 401", code)
	}
	code, body := call("POST", "/api/tenants", admin, `{"id":"acme","name":"Acme"}`)
	if code != 201 {
		t.Fatalf("create tenant: %d %s", code, body)
	}
	var created struct{ Token string }
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Token == "" {
		t.Fatalf("create tenant answer %s: %v", body, err)
	}
	if code, body := call("POST", "/api/tenants/acme/installations", admin, `{"slug":"helper"}`); code != 201 {
		t.Fatalf("install: %d %s", code, body)
	}
	// The tenant's own token may chat with its employee.
	req, _ := http.NewRequest("POST", s.base+"/api/tenants/acme/employees/helper/chat", strings.NewReader(`{"user":"u1","message":"/tools"}`))
	req.Header.Set("Authorization", "Bearer "+created.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	var last, data string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			last = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
		}
	}
	if last != "final" || !strings.Contains(data, "read") || !strings.Contains(data, "exec") {
		t.Fatalf("chat ended with %s: %s\n%s", last, data, s.proc.Log)
	}
}

// startPlatformServer starts `talon serve --templates templates` on state
// dir with the platform's admin token, like startServerIn.
func startPlatformServer(t *testing.T, dir, templates, admin string, env ...string) *server {
	t.Helper()
	p, err := talonproc.Start(talonproc.Options{
		Bin: talonBin, StateDir: dir, ReadyTimeout: readyTimeout,
		Env: append(append(cleanEnv("TALON_GATEWAY_TOKEN", "TALON_ADMIN_TOKEN", "TALON_NODE_TOKEN", "TALON_PLATFORM_DATABASE", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"), "TALON_ADMIN_TOKEN="+admin), env...),
		Args: func(port int) []string {
			return []string{"serve", "--state-dir", dir, "--port", strconv.Itoa(port), "--templates", templates}
		},
	})
	if err != nil {
		t.Fatalf("starting talon serve: %v", err)
	}
	s := &server{dir: dir, base: p.URL, proc: p}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// waitPlatform waits for the workforce platform, which starts after the
// gateway serves, to answer GET /api/library, and returns the answer.
func waitPlatform(t *testing.T, s *server, admin string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest("GET", s.base+"/api/library", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return string(body)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("the platform's library: %d %s\n%s", resp.StatusCode, body, s.proc.Log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
