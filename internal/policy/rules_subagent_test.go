package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// §6 lists (2026.3.13), copied from the spec.
var (
	specDenyAlways = []string{"gateway", "agents_list", "whatsapp_login", "session_status", "cron", "memory_search", "memory_get", "sessions_send"}
	specDenyLeaf   = []string{"subagents", "sessions_list", "sessions_history", "sessions_spawn"}
)

// §6 A subagent key: the trimmed key starts with subagent:
// (case-insensitive), or it is agent:<id>:<rest> with rest starting
// subagent:.
func TestRulesIsSubagentKey(t *testing.T) {
	cases := []struct {
		key  string
		want bool
	}{
		{"subagent:x", true},
		{"SUBAGENT:x", true},
		{"  subagent:x ", true},
		{"agent:main:subagent:x", true},
		{"agent:ops:Subagent:x:subagent:y", true},
		{"agent:main:main", false},
		{"agent:main:whatsapp:subagent:x", false},
		{"agent:main:subagent", false},
		{"subagentx", false},
		{"subagents:x", false},
		{"main", false},
		{"", false},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			if got := IsSubagentKey(c.key); got != c.want {
				t.Errorf("IsSubagentKey(%q) = %v, want %v", c.key, got, c.want)
			}
		})
	}
}

// §6 Depth: the stored spawnDepth if a non-negative integer; else the
// parent's depth + 1 through spawnedBy (recursively, cycle-safe); else the
// number of ":subagent:" in the lower-cased key.
func TestRulesSubagentDepth(t *testing.T) {
	const a, ab = "agent:main:subagent:a", "agent:main:subagent:a:subagent:b"
	cases := []struct {
		name  string
		key   string
		store Sessions
		want  int
	}{
		{"one :subagent:", a, nil, 1},
		{"two :subagent:", ab, nil, 2},
		{"count is case-insensitive", "AGENT:MAIN:SUBAGENT:A:SUBAGENT:B", nil, 2},
		{"leading subagent: has no colon before it", "subagent:a", nil, 0},
		{"main session", "agent:main:main", nil, 0},
		{"stored depth wins over the key", a, Sessions{a: {SpawnDepth: intp(3)}}, 3},
		{"stored depth zero", ab, Sessions{ab: {SpawnDepth: intp(0)}}, 0},
		{"negative stored depth ignored", ab, Sessions{ab: {SpawnDepth: intp(-1)}}, 2},
		{"stored depth beats spawnedBy", a, Sessions{a: {SpawnDepth: intp(5), SpawnedBy: "p"}, "p": {SpawnDepth: intp(1)}}, 5},
		{"parent's stored depth + 1", a, Sessions{a: {SpawnedBy: "agent:main:subagent:p"}, "agent:main:subagent:p": {SpawnDepth: intp(2)}}, 3},
		{"parent without entry: its key count + 1", ab, Sessions{ab: {SpawnedBy: "agent:main:main"}}, 1},
		{"chain", "c", Sessions{"c": {SpawnedBy: "b"}, "b": {SpawnedBy: "a0"}, "a0": {SpawnDepth: intp(1)}}, 3},
		{"entry without depth or parent: key count", ab, Sessions{ab: {SessionID: "s"}}, 2},
		{"no entry: key count", ab, Sessions{"other": {SpawnDepth: intp(7)}}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SubagentDepth(c.key, c.store); got != c.want {
				t.Errorf("SubagentDepth(%q) = %d, want %d", c.key, got, c.want)
			}
		})
	}
	// Cycle-safe: the spec does not define the value, only that it ends.
	cycles := []struct {
		name  string
		store Sessions
	}{
		{"two-node cycle", Sessions{a: {SpawnedBy: "x"}, "x": {SpawnedBy: a}}},
		{"self cycle", Sessions{a: {SpawnedBy: a}}},
	}
	for _, c := range cycles {
		t.Run(c.name, func(t *testing.T) {
			if got := SubagentDepth(a, c.store); got < 1 {
				t.Errorf("SubagentDepth through a cycle = %d, want >= 1 (a parent's depth + 1)", got)
			}
		})
	}
}

