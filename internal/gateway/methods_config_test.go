package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/config"
	"talon/protocol"
	"talon/protocol/client"
)

// dialWS connects a client with the given scopes (none given: all four;
// noScopes...: none) and closes it when the test ends.
func dialWS(t *testing.T, url string, scopes ...string) *client.Client {
	t.Helper()
	o := client.Options{Token: wsToken}
	if scopes != nil {
		o.Scopes = scopes
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// noScopes asks dialWS for a client without any scope.
var noScopes = []string{}

// mustCall makes a call that must succeed and decodes its payload.
func mustCall[T any](t *testing.T, c *client.Client, method string, params any) T {
	t.Helper()
	var out T
	if err := c.Call(context.Background(), method, params, &out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

// callFails makes a call that must fail with an INVALID_REQUEST whose
// message starts with want, and returns the error.
func callFails(t *testing.T, c *client.Client, method string, params any, want string) *protocol.Error {
	t.Helper()
	err := c.Call(context.Background(), method, params, nil)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidRequest || !strings.HasPrefix(pe.Message, want) {
		t.Fatalf("%s: err = %v, want INVALID_REQUEST %q", method, err, want)
	}
	return pe
}

type writeResult struct {
	OK      bool            `json:"ok"`
	Path    string          `json:"path"`
	Config  json.RawMessage `json:"config"`
	Hash    string          `json:"hash"`
	Restart *struct {
		Required bool   `json:"required"`
		Reason   string `json:"reason"`
	} `json:"restart"`
}

// secretConfig is a JSON5 config with secrets in the places redaction
// knows: the gateway token, a provider apiKey, env values.
const secretConfig = `{
  // the gateway's token
  gateway: {auth: {token: "` + wsToken + `"}},
  models: {providers: {acme: {baseUrl: "http://127.0.0.1:9/v1", apiKey: "sk-acme-secret-1"}}},
  env: {vars: {GITHUB_TOKEN: "ghp-secret-2"}},
  session: {mainKey: "main"},
}
`

func startWithConfig(t *testing.T, cfg string) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(cfg))
	ts := startServer(t, dir, nil)
	return ts, "ws" + strings.TrimPrefix(ts.url, "http")
}

func onDisk(t *testing.T, ts *testServer) *config.File {
	t.Helper()
	f, err := config.Load(filepath.Join(ts.dir, "talon.json"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestConfigGet(t *testing.T) {
	secrets := []string{wsToken, "sk-acme-secret-1", "ghp-secret-2"}
	cases := []struct {
		name      string
		file      string // "" = no file
		valid     bool
		wantRaw   []string // substrings of raw; nil = raw is null
		wantIssue string
		wantWarns []string // "path: message" of every warning
	}{
		{name: "secrets redacted in raw, comments kept", file: secretConfig, valid: true,
			wantRaw: []string{"// the gateway's token", `apiKey: "__OPENCLAW_REDACTED__"`, `GITHUB_TOKEN: "__OPENCLAW_REDACTED__"`}},
		{name: "an escaped secret: the redacted tree is sent instead", valid: true,
			file:    `{gateway: {auth: {token: "` + wsToken + `"}}, models: {providers: {acme: {baseUrl: "http://x/v1", apiKey: "sk-acme-\u0073ecret-1"}}}}`,
			wantRaw: []string{`"apiKey": "__OPENCLAW_REDACTED__"`}},
		{name: "a secret equal to other text: the redacted tree is sent instead", valid: true,
			file:    `{gateway: {auth: {token: "` + wsToken + `"}}, agents: {list: [{id: "` + wsToken + `"}]}}`,
			wantRaw: []string{`"token": "__OPENCLAW_REDACTED__"`, `"id": "` + wsToken + `"`}},
		{name: "missing file", valid: true},
		{name: "invalid value", file: `{gateway: {auth: {token: "` + wsToken + `"}}, session: {scope: "bogus"}}`,
			wantRaw: []string{`scope: "bogus"`}, wantIssue: "session.scope: expected one of per-sender, global"},
		{name: "OpenClaw keys Talon does not act on are warnings", valid: true,
			file:      `{gateway: {auth: {token: "` + wsToken + `"}}, agents: {defaults: {humanDelay: {mode: "natural"}}}, browser: {enabled: true, headless: false}}`,
			wantRaw:   []string{"humanDelay"},
			wantWarns: []string{"agents.defaults.humanDelay: not used by Talon yet", "browser.headless: not used by Talon yet"}},
		{name: "syntax error: no raw", file: `{gateway: {auth: {token: "` + wsToken + `"}}, oops}`, wantIssue: "(root): loading config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "talon.json")
			if tc.file != "" {
				writeFile(t, path, []byte(`{gateway: {auth: {token: "`+wsToken+`"}}}`))
			}
			ts := startServer(t, dir, nil)
			url := "ws" + strings.TrimPrefix(ts.url, "http")
			var c *client.Client
			if tc.file == "" {
				c = dialAnon(t, url) // the open default tenant of a loopback server
			} else {
				// Connect with a good file in force, then replace it: a
				// broken file leaves the last good one in force.
				c = dialWS(t, url, protocol.ScopeRead)
				writeFile(t, path, []byte(tc.file))
			}
			got := mustCall[configSnapshot](t, c, "config.get", nil)
			if got.Path != path || got.Exists != (tc.file != "") || got.Valid != tc.valid || got.LegacyIssues == nil || got.Warnings == nil {
				t.Fatalf("snapshot = %+v", got)
			}
			if want := config.Hash([]byte(tc.file)); got.Hash != want {
				t.Errorf("hash = %s, want %s", got.Hash, want)
			}
			if tc.wantRaw == nil && got.Raw != nil {
				t.Errorf("raw = %q, want null", *got.Raw)
			}
			if tc.wantRaw != nil && got.Raw == nil {
				t.Fatal("raw is null")
			}
			for _, w := range tc.wantRaw {
				if !strings.Contains(*got.Raw, w) {
					t.Errorf("raw lacks %q:\n%s", w, *got.Raw)
				}
			}
			all := string(got.Config) + string(got.Parsed)
			if got.Raw != nil {
				all += *got.Raw
			}
			for _, s := range secrets {
				if strings.Contains(all, s) && !strings.Contains(tc.file, `id: "`+s) {
					t.Errorf("secret %q leaked", s)
				}
			}
			var warns []string
			for _, w := range got.Warnings {
				warns = append(warns, w.Path+": "+w.Message)
			}
			if tc.wantWarns != nil && !slices.Equal(warns, tc.wantWarns) {
				t.Errorf("warnings = %q, want %q", warns, tc.wantWarns)
			}
			if tc.wantIssue == "" && len(got.Issues) > 0 || tc.wantIssue != "" && (len(got.Issues) == 0 || !strings.HasPrefix(got.Issues[0].Path+": "+got.Issues[0].Message, tc.wantIssue)) {
				t.Errorf("issues = %+v, want %q", got.Issues, tc.wantIssue)
			}
		})
	}
}

// dialAnon connects with no token: only the open default tenant of a
// loopback server (no token configured) lets it in.
func dialAnon(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConfigWriteErrors: every refusal of config.patch and config.set,
// each leaving the file as it was.
func TestConfigWriteErrors(t *testing.T) {
	ts, url := startWithConfig(t, secretConfig)
	admin := dialWS(t, url)
	reader := dialWS(t, url, protocol.ScopeRead)
	hash := mustCall[configSnapshot](t, admin, "config.get", nil).Hash
	cases := []struct {
		name   string
		c      *client.Client
		method string
		params map[string]any
		want   string
		issues bool // details.issues expected
	}{
		{"no raw", admin, "config.patch", map[string]any{"baseHash": hash}, "invalid config.patch params: raw (a JSON5 object, as a string) is required", false},
		{"raw not a string", admin, "config.patch", map[string]any{"raw": map[string]any{}, "baseHash": hash}, "invalid config.patch params: raw must be a string, not object", false},
		{"raw an array", admin, "config.patch", map[string]any{"raw": "[1]", "baseHash": hash}, "invalid config.patch params: raw must hold a JSON5 object, not array", false},
		{"raw not JSON5", admin, "config.patch", map[string]any{"raw": "{a:", "baseHash": hash}, "invalid config.patch params: raw: ", false},
		{"no baseHash", admin, "config.patch", map[string]any{"raw": "{}"}, "config base hash required; re-run config.get and retry", false},
		{"blank baseHash", admin, "config.patch", map[string]any{"raw": "{}", "baseHash": "  "}, "config base hash required; re-run config.get and retry", false},
		{"non-string baseHash", admin, "config.patch", map[string]any{"raw": "{}", "baseHash": 7}, "config base hash required; re-run config.get and retry", false},
		{"stale baseHash", admin, "config.patch", map[string]any{"raw": "{}", "baseHash": config.Hash([]byte("{}"))}, "config changed since last load; re-run config.get and retry", false},
		{"result invalid", admin, "config.patch", map[string]any{"raw": `{session: {scope: "bogus"}}`, "baseHash": hash},
			`invalid config: session.scope: expected one of per-sender, global (got "bogus")`, true},
		{"sentinel with nothing stored", admin, "config.patch", map[string]any{"raw": `{tools: {exec: {token: "__OPENCLAW_REDACTED__"}}}`, "baseHash": hash},
			"invalid config.patch params: raw: tools.exec.token: redacted placeholder has no stored value to restore", false},
		{"negative restartDelayMs", admin, "config.patch", map[string]any{"raw": "{}", "baseHash": hash, "restartDelayMs": -1}, "invalid config.patch params: restartDelayMs must be >= 0", false},
		{"read scope", reader, "config.patch", map[string]any{"raw": "{}", "baseHash": hash}, "missing scope: operator.admin", false},
		{"set: no baseHash", admin, "config.set", map[string]any{"raw": "{}"}, "config base hash required; re-run config.get and retry", false},
		{"set: stale baseHash", admin, "config.set", map[string]any{"raw": "{}", "baseHash": strings.Repeat("0", 64)}, "config changed since last load; re-run config.get and retry", false},
		{"set: invalid", admin, "config.set", map[string]any{"raw": `{gateway: {port: 70000}}`, "baseHash": hash}, "invalid config: gateway.port: expected a port number from 1 to 65535", true},
		{"set: read scope", reader, "config.set", map[string]any{"raw": "{}", "baseHash": hash}, "missing scope: operator.admin", false},
	}
	before, _ := os.ReadFile(filepath.Join(ts.dir, "talon.json"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pe := callFails(t, tc.c, tc.method, tc.params, tc.want)
			d, _ := pe.Details.(map[string]any)
			if is, _ := d["issues"].([]any); tc.issues != (len(is) > 0) {
				t.Errorf("details = %v", pe.Details)
			}
			// A stale baseHash is told the file's hash now.
			if stale := strings.HasPrefix(tc.want, "config changed"); stale != (d["hash"] == hash) {
				t.Errorf("details = %v, want the hash %s only for a stale baseHash", pe.Details, hash)
			}
			if now, _ := os.ReadFile(filepath.Join(ts.dir, "talon.json")); string(now) != string(before) {
				t.Errorf("the file changed:\n%s", now)
			}
		})
	}

	// A file that no longer validates: patch refuses to merge into it, set
	// (with its hash) replaces it.
	broken := strings.Replace(secretConfig, `mainKey: "main"`, `scope: "bogus"`, 1)
	writeFile(t, filepath.Join(ts.dir, "talon.json"), []byte(broken))
	hash = config.Hash([]byte(broken))
	pe := callFails(t, admin, "config.patch", map[string]any{"raw": "{}", "baseHash": hash}, "invalid config; fix before patching")
	if d, _ := pe.Details.(map[string]any); d == nil || len(d["issues"].([]any)) != 1 {
		t.Errorf("details = %v", pe.Details)
	}
	fixed := mustCall[writeResult](t, admin, "config.set", map[string]any{"raw": secretConfig, "baseHash": hash})
	if !fixed.OK || fixed.Restart != nil || onDisk(t, ts).Config.Session.Scope != "" {
		t.Fatalf("config.set = %+v", fixed)
	}
}

// TestConfigRedactionRoundTrip: what config.get returns, sent back, keeps
// every secret, by patch (the redacted config as the patch) and by set
// (the redacted raw text).
func TestConfigRedactionRoundTrip(t *testing.T) {
	ts, url := startWithConfig(t, secretConfig)
	admin := dialWS(t, url)
	check := func(step string) {
		t.Helper()
		f := onDisk(t, ts)
		if f.Config.Gateway.Auth.Token != wsToken || f.Tree.Lookup("models", "providers", "acme", "apiKey").Str != "sk-acme-secret-1" ||
			f.Tree.Lookup("env", "vars", "GITHUB_TOKEN").Str != "ghp-secret-2" {
			t.Fatalf("%s: secrets lost:\n%s", step, f.Raw)
		}
		if strings.Contains(string(f.Raw), config.RedactedSentinel) {
			t.Fatalf("%s: sentinel written:\n%s", step, f.Raw)
		}
	}
	snap := mustCall[configSnapshot](t, admin, "config.get", nil)
	patch := strings.Replace(string(snap.Config), `"mainKey":"main"`, `"mainKey":"work"`, 1)
	res := mustCall[writeResult](t, admin, "config.patch", map[string]any{"raw": patch, "baseHash": snap.Hash, "note": "round trip", "sessionKey": "main", "restartDelayMs": 0})
	check("patch")
	if !res.OK || res.Restart == nil || res.Restart.Required || res.Restart.Reason != "hot-reload" || res.Path != filepath.Join(ts.dir, "talon.json") {
		t.Fatalf("patch result = %+v", res)
	}
	if strings.Contains(string(res.Config), wsToken) || !strings.Contains(string(res.Config), `"mainKey":"work"`) {
		t.Fatalf("result config = %s", res.Config)
	}
	onDisk, _ := os.ReadFile(filepath.Join(ts.dir, "talon.json"))
	if res.Hash != config.Hash(onDisk) {
		t.Fatalf("result hash %s is not the file's", res.Hash)
	}
	if bak, _ := os.ReadFile(filepath.Join(ts.dir, "talon.json.bak")); string(bak) != secretConfig {
		t.Errorf("backup = %q", bak)
	}

	snap = mustCall[configSnapshot](t, admin, "config.get", nil)
	if snap.Hash != res.Hash {
		t.Fatalf("config.get hash %s after a patch returning %s", snap.Hash, res.Hash)
	}
	set := mustCall[writeResult](t, admin, "config.set", map[string]any{"raw": *snap.Raw, "baseHash": snap.Hash})
	check("set")
	// The token written back is still the one that opens the gateway.
	dialWS(t, url, protocol.ScopeRead)
	apply := mustCall[writeResult](t, admin, "config.apply", map[string]any{"raw": *mustCall[configSnapshot](t, admin, "config.get", nil).Raw, "baseHash": set.Hash})
	check("apply")
	if apply.Restart == nil || apply.Restart.Reason != "hot-reload" {
		t.Fatalf("apply result = %+v", apply)
	}
}

// TestConfigPatchMergesByID: a patch of agents.list changes the entries
// it names by id and appends new ones, keeping the rest.
func TestConfigPatchMergesByID(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}},
		agents: {list: [{id: "a", name: "A", tools: {deny: ["exec"]}}, {id: "b", name: "B"}]}}`)
	admin := dialWS(t, url)
	hash := mustCall[configSnapshot](t, admin, "config.get", nil).Hash
	mustCall[writeResult](t, admin, "config.patch", map[string]any{"baseHash": hash,
		"raw": `{agents: {list: [{id: "b", name: "Bee", model: "inspect"}, {id: "c", name: null, workspace: "ws-c"}]}}`})
	list := onDisk(t, ts).Config.Agents.List
	got := []string{}
	for _, a := range list {
		got = append(got, fmt.Sprintf("%s/%s/%s/%v", a.ID, a.Name, a.Workspace, a.Tools.Deny))
	}
	if want := "a/A//[exec] b/Bee//[] c//ws-c/[]"; strings.Join(got, " ") != want {
		t.Fatalf("agents.list = %s, want %s", strings.Join(got, " "), want)
	}
	listed := mustCall[struct {
		Agents []struct {
			ID    string
			Name  string
			Model *struct{ Primary string }
		}
	}](t, admin, "agents.list", nil)
	if len(listed.Agents) != 3 || listed.Agents[1].Name != "Bee" || listed.Agents[1].Model == nil || listed.Agents[1].Model.Primary != "inspect" || listed.Agents[2].ID != "c" {
		t.Fatalf("agents.list = %+v", listed)
	}
}

// TestConfigHotReload: a config.patch takes effect at the next turn with
// no restart: tools.deny added over WS removes the tool from what the
// inspect model is given on the next /v1/chat/completions request, and
// the WS connection carries on with no shutdown.
func TestConfigHotReload(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}}, agents: {defaults: {model: "inspect"}}}`)
	admin := dialWS(t, url)
	tools := func() []string {
		t.Helper()
		r := ts.post(map[string]string{"Authorization": "Bearer " + wsToken}, `{"model":"openclaw","messages":[{"role":"user","content":"/tools"}]}`)
		if r.status != 200 {
			t.Fatalf("chat: %d %s", r.status, r.body)
		}
		return strings.Split(r.content, "\n")
	}
	has := func(list []string, name string) bool {
		for _, n := range list {
			if n == name {
				return true
			}
		}
		return false
	}
	if before := tools(); !has(before, "exec") || !has(before, "read") {
		t.Fatalf("tools before = %v", before)
	}
	hash := mustCall[configSnapshot](t, admin, "config.get", nil).Hash
	mustCall[writeResult](t, admin, "config.patch", map[string]any{"raw": `{tools: {deny: ["exec"]}}`, "baseHash": hash})
	if after := tools(); has(after, "exec") || !has(after, "read") {
		t.Fatalf("tools after the patch = %v", after)
	}
	// The same connection goes on, and nothing told it to go away.
	mustCall[configSnapshot](t, admin, "config.get", nil)
	for {
		select {
		case f := <-admin.Events():
			if f.Event == protocol.EventShutdown {
				t.Fatal("shutdown event after config.patch")
			}
			continue
		default:
		}
		break
	}
}

