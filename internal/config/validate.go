package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The value rules Talon relies on, in one place. Type errors are found while
// decoding; these run on the decoded Config. An empty string means the key
// was absent (or empty, which OpenClaw also treats as unset).

var (
	sandboxModes     = []string{"off", "non-main", "all", "paths-only"}
	sandboxScopes    = []string{"session", "agent", "shared"}
	workspaceAccess  = []string{"none", "ro", "rw"}
	sandboxBackends  = []string{"bwrap", "docker", "host"}
	sessionScopes    = []string{"per-sender", "global"}
	knownToolProfile = []string{"minimal", "coding", "messaging", "full"}
	execSecurity     = []string{"deny", "allowlist", "full"}
	execHost         = []string{"sandbox", "gateway", "node"}
	execAsk          = []string{"off", "on-miss", "always"}
	sessionsScopes   = []string{"self", "tree", "agent", "all"}
	sandboxSessions  = []string{"spawned", "all"}
)

// Validate returns the value errors in c: enums Talon acts on, the gateway
// port, and agent ids (present, unique ignoring case).
func Validate(c *Config) []Issue {
	errs, _ := check(c)
	return errs
}

// check returns Validate's errors and the warnings about values OpenClaw
// tolerates (unknown tool profiles, which it ignores).
func check(c *Config) (errs, warns []Issue) {
	if c == nil {
		return nil, nil
	}
	k := &checker{}
	if p := c.Gateway.Port; p != nil && (*p < 1 || *p > 65535) {
		k.fail("gateway.port", fmt.Sprintf("expected a port number from 1 to 65535 (got %d)", *p))
	}
	k.origins("gateway.controlUi.allowedOrigins", c.Gateway.ControlUI.AllowedOrigins)
	k.oneOf("session.scope", c.Session.Scope, sessionScopes)
	k.sandbox("agents.defaults.sandbox", c.Agents.Defaults.Sandbox)
	k.hostBackend("agents.defaults.sandbox", c.Agents.Defaults.Sandbox, c.Agents.Defaults.Sandbox)
	k.oneOf("agents.defaults.sandbox.sessionToolsVisibility", c.Agents.Defaults.Sandbox.SessionToolsVisibility, sandboxSessions)
	k.oneOf("tools.sessions.visibility", c.Tools.Sessions.Visibility, sessionsScopes)
	k.profile("tools.profile", c.Tools.Profile)
	k.byProvider("tools.byProvider", c.Tools.ByProvider)
	k.exec("tools.exec", c.Tools.Exec)
	k.mcp("mcp.servers", c.MCP.Servers)
	k.cron(&c.Cron)
	k.webSearch(c)
	k.tenants(&c.Tenants)
	k.modelSetting("agents.defaults.model", c.Agents.Defaults.Model)
	k.auth(&c.Auth)
	if _, err := ModelRefs(c.Agents.Defaults.ImageModel); err != nil {
		k.fail("agents.defaults.imageModel", err.Error())
	}
	if _, err := ModelRefs(c.Agents.Defaults.PDFModel); err != nil {
		k.fail("agents.defaults.pdfModel", err.Error())
	}
	k.pdf("agents.defaults", &c.Agents.Defaults)
	k.memorySearch("agents.defaults.memorySearch", c.Agents.Defaults.MemorySearch, c.Models.Providers)
	k.contextWindowKeys("agents.defaults", nil, c.Agents.Defaults.ContextTokens)
	k.compaction("agents.defaults.compaction", &c.Agents.Defaults.Compaction)
	k.contextPruning("agents.defaults.contextPruning", &c.Agents.Defaults.ContextPruning)
	k.userTimezone("agents.defaults.userTimezone", c.Agents.Defaults.UserTimezone)
	k.thinking("agents.defaults.thinkingDefault", c.Agents.Defaults.ThinkingDefault)
	k.models(c.Models.Providers)
	k.checkChannels(c)
	k.heartbeat("agents.defaults.heartbeat", c.Agents.Defaults.Heartbeat, c)
	k.hooks(c)
	k.tts(&c.TTS)
	k.browser(&c.Browser)
	k.budget("usage.budget", c.Usage.Budget)

	seen := map[string]int{}
	for i, a := range c.Agents.List {
		at := joinIndex("agents.list", i)
		id := strings.ToLower(strings.TrimSpace(a.ID))
		switch first, dup := seen[id]; {
		case id == "":
			k.fail(at+".id", "missing id")
		case dup:
			k.fail(at+".id", fmt.Sprintf("duplicate agent id %q (also %s)", a.ID, joinIndex("agents.list", first)))
		default:
			seen[id] = i
		}
		k.sandbox(at+".sandbox", a.Sandbox)
		if a.Sandbox.SessionToolsVisibility != "" {
			// OpenClaw's schema accepts it per agent, and its code reads
			// only the defaults' one.
			k.warns = append(k.warns, Issue{Path: at + ".sandbox.sessionToolsVisibility",
				Message: "not used: only agents.defaults.sandbox.sessionToolsVisibility applies, as in OpenClaw (kept)"})
		}
		k.hostBackend(at+".sandbox", a.Sandbox, c.Agents.Defaults.Sandbox)
		k.profile(at+".tools.profile", a.Tools.Profile)
		k.byProvider(at+".tools.byProvider", a.Tools.ByProvider)
		k.exec(at+".tools.exec", a.Tools.Exec)
		k.memorySearch(at+".memorySearch", a.MemorySearch, c.Models.Providers)
		k.compaction(at+".compaction", &a.Compaction)
		k.contextPruning(at+".contextPruning", &a.ContextPruning)
		k.heartbeat(at+".heartbeat", a.Heartbeat, c)
		k.modelSetting(at+".model", a.Model)
		k.thinking(at+".thinkingDefault", a.ThinkingDefault)
	}
	return k.errs, k.warns
}

