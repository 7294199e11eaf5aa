package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Hooks is the `hooks` section: the HTTP endpoint external systems call
// to wake an agent or start a turn (spec automation.md §10; package
// automation/hooks serves it).
type Hooks struct {
	// Enabled needs a non-empty Token.
	Enabled *bool  `json:"enabled"`
	Token   string `json:"token"`
	// Path is the base path, "/hooks" when empty; HooksPath normalises it.
	Path string `json:"path"`
	// AllowedAgentIDs: nil or containing "*" allows every agent, [] none.
	AllowedAgentIDs           List          `json:"allowedAgentIds"`
	DefaultSessionKey         string        `json:"defaultSessionKey"`
	AllowRequestSessionKey    *bool         `json:"allowRequestSessionKey"`
	AllowedSessionKeyPrefixes List          `json:"allowedSessionKeyPrefixes"`
	Mappings                  []HookMapping `json:"mappings"`
	// Internal is OpenClaw's event hooks, of which Talon runs one.
	Internal InternalHooks `json:"internal"`
}

// InternalHooks is hooks.internal: OpenClaw's event hooks, JavaScript
// handlers run on gateway events. Talon runs none of those; it has the
// one bundled hook worth having without them, boot-md (BootMD), built in.
type InternalHooks struct {
	Enabled *bool                   `json:"enabled"`
	Entries map[string]InternalHook `json:"entries"`
}

// InternalHook is one hooks.internal.entries.<name>: its switch, and the
// handler's own options (env and the like), kept but not read: an entry
// of a hook Talon lacks is warned of whole (hooks), and boot-md has none.
type InternalHook struct {
	Enabled *bool `json:"enabled"`
	Rest    *Raw  `talon:"rest"`
}

// BootHook is the bundled hook that runs each workspace's BOOT.md when
// the gateway starts.
const BootHook = "boot-md"

// BootMD reports whether boot-md runs, by OpenClaw's selection rules:
// never with hooks.internal.enabled false; with named entries, when its
// entry is there and not disabled (the names are an allowlist); with
// none, when hooks.internal.enabled is true (open discovery, which finds
// the bundled hooks).
func (h *Hooks) BootMD() bool {
	in := &h.Internal
	if in.Enabled != nil && !*in.Enabled {
		return false
	}
	if len(in.Entries) > 0 {
		e, ok := in.Entries[BootHook]
		return ok && (e.Enabled == nil || *e.Enabled)
	}
	return in.Enabled != nil && *in.Enabled
}

// HookMapping is one hooks.mappings[] entry: which requests to
// <path>/<name> it takes and the wake or agent action it makes of them.
// The string fields other than the ids, actions and modes are templates
// (HookTemplateRE).
type HookMapping struct {
	ID    string    `json:"id"`
	Match HookMatch `json:"match"`
	// Action is agent (the default) or wake.
	Action          string `json:"action"`
	WakeMode        string `json:"wakeMode"`
	Name            string `json:"name"`
	AgentID         string `json:"agentId"`
	SessionKey      string `json:"sessionKey"`
	SessionMode     string `json:"sessionMode"`
	MessageTemplate string `json:"messageTemplate"`
	TextTemplate    string `json:"textTemplate"`
	Deliver         *bool  `json:"deliver"`
	// Channel is a configured channel id or "last" (the default).
	Channel                    string `json:"channel"`
	To                         string `json:"to"`
	Model                      string `json:"model"`
	Thinking                   string `json:"thinking"`
	TimeoutSeconds             *int   `json:"timeoutSeconds"`
	AllowUnsafeExternalContent *bool  `json:"allowUnsafeExternalContent"`
	// ForEach names a top-level array of the payload: one action per item.
	ForEach string `json:"forEach"`
	// Transform is decoded only to be refused: Talon runs no JavaScript.
	Transform *Raw `json:"transform"`
}

// HookMatch selects requests: Path is the sub-path after hooks.path
// (slashes trimmed), Source the payload's string "source"; "" matches any.
type HookMatch struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// HookTemplateRE finds a template's {{expr}} placeholders; the one
// definition of what a template is, for validation and rendering.
var HookTemplateRE = regexp.MustCompile(`\{\{\s*([^}]+?)\s*\}\}`)

