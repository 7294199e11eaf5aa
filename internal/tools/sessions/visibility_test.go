package sessions

import (
	"strings"
	"testing"

	"talon/internal/config"
)

func parseConfig(t *testing.T, src string) *config.Config {
	t.Helper()
	f, err := config.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

func TestResolveVisibility(t *testing.T) {
	cases := []struct {
		cfg       string
		sandboxed bool
		scope     string
		clamped   bool
	}{
		{`{}`, false, ScopeTree, false},
		{`{}`, true, ScopeTree, false},
		{`{tools: {sessions: {visibility: "all"}}}`, false, ScopeAll, false},
		{`{tools: {sessions: {visibility: "all"}}}`, true, ScopeTree, true},
		{`{tools: {sessions: {visibility: "agent"}}}`, true, ScopeTree, true},
		// The clamp is a ceiling: self stays self (OpenClaw widens it to tree).
		{`{tools: {sessions: {visibility: "self"}}}`, true, ScopeSelf, false},
		{`{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "spawned"}}}}`, true, ScopeTree, true},
		// "all" lifts the clamp, not the visibility.
		{`{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`, true, ScopeAgent, false},
		{`{agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`, true, ScopeTree, false},
		{`{tools: {sessions: {visibility: "self"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`, true, ScopeSelf, false},
	}
	for _, c := range cases {
		v := ResolveVisibility(parseConfig(t, c.cfg), c.sandboxed)
		if v.Scope != c.scope || v.Clamped != c.clamped {
			t.Errorf("%s sandboxed=%v: scope %q clamped %v, want %q %v", c.cfg, c.sandboxed, v.Scope, v.Clamped, c.scope, c.clamped)
		}
	}
}

// TestVisibilityCheck: the caller is agent:main:p (agent main) unless the
// case says otherwise; "" as want means allowed.
func TestVisibilityCheck(t *testing.T) {
	const caller = "agent:main:p"
	self := Target{Agent: "main", Key: caller}
	child := Target{Agent: "main", Key: "agent:main:subagent:c", SpawnedBy: caller}
	grandchild := Target{Agent: "main", Key: "agent:main:subagent:g", SpawnedBy: "agent:main:subagent:c"}
	sibling := Target{Agent: "main", Key: "agent:main:main"}
	ops := Target{Agent: "ops", Key: "agent:ops:main"}
	opsChild := Target{Agent: "ops", Key: "agent:ops:subagent:x", SpawnedBy: caller}
	cases := []struct {
		name, cfg string
		sandboxed bool
		target    Target
		want      string // a part of the refusal; "" when allowed
	}{
		{"default tree: itself", `{}`, false, self, ""},
		{"default tree: its child", `{}`, false, child, ""},
		{"default tree: not a grandchild", `{}`, false, grandchild, `is neither this session nor one it spawned, and tools.sessions.visibility is "tree" (the default)`},
		{"default tree: not the main session", `{}`, false, sibling, "neither this session nor one it spawned"},
		{"default tree: not another agent", `{}`, false, ops, `belongs to agent "ops", and tools.sessions.visibility is "tree" (the default): reaching another agent's sessions needs "all"`},
		{"default tree: not another agent's session it spawned", `{}`, false, opsChild, `belongs to agent "ops"`},
		{"self: itself", `{tools: {sessions: {visibility: "self"}}}`, false, self, ""},
		{"self: not its child", `{tools: {sessions: {visibility: "self"}}}`, false, child, `tools.sessions.visibility is "self"`},
		{"agent: main session", `{tools: {sessions: {visibility: "agent"}}}`, false, sibling, ""},
		{"agent: not another agent", `{tools: {sessions: {visibility: "agent"}}}`, false, ops, `tools.sessions.visibility is "agent"`},
		{"all: another agent needs agentToAgent", `{tools: {sessions: {visibility: "all"}}}`, false, ops, "tools.agentToAgent.enabled is not true"},
		{"all: agentToAgent on", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, false, ops, ""},
		{"all: allow lists both", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["main", "o*"]}}}`, false, ops, ""},
		{"all: allow glob ignores case", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["MA*", "OPS*"]}}}`, false, ops, ""},
		{"all: allow exact is exact", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["main", "OPS"]}}}`, false, ops, `tools.agentToAgent.allow does not list both "main" and "ops"`},
		{"all: allow lists one", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["ops"]}}}`, false, ops, "tools.agentToAgent.allow"},
		{"all: blank allow entry denies", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: [" "]}}}`, false, ops, "tools.agentToAgent.allow"},
		{"all: same agent needs no agentToAgent", `{tools: {sessions: {visibility: "all"}}}`, false, sibling, ""},
		{"sandboxed, default: its child", `{}`, true, child, ""},
		{"sandboxed, default: not the main session", `{}`, true, sibling,
			`this session is sandboxed, and agents.defaults.sandbox.sessionToolsVisibility "spawned" (the default) keeps a sandboxed session's tools to the sessions it spawned, whatever tools.sessions.visibility says (it is "tree")`},
		{"sandboxed, default: not another agent", `{}`, true, ops, "agents.defaults.sandbox.sessionToolsVisibility"},
		{"sandboxed, self: self rule first", `{tools: {sessions: {visibility: "self"}}}`, true, child, `tools.sessions.visibility is "self"`},
		{"sandboxed, all: clamped", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, true, sibling,
			`this session is sandboxed, and agents.defaults.sandbox.sessionToolsVisibility "spawned" (the default) keeps a sandboxed session's tools to the sessions it spawned, whatever tools.sessions.visibility says (it is "all")`},
		{"sandboxed, all: clamped for another agent too", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, true, ops, "agents.defaults.sandbox.sessionToolsVisibility"},
		{"sandboxed, agent, clamp spawned written", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "spawned"}}}}`, true, sibling,
			`agents.defaults.sandbox.sessionToolsVisibility "spawned" keeps`},
		{"sandboxed, agent, clamp lifted", `{tools: {sessions: {visibility: "agent"}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`, true, sibling, ""},
		{"sandboxed, clamp lifted, tree stays tree", `{agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`, true, sibling, "neither this session nor one it spawned"},
		{"sandboxed, all, clamp lifted: another agent", `{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}, agents: {defaults: {sandbox: {sessionToolsVisibility: "all"}}}}`, true, ops, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := ResolveVisibility(parseConfig(t, c.cfg), c.sandboxed)
			err := v.Check("main", caller, c.target)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want a refusal containing %q", err, c.want)
			}
		})
	}
}

func TestVisibilityAgents(t *testing.T) {
	known := []string{"main", "ops", "hr"}
	cases := []struct {
		cfg  string
		want string
	}{
		{`{}`, "main"},
		{`{tools: {sessions: {visibility: "agent"}, agentToAgent: {enabled: true}}}`, "main"},
		{`{tools: {sessions: {visibility: "all"}}}`, "main"},
		{`{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true}}}`, "main ops hr"},
		{`{tools: {sessions: {visibility: "all"}, agentToAgent: {enabled: true, allow: ["main", "hr"]}}}`, "main hr"},
	}
	for _, c := range cases {
		v := ResolveVisibility(parseConfig(t, c.cfg), false)
		if got := strings.Join(v.Agents("main", known), " "); got != c.want {
			t.Errorf("%s: Agents = %q, want %q", c.cfg, got, c.want)
		}
	}
}