// TestConfigReloadIsAtomic: while config.patch flips the config between
// versions, every runtime a call or turn can get is one version whole:
// its config, and the runner and policy built from it, agree.
func TestConfigReloadIsAtomic(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}}, session: {mainKey: "v0"}, tools: {deny: ["v0"]}}`)
	admin := dialWS(t, url)
	tn := ts.srv.defaultTenant
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				rt, err := tn.current(ts.srv)
				if err != nil {
					errs <- err.Error()
					return
				}
				cfg := rt.file.Config
				if len(cfg.Tools.Deny) != 1 || cfg.Tools.Deny[0] != cfg.Session.MainKey || rt.runner.Config != cfg || config.Hash(rt.file.Raw) != rt.file.Hash {
					errs <- fmt.Sprintf("mixed runtime: mainKey %q, deny %v, runner config same: %v", cfg.Session.MainKey, cfg.Tools.Deny, rt.runner.Config == cfg)
					return
				}
			}
		}()
	}
	hash := mustCall[configSnapshot](t, admin, "config.get", nil).Hash
	for i := 1; i <= 40; i++ {
		v := fmt.Sprintf("v%d", i)
		res := mustCall[writeResult](t, admin, "config.patch", map[string]any{"baseHash": hash, "raw": `{session: {mainKey: "` + v + `"}, tools: {deny: ["` + v + `"]}}`})
		hash = res.Hash
		rt, err := tn.current(ts.srv)
		if err != nil || rt.file.Config.Session.MainKey != v {
			t.Fatalf("after patch %d the runtime has mainKey %q (%v)", i, rt.file.Config.Session.MainKey, err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestConfigConcurrentWriters: writers racing with the same baseHash —
// exactly one wins each round, the others are told to re-read, and the
// file holds the winner's change.
func TestConfigConcurrentWriters(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}}}`)
	const writers = 6
	clients := make([]*client.Client, writers)
	for i := range clients {
		clients[i] = dialWS(t, url)
	}
	for round := range 8 {
		hash := mustCall[configSnapshot](t, clients[0], "config.get", nil).Hash
		var wg sync.WaitGroup
		results := make([]error, writers)
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				method := "config.patch"
				if i%2 == 1 {
					method = "config.set"
				}
				raw := fmt.Sprintf(`{gateway: {auth: {token: %q}}, session: {mainKey: "r%d-w%d"}}`, wsToken, round, i)
				results[i] = c.Call(context.Background(), method, map[string]any{"raw": raw, "baseHash": hash}, nil)
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range results {
			var pe *protocol.Error
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: writers %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.As(err, &pe) || pe.Message != "config changed since last load; re-run config.get and retry":
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won", round)
		}
		if got, want := onDisk(t, ts).Config.Session.MainKey, fmt.Sprintf("r%d-w%d", round, winner); got != want {
			t.Fatalf("round %d: file has %q, want the winner's %q", round, got, want)
		}
	}
}
