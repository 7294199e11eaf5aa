package policy

import (
	"math"
	"slices"
	"strings"

	"talon/internal/config"
)

// Subagent roles.
const (
	RoleMain         = "main"
	RoleOrchestrator = "orchestrator"
	RoleLeaf         = "leaf"
)

// SessionEntry is the part of a session-store entry the policy reads.
type SessionEntry struct {
	SessionID    string `json:"sessionId,omitempty"`
	SpawnDepth   *int   `json:"spawnDepth,omitempty"`
	SpawnedBy    string `json:"spawnedBy,omitempty"`
	SubagentRole string `json:"subagentRole,omitempty"`
}

// Sessions is a session store keyed by session key.
type Sessions map[string]SessionEntry

func (s Sessions) lookup(key string) (SessionEntry, bool) {
	if e, ok := s[key]; ok {
		return e, true
	}
	// Store keys compare lower-cased. Of keys that differ only in case the
	// lower-cased one wins, else the first in byte order: never map order.
	lk := strings.ToLower(strings.TrimSpace(key))
	if e, ok := s[lk]; ok {
		return e, true
	}
	best, found := "", false
	for k := range s {
		if strings.ToLower(k) == lk && (!found || k < best) {
			best, found = k, true
		}
	}
	if !found {
		return SessionEntry{}, false
	}
	return s[best], true
}

// SubagentDepth is the spawn depth of a session: the stored spawnDepth, else
// the parent's depth + 1 through spawnedBy, else the number of ":subagent:"
// segments in the key.
func SubagentDepth(key string, store Sessions) int {
	return depth(key, store, map[string]bool{})
}

func depth(key string, store Sessions, seen map[string]bool) int {
	lk := strings.ToLower(strings.TrimSpace(key))
	if e, ok := store.lookup(key); ok && !seen[lk] {
		seen[lk] = true
		if e.SpawnDepth != nil && *e.SpawnDepth >= 0 {
			return *e.SpawnDepth
		}
		if e.SpawnedBy != "" {
			return depth(e.SpawnedBy, store, seen) + 1
		}
	}
	return strings.Count(lk, ":subagent:")
}

// MaxSpawnDepth is agents.defaults.subagents.maxSpawnDepth, default 1, at
// least 1, fractions floored.
func MaxSpawnDepth(cfg *config.Config) int {
	v := cfg.Agents.Defaults.Subagents.MaxSpawnDepth
	if v == nil || math.IsNaN(*v) {
		return 1
	}
	return max(1, int(math.Floor(min(*v, math.MaxInt32))))
}

// SubagentRole is main, orchestrator or leaf; a stored subagentRole wins.
func SubagentRole(cfg *config.Config, key string, store Sessions, depth int) string {
	if e, ok := store.lookup(key); ok {
		switch e.SubagentRole {
		case RoleMain, RoleOrchestrator, RoleLeaf:
			return e.SubagentRole
		}
	}
	switch {
	case depth <= 0:
		return RoleMain
	case depth < MaxSpawnDepth(cfg):
		return RoleOrchestrator
	}
	return RoleLeaf
}

// SubagentPolicy is the step-9 policy for a role.
type SubagentPolicy struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny"`
	// BuiltIn is the part of Deny that comes from the role's defaults rather
	// than from tools.subagents.tools.deny.
	BuiltIn []string `json:"-"`
}

// ResolveSubagentPolicy builds the subagent policy (§6): the role's default
// deny minus anything tools.subagents.tools allows, plus its configured deny.
func ResolveSubagentPolicy(cfg *config.Config, role string) SubagentPolicy {
	base := slices.Clone(SubagentDenyAlways)
	if role == RoleLeaf {
		base = append(base, SubagentDenyLeaf...)
	}
	t := cfg.Tools.Subagents.Tools
	allowed := normalizeList(append(slices.Clone([]string(t.Allow)), t.AlsoAllow...))
	base = slices.DeleteFunc(base, func(s string) bool { return slices.Contains(allowed, s) })
	p := SubagentPolicy{BuiltIn: base}
	p.Deny = append(slices.Clone(base), t.Deny...)
	switch {
	case t.Allow != nil && t.AlsoAllow != nil:
		// A plain union here, unlike §4.3: `allow: []` plus alsoAllow
		// restricts to alsoAllow.
		p.Allow = dedupe(append(slices.Clone([]string(t.Allow)), t.AlsoAllow...))
	case t.Allow != nil:
		p.Allow = t.Allow
	}
	return p
}
