package policy

import (
	"fmt"
	"slices"
	"strings"

	"talon/internal/config"
)

// Tool is one candidate tool.
type Tool struct {
	Name string `json:"name"`
	// Plugin is the id of the plugin that registered the tool; empty for
	// core and channel tools.
	Plugin string `json:"plugin,omitempty"`
	// OwnerOnly marks tools only the owner may call.
	OwnerOnly bool `json:"owner_only,omitempty"`
}

// Context is everything about one run that the policy depends on besides
// the config.
type Context struct {
	SessionKey string
	// AgentID, when set, names the agent explicitly.
	AgentID         string
	ModelProvider   string
	ModelID         string
	MessageProvider string
	SenderIsOwner   bool
	Sender          Sender
	GroupID         string
	AccountID       string
	// GuildID is the Discord server a message came from, whose
	// guilds.<id> entry holds the group tool policy; ParentID is a
	// thread's parent channel, whose entry a thread falls back to.
	GuildID   string
	ParentID  string
	SpawnedBy string
	// Sessions is the session store, for subagent depth and role.
	Sessions Sessions
	// Sandboxed, WorkspaceAccess, SubagentDepth and SubagentRole override
	// what the config and key resolve to, for callers (and conformance
	// vectors) that already know them.
	Sandboxed       *bool
	WorkspaceAccess string
	SubagentDepth   *int
	SubagentRole    string
	// MemoryFlush marks a memory-triggered run: only read and write exist.
	MemoryFlush bool
	// NoMessageTool is set by callers that disable the message tool.
	NoMessageTool bool
	// SandboxBrowser says a browser can run inside the session's sandbox
	// (OpenClaw's sandbox browser, which the conformance vectors assume).
	// Talon has none: without it, browser is not built in a sandboxed
	// session, as its browser would run on the gateway host.
	SandboxBrowser bool
	// Plugins are plugin tools to resolve (§9.2, §9.3) and append.
	Plugins []Registration
	// RunAllow caps this run's tools after the nine steps: a cron job's
	// payload.toolsAllow (spec automation.md R3.11). Nil is no cap, an
	// empty list removes every tool. RunAllowKey names where it is set,
	// for the trace ("cron job <id> payload.toolsAllow").
	RunAllow    []string
	RunAllowKey string
}

// Removal records why a candidate tool did not survive.
type Removal struct {
	Tool string `json:"tool"`
	// Stage is the step label or pre-filter that removed the tool.
	Stage string `json:"removed_by"`
	// Key is the config key that caused the removal; with Default it names
	// where to override a built-in default list.
	Key     string `json:"key,omitempty"`
	Default bool   `json:"default,omitempty"`
	// Rule says how: denied, not-allowed, or a pre-filter's own rule.
	Rule string `json:"rule"`
	// Entry is the allow or deny entry that matched, if any.
	Entry string `json:"entry,omitempty"`
}

// Removal rules.
const (
	RuleDenied        = "denied"
	RuleNotAllowed    = "not-allowed"
	RuleNotBuilt      = "not-built"
	RuleOwnerOnly     = "owner-only"
	RuleOptional      = "optional-not-allowed"
	RuleConflict      = "name-conflict"
	RulePluginOff     = "plugin-disabled"
	RuleProviderBlock = "provider-blocked"
)

// IgnoredAllowlist records an allow list the pipeline dropped (§4.7).
type IgnoredAllowlist struct {
	Step string `json:"step"`
	Key  string `json:"key"`
	// Entries are the entries that did not name an available core tool.
	Entries []string `json:"entries"`
	// Why classifies them: plugin-only, globs-only, unavailable-core,
	// unknown, or mixed.
	Why string `json:"why"`
}

// StepReport describes one of the nine steps for one run.
type StepReport struct {
	Label        string   `json:"label"`
	Applied      bool     `json:"applied"`
	Allow        []string `json:"allow,omitempty"`
	Deny         []string `json:"deny,omitempty"`
	AllowKey     string   `json:"allow_key,omitempty"`
	DenyKey      string   `json:"deny_key,omitempty"`
	AllowIgnored bool     `json:"allow_ignored,omitempty"`
	Removed      int      `json:"removed"`
}

