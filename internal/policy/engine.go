package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"talon/internal/config"
)

// Step labels, as OpenClaw logs them (§4.1). Steps 1, 2 and 5, 6 carry the
// profile or agent id in their label; see profileLabel and agentLabel.
const (
	StepGlobal         = "tools.allow"
	StepGlobalProvider = "tools.byProvider.allow"
	StepGroup          = "group tools.allow"
	StepSandbox        = "sandbox tools.allow"
	StepSubagent       = "subagent tools.allow"
	// StepRun is Talon's step after the nine: a run's own cap.
	StepRun              = "run tools.allow"
	stepProfileFmt       = "tools.profile (%s)"
	stepProviderProfFmt  = "tools.byProvider.profile (%s)"
	stepAgentFmt         = "agents.%s.tools.allow"
	stepAgentProviderFmt = "agents.%s.tools.byProvider.allow"
)

// Pre-filter stages: what removes a tool before the nine steps.
const (
	StageConstruction    = "construction"
	StagePlugin          = "plugin"
	StageMemoryFlush     = "memory flush"
	StageMessageProvider = "message provider"
	StageModelProvider   = "model provider"
	StageOwnerOnly       = "owner-only"
)

// step is one compiled pipeline step.
type step struct {
	label    string
	allowKey string
	denyKey  string
	rules    Rules
	// analyze marks steps 1–7, whose allow lists get the unknown-entry
	// analysis and the plugin-only strip (§4.7).
	analyze bool
	// profileOwn is a profile step's allow list without its alsoAllow: the
	// part that counts as explicit for optional plugin tools (§9.2).
	profileOwn []string
	// builtinDeny are deny entries that are built-in defaults (the subagent
	// deny lists), not written in the config.
	builtinDeny []string
	// defaults marks lists that are built-in defaults, not written in the
	// config; the keys then say where to override them.
	allowDefault, denyDefault bool
}

// newStep turns an {allow, alsoAllow, deny} triple into a step (§4.3), or
// returns nil when it sets nothing.
func newStep(label, prefix string, p config.ToolPolicy) *step {
	var allow []string
	allowKey := prefix + ".allow"
	switch {
	case p.Allow != nil:
		allow = unionAllow(p.Allow, p.AlsoAllow)
	case len(p.AlsoAllow) > 0:
		allow = unionAllow(nil, p.AlsoAllow)
		allowKey = prefix + ".alsoAllow"
	}
	if allow == nil && p.Deny == nil {
		return nil
	}
	return &step{
		label: label, allowKey: allowKey, denyKey: prefix + ".deny",
		rules: NewRules(allow, p.Deny), analyze: true,
	}
}

type providerStep struct {
	norm  string // trimmed, lower-cased key
	key   string // as written
	entry config.ProviderTools
	step  *step // steps 4 or 6; nil when the entry sets no allow/deny
}

// agentSteps are the precompiled steps of one agent, or of runs with no
// agent at all.
type agentSteps struct {
	id         string
	index      int    // agents.list index, -1 when the agent has no entry
	keyPrefix  string // agents.list[i].tools, or tools
	profile    string
	profileKey string
	// profileAlso is what §4.3 appends to the profile's allow list.
	profileAlso []string
	profileStep *step
	agentStep   *step
	providers   []providerStep
}

// Engine evaluates the tool policy of one config. It is immutable once
// built and safe for concurrent use; build a new one when the config changes.
type Engine struct {
	cfg        *config.Config
	global     *step
	providers  []providerStep
	noAgent    *agentSteps
	agents     map[string]*agentSteps
	sandboxes  map[string]*sandboxStep
	subagents  map[string]*step
	defaultAgt string
}

// sandboxStep is what the sandbox contributes for one agent: its settings,
// its main session and the compiled step-8 policy.
type sandboxStep struct {
	settings SandboxSettings
	main     mainSession
	policy   SandboxPolicy
	step     step
}

// New compiles a config for evaluation.
func New(cfg *config.Config) *Engine {
	if cfg == nil {
		cfg = &config.Config{}
	}
	e := &Engine{
		cfg:        cfg,
		global:     newStep(StepGlobal, "tools", cfg.Tools.ToolPolicy),
		providers:  compileProviders(cfg.Tools.ByProvider, StepGlobalProvider, "tools.byProvider"),
		agents:     make(map[string]*agentSteps, len(cfg.Agents.List)),
		sandboxes:  make(map[string]*sandboxStep, len(cfg.Agents.List)+1),
		subagents:  make(map[string]*step, 3),
		defaultAgt: cfg.DefaultAgentID(),
	}
	e.noAgent = e.compileAgent("", -1)
	for i := range cfg.Agents.List {
		id := config.NormalizeAgentID(cfg.Agents.List[i].ID)
		if _, dup := e.agents[id]; !dup {
			e.agents[id] = e.compileAgent(id, i)
		}
	}
	for _, id := range append(slices.Collect(maps.Keys(e.agents)), "main", e.defaultAgt) {
		e.sandboxes[id] = compileSandbox(cfg, id)
	}
	for _, role := range []string{RoleMain, RoleOrchestrator, RoleLeaf} {
		sp := ResolveSubagentPolicy(cfg, role)
		e.subagents[role] = &step{
			label: StepSubagent, allowKey: "tools.subagents.tools.allow", denyKey: "tools.subagents.tools.deny",
			rules: NewRules(sp.Allow, sp.Deny), builtinDeny: sp.BuiltIn,
		}
	}
	return e
}

