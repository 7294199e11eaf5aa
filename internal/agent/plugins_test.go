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

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/mcp"
	"talon/internal/mcp/mcptest"
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
		Resolve: func(string) (provider.Provider, string, error) { return provider.Inspect{}, config.InspectModel, nil }}
	res, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: "agent:main:main", Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: text}}})
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
			checkAnswer(t, p.turn(tt.cfg, tt.input), tt.want, tt.absent)
		})
	}
}

// TestSkillDispatch: a skill bound to a tool (command-dispatch: tool) is
// listed in the prompt and its slash command runs the tool without a
// model call, through the policy: a denied tool is refused, not run.
func TestSkillDispatch(t *testing.T) {
	var got []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		io.WriteString(w, `{"id":"n1"}`)
	}))
	t.Cleanup(api.Close)
	p := newPluginRig(t)
	p.write("api-tools/post_note.yaml", `name: post_note
description: Post a note
parameters:
  command:
    type: string
    description: The note text
    required: true
  commandName:
    type: string
    description: The slash command used
  skillName:
    type: string
    description: The skill used
request:
  method: POST
  url: "`+api.URL+`/notes"
  body:
    type: json
    content:
      text: "{{params.command}}"
      via: "{{params.skillName}}"
response:
  summary: "Note {{response.id}} posted"
allowed_hosts: ["127.0.0.1"]
`)
	p.write("skills/post-note/SKILL.md", "---\nname: post-note\ndescription: Post a short note to the team board\ncommand-dispatch: tool\ncommand-tool: post_note\n---\n# post-note\nCall the post_note tool with the note text.\n")
	const on = `{tools: {network: {allowLoopback: true}}, plugins: {entries: {"api-tools": {enabled: true}}}}`
	if ans := p.turn(on, "/post-note ship it today"); ans != "Note n1 posted" {
		t.Fatalf("dispatch answer = %q", ans)
	}
	if len(got) != 1 || got[0] != `{"text":"ship it today","via":"post-note"}` {
		t.Fatalf("API got %q", got)
	}
	// The model sees the skill in its prompt (inspect reports the prompt
	// size only, so check the transcript is one a model can be sent).
	hist, err := p.db.Transcript(context.Background(), sessionID(t, p), 50)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(hist); n != 4 || hist[1].ToolCalls[0].Name != "post_note" || hist[2].Role != llm.RoleTool || hist[3].Content != "Note n1 posted" {
		t.Fatalf("transcript = %+v", hist)
	}
	denied := `{tools: {deny: ["post_note"], network: {allowLoopback: true}}, plugins: {entries: {"api-tools": {enabled: true}}}}`
	ans := p.turn(denied, "/post-note again")
	if !strings.Contains(ans, `tool "post_note" is not available to this agent: removed by`) || len(got) != 1 {
		t.Fatalf("denied dispatch answer = %q, API calls %d", ans, len(got))
	}
}

func sessionID(t *testing.T, p *pluginRig) string {
	t.Helper()
	e, err := p.db.GetSession(context.Background(), "main", "agent:main:main")
	if err != nil {
		t.Fatal(err)
	}
	return e.SessionID
}

// TestMCPThroughTheRunner: a real MCP server nobody here wrote
// (@modelcontextprotocol/server-everything, over stdio) is a plugin whose
// tools the inspect model lists and calls, and the policy denies them like
// any plugin tool.
func TestMCPThroughTheRunner(t *testing.T) {
	bin := mcptest.EverythingBin(t)
	p := newPluginRig(t)
	m := mcp.NewManager(nil)
	t.Cleanup(m.Close)
	p.host = plugin.NewHost(plugin.Options{StateDir: p.state, MCP: m})
	t.Cleanup(func() { p.host.Close() })
	server := `mcp: {servers: {everything: {command: "` + bin + `", args: ["stdio"]}}}`
	tests := []struct {
		name, cfg, input string
		want, absent     []string
	}{
		{"listed", `{` + server + `}`, "/tools", []string{"echo", "get_sum"}, nil},
		{"called", `{` + server + `}`, `/call echo {"message":"hello from talon"}`, []string{"hello from talon"}, []string{"not available"}},
		{"bad arguments refused before the call", `{` + server + `}`, `/call get_sum {"a":"x"}`, []string{"invalid arguments for get_sum"}, nil},
		{"denied by server id", `{` + server + `, tools: {deny: ["everything"]}}`, "/tools", nil, []string{"echo", "get_sum"}},
		{"denied call refused", `{` + server + `, tools: {deny: ["echo"]}}`, `/call echo {"message":"x"}`, []string{`tool "echo" is not available to this agent: removed by`}, nil},
		{"plugin disabled", `{` + server + `, plugins: {entries: {everything: {enabled: false}}}}`, "/tools", nil, []string{"get_sum"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAnswer(t, p.turn(tt.cfg, tt.input), tt.want, tt.absent)
		})
	}
}

// TestMemoryCore: memory-core holds the memory slot by default, so its
// tools reach the model and search the agent's memory files as they are
// now; plugins.slots.memory "none" takes them away.
func TestMemoryCore(t *testing.T) {
	p := newPluginRig(t)
	p.write("MEMORY.md", "# People\n\nAlice prefers tea in the morning.\n")
	if got := p.turn(`{}`, "/tools"); !strings.Contains(got, "memory_search") || !strings.Contains(got, "memory_get") {
		t.Fatalf("tools = %s, want the memory tools", got)
	}
	if got := p.turn(`{}`, `/call memory_search {"query":"tea"}`); !strings.Contains(got, `"path":"MEMORY.md"`) {
		t.Fatalf("search = %s, want MEMORY.md found", got)
	}
	p.write("memory/2026-11-22.md", "Bob moved the launch to Friday.\n")
	if got := p.turn(`{}`, `/call memory_search {"query":"launch"}`); !strings.Contains(got, "memory/2026-11-22.md") {
		t.Fatalf("search after a new file = %s, want it found", got)
	}
	if got := p.turn(`{plugins: {slots: {memory: "none"}}}`, "/tools"); strings.Contains(got, "memory_search") {
		t.Fatalf("with the memory slot off, tools = %s", got)
	}
}

// checkAnswer checks an answer holds every want and none of absent.
func checkAnswer(t *testing.T, got string, want, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("answer lacks %q:\n%s", w, got)
		}
	}
	for _, a := range absent {
		if strings.Contains(got, a) {
			t.Errorf("answer has %q:\n%s", a, got)
		}
	}
}
