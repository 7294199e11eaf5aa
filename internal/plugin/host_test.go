package plugin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/plugin"
	"talon/internal/tools"
)

func mustConfig(t *testing.T, src string) *config.Config {
	t.Helper()
	return mustConfigB(t, src)
}

func mustConfigB(t testing.TB, src string) *config.Config {
	t.Helper()
	f, err := config.Parse("test.json5", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func manifest(id string) string {
	return `{"id":"` + id + `","configSchema":{"type":"object","additionalProperties":false,"properties":{"level":{"type":"integer"}}}}`
}

const echoTool = `name: %s
description: Echo a word
parameters:
  word:
    type: string
    description: The word
    required: true
request:
  method: GET
  url: "https://echo.example.com/{{params.word}}"
allowed_hosts: [echo.example.com]
`

func yamlTool(name string) string { return strings.ReplaceAll(echoTool, "%s", name) }

// state is a plugin's outcome in a run, for table comparisons.
type state struct {
	ID, Origin, Reason string
	Enabled            bool
	Tools              []string
	Overridden         string
	Errors             int
}

func states(rt *plugin.RunTools) []state {
	var out []state
	for _, p := range rt.Plugins {
		out = append(out, state{ID: p.ID, Origin: string(p.Origin), Reason: p.Reason, Enabled: p.Enabled, Tools: p.Tools, Overridden: string(p.OverriddenBy), Errors: len(p.Errors)})
	}
	return out
}

// TestDiscovery: the four places in OpenClaw's order, the first id
// winning, problems listed rather than dropped.
func TestDiscovery(t *testing.T) {
	stateDir := t.TempDir()
	agentDir := t.TempDir()
	cfgDir := filepath.Join(t.TempDir(), "one")
	writeFiles(t, cfgDir, map[string]string{plugin.ManifestFile: manifest("shared"), "api-tools/cfg_tool.yaml": yamlTool("cfg_tool")})
	many := t.TempDir()
	writeFiles(t, many, map[string]string{
		"a/" + plugin.ManifestFile: manifest("alpha"),
		"a/api-tools/a.yaml":       yamlTool("alpha_tool"),
		"b/" + plugin.ManifestFile: `{"id":"broken"`,
		"c/" + plugin.ManifestFile: manifest("tsonly"),
		"c/index.ts":               "export default {}",
		"d/README.md":              "not a plugin",
		"e/" + plugin.ManifestFile: `{"id":"noschema"}`,
		"f/" + plugin.ManifestFile: manifest("api-tools"), // takes the bundled id first
		"f/api-tools/m.yaml":       yamlTool("ovr_tool"),
		"g/" + plugin.ManifestFile: manifest("badyaml"),
		"g/api-tools/x.yaml":       "name: [",
		"g/api-tools/ok.yaml":      yamlTool("good_tool"),
	})
	if err := os.Symlink(filepath.Join(many, "a"), filepath.Join(many, "link")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, filepath.Join(agentDir, plugin.WorkspaceExtensions), map[string]string{
		"w/" + plugin.ManifestFile: manifest("wsplug"), "w/api-tools/w.yaml": yamlTool("ws_tool"),
		"s/" + plugin.ManifestFile: manifest("shared"),
	})
	writeFiles(t, filepath.Join(stateDir, plugin.GlobalExtensions), map[string]string{
		"g/" + plugin.ManifestFile: manifest("globalplug"), "g/api-tools/g.yaml": yamlTool("global_tool"),
		"h/" + plugin.ManifestFile: manifest("wsplug"),
	})
	cfg := mustConfig(t, `{plugins: {load: {paths: ["`+cfgDir+`", "`+many+`"]}, entries: {"wsplug": {enabled: true}}}}`)
	h := plugin.NewHost(plugin.Options{StateDir: stateDir})
	t.Cleanup(func() { h.Close() })
	rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
	got := states(rt)
	want := []state{
		{ID: "shared", Origin: "config", Enabled: true, Tools: []string{"cfg_tool"}},
		{ID: "alpha", Origin: "config", Enabled: true, Tools: []string{"alpha_tool"}},
		{ID: "b", Origin: "config", Enabled: true, Errors: 1},
		{ID: "tsonly", Origin: "config", Enabled: true, Errors: 1},
		{ID: "e", Origin: "config", Enabled: true, Errors: 1},
		{ID: "api-tools", Origin: "config", Enabled: true, Tools: []string{"ovr_tool"}},
		{ID: "badyaml", Origin: "config", Enabled: true, Tools: []string{"good_tool"}, Errors: 1},
		{ID: "shared", Origin: "workspace", Reason: "overridden by config plugin", Overridden: "config"},
		{ID: "wsplug", Origin: "workspace", Enabled: true, Tools: []string{"ws_tool"}},
	}
	// The bundled modules follow, then the global directory.
	if diff := cmp.Diff(want, got[:len(want)]); diff != "" {
		t.Errorf("config and workspace plugins (-want +got):\n%s", diff)
	}
	rest := got[len(want):]
	find := func(id, origin string) *state {
		for i := range rest {
			if rest[i].ID == id && rest[i].Origin == origin {
				return &rest[i]
			}
		}
		t.Fatalf("plugin %s (%s) not listed in %+v", id, origin, rest)
		return nil
	}
	if s := find("api-tools", "bundled"); s.Overridden != "config" || s.Enabled {
		t.Errorf("bundled api-tools = %+v, want overridden by the config plugin", s)
	}
	if s := find("globalplug", "global"); !s.Enabled || !slices.Equal(s.Tools, []string{"global_tool"}) {
		t.Errorf("global plugin = %+v, want on with its tool", s)
	}
	if s := find("wsplug", "global"); s.Overridden != "workspace" {
		t.Errorf("global wsplug = %+v, want overridden by the workspace plugin", s)
	}
	var regs []string
	for _, r := range rt.Registrations {
		regs = append(regs, r.Plugin+"/"+r.Name)
	}
	wantRegs := []string{"shared/cfg_tool", "alpha/alpha_tool", "api-tools/ovr_tool", "badyaml/good_tool", "wsplug/ws_tool", "globalplug/global_tool"}
	if diff := cmp.Diff(wantRegs, regs); diff != "" {
		t.Errorf("registrations (-want +got):\n%s", diff)
	}
	for _, p := range rt.Plugins {
		for _, e := range p.Errors {
			t.Logf("%s: %s", p.ID, e)
		}
	}
}

// TestEnablement: the §9.1 rules as a run meets them, and a config change
// taking effect in the next Set without a restart.
func TestEnablement(t *testing.T) {
	agentDir := t.TempDir()
	writeFiles(t, filepath.Join(agentDir, plugin.WorkspaceExtensions), map[string]string{
		"w/" + plugin.ManifestFile: manifest("wsplug"), "w/api-tools/w.yaml": yamlTool("ws_tool"),
	})
	writeFiles(t, agentDir, map[string]string{"api-tools/a.yaml": yamlTool("agent_tool")})
	tests := []struct {
		name string
		cfg  string
		want map[string]string // plugin id → "on" or its reason
	}{
		{"defaults", `{}`, map[string]string{"wsplug": "workspace plugin (disabled by default)", "api-tools": "bundled (disabled by default)"}},
		{"entries on", `{plugins: {entries: {wsplug: {enabled: true}, "api-tools": {enabled: true}}}}`, map[string]string{"wsplug": "on", "api-tools": "on"}},
		{"allow list", `{plugins: {allow: ["wsplug"]}}`, map[string]string{"wsplug": "on", "api-tools": "not in allowlist"}},
		{"deny beats entry", `{plugins: {deny: ["api-tools"], entries: {"api-tools": {enabled: true}}}}`, map[string]string{"api-tools": "blocked by denylist"}},
		{"entry off", `{plugins: {entries: {"api-tools": {enabled: false}}}}`, map[string]string{"api-tools": "disabled in config"}},
		{"plugins off", `{plugins: {enabled: false, entries: {"api-tools": {enabled: true}}}}`, map[string]string{"api-tools": "plugins disabled", "wsplug": "plugins disabled"}},
		{"bad entry config", `{plugins: {entries: {wsplug: {enabled: true, config: {level: "high"}}}}}`, map[string]string{"wsplug": "on, with errors"}},
	}
	h := plugin.NewHost(plugin.Options{StateDir: t.TempDir()})
	t.Cleanup(func() { h.Close() })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := h.Configure(mustConfig(t, tt.cfg)).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
			for id, want := range tt.want {
				i := slices.IndexFunc(rt.Plugins, func(p plugin.Status) bool { return p.ID == id && p.OverriddenBy == "" })
				if i < 0 {
					t.Fatalf("plugin %s not listed", id)
				}
				p := rt.Plugins[i]
				got := p.Reason
				switch {
				case p.Enabled && len(p.Errors) > 0:
					got = "on, with errors"
					if !strings.Contains(p.Errors[0], "configSchema") {
						t.Errorf("%s errors = %q, want the configSchema mismatch", id, p.Errors)
					}
				case p.Enabled:
					got = "on"
					if len(p.Tools) != 1 {
						t.Errorf("%s tools = %v, want its one tool", id, p.Tools)
					}
				}
				if got != want {
					t.Errorf("%s = %q, want %q", id, got, want)
				}
			}
		})
	}
}

