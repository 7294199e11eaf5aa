package studio

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// The one-shot sandbox allow-list repair of seed 002. An agent that is
// always sandboxed (sandbox.mode "all", its own or agents.defaults') with
// an explicitly empty tools.sandbox.tools.allow gets ["*"]. Under the
// release Talon's vectors pin (spec §5) both mean "no restriction"; under
// the older upstream seed 002 describes, [] left only `image`. Writing
// ["*"] keeps the meaning the same under both, so a config moved between
// them never loses its sandbox tools.

// repairs remembers, per tenant, that the repair ran and what it did.
type repairs struct {
	mu   sync.Mutex
	done map[string]*repairOutcome
}

// repairOutcome is one tenant's: its own lock, so that a slow gateway
// holds up only that tenant's first page.
type repairOutcome struct {
	mu      sync.Mutex
	ran     bool
	Notices []string
}

// of returns the tenant's outcome, created on first use.
func (r *repairs) of(tenant string) *repairOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.done[tenant]
	if o == nil {
		o = &repairOutcome{}
		r.done[tenant] = o
	}
	return o
}

// sandboxRepairs returns the ids of the agents that need the repair.
func sandboxRepairs(cfg map[string]any) (ids []string) {
	agents, _ := cfg["agents"].(map[string]any)
	list, _ := agents["list"].([]any)
	defMode := sandboxMode(agents["defaults"])
	for _, it := range list {
		entry, _ := it.(map[string]any)
		if entry == nil {
			continue
		}
		mode := sandboxMode(entry)
		if mode == "" {
			mode = defMode
		}
		if mode != "all" {
			continue
		}
		allow, isList := dig(entry, "tools", "sandbox", "tools")["allow"].([]any)
		id, _ := entry["id"].(string)
		if !isList || len(allow) != 0 || id == "" {
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// repairPatch is the config merge patch of the repair: agents.list is
// merged by id, so it names only the repaired entries.
func repairPatch(ids []string) string {
	list := make([]any, len(ids))
	for i, id := range ids {
		list[i] = map[string]any{"id": id, "tools": map[string]any{"sandbox": map[string]any{"tools": map[string]any{"allow": []string{"*"}}}}}
	}
	b, _ := json.Marshal(map[string]any{"agents": map[string]any{"list": list}})
	return string(b)
}

func sandboxMode(v any) string {
	m, _ := v.(map[string]any)
	sb, _ := m["sandbox"].(map[string]any)
	s, _ := sb["mode"].(string)
	return strings.ToLower(strings.TrimSpace(s))
}

// dig returns the object at path under m, or an empty one not in m.
func dig(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		next, _ := m[k].(map[string]any)
		if next == nil {
			return map[string]any{}
		}
		m = next
	}
	return m
}

// repairNotice says what the repair changed for one agent.
func repairNotice(id string) string {
	return fmt.Sprintf(`Studio repaired agent %q: its sandbox tool allow list (agents.list[].tools.sandbox.tools.allow) was [] and is now ["*"]. `+
		`Both mean "every tool the other layers allow" in the OpenClaw release Talon follows; older OpenClaw read [] as "image only", and ["*"] means the same everywhere.`, id)
}

// sandboxAllowMeaning says in words what an agent's sandbox allow list
// means, for the agent's page; raw is its JSON, "" when absent.
func sandboxAllowMeaning(present bool, l []string) string {
	switch {
	case !present:
		return "Not set: the default sandbox allow list applies (below), unless tools.sandbox.tools.allow sets one for every agent."
	case len(l) == 0:
		return `[] (empty): no restriction in the OpenClaw release Talon follows (spec §5). Older OpenClaw read it as "image only"; Studio repairs it to ["*"] for always-sandboxed agents so it means the same under both.`
	case len(l) == 1 && l[0] == "*":
		return `["*"]: every tool the other layers allow may run in the sandbox; the sandbox deny list still applies.`
	}
	return "Only these tools (and the groups they name) may run in the sandbox: " + strings.Join(l, ", ") + "."
}