// Limits of the hooks section.
const (
	MaxHookMappings   = 100
	MaxHookTemplate   = 16 << 10
	MaxHookTimeout    = 24 * 3600
	minHookTokenChars = 16
)

var (
	hookActions      = []string{"agent", "wake"}
	hookWakeModes    = []string{"now", "next-heartbeat"}
	hookSessionModes = []string{"isolated", "persistent"}
	hookPathRE       = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`)
	hookKeyRE        = regexp.MustCompile(`^[A-Za-z0-9_-]+$`) // at most 64: hookKey
)

// hookKey says s is a mapping id or forEach key: 1 to 64 of
// [A-Za-z0-9_-] (the length apart: a bounded repeat compiles to one
// regexp step per repeat).
func hookKey(s string) bool { return len(s) <= 64 && hookKeyRE.MatchString(s) }

// HooksPath is hooks.path normalised: a leading slash added, trailing ones
// removed, "/hooks" when empty. It does not check the result (Validate
// does).
func HooksPath(p string) string {
	p = strings.TrimRight(strings.TrimSpace(p), "/")
	if p == "" {
		return "/hooks"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// Active reports whether hooks answer at all: enabled with a token.
func (h *Hooks) Active() bool {
	return h.Enabled != nil && *h.Enabled && h.Token != ""
}

// SessionKeyAllowed reports whether a session key passes
// allowedSessionKeyPrefixes (case-insensitive; blank entries ignored; no
// prefix at all allows every key).
func (h *Hooks) SessionKeyAllowed(key string) bool {
	any := false
	for _, p := range h.AllowedSessionKeyPrefixes {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		any = true
		if len(key) >= len(p) && strings.EqualFold(key[:len(p)], p) {
			return true
		}
	}
	return !any
}

// HasSessionKeyPrefixes reports whether allowedSessionKeyPrefixes
// restricts anything.
func (h *Hooks) HasSessionKeyPrefixes() bool {
	for _, p := range h.AllowedSessionKeyPrefixes {
		if strings.TrimSpace(p) != "" {
			return true
		}
	}
	return false
}

// AgentAllowed reports whether allowedAgentIds admits an agent.
func (h *Hooks) AgentAllowed(id string) bool {
	if h.AllowedAgentIDs == nil {
		return true
	}
	id = NormalizeAgentID(id)
	for _, a := range h.AllowedAgentIDs {
		if strings.TrimSpace(a) == "*" || NormalizeAgentID(a) == id {
			return true
		}
	}
	return false
}

// hooks checks the hooks section.
func (k *checker) hooks(c *Config) {
	h := &c.Hooks
	if h.Enabled != nil && *h.Enabled && strings.TrimSpace(h.Token) == "" {
		k.fail("hooks.token", "hooks.enabled needs a non-empty token")
	}
	if h.Token != "" {
		if len(h.Token) < minHookTokenChars {
			k.warns = append(k.warns, Issue{Path: "hooks.token", Message: fmt.Sprintf("shorter than %d characters: use a long random secret", minHookTokenChars)})
		}
		if h.Token == c.Gateway.Auth.Token || h.Token == c.Gateway.Auth.Password {
			k.warns = append(k.warns, Issue{Path: "hooks.token", Message: "equals the gateway token or password: use a dedicated secret"})
		}
		k.shortText("hooks.token", h.Token)
	}
	if p := HooksPath(h.Path); h.Path != "" && (strings.Trim(h.Path, "/ ") == "" || !hookPathRE.MatchString(p) || len(p) > 200 || hasDotSegment(p)) {
		k.fail("hooks.path", fmt.Sprintf("expected a path such as /hooks: segments of letters, digits, '.', '_', '~' and '-', not / alone (got %q)", h.Path))
	}
	for i, a := range h.AllowedAgentIDs {
		if a = strings.TrimSpace(a); a != "*" && !c.HasAgent(a) {
			k.warns = append(k.warns, Issue{Path: joinIndex("hooks.allowedAgentIds", i), Message: fmt.Sprintf("unknown agent %q", a)})
		}
	}
	for i, p := range h.AllowedSessionKeyPrefixes {
		k.shortText(joinIndex("hooks.allowedSessionKeyPrefixes", i), p)
	}
	if d := h.DefaultSessionKey; d != "" {
		k.shortText("hooks.defaultSessionKey", d)
		if !h.SessionKeyAllowed(d) {
			k.fail("hooks.defaultSessionKey", fmt.Sprintf("%q does not start with any of hooks.allowedSessionKeyPrefixes", d))
		}
	}
	if len(h.Mappings) > MaxHookMappings {
		k.fail("hooks.mappings", fmt.Sprintf("more than %d mappings", MaxHookMappings))
	}
	for i := range h.Mappings {
		k.hookMapping(joinIndex("hooks.mappings", i), &h.Mappings[i], c)
	}
	// An entry names a hook Talon does not have: kept, and said so as any
	// key Talon does not act on.
	for _, name := range slices.Sorted(maps.Keys(h.Internal.Entries)) {
		if name != BootHook {
			k.warns = append(k.warns, Issue{Path: joinKey("hooks.internal.entries", name), Message: MsgUnused})
		}
	}
}

func hasDotSegment(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if s == "." || s == ".." {
			return true
		}
	}
	return false
}

// hookMapping checks one mapping.
func (k *checker) hookMapping(at string, m *HookMapping, c *Config) {
	h := &c.Hooks
	if m.Transform != nil {
		k.fail(at+".transform", "JavaScript transforms are not supported by Talon: shape the action with messageTemplate/textTemplate "+
			"(and forEach), or put a small service in front of the hook that reshapes the payload")
	}
	if m.ID != "" && !hookKey(m.ID) {
		k.fail(at+".id", fmt.Sprintf("expected letters, digits, '_' and '-', at most 64 (got %q)", m.ID))
	}
	if p := strings.Trim(m.Match.Path, "/"); p != "" && (!hookPathRE.MatchString("/"+p) || hasDotSegment("/"+p) || len(p) > 200) {
		k.fail(at+".match.path", fmt.Sprintf("expected a sub-path such as github (got %q)", m.Match.Path))
	}
	k.shortText(at+".match.source", m.Match.Source)
	k.oneOf(at+".action", m.Action, hookActions)
	k.oneOf(at+".wakeMode", m.WakeMode, hookWakeModes)
	k.oneOf(at+".sessionMode", m.SessionMode, hookSessionModes)
	if m.ForEach != "" && (!hookKey(m.ForEach) || blockedKey(m.ForEach)) {
		k.fail(at+".forEach", fmt.Sprintf("expected a top-level key of the payload: letters, digits, '_' and '-' (got %q)", m.ForEach))
	}
	if a := m.AgentID; a != "" {
		switch {
		case !c.HasAgent(a):
			k.fail(at+".agentId", fmt.Sprintf("unknown agent %q", a))
		case !h.AgentAllowed(a):
			k.fail(at+".agentId", fmt.Sprintf("agent %q is not in hooks.allowedAgentIds", a))
		}
	}
	if ch := m.Channel; ch != "" && ch != "last" && !hasChannel(c, ch) {
		k.fail(at+".channel", fmt.Sprintf("expected last or a configured channel id (got %q)", ch))
	}
	k.between(at+".timeoutSeconds", m.TimeoutSeconds, MaxHookTimeout)
	for _, t := range []struct{ key, text string }{{"name", m.Name}, {"sessionKey", m.SessionKey},
		{"messageTemplate", m.MessageTemplate}, {"textTemplate", m.TextTemplate}, {"to", m.To},
		{"model", m.Model}, {"thinking", m.Thinking}} {
		if len(t.text) > MaxHookTemplate {
			k.fail(at+"."+t.key, fmt.Sprintf("longer than %d bytes", MaxHookTemplate))
		}
	}
	switch sk := m.SessionKey; {
	case HookTemplateRE.MatchString(sk):
		// A key the payload writes lands wherever the sender wants:
		// only under prefixes the operator chose.
		if !h.HasSessionKeyPrefixes() {
			k.fail(at+".sessionKey", "a templated session key needs hooks.allowedSessionKeyPrefixes")
		}
	case sk != "" && !h.SessionKeyAllowed(sk):
		k.fail(at+".sessionKey", fmt.Sprintf("%q does not start with any of hooks.allowedSessionKeyPrefixes", sk))
	}
	if m.SessionMode == "persistent" && m.SessionKey == "" && h.DefaultSessionKey == "" {
		k.fail(at+".sessionMode", "a persistent mapping needs a sessionKey (or hooks.defaultSessionKey)")
	}
}
