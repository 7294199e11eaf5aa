package template

import (
	"slices"

	"talon/internal/config"
	"talon/internal/policy"
)

// AgentTools is the tools block of an installed employee's agents.list[]
// entry: the same list at layer 1 (agent policy) and layer 3 (sandbox).
type AgentTools struct {
	// AlsoAllow is agents.list[].tools.alsoAllow: added to the profile.
	AlsoAllow []string
	// SandboxAllow is agents.list[].tools.sandbox.tools.allow, which
	// replaces the sandbox default rather than adding to it: the default
	// plus AlsoAllow. Nil when AlsoAllow is empty, so that an employee
	// without extra tools follows Talon's default as it changes.
	SandboxAllow []string
	// Exec is agents.list[].tools.exec, when the template sets it.
	Exec *ExecConfig
}

// Tools returns the employee's tools block. The sandbox list is built from
// policy.SandboxDefaultAllow now, not from a copy taken earlier.
func (t *Template) Tools() AgentTools {
	a := AgentTools{AlsoAllow: slices.Clone(t.AlsoAllow)}
	if len(t.AlsoAllow) > 0 {
		a.SandboxAllow = unionKeepOrder(policy.SandboxDefaultAllow, t.AlsoAllow)
	}
	if t.Exec != nil {
		e := *t.Exec
		a.Exec = &e
	}
	return a
}

// unionKeepOrder is a followed by the entries of b not already present.
func unionKeepOrder(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Value is the block as a config tree, keys absent when unset.
func (a AgentTools) Value() *config.Value {
	v := config.NewObject()
	if len(a.AlsoAllow) > 0 {
		v.Set("alsoAllow", config.NewStrings(a.AlsoAllow...))
	}
	if a.SandboxAllow != nil {
		v.Set("sandbox", config.NewObject(config.Member{Key: "tools", Value: config.NewObject(
			config.Member{Key: "allow", Value: config.NewStrings(a.SandboxAllow...)})}))
	}
	if a.Exec != nil {
		v.Set("exec", execValue(a.Exec))
	}
	return v
}

func execValue(e *ExecConfig) *config.Value {
	return stringMembers("security", e.Security, "ask", e.Ask)
}

func sandboxValue(s *SandboxConfig) *config.Value {
	return stringMembers("mode", s.Mode, "backend", s.Backend)
}

// stringMembers builds an object from key, value pairs, leaving out the
// empty values.
func stringMembers(kv ...string) *config.Value {
	v := config.NewObject()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], config.NewString(kv[i+1]))
		}
	}
	return v
}

// AgentEntry is the agents.list[] entry an install writes for this
// template: {id, name, workspace, model, sandbox, tools}. workspace is as
// the config should say it (the installer passes a path relative to the
// tenant directory). Keys the template does not set are absent.
func (t *Template) AgentEntry(workspace string) *config.Value {
	tv := t.Tools().Value()
	e := agentEntry(&t.m, tv)
	e.Set("workspace", config.NewString(workspace))
	return e
}

// agentEntry builds the entry without a workspace; tools nil means "build
// the tools block from m alone" (validation runs before a Template exists).
func agentEntry(m *manifest, tools *config.Value) *config.Value {
	e := config.NewObject(
		config.Member{Key: "id", Value: config.NewString(m.Type)},
		config.Member{Key: "name", Value: config.NewString(m.Name)},
	)
	if m.Model != "" {
		e.Set("model", config.NewString(m.Model))
	}
	if m.Sandbox != nil {
		e.Set("sandbox", sandboxValue(m.Sandbox))
	}
	if tools == nil {
		tools = AgentTools{AlsoAllow: m.RequiredTools.AlsoAllow, Exec: m.Exec}.Value()
	}
	// No empty block: an update drops one, so writing it here would make
	// the first sync after an install change the config for nothing.
	if len(tools.Members) > 0 {
		e.Set("tools", tools)
	}
	return e
}

// ManagedToolKeys are the keys of agents.list[].tools that an install
// owns: it sets them from the template and removes them when the template
// no longer sets them. Other keys in the block (a tenant's own deny, say)
// are left alone.
var ManagedToolKeys = []string{"alsoAllow", "sandbox", "exec"}

// SyncedEntryKeys are the keys of the agents.list[] entry that an update
// re-sets from the template (removing them when the template no longer
// sets them), beside the tools keys above. name and model are written at
// install only: a tenant may rename its employee or pick another model,
// and an update keeps that choice.
var SyncedEntryKeys = []string{"workspace", "sandbox"}