// §6 maxSpawnDepth = agents.defaults.subagents.maxSpawnDepth, default 1,
// effective max(1, floor(x)).
func TestRulesMaxSpawnDepth(t *testing.T) {
	cases := []struct {
		name string
		cfg  string
		want int
	}{
		{"default", `{}`, 1},
		{"two", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":2}}}}`, 2},
		{"floored", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":2.9}}}}`, 2},
		{"zero", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":0}}}}`, 1},
		{"negative", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":-3}}}}`, 1},
		{"fraction below one", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":0.5}}}}`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MaxSpawnDepth(mustConfig(t, c.cfg)); got != c.want {
				t.Errorf("MaxSpawnDepth = %d, want %d", got, c.want)
			}
		})
	}
}

// §6 Role: depth ≤ 0 → main; depth < maxSpawnDepth → orchestrator; else
// leaf; a stored subagentRole (main|orchestrator|leaf) wins.
func TestRulesSubagentRole(t *testing.T) {
	const key = "agent:main:subagent:a"
	maxCfg := func(n string) string { return `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":` + n + `}}}}` }
	cases := []struct {
		name  string
		cfg   string
		store Sessions
		depth int
		want  string
	}{
		{"depth 0", `{}`, nil, 0, RoleMain},
		{"negative depth", `{}`, nil, -1, RoleMain},
		{"depth 1, default max", `{}`, nil, 1, RoleLeaf},
		{"depth 1, max 2", maxCfg("2"), nil, 1, RoleOrchestrator},
		{"depth 2, max 2", maxCfg("2"), nil, 2, RoleLeaf},
		{"depth 3, max 2", maxCfg("2"), nil, 3, RoleLeaf},
		{"depth 2, max 3", maxCfg("3"), nil, 2, RoleOrchestrator},
		{"depth 2, max 2.9 floors to 2", maxCfg("2.9"), nil, 2, RoleLeaf},
		{"depth 1, max 0 is 1", maxCfg("0"), nil, 1, RoleLeaf},
		{"stored orchestrator at deep depth", `{}`, Sessions{key: {SubagentRole: "orchestrator"}}, 5, RoleOrchestrator},
		{"stored leaf under a high max", maxCfg("5"), Sessions{key: {SubagentRole: "leaf"}}, 1, RoleLeaf},
		{"stored main", `{}`, Sessions{key: {SubagentRole: "main"}}, 2, RoleMain},
		{"unknown stored role ignored", maxCfg("2"), Sessions{key: {SubagentRole: "boss"}}, 1, RoleOrchestrator},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SubagentRole(mustConfig(t, c.cfg), key, c.store, c.depth); got != c.want {
				t.Errorf("SubagentRole(depth %d) = %q, want %q", c.depth, got, c.want)
			}
		})
	}
}

// §6 Subagent policy: base deny = ALWAYS (+ LEAF for leaves); names in the
// normalised allow ∪ alsoAllow are removed from the base deny; configured
// deny is appended (additive in 2026.3.13); allow = allow ∪ alsoAllow when
// both are set, else allow as given; alsoAllow alone creates no allow list.
func TestRulesResolveSubagentPolicy(t *testing.T) {
	sub := func(tools string) string { return `{"tools":{"subagents":{"tools":` + tools + `}}}` }
	leafDeny := append(append([]string{}, specDenyAlways...), specDenyLeaf...)
	cases := []struct {
		name  string
		cfg   string
		role  string
		allow []string
		deny  []string
	}{
		{"leaf defaults", `{}`, RoleLeaf, nil, leafDeny},
		{"orchestrator defaults", `{}`, RoleOrchestrator, nil, specDenyAlways},
		{"main defaults", `{}`, RoleMain, nil, specDenyAlways},
		{"alsoAllow lifts a base deny, no allow list", sub(`{"alsoAllow":["sessions_send"]}`), RoleOrchestrator, nil,
			minus(specDenyAlways, "sessions_send")},
		{"alsoAllow normalised", sub(`{"alsoAllow":[" Sessions_Send "]}`), RoleOrchestrator, nil,
			minus(specDenyAlways, "sessions_send")},
		{"alsoAllow lifts a leaf deny", sub(`{"alsoAllow":["subagents"]}`), RoleLeaf, nil,
			minus(leafDeny, "subagents")},
		{"groups are not expanded when lifting", sub(`{"alsoAllow":["group:sessions"]}`), RoleLeaf, nil, leafDeny},
		{"allow lifts and restricts", sub(`{"allow":["cron","read"]}`), RoleLeaf, []string{"cron", "read"},
			minus(leafDeny, "cron")},
		{"allow and alsoAllow unite", sub(`{"allow":["read"],"alsoAllow":["exec","read"]}`), RoleLeaf, []string{"read", "exec"}, leafDeny},
		{"configured deny is additive", sub(`{"deny":["browser"]}`), RoleOrchestrator, nil,
			append(append([]string{}, specDenyAlways...), "browser")},
		{"configured deny re-adds a lifted name", sub(`{"allow":["cron"],"deny":["cron"]}`), RoleOrchestrator, []string{"cron"},
			append(minus(specDenyAlways, "cron"), "cron")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ResolveSubagentPolicy(mustConfig(t, c.cfg), c.role)
			if diff := cmp.Diff(c.allow, []string(p.Allow), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("allow (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.deny, p.Deny); diff != "" {
				t.Errorf("deny (-want +got):\n%s", diff)
			}
		})
	}
}