func compileProviders(m map[string]config.ProviderTools, label, prefix string) []providerStep {
	keys := make([]string, 0, len(m))
	for k := range m {
		if strings.TrimSpace(k) != "" {
			keys = append(keys, k)
		}
	}
	// Sorted so that two keys that differ only in case resolve the same way
	// on every run; the doctor reports such pairs.
	slices.Sort(keys)
	out := make([]providerStep, 0, len(keys))
	for _, k := range keys {
		ps := providerStep{norm: normalizeName(k), key: k, entry: m[k]}
		ps.step = newStep(label, prefix+keySegment(k), m[k].ToolPolicy)
		out = append(out, ps)
	}
	return out
}

func (e *Engine) compileAgent(id string, index int) *agentSteps {
	cfg := e.cfg
	a := &agentSteps{id: id, index: index, keyPrefix: "tools"}
	var at *config.AgentTools
	if index >= 0 {
		at = &cfg.Agents.List[index].Tools
		a.keyPrefix = fmt.Sprintf("agents.list[%d].tools", index)
	}
	a.profile, a.profileKey = cfg.Tools.Profile, "tools.profile"
	if at != nil && at.Profile != "" {
		a.profile, a.profileKey = at.Profile, a.keyPrefix+".profile"
	}
	// Explicit profile alsoAllow: the agent's if it has one, else the global
	// one; never merged. Implicit: an exec or fs section adds its tools.
	also := []string(cfg.Tools.AlsoAllow)
	if at != nil && at.AlsoAllow != nil {
		also = at.AlsoAllow
	}
	also = slices.Clone(also)
	if cfg.Tools.Exec != nil || at != nil && at.Exec != nil {
		also = append(also, "exec", "process")
	}
	if cfg.Tools.Fs != nil || at != nil && at.Fs != nil {
		also = append(also, "read", "write", "edit")
	}
	a.profileAlso = dedupe(also)
	if allow, ok := ProfileAllow(a.profile); ok {
		a.profileStep = &step{
			label: fmt.Sprintf(stepProfileFmt, a.profile), allowKey: a.profileKey, profileOwn: allow,
			rules: NewRules(dedupe(append(slices.Clone(allow), a.profileAlso...)), nil), analyze: true,
		}
	}
	if at != nil {
		a.agentStep = newStep(fmt.Sprintf(stepAgentFmt, id), a.keyPrefix, at.ToolPolicy)
		a.providers = compileProviders(at.ByProvider, fmt.Sprintf(stepAgentProviderFmt, id), a.keyPrefix+".byProvider")
	}
	return a
}

// sandbox returns the compiled sandbox step of an agent.
func (e *Engine) sandbox(agentID string) *sandboxStep {
	if s, ok := e.sandboxes[agentID]; ok {
		return s
	}
	return compileSandbox(e.cfg, agentID)
}

func compileSandbox(cfg *config.Config, agentID string) *sandboxStep {
	sp := ResolveSandboxPolicy(cfg, agentID)
	return &sandboxStep{settings: ResolveSandboxSettings(cfg, agentID), main: newMainSession(cfg, agentID), policy: sp, step: step{
		label: StepSandbox, allowKey: sp.Sources.Allow.Key, denyKey: sp.Sources.Deny.Key,
		rules:        NewRules(sp.Allow, sp.Deny),
		allowDefault: sp.Sources.Allow.Source == "default", denyDefault: sp.Sources.Deny.Source == "default",
	}}
}

// lookupProvider picks the one byProvider entry for a model (§4.4): the full
// model key first, then the bare provider.
func lookupProvider(list []providerStep, provider, model string) *providerStep {
	p := normalizeName(provider)
	if p == "" || len(list) == 0 {
		return nil
	}
	m := normalizeName(model)
	full := m
	if m != "" && !strings.Contains(m, "/") {
		full = p + "/" + m
	}
	for _, want := range []string{full, p} {
		if want == "" {
			continue
		}
		for i := range list {
			if list[i].norm == want {
				return &list[i]
			}
		}
	}
	return nil
}

// toolAgent resolves the agent whose policy applies (§4.2): the explicit id,
// else the one in the session key, else main when there is a key at all.
func toolAgent(ctx *Context) (string, bool) {
	switch {
	case strings.TrimSpace(ctx.AgentID) != "":
		return config.NormalizeAgentID(ctx.AgentID), true
	case strings.TrimSpace(ctx.SessionKey) == "":
		return "", false
	}
	if id, ok := AgentFromSessionKey(ctx.SessionKey); ok {
		return id, true
	}
	return "main", true
}

func (e *Engine) agentSteps(ctx *Context) *agentSteps {
	id, ok := toolAgent(ctx)
	if !ok {
		return e.noAgent
	}
	if a, found := e.agents[id]; found {
		return a
	}
	// An agent without an entry gets the global policy only.
	return e.noAgent
}
