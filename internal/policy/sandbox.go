package policy

import (
	"fmt"
	"strconv"
	"strings"

	"talon/internal/config"
)

// Sandbox modes, scopes and workspace access values (§8).
const (
	ModeOff     = "off"
	ModeNonMain = "non-main"
	ModeAll     = "all"
	// ModePathsOnly is the mode seed 000's platform writes to mean "the
	// sandbox and its tool allow list apply". Talon reads it as all.
	ModePathsOnly = "paths-only"

	AccessNone = "none"
	AccessRO   = "ro"
	AccessRW   = "rw"
)

// ListSource says which config level supplied a sandbox list.
type ListSource struct {
	Source string `json:"source"` // agent, global or default
	Key    string `json:"key"`
}

// SandboxPolicy is the resolved sandbox tool policy of one agent (§5).
type SandboxPolicy struct {
	Allow   []string `json:"allow"`
	Deny    []string `json:"deny"`
	Sources struct {
		Allow ListSource `json:"allow"`
		Deny  ListSource `json:"deny"`
	} `json:"sources"`
	// ImageAdded is true when `image` was appended by the image rule.
	ImageAdded bool `json:"image_added,omitempty"`
	// AllowWasEmpty is true when the chosen allow list was explicitly [].
	AllowWasEmpty bool `json:"allow_was_empty,omitempty"`
}

// ResolveSandboxPolicy is resolveSandboxToolPolicyForAgent: lists are taken
// whole from the agent, else the global config, else the defaults; core
// groups are expanded; `image` is appended to a non-empty allow list that
// neither list names.
func ResolveSandboxPolicy(cfg *config.Config, agentID string) SandboxPolicy {
	var sp SandboxPolicy
	a, i := cfg.Agent(agentID)
	var agentTools config.ToolPolicy
	if a != nil {
		agentTools = a.Tools.Sandbox.Tools
	}
	global := cfg.Tools.Sandbox.Tools
	agentKey := fmt.Sprintf("agents.list[%d].tools.sandbox.tools", i)

	allow, deny := SandboxDefaultAllow, SandboxDefaultDeny
	sp.Sources.Allow = ListSource{"default", "tools.sandbox.tools.allow"}
	sp.Sources.Deny = ListSource{"default", "tools.sandbox.tools.deny"}
	switch {
	case agentTools.Allow != nil:
		allow, sp.Sources.Allow = agentTools.Allow, ListSource{"agent", agentKey + ".allow"}
	case global.Allow != nil:
		allow, sp.Sources.Allow = global.Allow, ListSource{"global", "tools.sandbox.tools.allow"}
	}
	switch {
	case agentTools.Deny != nil:
		deny, sp.Sources.Deny = agentTools.Deny, ListSource{"agent", agentKey + ".deny"}
	case global.Deny != nil:
		deny, sp.Sources.Deny = global.Deny, ListSource{"global", "tools.sandbox.tools.deny"}
	}
	sp.Allow = ExpandGroups(allow)
	sp.Deny = ExpandGroups(deny)
	sp.AllowWasEmpty = len(sp.Allow) == 0 && sp.Sources.Allow.Source != "default"
	if len(sp.Allow) > 0 && !containsFold(sp.Allow, "image") && !containsFold(sp.Deny, "image") {
		sp.Allow = append(sp.Allow, "image")
		sp.ImageAdded = true
	}
	return sp
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(strings.TrimSpace(e), s) {
			return true
		}
	}
	return false
}

// SandboxSettings are an agent's effective sandbox settings (§8): each the
// agent's value, else agents.defaults', else the default.
type SandboxSettings struct {
	Mode            string `json:"mode"`
	Scope           string `json:"scope"`
	WorkspaceAccess string `json:"workspace_access"`
	WorkspaceRoot   string `json:"workspace_root,omitempty"`
	Backend         string `json:"backend,omitempty"`
	// Keys name where each value came from ("" when it is the default).
	ModeKey, AccessKey, ScopeKey, RootKey, BackendKey string `json:"-"`
}

// ResolveSandboxSettings reads mode, scope and workspaceAccess for an agent.
// `paths-only` reads as all; anything else unknown reads as off.
func ResolveSandboxSettings(cfg *config.Config, agentID string) SandboxSettings {
	a, i := cfg.Agent(agentID)
	d := &cfg.Agents.Defaults.Sandbox
	var s config.Sandbox
	if a != nil {
		s = a.Sandbox
	}
	// The agent's keys are built only when used: every turn resolves these
	// settings, and most agents set none of them.
	ak := func(field string) string { return "agents.list[" + strconv.Itoa(i) + "].sandbox." + field }
	pick := func(agentVal, defVal, field, fallback string) (string, string) {
		switch {
		case agentVal != "":
			return agentVal, ak(field)
		case defVal != "":
			return defVal, "agents.defaults.sandbox." + field
		}
		return fallback, ""
	}
	var out SandboxSettings
	out.Mode, out.ModeKey = pick(s.Mode, d.Mode, "mode", ModeOff)
	switch out.Mode {
	case ModeNonMain, ModeAll:
	case ModePathsOnly:
		out.Mode = ModeAll
	default:
		out.Mode = ModeOff
	}
	out.Scope, out.ScopeKey = pick(s.Scope, d.Scope, "scope", "")
	if out.Scope == "" {
		per, key := s.PerSession, ""
		if per != nil {
			key = ak("perSession")
		} else {
			per, key = d.PerSession, "agents.defaults.sandbox.perSession"
		}
		switch {
		case per != nil && *per:
			out.Scope, out.ScopeKey = "session", key
		case per != nil:
			out.Scope, out.ScopeKey = "shared", key
		default:
			out.Scope = "agent"
		}
	}
	out.WorkspaceAccess, out.AccessKey = pick(s.WorkspaceAccess, d.WorkspaceAccess, "workspaceAccess", AccessNone)
	out.WorkspaceRoot, out.RootKey = pick(s.WorkspaceRoot, d.WorkspaceRoot, "workspaceRoot", "")
	out.Backend, out.BackendKey = pick(s.Backend, d.Backend, "backend", "")
	return out
}