// TestManifest: what a manifest must have.
func TestManifest(t *testing.T) {
	tests := []struct{ src, err string }{
		{`{"id":"ok","configSchema":{}}`, ""},
		{`{"id":"ok","kind":"memory","configSchema":{"type":"object"},"uiHints":{}}`, ""},
		{`{"configSchema":{}}`, `manifest has no "id"`},
		{`{"id":"../x","configSchema":{}}`, `manifest id "../x"`},
		{`{"id":"x"}`, `has no "configSchema"`},
		{`{"id":"x","configSchema":null}`, `has no "configSchema"`},
		{`{"id":"x","configSchema":{"type":7}}`, "configSchema of \"x\""},
		{`{"id":"x","configSchema":{"$ref":"https://example.com/s.json"}}`, "configSchema of \"x\""},
		{`{"id":5,"configSchema":{}}`, "decoding manifest"},
		{`[]`, "decoding manifest"},
	}
	for _, tt := range tests {
		_, err := plugin.ParseManifest([]byte(tt.src))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParseManifest(%s) = %v, want %q", tt.src, err, tt.err)
		}
	}
}

// run calls one tool of rt with args as the model would.
func run(t *testing.T, rt *plugin.RunTools, id, name, args string, loopback bool) tools.Result {
	t.Helper()
	tool, ok := rt.Get(id, name)
	if !ok {
		t.Fatalf("tool %s/%s not offered; plugins: %+v", id, name, rt.Plugins)
	}
	res, err := tool.Run(context.Background(), &tools.Env{AllowLoopback: loopback}, json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLinkedInExample: seed 000's LinkedIn tool, loaded from an agent's
// api-tools/ folder, sends exactly the documented request to a stand-in
// for api.linkedin.com (on a loopback port; the file differs from the
// seed's only in naming that port).
func TestLinkedInExample(t *testing.T) {
	type seen struct {
		method, path, auth, ctype, body string
	}
	got := make(chan seen, 1)
	si := newStandIn(t, "api.linkedin.com", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"urn:li:share:42"}`)
	}))
	src, err := os.ReadFile("testdata/publish_linkedin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yml := strings.Replace(string(src), "https://api.linkedin.com/rest/posts", "https://api.linkedin.com:"+si.port()+"/rest/posts", 1)
	agentDir := t.TempDir()
	writeFiles(t, agentDir, map[string]string{"api-tools/publish_linkedin.yaml": yml})
	h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), Resolver: si.res, RootCAs: si.roots})
	t.Cleanup(func() { h.Close() })
	cfg := mustConfig(t, `{env: {LINKEDIN_ACCESS_TOKEN: "tok-123", vars: {LINKEDIN_PERSON_URN: "abc"}}, plugins: {entries: {"api-tools": {enabled: true}}}}`)
	rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
	res := run(t, rt, plugin.APITools, "publish_linkedin", `{"text":"Hello {{env.LINKEDIN_ACCESS_TOKEN}} \"world\""}`, true)
	if res.IsError || res.Text != "Post published. ID: urn:li:share:42" {
		t.Fatalf("result = %+v", res)
	}
	want := seen{"POST", "/rest/posts", "Bearer tok-123", "application/json",
		`{"author":"urn:li:person:abc","commentary":"Hello {{env.LINKEDIN_ACCESS_TOKEN}} \"world\"","visibility":"PUBLIC"}`}
	if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}

	// The API's error answer goes back through the error template.
	cfgMissing := mustConfig(t, `{env: {LINKEDIN_ACCESS_TOKEN: ""}, plugins: {entries: {"api-tools": {enabled: true}}}}`)
	rt = h.Configure(cfgMissing).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
	res = run(t, rt, plugin.APITools, "publish_linkedin", `{"text":"hi"}`, true)
	if !res.IsError || !strings.Contains(res.Text, "env LINKEDIN_ACCESS_TOKEN is not set") {
		t.Errorf("with an empty env var: %+v, want the missing env named", res)
	}
	select {
	case s := <-got:
		t.Errorf("a request was sent without its env: %+v", s)
	default:
	}
}

// TestBlockedTargets: every target the guard refuses stays unreached,
// whether the YAML names it, DNS points at it, or a redirect leads to it.
func TestBlockedTargets(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/to-private":
			http.Redirect(w, r, "http://10.1.2.3/x", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-other-host":
			http.Redirect(w, r, "http://127.0.0.2:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/x", http.StatusFound)
		default:
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	tool := func(url, host string) string {
		return "name: probe\ndescription: Probe a target\nrequest:\n  method: GET\n  url: \"" + url + "\"\nallowed_hosts: [\"" + host + "\"]\n"
	}
	tests := []struct {
		name, url, host string
		loopback        bool
	}{
		{"loopback without the switch", "http://127.0.0.1:" + port + "/", "127.0.0.1", false},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "169.254.169.254", true},
		{"10/8", "http://10.0.0.1/", "10.0.0.1", true},
		{"172.16/12", "http://172.16.5.4/", "172.16.5.4", true},
		{"192.168/16", "http://192.168.1.1/", "192.168.1.1", true},
		{"100.64/10", "http://100.64.0.1/", "100.64.0.1", true},
		{"0/8", "http://0.0.0.0:" + port + "/", "0.0.0.0", true},
		{"hex short form", "http://0x7f.1:" + port + "/", "0x7f.1", false},
		{"octal integer", "http://017700000001:" + port + "/", "017700000001", false},
		{"decimal integer", "http://2130706433:" + port + "/", "2130706433", false},
		{"mapped IPv6", "http://[::ffff:127.0.0.1]:" + port + "/", "::ffff:127.0.0.1", false},
		{"localhost.", "http://localhost.:" + port + "/", "localhost.", true},
		{"localhost", "http://localhost:" + port + "/", "localhost", true},
		{".internal", "http://db.internal/", "db.internal", true},
		{".local", "http://printer.local/", "printer.local", true},
		{"name resolving to private", "http://evil.example.com/", "evil.example.com", true},
		{"redirect to private", "http://127.0.0.1:" + port + "/to-private", "127.0.0.1", true},
		{"redirect to metadata", "http://127.0.0.1:" + port + "/to-metadata", "127.0.0.1", true},
		{"redirect off allowed_hosts", "http://127.0.0.1:" + port + "/to-other-host", "127.0.0.1", true},
	}
	res := mapResolver{"evil.example.com": netip.MustParseAddr("10.9.8.7")}
	h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), Resolver: res})
	t.Cleanup(func() { h.Close() })
	cfg := mustConfig(t, `{plugins: {entries: {"api-tools": {enabled: true}}}}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agentDir := t.TempDir()
			writeFiles(t, agentDir, map[string]string{"api-tools/probe.yaml": tool(tt.url, tt.host)})
			rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
			before := hits.Load()
			tl, ok := rt.Get(plugin.APITools, "probe")
			if !ok {
				// Refused when the file is read: the tool does not exist.
				t.Logf("refused at load: %v", rt.Plugins)
				return
			}
			r, err := tl.Run(context.Background(), &tools.Env{AllowLoopback: tt.loopback}, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if !r.IsError {
				t.Fatalf("reached %s: %+v", tt.url, r)
			}
			redirect := strings.Contains(tt.name, "redirect")
			if n := hits.Load() - before; redirect && n != 1 || !redirect && n != 0 {
				t.Errorf("server hits = %d (%s)", n, r.Text)
			}
			t.Logf("%s", r.Text)
		})
	}
	// The same server is reachable with the switch on: the refusals above
	// are the guard's, not a dead address.
	agentDir := t.TempDir()
	writeFiles(t, agentDir, map[string]string{"api-tools/probe.yaml": tool("http://127.0.0.1:"+port+"/ok", "127.0.0.1")})
	rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
	if r := run(t, rt, plugin.APITools, "probe", `{}`, true); r.IsError {
		t.Fatalf("loopback with the switch on: %+v", r)
	}
}