// Result is the policy decision for one run.
type Result struct {
	// Tools survive every stage, in candidate order.
	Tools    []Tool             `json:"tools"`
	Removed  []Removal          `json:"trace"`
	Warnings []string           `json:"warnings"`
	Ignored  []IgnoredAllowlist `json:"ignored_allowlists,omitempty"`
	Steps    []StepReport       `json:"steps"`

	AgentID         string          `json:"agent_id,omitempty"`
	Sandboxed       bool            `json:"sandboxed"`
	SandboxMode     string          `json:"sandbox_mode"`
	WorkspaceAccess string          `json:"workspace_access,omitempty"`
	Sandbox         *SandboxPolicy  `json:"sandbox_policy,omitempty"`
	Subagent        *SubagentReport `json:"subagent,omitempty"`
	// ExecBackground is whether exec may run in the background: process
	// passes every raw step policy (§4.1).
	ExecBackground bool `json:"exec_background"`
}

// SubagentReport is the resolved depth and role of a subagent run.
type SubagentReport struct {
	Depth int    `json:"depth"`
	Role  string `json:"role"`
}

// Names returns the surviving tool names.
func (r *Result) Names() []string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Name
	}
	return out
}

// Evaluate runs the whole pipeline of §4 for one run over candidates, in
// order: construction gating, plugin resolution, the pre-filters, then the
// nine steps. It never reorders tools.
func Evaluate(cfg *config.Config, ctx Context, candidates []Tool) Result {
	return New(cfg).Evaluate(ctx, candidates)
}

// capStep is the step of a run's own cap (Context.RunAllow): its list
// taken as written, without §4.7's analysis; an empty list denies all.
func capStep(allow []string, key string) *step {
	st := &step{label: StepRun, allowKey: key, denyKey: key, rules: NewRules(allow, nil)}
	if len(allow) == 0 {
		st.rules = NewRules(nil, []string{"*"})
	}
	return st
}

// runStep is a step as it applies to one run.
type runStep struct {
	s     *step
	allow bool // false when §4.7 dropped the allow list
}

