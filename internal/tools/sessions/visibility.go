package sessions

import (
	"fmt"
	"strconv"
	"strings"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/sandbox"
)

// The scopes of tools.sessions.visibility, narrowest first.
const (
	ScopeSelf  = "self"  // the current session alone
	ScopeTree  = "tree"  // and the sessions it spawned
	ScopeAgent = "agent" // every session of the current agent
	ScopeAll   = "all"   // and other agents' sessions, as tools.agentToAgent allows
)

// DefaultScope is tools.sessions.visibility when it is unset: "tree", the
// default of OpenClaw 2026.3.13, whose tool policy Talon follows. OpenClaw
// 2026.9 defaults to "all" with agent-to-agent access on, which would let
// every session read and drive every other one of the tenant; Talon keeps
// the narrower default.
const DefaultScope = ScopeTree

// ClampAll is the agents.defaults.sandbox.sessionToolsVisibility value that
// lifts the sandbox clamp; any other value ("spawned", the default) keeps
// it.
const ClampAll = "all"

var scopeRank = map[string]int{ScopeSelf: 0, ScopeTree: 1, ScopeAgent: 2, ScopeAll: 3}

// Visibility is which sessions the session tools of one session reach.
// ResolveVisibility makes it once per run; Check decides each target.
type Visibility struct {
	// Scope is the effective scope.
	Scope string
	// Configured is tools.sessions.visibility, or DefaultScope.
	Configured string
	// Clamped says the session is sandboxed and agents.defaults.sandbox.
	// sessionToolsVisibility narrowed Configured to tree.
	Clamped bool

	held     bool // sandboxed under the clamp: Scope is at most tree
	clampSet bool // sessionToolsVisibility is written in the config
	a2a      config.AgentToAgent
}

// ResolveVisibility reads the visibility of a session's tools, as
// OpenClaw's resolveEffectiveSessionToolsVisibility does, with one
// difference: the sandbox clamp is a ceiling. OpenClaw turns every scope of
// a sandboxed session into tree, "self" included; Talon leaves "self" as
// it is.
func ResolveVisibility(cfg *config.Config, sandboxed bool) Visibility {
	clamp := cfg.Agents.Defaults.Sandbox.SessionToolsVisibility
	v := Visibility{Configured: cfg.Tools.Sessions.Visibility, clampSet: clamp != "", a2a: cfg.Tools.AgentToAgent}
	if _, known := scopeRank[v.Configured]; !known {
		v.Configured = DefaultScope // "" (unset); config validation refuses the rest
	}
	v.Scope = v.Configured
	v.held = sandboxed && clamp != ClampAll
	if v.held && scopeRank[v.Scope] > scopeRank[ScopeTree] {
		v.Scope, v.Clamped = ScopeTree, true
	}
	return v
}

// Target is a session a tool names, as the store knows it.
type Target struct {
	Agent string // the agent it belongs to
	Key   string // canonical
	// SpawnedBy is the canonical key of the session that spawned it, ""
	// when none did.
	SpawnedBy string
}

// Check returns nil when the session key of agent may reach t (read its
// status or history, list it, send to it), else why not, naming the rule
// and its config key. A session always reaches itself.
func (v *Visibility) Check(agent, key string, t Target) error {
	switch {
	case t.Key == key:
		return nil
	case v.Scope == ScopeSelf:
		return fmt.Errorf("%s is not this session, and tools.sessions.visibility is \"self\": this session's tools reach only itself", t.Key)
	case t.Agent == agent && (v.Scope != ScopeTree || t.SpawnedBy == key):
		return nil
	case t.Agent == agent || v.held:
		return v.notSpawned(t.Key)
	}
	return v.checkAgent(agent, t)
}

// checkAgent decides a target of another agent: scope all, then
// tools.agentToAgent (off unless enabled, as in OpenClaw 2026.3.13).
func (v *Visibility) checkAgent(agent string, t Target) error {
	switch {
	case v.Scope != ScopeAll:
		return fmt.Errorf("%s belongs to agent %q, and tools.sessions.visibility is %s: reaching another agent's sessions needs \"all\" and tools.agentToAgent",
			t.Key, t.Agent, v.configured())
	case v.a2a.Enabled == nil || !*v.a2a.Enabled:
		return fmt.Errorf("%s belongs to agent %q, and agent-to-agent access is off: tools.agentToAgent.enabled is not true", t.Key, t.Agent)
	case !v.allows(agent) || !v.allows(t.Agent):
		return fmt.Errorf("%s belongs to agent %q, and tools.agentToAgent.allow does not list both %q and %q", t.Key, t.Agent, agent, t.Agent)
	}
	return nil
}

func (v *Visibility) notSpawned(key string) error {
	if v.held {
		clamp := `"spawned" (the default)`
		if v.clampSet {
			clamp = `"spawned"`
		}
		return fmt.Errorf("%s is neither this session nor one it spawned: this session is sandboxed, and agents.defaults.sandbox.sessionToolsVisibility %s keeps a sandboxed session's tools to the sessions it spawned, whatever tools.sessions.visibility says (it is %q)",
			key, clamp, v.Configured)
	}
	return fmt.Errorf("%s is neither this session nor one it spawned, and tools.sessions.visibility is %s: \"agent\" reaches every session of this agent", key, v.configured())
}

// configured is Configured quoted, marked when it is the default.
func (v *Visibility) configured() string {
	s := strconv.Quote(v.Configured)
	if v.Configured == DefaultScope {
		s += " (the default)"
	}
	return s
}

// allows reports whether tools.agentToAgent.allow lists an agent: empty
// lists every agent; "*" and globs match ignoring case, other entries
// exactly; a blank entry matches nothing (OpenClaw's rules).
func (v *Visibility) allows(agent string) bool {
	if len(v.a2a.Allow) == 0 {
		return true
	}
	for _, e := range v.a2a.Allow {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case strings.Contains(e, "*"):
			if policy.MatchGlob(strings.ToLower(e), strings.ToLower(agent)) {
				return true
			}
		case e == agent:
			return true
		}
	}
	return false
}

// Agents are the agents whose sessions sessions_list shows, of the known
// ones: the caller's, then under scope all those tools.agentToAgent lets
// it reach.
func (v *Visibility) Agents(agent string, known []string) []string {
	out := []string{agent}
	for _, a := range known {
		if a != agent && v.checkAgent(agent, Target{Agent: a}) == nil {
			out = append(out, a)
		}
	}
	return out
}

// CheckDrive returns nil when a session whose sandbox is caller may make
// the session whose sandbox is target act (send to it, spawn it), else the
// refusal. This is Talon's rule, stricter than OpenClaw's: a sandboxed
// session never drives a less-confined one (sandbox.Looser), whatever
// tools.sessions.visibility and sessionToolsVisibility say.
func CheckDrive(caller, target *sandbox.Plan) error {
	why := sandbox.Looser(caller, target)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%s confines less than this sandboxed session: %s. A sandboxed session never drives a less-confined one; this is Talon's rule, which neither tools.sessions.visibility nor agents.defaults.sandbox.sessionToolsVisibility lifts",
		target.SessionKey, why)
}