// TestConfinedHost: a tenant's plugin directories are read only where
// they really are inside the tenant: a workspace whose .openclaw or
// api-tools is a link into another tenant lists the problem and loads
// nothing from there.
func TestConfinedHost(t *testing.T) {
	base := t.TempDir()
	acme, beta := filepath.Join(base, "acme"), filepath.Join(base, "beta")
	writeFiles(t, filepath.Join(beta, "workspace"), map[string]string{
		plugin.WorkspaceExtensions + "/w/" + plugin.ManifestFile: manifest("betaplug"), plugin.WorkspaceExtensions + "/w/api-tools/w.yaml": yamlTool("beta_tool"),
		"api-tools/b.yaml": yamlTool("beta_api_tool"),
	})
	agentDir := filepath.Join(acme, "workspace")
	writeFiles(t, agentDir, map[string]string{"AGENTS.md": "x"})
	for link, target := range map[string]string{".openclaw": "../../beta/workspace/.openclaw", "api-tools": "../../beta/workspace/api-tools"} {
		if err := os.Symlink(target, filepath.Join(agentDir, link)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := mustConfig(t, `{plugins: {entries: {betaplug: {enabled: true}, "api-tools": {enabled: true}}}}`)
	for _, confine := range []string{"", acme} {
		h := plugin.NewHost(plugin.Options{StateDir: acme, Confine: confine})
		rt := h.Configure(cfg).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: agentDir})
		var tools []string
		for _, r := range rt.Registrations {
			tools = append(tools, r.Name)
		}
		leaked := slices.Contains(tools, "beta_tool") || slices.Contains(tools, "beta_api_tool")
		if confine == "" && !leaked {
			t.Errorf("unconfined, the links are followed (the operator's own workspace may use them): %v", tools)
		}
		if confine != "" {
			if leaked {
				t.Errorf("confined, another tenant's tools loaded: %v", tools)
			}
			var problems []string
			for _, p := range rt.Plugins {
				problems = append(problems, p.Problem)
				problems = append(problems, p.Errors...)
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "outside "+acme) }) {
				t.Errorf("confined, no plugin says why: %q", problems)
			}
		}
		h.Close()
	}
}