// Evaluate is the package-level Evaluate on a compiled engine.
func (e *Engine) Evaluate(ctx Context, candidates []Tool) Result {
	cfg := e.cfg
	var r Result
	ag := e.agentSteps(&ctx)
	r.AgentID, _ = toolAgent(&ctx)

	// Sandbox and subagent state.
	sb := e.sandbox(SandboxAgentID(cfg, ctx.SessionKey))
	r.SandboxMode = sb.settings.Mode
	if ctx.Sandboxed != nil {
		r.Sandboxed = *ctx.Sandboxed
	} else {
		r.Sandboxed = sandboxed(sb.settings.Mode, &sb.main, ctx.SessionKey)
	}
	access := sb.settings.WorkspaceAccess
	if ctx.WorkspaceAccess != "" {
		access = ctx.WorkspaceAccess
	}
	if r.Sandboxed {
		r.WorkspaceAccess = access
	}

	// The nine steps, before anything is filtered: optional plugin tools
	// depend on their allow lists.
	var steps [9]*step
	steps[0] = ag.profileStep
	gp := lookupProvider(e.providers, ctx.ModelProvider, ctx.ModelID)
	ap := lookupProvider(ag.providers, ctx.ModelProvider, ctx.ModelID)
	steps[1] = providerProfileStep(ag, gp, ap)
	steps[2] = e.global
	if gp != nil {
		steps[3] = gp.step
	}
	steps[4] = ag.agentStep
	if ap != nil {
		steps[5] = ap.step
	}
	if len(cfg.Channels) > 0 {
		if gpol, key, ok := groupPolicy(cfg, &ctx); ok {
			steps[6] = newStep(StepGroup, key, gpol)
		}
	}
	if r.Sandboxed {
		sp := sb.policy
		r.Sandbox = &sp
		steps[7] = &sb.step
	}
	if IsSubagentKey(ctx.SessionKey) {
		rep := &SubagentReport{}
		if ctx.SubagentDepth != nil {
			rep.Depth = *ctx.SubagentDepth
		} else {
			rep.Depth = SubagentDepth(ctx.SessionKey, ctx.Sessions)
		}
		rep.Role = ctx.SubagentRole
		if _, known := e.subagents[rep.Role]; !known {
			rep.Role = SubagentRole(cfg, ctx.SessionKey, ctx.Sessions, rep.Depth)
		}
		r.Subagent = rep
		steps[8] = e.subagents[rep.Role]
	}

	var all []*step = steps[:]
	if ctx.RunAllow != nil {
		all = append(all, capStep(ctx.RunAllow, ctx.RunAllowKey))
	}

	tools := make([]Tool, 0, len(candidates)+len(ctx.Plugins))
	r.Removed = make([]Removal, 0, len(candidates))
	tools = e.construct(&r, &ctx, ag, access, sb.settings.AccessKey, sb.settings.ModeKey, candidates, tools)
	tools = e.resolvePlugins(&r, &ctx, ag, &steps, tools)
	tools = prefilter(&r, &ctx, tools)

	plugins := newPluginIndex(tools)
	// Normalised names, kept in step with tools as steps filter both.
	names := make([]string, len(tools))
	core := make([]string, 0, len(tools))
	for i, t := range tools {
		names[i] = Normalize(t.Name)
		if t.Plugin == "" {
			core = append(core, names[i])
		}
	}

	r.ExecBackground = true
	r.Steps = make([]StepReport, 0, len(all))
	for _, s := range all {
		if s == nil {
			continue
		}
		if v, _ := s.rules.check("process", plugins); v != Allowed {
			r.ExecBackground = false
		}
		rs := runStep{s: s, allow: !s.rules.allow.empty()}
		if s.analyze && rs.allow {
			rs.allow = analyzeAllowlist(&r, s, plugins, core)
		}
		rep := StepReport{
			Label: s.label, Applied: true, Allow: s.rules.allow.raw, Deny: s.rules.deny.raw,
			AllowKey: s.allowKey, DenyKey: s.denyKey, AllowIgnored: !rs.allow && !s.rules.allow.empty(),
		}
		before := len(tools)
		tools, names = applyStep(&r, rs, plugins, tools, names)
		rep.Removed = before - len(tools)
		r.Steps = append(r.Steps, rep)
	}
	r.Tools = tools
	return r
}

// providerProfileStep builds step 2 from the chosen byProvider entries: the
// agent's profile wins over the global one, and the agent's alsoAllow (if
// it is an array) over the global alsoAllow.
func providerProfileStep(ag *agentSteps, gp, ap *providerStep) *step {
	var profile, key string
	var also config.List
	if gp != nil {
		profile, key, also = gp.entry.Profile, "tools.byProvider"+keySegment(gp.key)+".profile", gp.entry.AlsoAllow
	}
	if ap != nil {
		if ap.entry.Profile != "" {
			profile, key = ap.entry.Profile, ag.keyPrefix+".byProvider"+keySegment(ap.key)+".profile"
		}
		if ap.entry.AlsoAllow != nil {
			also = ap.entry.AlsoAllow
		}
	}
	allow, ok := ProfileAllow(profile)
	if !ok {
		return nil
	}
	return &step{
		label: fmt.Sprintf(stepProviderProfFmt, profile), allowKey: key, profileOwn: allow,
		rules: NewRules(dedupe(append(slices.Clone(allow), also...)), nil), analyze: true,
	}
}

