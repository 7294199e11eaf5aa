package gateway

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"talon/internal/channel/telegram/tgtest"
	"talon/internal/config"
)

// hashIn is the config hash a gateway tool result or refusal names.
var hashIn = regexp.MustCompile(`"hash": "([0-9a-f]{64})"|hash is now ([0-9a-f]{64})`)

func hashOf(t *testing.T, text string) string {
	t.Helper()
	m := hashIn.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no hash in %s", text)
	}
	return m[1] + m[2]
}

// TestGatewayTool: an owner's agent reads its config through the gateway
// tool, secrets redacted, and patches it with the hash it read; the
// redacted values it sends back keep the stored secrets; a stale hash
// is refused with the file's hash now, a bad value with config.patch's
// own message; the file changes only by the good patch.
func TestGatewayTool(t *testing.T) {
	ts, url := startWithConfig(t, secretConfig)
	c := dialWS(t, url)
	say := func(id, call string) string {
		t.Helper()
		return chatTurn(t, c, id, "/call gateway "+call).terminal().text()
	}
	path := filepath.Join(ts.dir, "talon.json")

	got := say("g1", `{"action":"config.get"}`)
	for _, secret := range []string{wsToken, "sk-acme-secret-1", "ghp-secret-2"} {
		if strings.Contains(got, secret) {
			t.Errorf("config.get shows the secret %q:\n%s", secret, got)
		}
	}
	if !strings.Contains(got, config.RedactedSentinel) || !strings.Contains(got, `"ok": true`) {
		t.Errorf("config.get:\n%s", got)
	}
	hash := hashOf(t, got)
	if want := config.Hash([]byte(readText(t, path))); hash != want {
		t.Fatalf("config.get's hash %s, the file's %s", hash, want)
	}
	if sub := say("g2", `{"action":"config.get","path":"models.providers.acme"}`); !strings.Contains(sub, `"baseUrl": "http://127.0.0.1:9/v1"`) || strings.Contains(sub, "gateway") {
		t.Errorf("config.get of a path:\n%s", sub)
	}

	// The provider block sent back as config.get showed it, apiKey
	// redacted, plus one change.
	patch, _ := json.Marshal(map[string]any{"action": "config.patch", "baseHash": hash,
		"raw": `{models: {providers: {acme: {baseUrl: "http://127.0.0.1:9/v2", apiKey: "` + config.RedactedSentinel + `"}}}}`})
	res := say("p1", string(patch))
	newHash := hashOf(t, res)
	f := onDisk(t, ts)
	if newHash != f.Hash || f.Tree.Lookup("models", "providers", "acme", "baseUrl").Str != "http://127.0.0.1:9/v2" ||
		f.Tree.Lookup("models", "providers", "acme", "apiKey").Str != "sk-acme-secret-1" || f.Config.Gateway.Auth.Token != wsToken {
		t.Fatalf("after the patch (%s):\n%s", res, f.Raw)
	}
	if strings.Contains(res, "sk-acme-secret-1") || strings.Contains(res, `"config"`) {
		t.Errorf("config.patch's result:\n%s", res)
	}

	for _, tc := range []struct{ name, call, want string }{
		{"a stale hash", string(patch), "gateway: config.patch: config changed since last load; re-run config.get and retry (the config's hash is now " + newHash + ")"},
		{"no hash", `{"action":"config.patch","raw":"{}"}`, "gateway: config.patch: config base hash required; re-run config.get and retry"},
		{"a bad value", `{"action":"config.patch","baseHash":"` + newHash + `","raw":"{gateway: {port: 70000}}"}`,
			"gateway: config.patch: invalid config: gateway.port: expected a port number from 1 to 65535"},
		{"not JSON5", `{"action":"config.patch","baseHash":"` + newHash + `","raw":"{a:"}`, "gateway: config.patch: invalid config.patch params: raw: "},
		{"a sentinel with nothing stored", `{"action":"config.patch","baseHash":"` + newHash + `","raw":"{tools: {exec: {token: \"` + config.RedactedSentinel + `\"}}}"}`,
			"redacted placeholder has no stored value to restore"},
		{"update.run", `{"action":"update.run"}`, "gateway: update.run is not built in Talon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readText(t, path)
			if got := say("e-"+tc.name, tc.call); !strings.HasPrefix(got, "gateway: ") || !strings.Contains(got, tc.want) {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
			if readText(t, path) != before {
				t.Error("a refused patch changed the file")
			}
		})
	}
}