// MainSessionKey is the main session of an agent: `global` under
// session.scope global, else agent:<id>:<mainKey>.
func MainSessionKey(cfg *config.Config, agentID string) string {
	if strings.EqualFold(strings.TrimSpace(cfg.Session.Scope), "global") {
		return "global"
	}
	return "agent:" + config.NormalizeAgentID(agentID) + ":" + MainKey(cfg)
}

// MainKey is session.mainKey trimmed and lower-cased, "main" when unset.
func MainKey(cfg *config.Config) string {
	if k := strings.ToLower(strings.TrimSpace(cfg.Session.MainKey)); k != "" {
		return k
	}
	return "main"
}

// mainSession recognises an agent's main session: its aliases (`main`, the
// configured mainKey, agent:<id>:<mainKey> and agent:<id>:main) and the main
// key itself, compared trimmed and case-sensitively. "MAIN" is not main, so
// under non-main it is sandboxed: the safe side.
type mainSession struct {
	key     string
	aliases [4]string
}

func newMainSession(cfg *config.Config, agentID string) mainSession {
	id, mk := config.NormalizeAgentID(agentID), MainKey(cfg)
	return mainSession{
		key:     MainSessionKey(cfg, agentID),
		aliases: [4]string{"main", mk, "agent:" + id + ":" + mk, "agent:" + id + ":main"},
	}
}

func (m *mainSession) is(sessionKey string) bool {
	k := strings.TrimSpace(sessionKey)
	for _, a := range m.aliases {
		if k == a {
			return true
		}
	}
	return k == m.key
}

// sandboxed is resolveSandboxRuntimeStatus's answer for one session.
func sandboxed(mode string, main *mainSession, sessionKey string) bool {
	if strings.TrimSpace(sessionKey) == "" {
		return false
	}
	switch mode {
	case ModeAll:
		return true
	case ModeNonMain:
		return !main.is(sessionKey)
	}
	return false
}

// IsSandboxed reports whether a session of an agent runs sandboxed (§8).
func IsSandboxed(cfg *config.Config, agentID, sessionKey string) bool {
	m := newMainSession(cfg, agentID)
	return sandboxed(ResolveSandboxSettings(cfg, agentID).Mode, &m, sessionKey)
}

// SandboxAgentID is the agent whose sandbox applies to a session: the one in
// the key, else the default agent.
func SandboxAgentID(cfg *config.Config, sessionKey string) string {
	if id, ok := AgentFromSessionKey(sessionKey); ok {
		return id
	}
	return cfg.DefaultAgentID()
}

// SandboxBlockedMessage is the message a sandboxed run gets when it calls a
// tool the sandbox tool policy blocks, or "" when the policy lets it
// through or the session is not sandboxed (formatSandboxToolPolicyBlocked
// Message, §5). Like OpenClaw's it compares the lower-cased name by exact
// membership; unlike OpenClaw's it points at `talon tools explain`.
func SandboxBlockedMessage(cfg *config.Config, sessionKey, tool string) string {
	agentID := SandboxAgentID(cfg, sessionKey)
	if !IsSandboxed(cfg, agentID, sessionKey) {
		return ""
	}
	sp := ResolveSandboxPolicy(cfg, agentID)
	t := strings.ToLower(strings.TrimSpace(tool))
	inDeny := containsExact(sp.Deny, t)
	notAllowed := len(sp.Allow) > 0 && !containsExact(sp.Allow, t)
	if !inDeny && !notAllowed {
		return ""
	}
	settings := ResolveSandboxSettings(cfg, agentID)
	var b strings.Builder
	fmt.Fprintf(&b, "Tool %q blocked by sandbox tool policy (mode=%s).\n", tool, settings.Mode)
	fmt.Fprintf(&b, "Session: %s\n", sessionKey)
	switch {
	case inDeny && notAllowed:
		b.WriteString("Reason: deny list + allow list\n")
	case inDeny:
		b.WriteString("Reason: deny list\n")
	default:
		b.WriteString("Reason: allow list\n")
	}
	b.WriteString("Fix:\n- agents.defaults.sandbox.mode=off (disable sandbox)\n")
	if inDeny {
		fmt.Fprintf(&b, "- Remove %q from %s.\n", tool, sp.Sources.Deny.Key)
	}
	if notAllowed {
		fmt.Fprintf(&b, "- Add %q to %s (or set it to [] to allow all).\n", tool, sp.Sources.Allow.Key)
	}
	if settings.Mode == ModeNonMain {
		fmt.Fprintf(&b, "- Use main session key (direct): %s\n", MainSessionKey(cfg, agentID))
	}
	fmt.Fprintf(&b, "- See: talon tools explain --session-key %s", sessionKey)
	return b.String()
}

func containsExact(list []string, s string) bool {
	for _, e := range list {
		if strings.ToLower(strings.TrimSpace(e)) == s {
			return true
		}
	}
	return false
}