// construct applies construction gating (§1.3) to the candidates.
func (e *Engine) construct(r *Result, ctx *Context, ag *agentSteps, access, accessKey, modeKey string, in, out []Tool) []Tool {
	cfg := e.cfg
	ro := r.Sandboxed && access == AccessRO
	for _, t := range in {
		n := normalizeName(t.Name)
		key, why := "", ""
		switch n {
		case "bash":
			why = "bash is never built; exec replaces it"
		case "apply_patch":
			key, why = e.applyPatchGate(ag, ctx, ro, accessKey)
		case "write", "edit":
			if ro {
				key, why = accessKey, "sandbox workspaceAccess is ro"
			}
		case "message":
			if ctx.NoMessageTool {
				why = "the caller disabled the message tool"
			}
		case "web_search":
			if off(cfg.Tools.Web.Search.Enabled) {
				key, why = "tools.web.search.enabled", "disabled"
			}
		case "web_fetch":
			if off(cfg.Tools.Web.Fetch.Enabled) {
				key, why = "tools.web.fetch.enabled", "disabled"
			}
		case "browser":
			switch {
			case off(cfg.Browser.Enabled):
				key, why = "browser.enabled", "disabled"
			case r.Sandboxed && !ctx.SandboxBrowser:
				key, why = modeKey, BrowserSandboxed
			}
		}
		if why != "" {
			r.Removed = append(r.Removed, Removal{Tool: t.Name, Stage: StageConstruction, Key: key, Rule: RuleNotBuilt, Entry: why})
			continue
		}
		out = append(out, t)
	}
	return out
}

func off(b *bool) bool { return b != nil && !*b }

// BrowserSandboxed is why browser is not built in a sandboxed session:
// a Talon rule (OpenClaw would run a browser in the sandbox).
const BrowserSandboxed = "not in a sandboxed session (runs on the gateway host)"

// applyPatchGate says why apply_patch is not built, or "" when it is.
func (e *Engine) applyPatchGate(ag *agentSteps, ctx *Context, ro bool, accessKey string) (key, why string) {
	cfg := e.cfg
	ap, prefix := (*config.ApplyPatch)(nil), "tools.exec.applyPatch"
	if cfg.Tools.Exec != nil {
		ap = cfg.Tools.Exec.ApplyPatch
	}
	if ag.index >= 0 {
		if x := cfg.Agents.List[ag.index].Tools.Exec; x != nil && x.ApplyPatch != nil {
			ap, prefix = x.ApplyPatch, ag.keyPrefix+".exec.applyPatch"
		}
	}
	if ap == nil || ap.Enabled == nil || !*ap.Enabled {
		return prefix + ".enabled", "not enabled"
	}
	provider := normalizeName(ctx.ModelProvider)
	if provider != "openai" && provider != "openai-codex" {
		return prefix + ".enabled", "only built for the openai and openai-codex providers"
	}
	if len(ap.AllowModels) > 0 {
		model := normalizeName(ctx.ModelID)
		ok := false
		for _, m := range ap.AllowModels {
			m = normalizeName(m)
			if m == model || m == provider+"/"+model {
				ok = true
				break
			}
		}
		if !ok {
			return prefix + ".allowModels", "model not in allowModels"
		}
	}
	if ro {
		return accessKey, "sandbox workspaceAccess is ro"
	}
	return "", ""
}

// resolvePlugins applies plugin enable state, optional-tool gating and name
// conflicts to the plugin registrations and appends what survives (§9).
func (e *Engine) resolvePlugins(r *Result, ctx *Context, ag *agentSteps, steps *[9]*step, tools []Tool) []Tool {
	if len(ctx.Plugins) == 0 {
		return tools
	}
	cfg := e.cfg
	drop := func(reg Registration, rule, key, why string) {
		r.Removed = append(r.Removed, Removal{Tool: reg.Name, Stage: StagePlugin, Key: key, Rule: rule, Entry: why})
	}
	if off(cfg.Plugins.Enabled) {
		for _, reg := range ctx.Plugins {
			drop(reg, RulePluginOff, "plugins.enabled", "plugins disabled")
		}
		return tools
	}
	explicit := explicitAllowlist(steps)
	taken := make(map[string]bool, len(tools)+len(ctx.Plugins))
	for _, t := range tools {
		if t.Plugin != "" || slices.Contains(NativeTools, t.Name) {
			taken[t.Name] = true
		}
	}
	for _, reg := range ctx.Plugins {
		if reg.Origin != "" {
			if st := LoadState(cfg, reg.Plugin, reg.Origin, reg.Kind); !st.Enabled {
				drop(reg, RulePluginOff, st.Key, st.Reason)
				continue
			}
		}
		if slices.Contains(NativeTools, Normalize(reg.Plugin)) {
			drop(reg, RuleConflict, "", fmt.Sprintf("plugin id %q collides with a native tool", reg.Plugin))
			continue
		}
		if reg.Optional && !optionalAllowed(explicit, reg) {
			drop(reg, RuleOptional, ag.keyPrefix+".alsoAllow", "optional tool not named by any allow list")
			continue
		}
		if taken[reg.Name] {
			drop(reg, RuleConflict, "", fmt.Sprintf("tool name %q is already taken", reg.Name))
			continue
		}
		taken[reg.Name] = true
		tools = append(tools, Tool{Name: reg.Name, Plugin: reg.Plugin})
	}
	return tools
}

