package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/llm"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tools"
)

// The sessions of the visibility tests, by letter: the main session, an
// other session, the main session's subagent and the other's.
var visKeys = map[string]string{
	"M": "agent:main:main",
	"O": "agent:main:openai-user:o",
	"C": "agent:main:subagent:c",
	"D": "agent:main:subagent:d",
}

// seedSessions writes the four sessions, each with one message; C was
// spawned by M and D by O.
func seedSessions(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	for _, l := range []string{"M", "O", "C", "D"} {
		if _, err := db.BeginTurn(ctx, "main", visKeys[l], llm.Message{Role: llm.RoleUser, Content: "hello " + l}); err != nil {
			t.Fatal(err)
		}
	}
	for child, parent := range map[string]string{"C": "M", "D": "O"} {
		patch, _ := json.Marshal(map[string]any{"spawnedBy": visKeys[parent], "spawnDepth": 1})
		if _, err := db.PatchSession(ctx, "main", visKeys[child], patch, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

// transcriptLen counts a session's messages: a turn run there adds some.
func transcriptLen(t *testing.T, db *store.DB, key string) int {
	t.Helper()
	e, err := db.GetSession(context.Background(), "main", key)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.Transcript(context.Background(), e.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

// letters names the sessions whose keys pass keep, in M O C D order.
func letters(keep func(key string) bool) string {
	var out []string
	for _, l := range []string{"M", "O", "C", "D"} {
		if keep(visKeys[l]) {
			out = append(out, l)
		}
	}
	return strings.Join(out, " ")
}

// TestSessionToolsVisibility runs the session tools' backend of a real
// runner, over a real SQLite store and real sandbox plans (bwrap), for
// visibility × sandbox mode × caller (main, other, spawned): which of the
// four sessions it sees (status, history, list) and which it drives
// (send). A refused send runs nothing in its target; an allowed one runs a
// turn there.
func TestSessionToolsVisibility(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	const (
		off     = `mode: "off"`
		nonMain = `mode: "non-main", backend: "bwrap"`
		all     = `mode: "all", backend: "bwrap"`
		lifted  = `, sessionToolsVisibility: "all"`
	)
	cases := []struct {
		name          string
		sandbox, vis  string
		caller        string
		sees, drives  string
		driveRefusals string // why the visible but undriven ones are refused
	}{
		{"off, tree (default), main", off, "", "M", "M C", "C", ""},
		{"off, tree, other", off, "tree", "O", "O D", "D", ""},
		{"off, tree, spawned", off, "tree", "C", "C", "", ""},
		{"off, self, main", off, "self", "M", "M", "", ""},
		{"off, agent, other", off, "agent", "O", "M O C D", "M C D", ""},
		{"off, all, spawned", off, "all", "C", "M O C D", "M O D", ""},

		{"non-main, tree, main (unsandboxed)", nonMain, "tree", "M", "M C", "C", ""},
		{"non-main, agent, main drives sandboxed sessions", nonMain, "agent", "M", "M O C D", "O C D", ""},
		{"non-main, agent, other is clamped", nonMain, "agent", "O", "O D", "D", ""},
		{"non-main, all, spawned is clamped", nonMain, "all", "C", "C", "", ""},
		{"non-main, agent, clamp lifted: sees main, never drives it", nonMain + lifted, "agent", "O", "M O C D", "C D", "less-confined"},
		{"non-main, all, clamp lifted, spawned", nonMain + lifted, "all", "C", "M O C D", "O D", "less-confined"},
		{"non-main, self, clamp lifted", nonMain + lifted, "self", "O", "O", "", ""},
		{"non-main, tree, clamp lifted", nonMain + lifted, "tree", "O", "O D", "D", ""},

		{"all, agent, main is clamped too", all, "agent", "M", "M C", "C", ""},
		{"all, agent, clamp lifted", all + lifted, "agent", "M", "M O C D", "O C D", ""},
		{"all, self, other", all, "self", "O", "O", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := `agents: {defaults: {sandbox: {` + c.sandbox + `}}}`
			if c.vis != "" {
				cfg += `, tools: {sessions: {visibility: "` + c.vis + `"}}`
			}
			a := newApprovalsRig(t, "{"+cfg+"}", 0)
			seedSessions(t, a.db)
			caller := visKeys[c.caller]
			plan, err := sandbox.Resolve(a.runner.Config, a.state, "main", caller)
			if err != nil {
				t.Fatal(err)
			}
			s := newRunSessions(a.runner, "main", caller, &plan)
			ctx := context.Background()

			reads := func(read func(string) error) string {
				return letters(func(k string) bool {
					err := read(k)
					if err != nil && !strings.Contains(err.Error(), "neither this session nor one it spawned") &&
						!strings.Contains(err.Error(), "is not this session") {
						t.Errorf("refusal of %s does not name the rule: %v", k, err)
					}
					return err == nil
				})
			}
			if got := reads(func(k string) error { _, err := s.History(ctx, k, 10); return err }); got != c.sees {
				t.Errorf("history reaches %q, want %q", got, c.sees)
			}
			if got := reads(func(k string) error { _, err := s.Status(ctx, k); return err }); got != c.sees {
				t.Errorf("status reaches %q, want %q", got, c.sees)
			}
			raw, err := s.List(ctx, "main", 50)
			if err != nil {
				t.Fatal(err)
			}
			var listed struct{ Sessions []struct{ Key string } }
			if err := json.Unmarshal(raw, &listed); err != nil {
				t.Fatal(err)
			}
			if got := letters(func(k string) bool {
				return slices.ContainsFunc(listed.Sessions, func(r struct{ Key string }) bool { return r.Key == k })
			}); got != c.sees || len(listed.Sessions) != len(strings.Fields(c.sees)) {
				t.Errorf("list shows %s, want %q", raw, c.sees)
			}

			if got := letters(func(k string) bool {
				if k == caller {
					return false
				}
				before := transcriptLen(t, a.db, k)
				_, err := s.Send(ctx, caller, k, "hi")
				after := transcriptLen(t, a.db, k)
				switch {
				case err == nil && after == before:
					t.Errorf("send to %s ran nothing there", k)
				case err != nil && after != before:
					t.Errorf("refused send to %s ran a turn there (%d → %d messages): %v", k, before, after, err)
				case err != nil && strings.Contains(c.sees, letterOf(k)) && !strings.Contains(err.Error(), c.driveRefusals):
					t.Errorf("send to visible %s refused for another reason: %v", k, err)
				}
				return err == nil
			}); got != c.drives {
				t.Errorf("send drives %q, want %q", got, c.drives)
			}
		})
	}
}

// turnIn runs one user turn of the session key and returns the answer.
func (a *approvalsRig) turnIn(key, text string) string {
	a.t.Helper()
	res, err := a.runner.Run(context.Background(), Request{AgentID: "main", SessionKey: key,
		Input: []llm.Message{{Role: llm.RoleUser, Content: text}}})
	if err != nil {
		a.t.Fatalf("turn %q in %s: %v", text, key, err)
	}
	return res.Text
}

func letterOf(key string) string {
	for l, k := range visKeys {
		if k == key {
			return l
		}
	}
	return "?"
}

// TestSessionToolsNonMainEscape is issue 17's report: under mode non-main
// a session calls sessions_send into the agent's unsandboxed main session.
// Whatever the visibility settings, nothing runs there, and the refusal
// names the rule: the clamp by default, Talon's confinement rule once the
// clamp is lifted.
func TestSessionToolsNonMainEscape(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	cases := []struct{ name, cfg, want string }{
		{"defaults", `{}`, `agents.defaults.sandbox.sessionToolsVisibility "spawned" (the default)`},
		{"visibility all", `{tools: {sessions: {visibility: "all"}}}`, `agents.defaults.sandbox.sessionToolsVisibility "spawned" (the default)`},
		{"visibility agent, clamp lifted", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`,
			"agent:main:main confines less than this sandboxed session: it is not sandboxed"},
		{"visibility all, clamp lifted", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`,
			"which neither tools.sessions.visibility nor agents.defaults.sandbox.sessionToolsVisibility lifts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustConfig(t, c.cfg)
			cfg.Agents.Defaults.Sandbox.Mode, cfg.Agents.Defaults.Sandbox.Backend = "non-main", "bwrap"
			a := newApprovalsRig(t, `{}`, 0)
			a.runner.Config = cfg
			seedSessions(t, a.db)
			answer := a.turnIn(visKeys["O"], `/call sessions_send {"sessionKey":"main","message":"/call exec {\"command\":\"id\"}"}`)
			if !strings.Contains(answer, c.want) {
				t.Errorf("answer %q, want it to contain %q", answer, c.want)
			}
			if n := transcriptLen(t, a.db, visKeys["M"]); n != 1 {
				t.Errorf("the main session has %d messages, want its 1: something ran there", n)
			}
		})
	}
}

// TestSessionsSpawnStaysSandboxed: under mode non-main and all, a child
// spawned by a sandboxed session is sandboxed too: its command runs in
// the sandbox workspace, never in the agent workspace, and the child
// records who spawned it.
func TestSessionsSpawnStaysSandboxed(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	for _, mode := range []string{"non-main", "all"} {
		t.Run(mode, func(t *testing.T) {
			a := newApprovalsRig(t, `{agents: {defaults: {sandbox: {mode: "`+mode+`", backend: "bwrap"}}}}`, 0)
			a.runner.Subagents = &inlineChildren{r: a.runner}
			parent := visKeys["O"]
			task, _ := json.Marshal(map[string]string{"task": `/call exec {"command":"echo child > spawned.txt"}`})
			answer := a.turnIn(parent, "/call sessions_spawn "+string(task))
			var out struct {
				Status     string
				SessionKey string `json:"childSessionKey"`
			}
			if err := json.Unmarshal([]byte(answer), &out); err != nil || out.SessionKey == "" || out.Status != "accepted" {
				t.Fatalf("spawn answered %q", answer)
			}
			child, err := sandbox.Resolve(a.runner.Config, a.state, "main", out.SessionKey)
			if err != nil {
				t.Fatal(err)
			}
			if !child.Sandboxed {
				t.Fatalf("child %s is not sandboxed: %s", out.SessionKey, child.Reason)
			}
			if b, err := os.ReadFile(filepath.Join(child.Spec.Root, "spawned.txt")); err != nil || string(b) != "child\n" {
				t.Errorf("the child's command did not write in its sandbox workspace: %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(child.AgentWorkspace, "spawned.txt")); err == nil {
				t.Error("the child's command wrote in the agent workspace")
			}
			e, err := a.db.GetSession(context.Background(), "main", out.SessionKey)
			if err != nil || e.SpawnedBy != parent {
				t.Errorf("child entry spawnedBy %q (%v), want %s", e.SpawnedBy, err, parent)
			}
		})
	}
}

// TestSessionToolsAcrossAgents: other agents' sessions need visibility all
// and tools.agentToAgent; a sandboxed session (clamp lifted) may read
// another agent's sessions then, but drives only those no less confined.
func TestSessionToolsAcrossAgents(t *testing.T) {
	if err := requireBwrap(t); err != nil {
		t.Skip(err)
	}
	const agents = `agents: {defaults: {sandbox: {mode: "all", backend: "bwrap", sessionToolsVisibility: "all"}},
		list: [{id: "main"}, {id: "twin"}, {id: "wide", sandbox: {workspaceAccess: "rw"}}]}`
	cases := []struct {
		name, tools string
		target      string
		reads       string // "" when history is allowed, else a part of the refusal
		drives      string // the same for send
	}{
		{"tree", `{}`, "agent:twin:main", `tools.sessions.visibility is "tree" (the default)`, `tools.sessions.visibility is "tree"`},
		{"all without agentToAgent", `{sessions: {visibility: "all"}}`, "agent:twin:main", "tools.agentToAgent.enabled is not true", "tools.agentToAgent.enabled"},
		{"all, allow lists main only", `{sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["main"]}}`, "agent:twin:main", "tools.agentToAgent.allow", "tools.agentToAgent.allow"},
		{"all, agentToAgent: as confined", `{sessions: {visibility: "all"}, agentToAgent: {enabled: true}}`, "agent:twin:main", "", ""},
		{"all, agentToAgent: wider access", `{sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["*"]}}`, "agent:wide:main", "",
			`its workspaceAccess is "rw" (agents.list[2].sandbox.workspaceAccess), wider than this session's "none"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApprovalsRig(t, `{`+agents+`, tools: `+c.tools+`}`, 0)
			ctx := context.Background()
			for _, k := range []string{"agent:main:main", c.target} {
				agent, _, _ := strings.Cut(strings.TrimPrefix(k, "agent:"), ":")
				if _, err := a.db.BeginTurn(ctx, agent, k, llm.Message{Role: llm.RoleUser, Content: "hello"}); err != nil {
					t.Fatal(err)
				}
			}
			plan, err := sandbox.Resolve(a.runner.Config, a.state, "main", "agent:main:main")
			if err != nil {
				t.Fatal(err)
			}
			s := newRunSessions(a.runner, "main", "agent:main:main", &plan)
			check := func(what string, err error, want string) {
				t.Helper()
				switch {
				case want == "" && err != nil:
					t.Errorf("%s refused: %v", what, err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: %v, want a refusal containing %q", what, err, want)
				}
			}
			_, err = s.History(ctx, c.target, 10)
			check("history", err, c.reads)
			_, err = s.Send(ctx, "", c.target, "hi")
			check("send", err, c.drives)
		})
	}
}

// TestSessionToolsStayInTheTenant: sessions live in each tenant's own
// store, so even visibility all with agent-to-agent on reaches nothing of
// another tenant: a session key that exists there does not exist here.
func TestSessionToolsStayInTheTenant(t *testing.T) {
	const cfg = `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`
	acme, beta := newApprovalsRig(t, cfg, 0), newApprovalsRig(t, cfg, 0)
	const secret = "agent:main:openai-user:ceo"
	if _, err := beta.db.BeginTurn(context.Background(), "main", secret, llm.Message{Role: llm.RoleUser, Content: "beta's secret"}); err != nil {
		t.Fatal(err)
	}
	answer := acme.turn(`/call sessions_history {"sessionKey":"` + secret + `"}`)
	if !strings.Contains(answer, `no session "`+secret+`"`) || strings.Contains(answer, "beta's secret") {
		t.Errorf("acme read %q", answer)
	}
	if answer := acme.turn(`/call sessions_list {}`); strings.Contains(answer, "ceo") {
		t.Errorf("acme's list shows beta's session: %s", answer)
	}
}

// TestSessionToolsHideExistence: a session out of sight is refused by the
// visibility rule whether it exists or not, so refusals never tell which
// keys exist; "no session" comes only for a key in sight.
func TestSessionToolsHideExistence(t *testing.T) {
	a := newApprovalsRig(t, `{}`, 0)
	seedSessions(t, a.db)
	plan, err := sandbox.Resolve(a.runner.Config, a.state, "main", visKeys["O"])
	if err != nil {
		t.Fatal(err)
	}
	s := newRunSessions(a.runner, "main", visKeys["O"], &plan)
	for _, k := range []string{visKeys["M"], "agent:main:nosuch"} {
		_, err := s.History(context.Background(), k, 10)
		if err == nil || !strings.Contains(err.Error(), "is neither this session nor one it spawned") {
			t.Errorf("history of %s: %v", k, err)
		}
	}
	a.runner.Config.Tools.Sessions.Visibility = "agent"
	s = newRunSessions(a.runner, "main", visKeys["O"], &plan)
	if _, err := s.History(context.Background(), "agent:main:nosuch", 10); err == nil || err.Error() != `no session "agent:main:nosuch"` {
		t.Errorf("history of a missing session in sight: %v", err)
	}
}

// inlineChildren stands in for the gateway's registry (agent.Subagents,
// the agent package's outside edge): it creates the child's session as
// the gateway does and runs the child to its end inside Start.
type inlineChildren struct {
	r       *Runner
	started []Child
}

func (c *inlineChildren) Start(ctx context.Context, ch Child) (string, error) {
	c.started = append(c.started, ch)
	patch, _ := json.Marshal(map[string]any{"spawnedBy": ch.ParentKey, "spawnDepth": ch.Depth})
	if _, err := c.r.Store.PatchSession(ctx, ch.AgentID, ch.Key, patch, time.Now()); err != nil {
		return "", err
	}
	_, err := c.r.Run(ctx, Request{AgentID: ch.AgentID, SessionKey: ch.Key, ExtraSystem: ch.System,
		Input: []llm.Message{{Role: llm.RoleUser, Content: ch.Input}}})
	return "run-" + strconv.Itoa(len(c.started)), err
}

func (c *inlineChildren) Control(context.Context, string, tools.SubagentsRequest) (json.RawMessage, error) {
	return nil, errors.New("not used")
}

func (c *inlineChildren) Yield(string, string) error { return errors.New("not used") }

// TestSpawnChecks: what sessions_spawn refuses before a child starts —
// another agent outside subagents.allowAgents, a caller at
// maxSpawnDepth, sandbox "require" for an unsandboxed child — and what
// agents_list shows for the same settings.
func TestSpawnChecks(t *testing.T) {
	const agents = `list: [{id: "main"}, {id: "ops", name: "Ops"}, {id: "web", subagents: {allowAgents: ["*"]}}]`
	cases := []struct {
		name, cfg, agent, key, args string
		want                        string // "" for accepted, else part of the refusal
		list                        string // agents_list's ids for the caller
	}{
		{"own agent", `{agents: {` + agents + `}}`, "main", "agent:main:main", `{"task":"t"}`, "", "main"},
		{"another agent without allowAgents", `{agents: {` + agents + `}}`, "main", "agent:main:main", `{"task":"t","agentId":"ops"}`,
			"agentId is not allowed for sessions_spawn (allowed: main", "main"},
		{"allowed by the defaults", `{agents: {defaults: {subagents: {allowAgents: ["ops"]}}, ` + agents + `}}`, "main", "agent:main:main", `{"task":"t","agentId":"ops"}`, "", "ops"},
		{"the agent's list replaces the defaults", `{agents: {defaults: {subagents: {allowAgents: ["ops"]}}, ` + agents + `}}`, "web", "agent:web:main", `{"task":"t","agentId":"ops"}`, "", "web main ops"},
		{"unknown agent", `{agents: {` + agents + `}}`, "web", "agent:web:main", `{"task":"t","agentId":"ghost"}`, "not in the configured agent registry", "web main ops"},
		{"at the depth limit", `{agents: {` + agents + `}}`, "main", "agent:main:subagent:x", `{"task":"t"}`, "not allowed at this depth (current depth: 1, max: 1", "main"},
		{"under a deeper limit", `{agents: {defaults: {subagents: {maxSpawnDepth: 2}}, ` + agents + `}}`, "main", "agent:main:subagent:x", `{"task":"t"}`, "", "main"},
		{"require a sandbox, none", `{agents: {` + agents + `}}`, "main", "agent:main:main", `{"task":"t","sandbox":"require"}`, `sandbox "require"`, "main"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApprovalsRig(t, c.cfg, 0)
			kids := &inlineChildren{r: a.runner}
			a.runner.Subagents = kids
			plan, err := sandbox.Resolve(a.runner.Config, a.state, c.agent, c.key)
			if err != nil {
				t.Fatal(err)
			}
			s := newRunSessions(a.runner, c.agent, c.key, &plan)
			var req tools.SpawnRequest
			if err := json.Unmarshal([]byte(c.args), &struct {
				Task    *string `json:"task"`
				AgentID *string `json:"agentId"`
				Sandbox string  `json:"sandbox"`
			}{&req.Task, &req.AgentID, ""}); err != nil {
				t.Fatal(err)
			}
			req.RequireSandbox = strings.Contains(c.args, `"require"`)
			out, err := s.Spawn(context.Background(), req)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want == "" && !strings.Contains(string(out), `"status":"accepted"`):
				t.Errorf("answer %s", out)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("err %v, want it to contain %q", err, c.want)
			case c.want != "" && len(kids.started) > 0:
				t.Errorf("a refused spawn started %+v", kids.started)
			}
			raw, err := s.AgentsList(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var l struct{ Agents []struct{ ID string } }
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range l.Agents {
				ids = append(ids, x.ID)
			}
			if got := strings.Join(ids, " "); got != c.list {
				t.Errorf("agents_list %q, want %q (%s)", got, c.list, raw)
			}
		})
	}
}
