package policy

import (
	"fmt"
	"slices"
	"strings"

	"talon/internal/config"
)

// pluginIndex knows which tools in the current list came from which plugin
// (§4.6). It is built once per evaluation from the tools entering the
// pipeline.
type pluginIndex struct {
	tools []pluginTool
	ids   []string // distinct plugin ids, lower-cased
}

type pluginTool struct {
	name   string // normalised tool name
	plugin string // lower-cased plugin id
}

func newPluginIndex(tools []Tool) *pluginIndex {
	p := &pluginIndex{}
	for _, t := range tools {
		if t.Plugin != "" {
			id := strings.ToLower(t.Plugin)
			p.tools = append(p.tools, pluginTool{Normalize(t.Name), id})
			if !slices.Contains(p.ids, id) {
				p.ids = append(p.ids, id)
			}
		}
	}
	return p
}

func (p *pluginIndex) hasPlugin(id string) bool {
	return slices.Contains(p.ids, id)
}

func (p *pluginIndex) isPluginTool(n string) bool {
	for _, t := range p.tools {
		if t.name == n {
			return true
		}
	}
	return false
}

// expands reports whether entry e stands for plugin tools here: group:plugins
// while any plugin tool exists, or the id of a plugin in the list.
func (p *pluginIndex) expands(e string) bool {
	if p == nil || len(p.tools) == 0 {
		return false
	}
	return e == GroupPlugins || p.hasPlugin(e)
}

// inGroup reports whether tool n is one of the tools entry e expands to.
func (p *pluginIndex) inGroup(e, n string) bool {
	for _, t := range p.tools {
		if t.name == n && (e == GroupPlugins || t.plugin == e) {
			return true
		}
	}
	return false
}

// Origin is where a plugin was discovered.
type Origin string

// Plugin origins, in discovery precedence order.
const (
	OriginConfig    Origin = "config"
	OriginWorkspace Origin = "workspace"
	OriginBundled   Origin = "bundled"
	OriginGlobal    Origin = "global"
)

// EnableState is whether a plugin is on and, when it is off, why.
type EnableState struct {
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason,omitempty"`
	// Key is the config key that decided, for explanations.
	Key string `json:"key,omitempty"`
}

// MemorySlot returns plugins.slots.memory as OpenClaw reads it: missing or
// blank means memory-core, "none" (any case) means no memory plugin ("").
func MemorySlot(p *config.Plugins) string {
	if p.Slots.Memory == nil {
		return MemoryPlugin
	}
	s := strings.TrimSpace(*p.Slots.Memory)
	switch {
	case s == "":
		return MemoryPlugin
	case strings.EqualFold(s, "none"):
		return ""
	}
	return s
}

func trimmedSet(list config.List) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if t := strings.TrimSpace(s); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// PluginEnableState is resolveEnableState plus the built-in channel bypass
// (§9.1): the first matching rule wins.
func PluginEnableState(cfg *config.Config, id string, origin Origin) EnableState {
	p := &cfg.Plugins
	entry, hasEntry := p.Entries[id]
	entryEnabled := func(v bool) bool { return hasEntry && entry.Enabled != nil && *entry.Enabled == v }
	allow := trimmedSet(p.Allow)
	entryKey := "plugins.entries." + id + ".enabled"
	switch {
	case p.Enabled != nil && !*p.Enabled:
		return EnableState{false, "plugins disabled", "plugins.enabled"}
	case slices.Contains(trimmedSet(p.Deny), id):
		return EnableState{false, "blocked by denylist", "plugins.deny"}
	case entryEnabled(false):
		return EnableState{false, "disabled in config", entryKey}
	case origin == OriginWorkspace && !slices.Contains(allow, id) && !entryEnabled(true):
		return EnableState{false, "workspace plugin (disabled by default)", entryKey}
	case MemorySlot(p) == id:
		return EnableState{true, "", "plugins.slots.memory"}
	case len(allow) > 0 && !slices.Contains(allow, id):
		return EnableState{false, "not in allowlist", "plugins.allow"}
	case entryEnabled(true):
		return EnableState{true, "", entryKey}
	case origin == OriginBundled && slices.Contains(BundledEnabledByDefault, id):
		return EnableState{true, "", ""}
	case origin == OriginBundled:
		if slices.Contains(ChatChannels, id) {
			if ch, ok := cfg.Channels[id]; ok && ch.Enabled != nil && *ch.Enabled {
				return EnableState{true, "", "channels." + id + ".enabled"}
			}
		}
		return EnableState{false, "bundled (disabled by default)", entryKey}
	}
	return EnableState{true, "", ""}
}

// Registration is a plugin tool offered to the pipeline (§9.2, §9.3).
type Registration struct {
	Plugin   string `json:"pluginId"`
	Name     string `json:"name"`
	Optional bool   `json:"optional,omitempty"`
	// Kind is the plugin's manifest kind; "memory" plugins compete for the
	// memory slot.
	Kind string `json:"kind,omitempty"`
	// Origin, when set, subjects the plugin to its enable state; when empty
	// the plugin is taken as already loaded.
	Origin Origin `json:"origin,omitempty"`
}

// MemoryPlugins are the bundled plugins of kind memory.
var MemoryPlugins = []string{"memory-core", "memory-lancedb"}

// LoadState is PluginEnableState plus the loader's extra rule (§9.1): a
// bundled memory-kind plugin loads only while it holds the memory slot.
func LoadState(cfg *config.Config, id string, origin Origin, kind string) EnableState {
	st := PluginEnableState(cfg, id, origin)
	memory := kind == "memory" || kind == "" && slices.Contains(MemoryPlugins, id)
	if !st.Enabled || origin != OriginBundled || !memory {
		return st
	}
	switch slot := MemorySlot(&cfg.Plugins); {
	case slot == "":
		return EnableState{false, "memory slot disabled", "plugins.slots.memory"}
	case slot != id:
		return EnableState{false, fmt.Sprintf("memory slot set to %q", slot), "plugins.slots.memory"}
	}
	return st
}

// optionalAllowed is isOptionalToolAllowed: the tool's name, its plugin's id
// or group:plugins must appear in an explicit allow list. `*` and globs
// never count.
func optionalAllowed(explicit []string, r Registration) bool {
	if len(explicit) == 0 {
		return false
	}
	name, plugin := Normalize(r.Name), Normalize(r.Plugin)
	for _, e := range explicit {
		if e == name || e == plugin || e == GroupPlugins {
			return true
		}
	}
	return false
}