// §6 in the pipeline: step 9 only for subagent keys; the resolved depth and
// role pick the deny lists; configured deny wins over allow/alsoAllow.
func TestRulesSubagentStep(t *testing.T) {
	sk := func(key string) Context { return Context{SessionKey: key, SenderIsOwner: true} }
	in := coreTools("read", "exec", "cron", "sessions_spawn", "sessions_send")
	stored := sk("agent:main:subagent:x")
	stored.Sessions = Sessions{"agent:main:subagent:x": {SpawnDepth: intp(1)}}
	cases := []struct {
		name      string
		cfg       string
		ctx       Context
		want      []string
		wantDepth int
		wantRole  string
	}{
		{"leaf by default", `{}`, sk("agent:main:subagent:x"), []string{"read", "exec"}, 1, RoleLeaf},
		{"orchestrator keeps sessions_spawn", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":2}}}}`, sk("agent:main:subagent:x"),
			[]string{"read", "exec", "sessions_spawn"}, 1, RoleOrchestrator},
		{"top-level subagent: key has depth 0, role main", `{}`, sk("subagent:x"), []string{"read", "exec", "sessions_spawn"}, 0, RoleMain},
		{"stored depth", `{"agents":{"defaults":{"subagents":{"maxSpawnDepth":3}}}}`, stored, []string{"read", "exec", "sessions_spawn"}, 1, RoleOrchestrator},
		{"configured deny wins over alsoAllow", `{"tools":{"subagents":{"tools":{"alsoAllow":["cron"],"deny":["cron"]}}}}`, sk("agent:main:subagent:x"),
			[]string{"read", "exec"}, 1, RoleLeaf},
		{"alsoAllow re-enables", `{"tools":{"subagents":{"tools":{"alsoAllow":["cron","sessions_spawn"]}}}}`, sk("agent:main:subagent:x"),
			[]string{"read", "exec", "cron", "sessions_spawn"}, 1, RoleLeaf},
		{"allow restricts", `{"tools":{"subagents":{"tools":{"allow":["read","cron"]}}}}`, sk("agent:main:subagent:x"),
			[]string{"read", "cron"}, 1, RoleLeaf},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(mustConfig(t, c.cfg), c.ctx, in)
			if diff := cmp.Diff(c.want, r.Names(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			want := &SubagentReport{Depth: c.wantDepth, Role: c.wantRole}
			if diff := cmp.Diff(want, r.Subagent); diff != "" {
				t.Errorf("subagent (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("not a subagent key: no step 9", func(t *testing.T) {
		r := Evaluate(mustConfig(t, `{"tools":{"subagents":{"tools":{"deny":["read"]}}}}`), ownerMain, in)
		if diff := cmp.Diff([]string{"read", "exec", "cron", "sessions_spawn", "sessions_send"}, r.Names()); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if r.Subagent != nil {
			t.Errorf("Subagent = %+v, want nil", r.Subagent)
		}
	})
}
