package studio

import (
	"fmt"
	"slices"
)

// Execution roles, as seed 002 describes Studio's: each is three
// coordinated changes — the agent's exec approvals policy
// (exec-approvals.json), runtime tool access (group:runtime in the
// agent's tools.deny or alsoAllow) and the exec settings of the agent's
// main session (sessions.patch). This file is the pure part: what each
// role writes, and which role a set of settings amounts to.

// runtimeGroup is the tool group a role grants or denies: exec, process.
const runtimeGroup = "group:runtime"

// Role is one execution role.
type Role struct {
	ID, Title, Summary string
	// Security and Ask go to the agent's entry in the approvals file and
	// to the main session's execSecurity and execAsk.
	Security, Ask string
	// Runtime says whether group:runtime is granted (alsoAllow, or allow
	// when the agent has an allow list) or denied (tools.deny).
	Runtime bool
}

// Roles, from least to most authority.
var Roles = []Role{
	{ID: "conservative", Title: "Conservative", Summary: "No commands: exec and process are denied, and the approvals policy denies every command.",
		Security: "deny", Ask: "off", Runtime: false},
	{ID: "collaborative", Title: "Collaborative", Summary: "Commands run when they are on the allowlist; anything else waits for a person to allow or deny it in the chat.",
		Security: "allowlist", Ask: "on-miss", Runtime: true},
	{ID: "autonomous", Title: "Autonomous", Summary: "Commands run without asking (in the sandbox when the agent is sandboxed).",
		Security: "full", Ask: "off", Runtime: true},
}

func roleByID(id string) (Role, bool) {
	for _, r := range Roles {
		if r.ID == id {
			return r, true
		}
	}
	return Role{}, false
}

// roleState is what decides an agent's role, as read back.
type roleState struct {
	Security, Ask  string // the approvals file's entry for the agent ("" unset)
	RuntimeDenied  bool   // group:runtime in the agent's tools.deny
	RuntimeGranted bool   // group:runtime in its alsoAllow or allow
}

// currentRole names the role the state amounts to, or "" (custom) with
// what differs from the nearest role.
func currentRole(st roleState) (id string, detail string) {
	for _, r := range Roles {
		if st.Security == r.Security && st.Ask == r.Ask && st.RuntimeDenied == !r.Runtime && (!r.Runtime || st.RuntimeGranted) {
			return r.ID, ""
		}
	}
	sec, ask := st.Security, st.Ask
	if sec == "" {
		sec = "unset (the defaults apply)"
	}
	if ask == "" {
		ask = "unset"
	}
	rt := "neither granted nor denied by the agent's entry"
	switch {
	case st.RuntimeDenied:
		rt = "denied (" + runtimeGroup + " in tools.deny)"
	case st.RuntimeGranted:
		rt = "granted (" + runtimeGroup + " in the agent's allow lists)"
	}
	return "", fmt.Sprintf("custom: approvals security %s, ask %s; runtime tools %s", sec, ask, rt)
}

// applyRoleTools changes an agents.list entry (a decoded JSON object) for
// the role and reports whether anything changed. Only group:runtime is
// moved: other entries of the lists are the operator's and stay.
func applyRoleTools(entry map[string]any, r Role) bool {
	tools, _ := entry["tools"].(map[string]any)
	if tools == nil {
		tools = map[string]any{}
	}
	changed := false
	// OpenClaw refuses allow and alsoAllow together in one scope: an agent
	// with an allow list gets the group there.
	grant := "alsoAllow"
	if _, ok := tools["allow"]; ok {
		grant = "allow"
	}
	if r.Runtime {
		changed = setList(tools, "deny", without(list(tools["deny"]), runtimeGroup)) || changed
		if !slices.Contains(list(tools[grant]), runtimeGroup) {
			changed = setList(tools, grant, append(list(tools[grant]), runtimeGroup)) || changed
		}
	} else {
		for _, k := range []string{"alsoAllow", "allow"} {
			if _, ok := tools[k]; ok {
				changed = setList(tools, k, without(list(tools[k]), runtimeGroup)) || changed
			}
		}
		if !slices.Contains(list(tools["deny"]), runtimeGroup) {
			changed = setList(tools, "deny", append(list(tools["deny"]), runtimeGroup)) || changed
		}
	}
	if changed {
		entry["tools"] = tools
	}
	return changed
}

// runtimeState reads group:runtime's place in an agents.list entry.
func runtimeState(entry map[string]any) (denied, granted bool) {
	tools, _ := entry["tools"].(map[string]any)
	denied = slices.Contains(list(tools["deny"]), runtimeGroup)
	granted = slices.Contains(list(tools["alsoAllow"]), runtimeGroup) || slices.Contains(list(tools["allow"]), runtimeGroup)
	return denied, granted
}

// list reads a JSON array of strings; other items are kept as they are
// by setList's callers only through this view, so it returns strings.
func list(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func without(l []string, v string) []string {
	return slices.DeleteFunc(slices.Clone(l), func(s string) bool { return s == v })
}

// setList writes l at tools[key] and reports a change. An empty deny
// list is removed rather than written as [] (which says nothing more).
func setList(tools map[string]any, key string, l []string) bool {
	old := list(tools[key])
	_, had := tools[key]
	if had && slices.Equal(old, l) {
		return false
	}
	if len(l) == 0 && key == "deny" {
		if !had {
			return false
		}
		delete(tools, key)
		return true
	}
	a := make([]any, len(l))
	for i, s := range l {
		a[i] = s
	}
	tools[key] = a
	return true
}
