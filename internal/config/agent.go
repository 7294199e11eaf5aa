package config

import (
	"os"
	"path/filepath"
	"strings"
)

// MainAgentID is the id of the agent a config without agents.list has,
// and what an empty id normalises to.
const MainAgentID = "main"

// NormalizeAgentID turns any id or name into an agent id: trimmed, lower
// case, [a-z0-9][a-z0-9_-]{0,63}; anything else collapses to "-" runs; empty
// becomes "main". It is OpenClaw's normalizeAgentId, and every comparison
// of agent ids goes through it.
func NormalizeAgentID(id string) string { return normalizeID(id, MainAgentID) }

// NormalizeAccountID is the same rule for channel account ids, whose
// fallback is "default".
func NormalizeAccountID(id string) string { return normalizeID(id, "default") }

func normalizeID(id, fallback string) string {
	s := strings.TrimSpace(id)
	if s == "" {
		return fallback
	}
	if validID(s) {
		return strings.ToLower(s)
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 64 {
		out = out[:64] // cut after trimming, as OpenClaw does: a dash may end it
	}
	if out == "" {
		return fallback
	}
	return out
}

// validID reports whether s is already an id but for the case of its
// letters, which is nearly every id: normalising it then allocates at most
// once.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // fold ASCII letters to lower case
		alnum := c >= 'a' && c <= 'z' || s[i] >= '0' && s[i] <= '9'
		if i == 0 && !alnum {
			return false
		}
		if !alnum && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

// Agent is the agents.list entry of an agent and its index, compared by
// normalised id (the first entry when two normalise alike); nil and -1
// when the list has none. The default agent of an empty list has no entry.
func (c *Config) Agent(id string) (*Agent, int) {
	if c == nil {
		return nil, -1
	}
	id = NormalizeAgentID(id)
	for i := range c.Agents.List {
		if NormalizeAgentID(c.Agents.List[i].ID) == id {
			return &c.Agents.List[i], i
		}
	}
	return nil, -1
}

// DefaultAgentID is the first agents.list entry with default: true, else
// the first entry, else main.
func (c *Config) DefaultAgentID() string {
	if c == nil {
		return MainAgentID
	}
	for _, a := range c.Agents.List {
		if a.Default != nil && *a.Default {
			return NormalizeAgentID(a.ID)
		}
	}
	if len(c.Agents.List) > 0 {
		return NormalizeAgentID(c.Agents.List[0].ID)
	}
	return MainAgentID
}

// HasAgent reports whether an agent exists: an agents.list entry, or the
// default agent, which exists even when the list is empty.
func (c *Config) HasAgent(id string) bool {
	id = NormalizeAgentID(id)
	if id == c.DefaultAgentID() {
		return true
	}
	a, _ := c.Agent(id)
	return a != nil
}

// AgentIDs are the config's agents: the default one first, then the listed
// ones in list order, each once.
func (c *Config) AgentIDs() []string {
	def := c.DefaultAgentID()
	out := []string{def}
	for _, id := range c.ListedAgentIDs() {
		if id != def {
			out = append(out, id)
		}
	}
	return out
}

// ListedAgentIDs are the agents in agents.list order, each once; with an
// empty list, the implicit default agent.
func (c *Config) ListedAgentIDs() []string {
	if c == nil || len(c.Agents.List) == 0 {
		return []string{c.DefaultAgentID()}
	}
	out := make([]string, 0, len(c.Agents.List))
	for _, a := range c.Agents.List {
		if id := NormalizeAgentID(a.ID); !contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// AgentModelSetting is the model setting that applies to an agent: its
// own `model` when that names a primary, else agents.defaults.model; nil
// when neither does. As in OpenClaw (resolveAgentEffectiveModelPrimary),
// a setting that names no primary is passed over.
func (c *Config) AgentModelSetting(id string) *Raw {
	if c == nil {
		return nil
	}
	if a, _ := c.Agent(id); a != nil && ModelPrimary(a.Model) != "" {
		return a.Model
	}
	if ModelPrimary(c.Agents.Defaults.Model) != "" {
		return c.Agents.Defaults.Model
	}
	return nil
}

// AgentModel is the model reference an agent runs with: the primary of
// its AgentModelSetting, else InspectModel.
func (c *Config) AgentModel(id string) string {
	if p := ModelPrimary(c.AgentModelSetting(id)); p != "" {
		return p
	}
	return InspectModel
}

// AgentFallbacks are the models an agent's runs fall back to, in order,
// when its primary fails, as OpenClaw chooses them: the agent's own
// `model.fallbacks` when its model object has that key ([] for none);
// else none when the agent names its own primary (an agent primary is
// strict unless it opts in); else agents.defaults.model.fallbacks. A
// malformed list counts as none (Validate reports it).
func (c *Config) AgentFallbacks(id string) []string {
	if c == nil {
		return nil
	}
	if a, _ := c.Agent(id); a != nil {
		if refs, set, err := ModelFallbacks(a.Model); set || err != nil {
			return refs
		}
		if ModelPrimary(a.Model) != "" {
			return nil
		}
	}
	refs, _, _ := ModelFallbacks(c.Agents.Defaults.Model)
	return refs
}

// AgentWorkspace is where an agent's own workspace lives: its `workspace`
// key, else `agents.defaults.workspace` (for the default agent; other
// agents get a sibling `<that>-<id>`), else `<state>/workspace` for the
// default agent and `<state>/workspace-<id>` for the others. Paths go
// through ExpandPath with stateDir as the base. It is where the path is,
// by its text: the caller checks where it leads on disk (contain.Resolved).
func (c *Config) AgentWorkspace(stateDir, id string) string {
	id = NormalizeAgentID(id)
	if a, _ := c.Agent(id); a != nil && strings.TrimSpace(a.Workspace) != "" {
		return ExpandPath(stateDir, a.Workspace)
	}
	isDefault := id == c.DefaultAgentID()
	if c != nil {
		if d := strings.TrimSpace(c.Agents.Defaults.Workspace); d != "" {
			p := ExpandPath(stateDir, d)
			if isDefault {
				return p
			}
			return p + "-" + id
		}
	}
	if isDefault {
		return filepath.Join(stateDir, "workspace")
	}
	return filepath.Join(stateDir, "workspace-"+id)
}

// ExpandPath resolves a configured path: trimmed, `~` or `~/…` is under
// the home directory (left as written when there is none), a relative path
// is under base; the result is clean.
func ExpandPath(base, p string) string {
	p = strings.TrimSpace(p)
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// AgentIndex is Agent's lookup in a tree being edited: the index of the
// item of list (an agents.list array) whose id is id, compared normalised;
// -1 when there is none or list is no array.
func AgentIndex(list *Value, id string) int {
	if list == nil || list.Kind != Array {
		return -1
	}
	id = NormalizeAgentID(id)
	for i, it := range list.Items {
		if v := it.Get("id"); v != nil && v.Kind == String && NormalizeAgentID(v.Str) == id {
			return i
		}
	}
	return -1
}
