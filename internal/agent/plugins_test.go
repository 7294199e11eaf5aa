package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// pluginRig runs turns of agent main with the inspect model and the
// plugins of one config, over a real store and plugin host.
type pluginRig struct {
	t        *testing.T
	state    string
	agentDir string
	db       *store.DB
	host     *plugin.Host
}

func newPluginRig(t *testing.T) *pluginRig {
	t.Helper()
	p := &pluginRig{t: t, state: t.TempDir()}
	p.agentDir = filepath.Join(p.state, "workspace")
	db, err := store.Open(filepath.Join(p.state, "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p.db = db
	p.host = plugin.NewHost(plugin.Options{StateDir: p.state})
	t.Cleanup(func() { p.host.Close() })
	return p
}

func (p *pluginRig) write(name, content string) {
	p.t.Helper()
	path := filepath.Join(p.agentDir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// turn runs one turn under cfgSrc (a new runner per config, as the
// gateway builds one per config version) and returns the answer.
func (p *pluginRig) turn(cfgSrc, text string) string {
	p.t.Helper()
	cfg := mustConfig(p.t, `{agents: {defaults: {workspace: "`+p.agentDir+`"}}, `+strings.TrimPrefix(cfgSrc, "{"))
	reg, err := core.Registry()
	if err != nil {
		p.t.Fatal(err)
	}
	r := &Runner{Config: cfg, Policy: policy.New(cfg), Tools: reg, Store: p.db, StateDir: p.state, Plugins: p.host.Configure(cfg),
		Resolve: func(string) (provider.Provider, string, error) { return provider.Inspect{}, provider.InspectModel, nil }}
	res, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: "agent:main:main", Owner: true,
		Input: []provider.Message{{Role: provider.RoleUser, Content: text}}})
	if err != nil {
		p.t.Fatalf("turn %q: %v", text, err)
	}
	return res.Text
}

// TestPluginToolsThroughThePolicy: plugin tools reach the model and run
// only as the enable rules and the tool policy allow, and a config change
// takes effect at the next turn.
func TestPluginToolsThroughThePolicy(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"ok","echo":"`+strings.TrimPrefix(r.URL.Path, "/echo/")+`"}`)
	}))
	t.Cleanup(api.Close)
	p := newPluginRig(t)
	p.write("api-tools/echo_word.yaml", `name: echo_word
description: Echo a word through the API
parameters:
  word:
    type: string
    description: The word
    required: true
request:
  method: GET
  url: "`+api.URL+`/echo/{{params.word}}"
response:
  summary: "API says {{response.status}}: {{response.echo}}"
allowed_hosts: ["127.0.0.1"]
`)
	const on = `{tools: {network: {allowLoopback: true}}, plugins: {entries: {"api-tools": {enabled: true}, "image-gen": {enabled: true}}}`
	tests := []struct {
		name, cfg, input string
		want, absent     []string
	}{
		{"api-tools off by default", `{}`, "/tools", nil, []string{"echo_word"}},
		{"enabled: listed", on + `}`, "/tools", []string{"echo_word"}, []string{"generate_image"}},
		{"enabled: called", on + `}`, `/call echo_word {"word":"hello"}`, []string{"API says ok: hello"}, nil},
		{"optional tool named by alsoAllow", on + `, tools: {alsoAllow: ["generate_image"], network: {allowLoopback: true}}}`, "/tools", []string{"echo_word", "generate_image"}, nil},
		{"denied by plugin id", on + `, tools: {deny: ["api-tools"], network: {allowLoopback: true}}}`, "/tools", nil, []string{"echo_word"}},
		{"denied call refused", on + `, tools: {deny: ["api-tools"], network: {allowLoopback: true}}}`, `/call echo_word {"word":"x"}`, []string{`tool "echo_word" is not available to this agent: removed by`, "tools.deny"}, []string{"API says"}},
		{"loopback switch off", `{plugins: {entries: {"api-tools": {enabled: true}}}}`, `/call echo_word {"word":"x"}`, []string{"netguard: refusing 127.0.0.1 (loopback address)"}, []string{"API says"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.turn(tt.cfg, tt.input)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("answer lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("answer has %q:\n%s", a, got)
				}
			}
		})
	}
}