// TestGatewayToolOwnerOnly: the gateway tool is offered to a run whose
// sender is an owner and removed from any other's; called anyway, it is
// not run.
func TestGatewayToolOwnerOnly(t *testing.T) {
	tg := tgtest.Start(t)
	ts, _ := startWS(t, `,"commands":{"ownerAllowFrom":["telegram:99"]},
		"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ask := func(from int64, text string) string {
		t.Helper()
		before := len(tg.Sent())
		tg.UserSays(tgtest.Say{From: tgtest.User{ID: from, FirstName: "U"}, Text: text})
		if err := tg.Wait(ctx, func() bool { return len(tg.Sent()) > before }); err != nil {
			t.Fatal(err)
		}
		return tg.Sent()[before].Text
	}
	for _, tc := range []struct {
		name  string
		from  int64
		offer bool
	}{
		{"the owner", 99, true},
		{"another sender", 61, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := strings.Fields(ask(tc.from, "/tools"))
			if has := strings.Contains(" "+strings.Join(names, " ")+" ", " gateway "); has != tc.offer {
				t.Errorf("gateway offered %v, want %v: %v", has, tc.offer, names)
			}
			before := readText(t, filepath.Join(ts.dir, "talon.json"))
			got := ask(tc.from, `/call gateway {"action":"config.get"}`)
			if ran := strings.Contains(got, `"hash"`); ran != tc.offer {
				t.Errorf("gateway ran %v, want %v: %s", ran, tc.offer, got)
			}
			if readText(t, filepath.Join(ts.dir, "talon.json")) != before {
				t.Error("the config changed")
			}
		})
	}
}

// TestGatewayToolTenant: a tenant's agent (its sandbox letting it have
// the tool) reads and patches its own tenant's config only: a patch
// beyond the operator's ceiling is refused as the tenant's config.patch
// is, the operator's root config never changes, and nothing it is shown
// names a host path or a secret.
func TestGatewayToolTenant(t *testing.T) {
	needBwrap(t)
	ts, _ := startWS(t, "")
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	tpath := filepath.Join(tdir, "talon.json")
	writeFile(t, tpath, []byte(`{gateway: {auth: {token: "acme-token"}},
		tools: {sandbox: {tools: {allow: ["*"], deny: []}}},
		models: {providers: {p: {baseUrl: "https://llm.example.com/v1", apiKey: "sk-tenant-secret"}}}}`))
	rootBefore := readText(t, filepath.Join(ts.dir, "talon.json"))
	call := func(args any) string {
		t.Helper()
		rep := ts.post(map[string]string{"Authorization": "Bearer acme-token", "X-Tenant-ID": "acme"}, callBody(t, "gateway", args))
		if rep.status != 200 {
			t.Fatalf("chat: %d %s", rep.status, rep.body)
		}
		for _, bad := range []string{ts.dir, "sk-tenant-secret", "acme-token", wsToken} {
			if strings.Contains(rep.content, bad) {
				t.Errorf("the tenant was shown %q:\n%s", bad, rep.content)
			}
		}
		return rep.content
	}

	got := call(map[string]any{"action": "config.get"})
	if !strings.Contains(got, `"path": "talon.json"`) || !strings.Contains(got, "llm.example.com") {
		t.Fatalf("the tenant's config.get:\n%s", got)
	}
	hash := hashOf(t, got)
	for _, tc := range []struct{ name, raw, want string }{
		{"sandbox off", `{agents: {defaults: {sandbox: {mode: "off"}}}}`,
			"agents.defaults.sandbox.mode: beyond the operator's ceiling for tenants: a tenant's sessions always run sandboxed"},
		{"memory above the ceiling", `{agents: {defaults: {sandbox: {limits: {memoryMb: 100000}}}}}`,
			"agents.defaults.sandbox.limits.memoryMb: beyond the operator's ceiling for tenants: the operator's ceiling is 2048"},
		{"loopback for tools", `{tools: {network: {allowLoopback: true}}}`, "tools.network.allowLoopback: beyond the operator's ceiling"},
		{"the ceiling itself", `{tenants: {sandbox: {network: true}}}`, "tenants: beyond the operator's ceiling for tenants: the tenant ceiling is the operator's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readText(t, tpath)
			got := call(map[string]any{"action": "config.patch", "baseHash": hash, "raw": tc.raw})
			if !strings.HasPrefix(got, "gateway: config.patch: invalid config: ") || !strings.Contains(got, tc.want) {
				t.Errorf("got %s\nwant it to say %q", got, tc.want)
			}
			if readText(t, tpath) != before {
				t.Error("a refused patch changed the tenant's file")
			}
		})
	}

	// Within the ceiling the patch is written, to the tenant's file.
	res := call(map[string]any{"action": "config.patch", "baseHash": hash, "raw": `{env: {vars: {REGION: "eu"}}}`})
	f, err := config.Load(tpath)
	if err != nil {
		t.Fatal(err)
	}
	if hashOf(t, res) != f.Hash || f.Tree.Lookup("env", "vars", "REGION").Str != "eu" ||
		f.Tree.Lookup("models", "providers", "p", "apiKey").Str != "sk-tenant-secret" {
		t.Errorf("after the patch (%s):\n%s", res, f.Raw)
	}
	if readText(t, filepath.Join(ts.dir, "talon.json")) != rootBefore {
		t.Error("a tenant's patch changed the root config")
	}
}
