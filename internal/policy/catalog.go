package policy

// The tables in this file are OpenClaw 2026.3.13's, in its order
// (spec/tool-policy.md §1, §2, §5, §6, §7). Everything else in Talon that
// needs one of them (the sandbox default allow list of a template, the
// doctor's fixes) reads it from here, so there is never a second copy to
// keep in sync.

// Section is one tool's entry in the core catalog.
type Section struct {
	Tool     string
	Group    string // the group:<section> the tool belongs to
	OpenClaw bool   // member of group:openclaw
}

// Catalog is the core tool catalog in catalog order.
var Catalog = []Section{
	{"read", "group:fs", false},
	{"write", "group:fs", false},
	{"edit", "group:fs", false},
	{"apply_patch", "group:fs", false},
	{"exec", "group:runtime", false},
	{"process", "group:runtime", false},
	{"web_search", "group:web", true},
	{"web_fetch", "group:web", true},
	{"memory_search", "group:memory", true},
	{"memory_get", "group:memory", true},
	{"sessions_list", "group:sessions", true},
	{"sessions_history", "group:sessions", true},
	{"sessions_send", "group:sessions", true},
	{"sessions_spawn", "group:sessions", true},
	{"sessions_yield", "group:sessions", true},
	{"subagents", "group:sessions", true},
	{"session_status", "group:sessions", true},
	{"browser", "group:ui", true},
	{"canvas", "group:ui", true},
	{"message", "group:messaging", true},
	{"cron", "group:automation", true},
	{"gateway", "group:automation", true},
	{"nodes", "group:nodes", true},
	{"agents_list", "group:agents", true},
	{"image", "group:media", true},
	{"tts", "group:media", true},
}

// GroupPlugins is the dynamic group of every plugin tool in the current list.
const GroupPlugins = "group:plugins"

// Groups maps each core group to its members, in catalog order. It is built
// from Catalog so the two cannot disagree.
var Groups = buildGroups()

// GroupNames lists the core groups in a stable order.
var GroupNames = []string{
	"group:openclaw", "group:fs", "group:runtime", "group:web", "group:memory",
	"group:sessions", "group:ui", "group:messaging", "group:automation",
	"group:nodes", "group:agents", "group:media",
}

func buildGroups() map[string][]string {
	g := make(map[string][]string, len(GroupNames))
	for _, s := range Catalog {
		g[s.Group] = append(g[s.Group], s.Tool)
		if s.OpenClaw {
			g["group:openclaw"] = append(g["group:openclaw"], s.Tool)
		}
	}
	return g
}

var coreToolIDs = func() map[string]bool {
	m := make(map[string]bool, len(Catalog))
	for _, s := range Catalog {
		m[s.Tool] = true
	}
	return m
}()

// IsCoreToolID reports whether name is one of the 26 catalog tool ids.
func IsCoreToolID(name string) bool { return coreToolIDs[name] }

// Profile names.
const (
	ProfileMinimal   = "minimal"
	ProfileCoding    = "coding"
	ProfileMessaging = "messaging"
	ProfileFull      = "full"
)

// ProfileNames lists the known profiles.
var ProfileNames = []string{ProfileMinimal, ProfileCoding, ProfileMessaging, ProfileFull}

// profileAllow holds each restricting profile's allow list. `full` has no
// policy at all, so it is absent; no profile has a deny list.
var profileAllow = map[string][]string{
	ProfileMinimal: {"session_status"},
	ProfileCoding: {
		"read", "write", "edit", "apply_patch", "exec", "process", "web_search", "web_fetch",
		"memory_search", "memory_get", "sessions_list", "sessions_history", "sessions_send",
		"sessions_spawn", "sessions_yield", "subagents", "session_status", "cron", "image",
	},
	ProfileMessaging: {"sessions_list", "sessions_history", "sessions_send", "session_status", "message"},
}

// ProfileAllow returns a profile's allow list and whether the profile
// restricts anything. Unknown and empty ids, and `full`, restrict nothing.
// Ids match exactly, as OpenClaw looks them up: "Coding" is unknown.
func ProfileAllow(profile string) ([]string, bool) {
	a, ok := profileAllow[profile]
	return a, ok
}

// IsKnownProfile reports whether OpenClaw knows the profile id.
func IsKnownProfile(profile string) bool {
	return profile == ProfileFull || profileAllow[profile] != nil
}

// NativeTools are the OpenClaw-native tools of the candidate list (§1.3 item
// 5), in construction order. Plugin tool names may not collide with them.
var NativeTools = []string{
	"browser", "canvas", "nodes", "cron", "message", "tts", "gateway", "agents_list",
	"sessions_list", "sessions_history", "sessions_send", "sessions_yield", "sessions_spawn",
	"subagents", "session_status", "web_search", "web_fetch", "image", "pdf",
}

// StandardTools is the candidate list the conformance vectors call STD: the
// full construction order of §1.3 with the WhatsApp channel's login tool and
// the memory-core plugin's two tools.
var StandardTools = []string{
	"read", "edit", "write", "apply_patch", "exec", "process", "whatsapp_login",
	"browser", "canvas", "nodes", "cron", "message", "tts", "gateway", "agents_list",
	"sessions_list", "sessions_history", "sessions_send", "sessions_yield", "sessions_spawn",
	"subagents", "session_status", "web_search", "web_fetch", "image", "pdf",
	"memory_search", "memory_get",
}

// MemoryPlugin is the bundled plugin that provides the memory tools; it is
// the default memory slot.
const MemoryPlugin = "memory-core"

// MemoryTools are the tools MemoryPlugin registers.
var MemoryTools = []string{"memory_search", "memory_get"}

// OwnerOnlyTools are treated as owner-only by name even when a tool does not
// declare the flag.
var OwnerOnlyTools = []string{"whatsapp_login", "cron", "gateway", "nodes"}

// SandboxDefaultAllow is DEFAULT_TOOL_ALLOW: the sandbox allow list when
// neither the agent nor the global config sets one.
var SandboxDefaultAllow = []string{
	"exec", "process", "read", "write", "edit", "apply_patch", "image",
	"sessions_list", "sessions_history", "sessions_send", "sessions_spawn",
	"sessions_yield", "subagents", "session_status",
}

// SandboxDefaultDeny is DEFAULT_TOOL_DENY: the sandbox deny list when neither
// the agent nor the global config sets one. The channel ids keep channel
// plugins' tools out of sandboxes.
var SandboxDefaultDeny = []string{
	"browser", "canvas", "nodes", "cron", "gateway",
	"telegram", "whatsapp", "discord", "irc", "googlechat", "slack", "signal", "imessage", "line",
}

// SubagentDenyAlways is removed from every subagent.
var SubagentDenyAlways = []string{
	"gateway", "agents_list", "whatsapp_login", "session_status", "cron",
	"memory_search", "memory_get", "sessions_send",
}

// SubagentDenyLeaf is additionally removed from leaf subagents, which may not
// spawn or manage others.
var SubagentDenyLeaf = []string{"subagents", "sessions_list", "sessions_history", "sessions_spawn"}

// ChatChannels are the built-in chat channel ids.
var ChatChannels = []string{
	"telegram", "whatsapp", "discord", "irc", "googlechat", "slack", "signal", "imessage", "line",
}

// BundledEnabledByDefault are the bundled plugins that are on without config.
var BundledEnabledByDefault = []string{"device-pair", "ollama", "phone-control", "sglang", "talk-voice", "vllm"}