// thinking checks a thinking level: one of the levels or an alias
// (ThinkingLevel); whether the agent's model takes it is decided per run
// (a level it does not take is lowered).
func (k *checker) thinking(path, got string) {
	if strings.TrimSpace(got) == "" {
		return
	}
	if _, ok := ThinkingLevel(got); !ok {
		k.fail(path, fmt.Sprintf("invalid thinking level %q (use off|minimal|low|medium|high|xhigh)", got))
	}
}

type checker struct{ errs, warns []Issue }

// modelSetting checks the fallbacks of a model setting. A malformed list
// is warned of, not refused: it counts as none, and the primary (read
// leniently, ModelPrimary, as OpenClaw does) still runs.
func (k *checker) modelSetting(path string, raw *Raw) {
	if _, _, err := ModelFallbacks(raw); err != nil {
		k.warn(path+".fallbacks", err.Error()+"; no fallbacks are used")
	}
}

func (k *checker) fail(path, msg string) {
	k.errs = append(k.errs, Issue{Path: path, Message: msg})
}

func (k *checker) oneOf(path, got string, allowed []string) {
	if got == "" {
		return
	}
	for _, a := range allowed {
		if got == a {
			return
		}
	}
	k.fail(path, fmt.Sprintf("expected one of %s (got %q)", strings.Join(allowed, ", "), got))
}

func (k *checker) sandbox(path string, s Sandbox) {
	k.oneOf(path+".mode", s.Mode, sandboxModes)
	k.oneOf(path+".scope", s.Scope, sandboxScopes)
	k.oneOf(path+".workspaceAccess", s.WorkspaceAccess, workspaceAccess)
	k.oneOf(path+".backend", s.Backend, sandboxBackends)
	if l := s.Limits; l != nil {
		k.between(path+".limits.processes", l.Processes, 1<<20)
		k.between(path+".limits.openFiles", l.OpenFiles, 1<<20)
		k.between(path+".limits.fileSizeMb", l.FileSizeMB, 1<<20)
		k.between(path+".limits.cpuSeconds", l.CPUSeconds, 7*24*3600)
		k.between(path+".limits.memoryMb", l.MemoryMB, 1<<24)
		k.between(path+".limits.timeoutSeconds", l.TimeoutSeconds, 7*24*3600)
	}
}

// hostBackend refuses backend "host" under a mode that sandboxes sessions:
// host runs commands as Talon runs, so it would silently unsandbox them.
// s is the block at path, d the defaults'. An agent is checked only when
// it sets mode or backend itself, so a problem of the defaults is reported
// once.
func (k *checker) hostBackend(path string, s, d Sandbox) {
	if s.Mode == "" && s.Backend == "" {
		return
	}
	mode, modeKey := s.Mode, path+".mode"
	if mode == "" {
		mode, modeKey = d.Mode, "agents.defaults.sandbox.mode"
	}
	backend, at := s.Backend, path+".backend"
	if backend == "" {
		backend, at = d.Backend, modeKey
	}
	if backend != "host" || mode == "" || mode == "off" || !slices.Contains(sandboxModes, mode) {
		return
	}
	k.fail(at, fmt.Sprintf("sandbox backend \"host\" runs commands without isolation, which only mode \"off\" allows (%s is %q); "+
		"set the backend to bwrap or docker, or the mode to off", modeKey, mode))
}

// between checks an optional integer is from 1 to max.
func (k *checker) between(path string, v *int, max int) {
	if v != nil && (*v < 1 || *v > max) {
		k.fail(path, fmt.Sprintf("expected an integer from 1 to %d (got %d)", max, *v))
	}
}

