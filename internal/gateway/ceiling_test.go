package gateway

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/testtier"
)

// needBwrap fails (CI) or skips (elsewhere) without bubblewrap: a tenant's
// commands run in its sandbox, never on the host.
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		testtier.Unavailable(t, "bwrap is not installed: a tenant's commands need it (apt-get install bubblewrap)")
	}
}

// TestTenantCeilingWrites: every config write a tenant can make — patch,
// set, apply, agents.create — is refused when it goes beyond the
// operator's ceiling, naming the key and the rule; the file is unchanged.
// The operator's own config is not held to it.
func TestTenantCeilingWrites(t *testing.T) {
	ts, url := startWS(t, "")
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	writeFile(t, filepath.Join(tdir, "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}}}`))
	c := dialTenant(t, url, "acme", "acme-token")
	for _, tc := range []struct{ name, raw, want string }{
		{"sandbox off", `{agents: {defaults: {sandbox: {mode: "off"}}}}`, `agents.defaults.sandbox.mode: beyond the operator's ceiling for tenants: a tenant's sessions always run sandboxed`},
		{"non-main for one agent", `{agents: {list: [{id: "main", sandbox: {mode: "non-main"}}]}}`, `agents.list[0].sandbox.mode: beyond the operator's ceiling`},
		{"host backend", `{agents: {defaults: {sandbox: {backend: "host"}}}}`, `agents.defaults.sandbox.backend: beyond the operator's ceiling for tenants: the operator lets tenants use the sandbox backends bwrap, docker`},
		{"network", `{agents: {defaults: {sandbox: {docker: {network: "host"}}}}}`, `agents.defaults.sandbox.docker.network: beyond the operator's ceiling`},
		{"binds", `{agents: {defaults: {sandbox: {docker: {binds: ["/:/host"]}}}}}`, `agents.defaults.sandbox.docker.binds: beyond the operator's ceiling`},
		{"limits", `{agents: {defaults: {sandbox: {limits: {memoryMb: 100000}}}}}`, `agents.defaults.sandbox.limits.memoryMb: beyond the operator's ceiling for tenants: the operator's ceiling is 2048`},
		{"MCP program", `{mcp: {servers: {x: {command: "/bin/sh", args: ["-c", "id"]}}}}`, `mcp.servers.x.command: beyond the operator's ceiling for tenants: a tenant's MCP server cannot run a program on the host`},
		{"MCP on loopback", `{mcp: {servers: {x: {url: "http://127.0.0.1:18789/mcp"}}}}`, `mcp.servers.x.url: beyond the operator's ceiling`},
		{"provider on loopback", `{models: {providers: {p: {baseUrl: "http://127.0.0.1:18789/v1"}}}}`, `models.providers.p.baseUrl: beyond the operator's ceiling for tenants: a model provider of a tenant must be on the public internet`},
		{"provider at the metadata address", `{models: {providers: {p: {baseUrl: "http://169.254.169.254/latest"}}}}`, `models.providers.p.baseUrl: beyond the operator's ceiling`},
		{"memory search embeddings on loopback", `{agents: {defaults: {memorySearch: {provider: "ollama", remote: {baseUrl: "http://127.0.0.1:11434/v1"}}}}}`, `agents.defaults.memorySearch.remote.baseUrl: beyond the operator's ceiling for tenants: the memory search embeddings endpoint of a tenant must be on the public internet`},
		{"loopback for tools", `{tools: {network: {allowLoopback: true}}}`, `tools.network.allowLoopback: beyond the operator's ceiling`},
		{"workspace is the tenant directory", `{agents: {list: [{id: "main", workspace: "."}]}}`, `agents.list[0].workspace: beyond the operator's ceiling for tenants: the workspace of agent "main" must be inside the tenant directory, not the directory itself (this one is the tenant directory)`},
		{"plugin paths outside", `{plugins: {load: {paths: ["/etc"]}}}`, `plugins.load.paths[0]: beyond the operator's ceiling`},
		{"the ceiling itself", `{tenants: {sandbox: {network: true}}}`, `tenants: beyond the operator's ceiling for tenants: the tenant ceiling is the operator's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readText(t, filepath.Join(tdir, "talon.json"))
			hash := mustCall[configSnapshot](t, c, "config.get", nil).Hash
			pe := callFails(t, c, "config.patch", map[string]any{"baseHash": hash, "raw": tc.raw}, "invalid config: ")
			if !strings.Contains(pe.Message, tc.want) {
				t.Errorf("config.patch: %s\nwant it to say %q", pe.Message, tc.want)
			}
			issues, _ := pe.Details.(map[string]any)["issues"].([]any)
			if len(issues) == 0 {
				t.Errorf("no issues in details: %v", pe.Details)
			}
			full := `{gateway: {auth: {token: "acme-token"}}, ` + strings.TrimPrefix(tc.raw, "{")
			pe = callFails(t, c, "config.set", map[string]any{"baseHash": hash, "raw": full}, "invalid config: ")
			if !strings.Contains(pe.Message, tc.want) {
				t.Errorf("config.set: %s\nwant it to say %q", pe.Message, tc.want)
			}
			if after := readText(t, filepath.Join(tdir, "talon.json")); after != before {
				t.Errorf("a refused write changed the file:\n%s", after)
			}
		})
	}
	callFails(t, c, "agents.create", map[string]any{"name": "dot", "workspace": "."}, "invalid agents.create params: workspace")

	// The operator's root config may do all of it.
	root := dialWS(t, url)
	hash := mustCall[configSnapshot](t, root, "config.get", nil).Hash
	mustCall[map[string]any](t, root, "config.patch", map[string]any{"baseHash": hash,
		"raw": `{agents: {defaults: {sandbox: {mode: "off"}}}, tools: {network: {allowLoopback: true}}, mcp: {servers: {x: {command: "/bin/true"}}}}`})
}

// TestTenantCeilingOnDisk: a tenant config written by hand beyond the
// ceiling is held to it in force — its commands run in the sandbox,
// as the sandbox's user, and see nothing of the host or other tenants —
// and the config as written is still what config.get shows.
func TestTenantCeilingOnDisk(t *testing.T) {
	needBwrap(t)
	ts, url := startWS(t, "")
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	writeFile(t, filepath.Join(ts.dir, "tenants", "beta", "talon.json"), []byte(`{gateway: {auth: {token: "beta-secret-token"}}}`))
	raw := `{gateway: {auth: {token: "acme-token"}}, tools: {exec: {security: "full", ask: "off"}},
		agents: {defaults: {sandbox: {mode: "off"}}, list: [{id: "main", workspace: "."}]},
		mcp: {servers: {sh: {command: "/bin/sh", args: ["-c", "touch ` + filepath.Join(ts.dir, "pwned") + `"]}}}}`
	writeFile(t, filepath.Join(tdir, "talon.json"), []byte(raw))
	c := dialTenant(t, url, "acme", "acme-token")

	got := mustCall[configSnapshot](t, c, "config.get", nil)
	if got.Hash != config.Hash([]byte(raw)) {
		t.Errorf("config.get shows another file than the one on disk")
	}
	plan := mustCall[map[string]any](t, c, "sandbox.explain", map[string]any{"agentId": "main"})
	if p, _ := plan["plan"].(map[string]any); p["sandboxed"] != true {
		t.Fatalf("sandbox.explain: %v", plan)
	}

	cmd := `id -u; cat ../beta/talon.json ../../talon.json; ls /; tr '\0' '\n' < /proc/1/environ`
	rep := ts.post(map[string]string{"Authorization": "Bearer acme-token", "X-Tenant-ID": "acme"}, callBody(t, "exec", map[string]any{"command": cmd}))
	if rep.status != 200 {
		t.Fatalf("chat: %d %s", rep.status, rep.body)
	}
	reply := rep.content
	for _, bad := range []string{"beta-secret-token", "uid=0"} {
		if strings.Contains(reply, bad) {
			t.Errorf("the command reached %q:\n%s", bad, reply)
		}
	}
	if !strings.Contains(reply, "1000") {
		t.Errorf("the command did not run as the sandbox's user:\n%s", reply)
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "pwned")); err == nil {
		t.Error("the tenant's MCP server command ran on the host")
	}
	if _, err := os.Stat(filepath.Join(tdir, "workspace")); err != nil {
		t.Errorf("the clamped workspace of main: %v", err)
	}
}

// callBody is a chat completions request whose one message makes the
// inspect model call tool with args.
func callBody(t *testing.T, tool string, args any) string {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"model": "openclaw", "user": "u1",
		"messages": []map[string]string{{"role": "user", "content": "/call " + tool + " " + string(a)}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTenantDeleted: a deleted tenant's clients are disconnected, its
// background commands killed and forgotten, its store closed; a tenant
// made again under the same id starts empty — whether the gateway was
// told (DropTenant, as the platform does) or finds the directory changed
// at the next request (a deletion by another process).
func TestTenantDeleted(t *testing.T) {
	needBwrap(t)
	for _, told := range []bool{true, false} {
		t.Run(map[bool]string{true: "told", false: "found"}[told], func(t *testing.T) {
			ts, url := startWS(t, "")
			tdir := filepath.Join(ts.dir, "tenants", "epsilon")
			make := func(token string) map[string]string {
				writeFile(t, filepath.Join(tdir, "talon.json"), []byte(`{gateway: {auth: {token: "`+token+`"}}}`))
				return map[string]string{"Authorization": "Bearer " + token, "X-Tenant-ID": "epsilon", "X-OpenClaw-Session-Key": "agent:main:openai-user:u1"}
			}
			h := make("old-token")
			if rep := ts.post(h, callBody(t, "exec", map[string]any{"command": "echo the old customer's plan; sleep 300", "background": true})); rep.status != 200 || !strings.Contains(rep.content, "sessionId") {
				t.Fatalf("background job: %d %s", rep.status, rep.body)
			}
			c := dialTenant(t, url, "epsilon", "old-token")

			if err := os.RemoveAll(tdir); err != nil {
				t.Fatal(err)
			}
			if told {
				ts.srv.DropTenant("epsilon")
				select {
				case <-c.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the deleted tenant's client is still connected")
				}
			}
			h = make("new-token")
			if rep := ts.post(map[string]string{"Authorization": "Bearer old-token", "X-Tenant-ID": "epsilon"}, callBody(t, "session_status", map[string]any{})); rep.status != 401 {
				t.Errorf("the old token: %d %s", rep.status, rep.body)
			}
			rep := ts.post(h, callBody(t, "process", map[string]any{"action": "list"}))
			if rep.status != 200 || strings.Contains(rep.content, "old customer") || strings.Contains(rep.content, "sleep 300") {
				t.Errorf("the new tenant sees the old one's jobs: %d %s", rep.status, rep.content)
			}
			nc := dialTenant(t, url, "epsilon", "new-token")
			var hist struct {
				Messages []map[string]any `json:"messages"`
			}
			if err := nc.Call(t.Context(), "chat.history", map[string]any{"sessionKey": "agent:main:openai-user:u1"}, &hist); err != nil {
				t.Fatal(err)
			}
			for _, m := range hist.Messages {
				if b, _ := json.Marshal(m); strings.Contains(string(b), "old customer") {
					t.Errorf("the new tenant reads the old one's transcript: %s", b)
				}
			}
			if !told {
				select {
				case <-c.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the deleted tenant's client is still connected after the new one's requests")
				}
			}
		})
	}
}

// TestTenantSeesNoHostPaths: nothing a tenant is answered names where
// Talon keeps files — config path, workspaces, sandbox roots, errors —
// while the operator sees the real paths.
func TestTenantSeesNoHostPaths(t *testing.T) {
	needBwrap(t)
	ts, url := startWS(t, "")
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	writeFile(t, filepath.Join(tdir, "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}}, agents: {list: [{id: "main"}, {id: "bad", workspace: "bws"}]}}`))
	if err := os.MkdirAll(filepath.Join(ts.dir, "tenants", "beta", "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../beta/workspace", filepath.Join(tdir, "bws")); err != nil {
		t.Fatal(err)
	}
	c := dialTenant(t, url, "acme", "acme-token")
	var answers []string
	ask := func(method string, params any) {
		var out json.RawMessage
		err := c.Call(t.Context(), method, params, &out)
		answers = append(answers, method+": "+string(out))
		if err != nil {
			answers = append(answers, method+" error: "+err.Error())
		}
	}
	ask("config.get", nil)
	ask("agents.list", nil)
	ask("sandbox.explain", map[string]any{"agentId": "main"})
	ask("sessions.list", nil)
	ask("agents.create", map[string]any{"name": "x", "workspace": "/etc/x"})
	rep := ts.post(map[string]string{"Authorization": "Bearer acme-token", "X-Tenant-ID": "acme"}, `{"model":"openclaw/bad","messages":[{"role":"user","content":"hi"}]}`)
	answers = append(answers, "chat: "+rep.body)
	all := strings.Join(answers, "\n")
	real, _ := filepath.EvalSymlinks(ts.dir)
	for _, p := range []string{ts.dir, real} {
		if strings.Contains(all, p) {
			t.Errorf("a tenant was shown the host path %s:\n%s", p, all)
		}
	}
	for _, want := range []string{`"path":"talon.json"`, `"workspace":"workspace"`, "outside the tenant directory"} {
		if !strings.Contains(all, want) {
			t.Errorf("answers lack %q:\n%s", want, all)
		}
	}
	// The operator sees real paths.
	root := dialWS(t, url)
	var got map[string]any
	if err := root.Call(t.Context(), "config.get", nil, &got); err != nil || got["path"] != filepath.Join(ts.dir, "talon.json") {
		t.Errorf("the operator's config.get path = %v (%v)", got["path"], err)
	}
}

// TestModelOverride: with Options.Model every run of every tenant uses
// that model, whatever the config, the session or the request names.
func TestModelOverride(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{gateway: {auth: {token: "root"}}, agents: {defaults: {model: "nosuch/model"}}}`))
	writeFile(t, filepath.Join(dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme"}}, agents: {list: [{id: "main", model: "openrouter/anthropic/claude-x"}]}}`))
	ts := startServerWith(t, dir, nil, func(o *Options) { o.Model = "inspect" })
	for _, h := range []map[string]string{
		{"Authorization": "Bearer root", "X-OpenClaw-Model": "nosuch/other"},
		{"Authorization": "Bearer acme", "X-Tenant-ID": "acme"},
	} {
		h["Content-Type"] = "application/json"
		rep := ts.post(h, `{"model":"openclaw","messages":[{"role":"user","content":"hi"}]}`)
		if rep.status != 200 || !strings.HasPrefix(rep.content, "inspect:") {
			t.Errorf("%v: %d %s", h, rep.status, rep.body)
		}
	}
}