// explicitAllowlist collects every allow entry of the run's steps for
// optional plugin tools (§9.2): the profiles without their alsoAllow, the
// other steps as built.
func explicitAllowlist(steps *[9]*step) []string {
	var out []string
	for _, s := range steps {
		if s == nil {
			continue
		}
		list := s.rules.allow.raw
		if s.profileOwn != nil {
			list = s.profileOwn
		}
		for _, e := range list {
			if n := Normalize(e); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// prefilter applies the memory-flush restriction and the message-provider,
// model-provider and owner-only filters, in that order.
func prefilter(r *Result, ctx *Context, tools []Tool) []Tool {
	msgVoice := normalizeName(ctx.MessageProvider) == "voice"
	xai := isXAI(ctx.ModelProvider, ctx.ModelID)
	out := tools[:0]
	for _, t := range tools {
		n := Normalize(t.Name)
		var rm Removal
		switch {
		case ctx.MemoryFlush && n != "read" && n != "write":
			rm = Removal{Stage: StageMemoryFlush, Rule: RuleNotBuilt, Entry: "memory flush runs keep only read and write"}
		case msgVoice && t.Name == "tts":
			rm = Removal{Stage: StageMessageProvider, Rule: RuleProviderBlock, Entry: "voice"}
		case xai && n == "web_search":
			rm = Removal{Stage: StageModelProvider, Rule: RuleProviderBlock, Entry: "xai"}
		case !ctx.SenderIsOwner && (t.OwnerOnly || slices.Contains(OwnerOnlyTools, n)):
			rm = Removal{Stage: StageOwnerOnly, Key: "commands.ownerAllowFrom", Rule: RuleOwnerOnly}
		default:
			out = append(out, t)
			continue
		}
		rm.Tool = t.Name
		r.Removed = append(r.Removed, rm)
	}
	return out
}

// isXAI reports whether a model belongs to the xAI family, which has its
// own web search.
func isXAI(provider, model string) bool {
	p, m := normalizeName(provider), normalizeName(model)
	switch {
	case strings.Contains(p, "xai"), strings.Contains(p, "x-ai"):
		return true
	case p == "openrouter":
		return strings.HasPrefix(m, "x-ai/")
	case p == "venice":
		return strings.Contains(m, "grok")
	}
	return false
}

// applyStep filters tools through one step, recording removals.
func applyStep(r *Result, rs runStep, plugins *pluginIndex, tools []Tool, names []string) ([]Tool, []string) {
	s := rs.s
	rules := s.rules
	if !rs.allow {
		rules.allow = ruleList{}
	}
	out, outNames := tools[:0], names[:0]
	for i, t := range tools {
		v, entry := rules.check(names[i], plugins)
		switch v {
		case Allowed:
			out = append(out, t)
			outNames = append(outNames, names[i])
		case Denied:
			def := s.denyDefault || slices.Contains(s.builtinDeny, entry)
			r.Removed = append(r.Removed, Removal{Tool: t.Name, Stage: s.label, Key: s.denyKey, Default: def, Rule: RuleDenied, Entry: entry})
		default:
			r.Removed = append(r.Removed, Removal{Tool: t.Name, Stage: s.label, Key: s.allowKey, Default: s.allowDefault, Rule: RuleNotAllowed})
		}
	}
	return out, outNames
}