// MaxApprovalTimeoutMs bounds tools.exec.approvalTimeoutMs: a day. A
// command approved later than that runs in a world that has moved on.
const MaxApprovalTimeoutMs = 24 * 3600 * 1000

// exec checks tools.exec.security, host and ask, which the exec approval
// policy (internal/approval) resolves; an unknown value must not load,
// since guessing it would loosen or silently change that policy.
func (k *checker) exec(path string, x *ExecTools) {
	if x != nil {
		k.oneOf(path+".security", x.Security, execSecurity)
		k.oneOf(path+".host", x.Host, execHost)
		k.oneOf(path+".ask", x.Ask, execAsk)
		k.between(path+".approvalTimeoutMs", x.ApprovalTimeoutMs, MaxApprovalTimeoutMs)
	}
}

// mcpNameRE is what an MCP server name may be: it becomes a plugin id and
// a prefix nobody has to quote.
var mcpNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,47}$`)

// MaxMCPTimeoutMs bounds the MCP timeouts: ten minutes.
const MaxMCPTimeoutMs = 10 * 60 * 1000

// mcp checks mcp.servers (or tenants.mcp.servers at path): a name fit for
// a plugin id, exactly one of command and url, an http(s) url, and bounded
// timeouts.
func (k *checker) mcp(path string, servers map[string]MCPServer) {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, at := servers[n], path+"."+n
		if !mcpNameRE.MatchString(n) {
			k.fail(at, fmt.Sprintf("invalid server name %q: use lower-case letters, digits, - and _, starting with a letter (at most 48)", n))
		}
		cmd, url := strings.TrimSpace(s.Command), strings.TrimSpace(s.URL)
		switch {
		case cmd == "" && url == "":
			k.fail(at, "set command (a stdio server) or url (a streamable HTTP server)")
		case cmd != "" && url != "":
			k.fail(at, "set either command or url, not both")
		case url != "" && !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://"):
			// Issues reach config.get: the URL shows as Redact shows it.
			k.fail(at+".url", fmt.Sprintf("expected an http:// or https:// URL (got %q)", redactURL(url)))
		case url != "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != ""):
			k.fail(at, "args, env and cwd apply to a command; a url server takes headers")
		case cmd != "" && len(s.Headers) > 0:
			k.fail(at+".headers", "headers apply to a url server; a command server takes env")
		}
		k.between(at+".startupTimeoutMs", s.StartupTimeoutMs, MaxMCPTimeoutMs)
		k.between(at+".toolTimeoutMs", s.ToolTimeoutMs, MaxMCPTimeoutMs)
	}
}

// tenants checks the ceiling: the backends that isolate, limits in range,
// "IP:port" exceptions and the declared MCP servers.
func (k *checker) tenants(t *Tenants) {
	for i, b := range t.Sandbox.Backends {
		if b != "bwrap" && b != "docker" {
			k.fail(joinIndex("tenants.sandbox.backends", i), fmt.Sprintf("expected bwrap or docker (got %q): a tenant's commands always run isolated", b))
		}
	}
	if t.Sandbox.Backends != nil && len(t.Sandbox.Backends) == 0 {
		k.fail("tenants.sandbox.backends", "expected at least one backend (bwrap, docker)")
	}
	if t.Sandbox.Limits != nil {
		k.sandbox("tenants.sandbox", Sandbox{Limits: t.Sandbox.Limits})
	}
	for i, h := range t.Network.AllowHosts {
		if _, err := ParseAllowHost(h); err != nil {
			k.fail(joinIndex("tenants.network.allowHosts", i), err.Error())
		}
	}
	k.mcp("tenants.mcp.servers", t.MCP.Servers)
	k.budgets(t)
}

// ParseAllowHost reads a tenants.network.allowHosts entry: an IP address
// and a port, "127.0.0.1:11434" or "[::1]:8080"; never a name, whose
// address could change, nor a range.
func ParseAllowHost(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(strings.TrimSpace(s))
	if err != nil || ap.Port() == 0 || ap.Addr().Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("expected an IP address and port such as 127.0.0.1:11434 or [::1]:8080 (got %q)", s)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// profile warns rather than fails: OpenClaw applies no profile policy for an
// unknown id, so such a config does load there and must load here.
func (k *checker) profile(path, got string) {
	if got == "" {
		return
	}
	for _, p := range knownToolProfile {
		if got == p {
			return
		}
	}
	k.warns = append(k.warns, Issue{Path: path, Message: fmt.Sprintf(
		"unknown profile %q: no profile policy applies (known: %s)", got, strings.Join(knownToolProfile, ", "))})
}

func (k *checker) byProvider(path string, m map[string]ProviderTools) {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys) // file order is restored by the caller; this keeps ties stable
	for _, key := range keys {
		k.profile(joinKey(path, key)+".profile", m[key].Profile)
	}
}
