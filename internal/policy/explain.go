package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"talon/internal/config"
)

// Severity of a finding: errors make `talon doctor` fail.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding codes.
const (
	CodeNamedToolRemoved  = "named-tool-removed"
	CodeAllowlistIgnored  = "allowlist-ignored"
	CodeAllowStar         = "allow-star"
	CodeSandboxEmptyAllow = "sandbox-empty-allow"
	CodeSandboxStarAllow  = "sandbox-star-allow"
	CodePluginNotEnabled  = "plugin-not-enabled"
	CodeOptionalTool      = "optional-tool-not-allowed"
	CodePathsOnly         = "sandbox-paths-only"
	CodeUnknownTool       = "unknown-tool"
	CodeProviderKeyClash  = "byprovider-key-clash"
)

// Finding is a likely mistake with the one-line fix.
type Finding struct {
	// Agent is set by the doctor for findings about one agent's runs.
	Agent    string   `json:"agent,omitempty"`
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Key      string   `json:"key,omitempty"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix"`
}

// ToolRow is one candidate tool's outcome.
type ToolRow struct {
	Name      string   `json:"name"`
	Plugin    string   `json:"plugin,omitempty"`
	Available bool     `json:"available"`
	Removal   *Removal `json:"removal,omitempty"`
	// Fix is the one-line change that would keep a removed tool, or what
	// it depends on when no config key can ("none in config: …").
	Fix string `json:"fix,omitempty"`
	// Tokens is what the tool's definition costs in a model request, when
	// the caller knows its schema (Talon implements it); 0 otherwise.
	Tokens int `json:"tokens,omitempty"`
}

// Explanation answers "why does this run have these tools".
type Explanation struct {
	Agent           string          `json:"agent"`
	SessionKey      string          `json:"session_key,omitempty"`
	Owner           bool            `json:"owner"`
	ModelProvider   string          `json:"model_provider,omitempty"`
	ModelID         string          `json:"model_id,omitempty"`
	Sandboxed       bool            `json:"sandboxed"`
	SandboxMode     string          `json:"sandbox_mode"`
	WorkspaceAccess string          `json:"workspace_access,omitempty"`
	Subagent        *SubagentReport `json:"subagent,omitempty"`
	Tools           []ToolRow       `json:"tools"`
	Steps           []StepReport    `json:"steps"`
	Warnings        []string        `json:"warnings"`
	Findings        []Finding       `json:"findings"`
}

// Available returns the names of the tools the run keeps.
func (x *Explanation) Available() []string {
	var out []string
	for _, t := range x.Tools {
		if t.Available {
			out = append(out, t.Name)
		}
	}
	return out
}

// Explain evaluates one run and turns the result into rows and findings.
// Plugin registrations in ctx appear as rows too.
func Explain(cfg *config.Config, ctx Context, candidates []Tool) Explanation {
	r := Evaluate(cfg, ctx, candidates)
	x := Explanation{
		Agent: r.AgentID, SessionKey: ctx.SessionKey, Owner: ctx.SenderIsOwner,
		ModelProvider: ctx.ModelProvider, ModelID: ctx.ModelID,
		Sandboxed: r.Sandboxed, SandboxMode: r.SandboxMode, WorkspaceAccess: r.WorkspaceAccess,
		Subagent: r.Subagent, Steps: r.Steps, Warnings: r.Warnings,
	}
	if x.Warnings == nil {
		x.Warnings = []string{}
	}
	// A plugin registration is traced at the plugin stage when it is
	// dropped there, and like any candidate when a later stage removes it;
	// names are unique past the plugin stage, so matching by name is exact.
	pipeline := map[string]*Removal{}
	registry := map[string]*Removal{}
	for i := range r.Removed {
		m := pipeline
		if r.Removed[i].Stage == StagePlugin {
			m = registry
		}
		if _, seen := m[r.Removed[i].Tool]; !seen {
			m[r.Removed[i].Tool] = &r.Removed[i]
		}
	}
	row := func(t Tool, dropped *Removal) ToolRow {
		tr := ToolRow{Name: t.Name, Plugin: t.Plugin, Removal: dropped}
		if tr.Removal == nil {
			tr.Removal = pipeline[t.Name]
		}
		tr.Available = tr.Removal == nil
		return tr
	}
	for _, t := range candidates {
		x.Tools = append(x.Tools, row(t, nil))
	}
	for _, reg := range ctx.Plugins {
		x.Tools = append(x.Tools, row(Tool{Name: reg.Name, Plugin: reg.Plugin}, registry[reg.Name]))
	}
	a, idx := agentEntry(cfg, r.AgentID)
	for i := range x.Tools {
		if rm := x.Tools[i].Removal; rm != nil {
			x.Tools[i].Fix = rowFix(cfg, *rm, idx)
		}
	}
	x.Findings = append(x.Findings, runFindings(cfg, &ctx, &r, a, idx)...)
	x.Findings = append(x.Findings, ConfigFindings(cfg, ctx.Plugins)...)
	if x.Findings == nil {
		x.Findings = []Finding{}
	}
	return x
}

// namedList is an allow or alsoAllow list and its key.
type namedList struct {
	key  string
	list config.List
}

// namingLists are the config lists in which naming a tool means "I want it".
func namingLists(cfg *config.Config, a *config.Agent, idx int) []namedList {
	out := []namedList{{"tools.allow", cfg.Tools.Allow}, {"tools.alsoAllow", cfg.Tools.AlsoAllow}}
	if a != nil {
		p := fmt.Sprintf("agents.list[%d].tools", idx)
		out = append(out, namedList{p + ".allow", a.Tools.Allow}, namedList{p + ".alsoAllow", a.Tools.AlsoAllow})
	}
	return out
}

func namedBy(lists []namedList, tool string) (string, bool) {
	n := Normalize(tool)
	for _, l := range lists {
		for _, e := range l.list {
			if Normalize(e) == n {
				return l.key, true
			}
		}
	}
	return "", false
}

func runFindings(cfg *config.Config, ctx *Context, r *Result, a *config.Agent, idx int) []Finding {
	var out []Finding
	lists := namingLists(cfg, a, idx)
	for _, rm := range r.Removed {
		if rm.Stage == StagePlugin {
			out = append(out, pluginFinding(rm, idx)...)
			continue
		}
		by, named := namedBy(lists, rm.Tool)
		if !named || rm.Stage == StageMemoryFlush {
			continue
		}
		f := Finding{
			Severity: SeverityError, Code: CodeNamedToolRemoved, Key: rm.Key,
			Message: fmt.Sprintf("%q is named in %s but removed by %s", rm.Tool, by, describeRemoval(rm)),
			Fix:     removalFix(cfg, rm, idx),
		}
		if rm.Stage == StageOwnerOnly || rm.Stage == StageConstruction || rm.Stage == StageModelProvider || rm.Stage == StageMessageProvider {
			f.Severity = SeverityWarning
		}
		out = append(out, f)
	}
	for _, ig := range r.Ignored {
		out = append(out, ignoredFinding(ig))
	}
	return out
}

// describeRemoval says in a few words what removed a tool.
func describeRemoval(rm Removal) string {
	var b strings.Builder
	b.WriteString(rm.Stage)
	switch {
	case rm.Rule == RuleDenied:
		fmt.Fprintf(&b, " (deny entry %q in %s", rm.Entry, rm.Key)
	case rm.Rule == RuleNotAllowed:
		fmt.Fprintf(&b, " (not in the allow list %s", rm.Key)
	case rm.Entry != "":
		fmt.Fprintf(&b, " (%s", rm.Entry)
		if rm.Key != "" {
			fmt.Fprintf(&b, "; %s", rm.Key)
		}
	case rm.Key != "":
		fmt.Fprintf(&b, " (%s", rm.Key)
	default:
		return b.String()
	}
	if rm.Default {
		b.WriteString(", built-in default")
	}
	b.WriteString(")")
	return b.String()
}

// rowFix is the fix of a removed tool's row: a plugin's own, else the
// removal's.
func rowFix(cfg *config.Config, rm Removal, idx int) string {
	if rm.Stage == StagePlugin {
		if f := pluginFinding(rm, idx); len(f) > 0 {
			return f[0].Fix
		}
	}
	return removalFix(cfg, rm, idx)
}

// removalFix is the one-line fix for a removal.
func removalFix(cfg *config.Config, rm Removal, idx int) string {
	t := strconv.Quote(rm.Tool)
	switch {
	case rm.Stage == StageOwnerOnly:
		return fmt.Sprintf("only owner senders get %s; list owners in commands.ownerAllowFrom", t)
	case rm.Stage == StageConstruction && rm.Tool == "apply_patch" && strings.HasSuffix(rm.Key, ".enabled"):
		return fmt.Sprintf("set %s: true (apply_patch is built only for openai and openai-codex models)", rm.Key)
	case rm.Stage == StageConstruction && strings.HasSuffix(rm.Key, "allowModels"):
		return fmt.Sprintf("add the model to %s", rm.Key)
	case rm.Stage == StageConstruction && strings.HasSuffix(rm.Key, "workspaceAccess"):
		return fmt.Sprintf("set %s to \"rw\" (or \"none\" for a separate sandbox workspace)", rm.Key)
	case rm.Stage == StageConstruction && rm.Key != "":
		return fmt.Sprintf("remove %s: false", rm.Key)
	case rm.Stage == StageConstruction || rm.Stage == StageMessageProvider || rm.Stage == StageModelProvider:
		return "none in config: " + rm.Entry
	case rm.Stage == StepSubagent && rm.Default:
		return fmt.Sprintf("add %s to tools.subagents.tools.alsoAllow to lift the built-in subagent deny", t)
	case rm.Rule == RuleDenied && rm.Default:
		return fmt.Sprintf("set %s to the default list without %s: %s", rm.Key, t, quoteList(without(SandboxDefaultDeny, rm.Tool)))
	case rm.Rule == RuleDenied && rm.Entry != Normalize(rm.Tool):
		return fmt.Sprintf("remove %q from %s (it covers %s)", rm.Entry, rm.Key, t)
	case rm.Rule == RuleDenied:
		return fmt.Sprintf("remove %s from %s", t, rm.Key)
	case rm.Stage == StepSandbox && rm.Default:
		key := rm.Key
		if idx >= 0 {
			key = fmt.Sprintf("agents.list[%d].tools.sandbox.tools.allow", idx)
		}
		return fmt.Sprintf("set %s to %s (the default plus %s: a sandbox allow list replaces the default, there is no sandbox alsoAllow)",
			key, quoteList(append(slices.Clone(SandboxDefaultAllow), rm.Tool)), t)
	case strings.HasSuffix(rm.Key, ".profile"):
		return fmt.Sprintf("add %s to the alsoAllow beside %s", t, rm.Key)
	case strings.HasSuffix(rm.Key, ".alsoAllow"):
		return fmt.Sprintf("add %s to %s", t, rm.Key)
	}
	return fmt.Sprintf("add %s to %s", t, rm.Key)
}

func pluginFinding(rm Removal, idx int) []Finding {
	switch rm.Rule {
	case RulePluginOff:
		return []Finding{{
			Severity: SeverityError, Code: CodePluginNotEnabled, Key: rm.Key,
			Message: fmt.Sprintf("plugin tool %q is not loaded: %s", rm.Tool, rm.Entry),
			Fix:     pluginEnableFix(rm),
		}}
	case RuleOptional:
		return []Finding{{
			Severity: SeverityError, Code: CodeOptionalTool, Key: rm.Key,
			Message: fmt.Sprintf("optional plugin tool %q is named by no allow list, so it is not created (\"*\" and globs do not count)", rm.Tool),
			Fix:     fmt.Sprintf("add %q to %s", rm.Tool, rm.Key),
		}}
	}
	return nil
}

func pluginEnableFix(rm Removal) string {
	switch rm.Entry {
	case "plugins disabled":
		return "remove plugins.enabled: false"
	case "blocked by denylist":
		return "remove the plugin from plugins.deny"
	case "not in allowlist":
		return "add the plugin to plugins.allow"
	}
	return fmt.Sprintf("set %s: true", rm.Key)
}

func ignoredFinding(ig IgnoredAllowlist) Finding {
	f := Finding{Severity: SeverityError, Code: CodeAllowlistIgnored, Key: ig.Key}
	entries := quoteList(ig.Entries)
	also := strings.TrimSuffix(strings.TrimSuffix(ig.Key, ".allow"), ".alsoAllow") + ".alsoAllow"
	switch ig.Why {
	case WhyPluginOnly:
		f.Message = fmt.Sprintf("%s names only plugin tools %s, so %s ignores it and every core tool stays", ig.Key, entries, ig.Step)
		f.Fix = fmt.Sprintf("move %s to %s to add plugin tools without dropping the list", entries, also)
	case WhyGlobsOnly:
		f.Message = fmt.Sprintf("%s holds only globs %s; globs never count as core entries, so %s ignores it", ig.Key, entries, ig.Step)
		f.Fix = fmt.Sprintf("name at least one core tool in %s, or restrict with a deny list instead", ig.Key)
	case WhyUnavailableCore:
		f.Message = fmt.Sprintf("%s names only core tools this run does not have %s, so %s ignores it", ig.Key, entries, ig.Step)
		f.Fix = "see why those tools are removed earlier in this report, or name tools the run has"
	case WhyUnknown:
		f.Message = fmt.Sprintf("%s names only tools nothing provides %s, so %s ignores it", ig.Key, entries, ig.Step)
		f.Fix = fmt.Sprintf("fix the names in %s, or enable the plugin that provides them", ig.Key)
	default:
		f.Message = fmt.Sprintf("%s names no available core tool %s, so %s ignores it", ig.Key, entries, ig.Step)
		f.Fix = fmt.Sprintf("name the core tools you want in %s and move plugin tools to %s", ig.Key, also)
	}
	return f
}

// ConfigFindings are the mistakes visible in the config alone, whatever the
// run. plugins are the plugin tools known to exist.
func ConfigFindings(cfg *config.Config, plugins []Registration) []Finding {
	var out []Finding
	star := func(key string, list config.List) {
		if len(list) == 1 && strings.TrimSpace(list[0]) == "*" {
			out = append(out, Finding{
				Severity: SeverityWarning, Code: CodeAllowStar, Key: key,
				Message: fmt.Sprintf("%s is [\"*\"]: it restricts nothing, and \"*\" never enables optional plugin tools", key),
				Fix:     fmt.Sprintf("remove %s and list extra tools in %s", key, strings.TrimSuffix(key, ".allow")+".alsoAllow"),
			})
		}
	}
	sandboxAllow := func(key string, list config.List) {
		switch {
		case list != nil && len(list) == 0:
			out = append(out, Finding{
				Severity: SeverityWarning, Code: CodeSandboxEmptyAllow, Key: key,
				Message: fmt.Sprintf("%s is []: Talon, like OpenClaw 2026.3.13, reads it as no restriction, but other OpenClaw releases leave only \"image\"", key),
				Fix:     fmt.Sprintf("set %s to [\"*\"], which means no restriction under every release", key),
			})
		case len(list) == 1 && strings.TrimSpace(list[0]) == "*":
			out = append(out, Finding{
				Severity: SeverityWarning, Code: CodeSandboxStarAllow, Key: key,
				Message: fmt.Sprintf("%s is [\"*\"], but the sandbox deny list still removes %s unless it is set", key, strings.Join(SandboxDefaultDeny[:5], ", ")),
				Fix:     fmt.Sprintf("also set %s to [] to open everything", strings.TrimSuffix(key, ".allow")+".deny"),
			})
		}
	}
	star("tools.allow", cfg.Tools.Allow)
	sandboxAllow("tools.sandbox.tools.allow", cfg.Tools.Sandbox.Tools.Allow)
	paths := func(key, mode string) {
		if mode == ModePathsOnly {
			out = append(out, Finding{
				Severity: SeverityWarning, Code: CodePathsOnly, Key: key,
				Message: fmt.Sprintf("%s is \"paths-only\", which OpenClaw 2026.3.13 does not define; Talon reads it as \"all\" (every session sandboxed, the sandbox tool policy applies)", key),
				Fix:     fmt.Sprintf("set %s to \"all\" to say so", key),
			})
		}
	}
	paths("agents.defaults.sandbox.mode", cfg.Agents.Defaults.Sandbox.Mode)
	out = append(out, providerClashes("tools.byProvider", cfg.Tools.ByProvider)...)
	unknown := func(key string, list config.List) {
		for _, e := range list {
			n := Normalize(e)
			if n == "" || n == "*" || isGlob(n) || IsCoreToolID(n) || Groups[n] != nil || n == GroupPlugins ||
				slices.Contains(StandardTools, n) || n == MemoryPlugin || registered(plugins, n) {
				continue
			}
			out = append(out, Finding{
				Severity: SeverityWarning, Code: CodeUnknownTool, Key: key,
				Message: fmt.Sprintf("%s names %q, which is no core tool; only a plugin can provide it", key, e),
				Fix:     fmt.Sprintf("check the spelling, and that the plugin providing %q is enabled", e),
			})
		}
	}
	unknown("tools.alsoAllow", cfg.Tools.AlsoAllow)
	for i := range cfg.Agents.List {
		a := &cfg.Agents.List[i]
		p := fmt.Sprintf("agents.list[%d]", i)
		star(p+".tools.allow", a.Tools.Allow)
		sandboxAllow(p+".tools.sandbox.tools.allow", a.Tools.Sandbox.Tools.Allow)
		paths(p+".sandbox.mode", a.Sandbox.Mode)
		unknown(p+".tools.alsoAllow", a.Tools.AlsoAllow)
		out = append(out, providerClashes(p+".tools.byProvider", a.Tools.ByProvider)...)
	}
	return out
}

func providerClashes(prefix string, m map[string]config.ProviderTools) []Finding {
	seen := map[string]string{}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Finding
	for _, k := range keys {
		n := normalizeName(k)
		if prev, ok := seen[n]; ok {
			out = append(out, Finding{
				Severity: SeverityError, Code: CodeProviderKeyClash, Key: prefix,
				Message: fmt.Sprintf("%s has keys %q and %q, which name the same provider; only one applies", prefix, prev, k),
				Fix:     fmt.Sprintf("merge them into one %s%s entry", prefix, keySegment(n)),
			})
			continue
		}
		seen[n] = k
	}
	return out
}

func registered(plugins []Registration, n string) bool {
	for _, r := range plugins {
		if Normalize(r.Name) == n || Normalize(r.Plugin) == n {
			return true
		}
	}
	return false
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func without(list []string, s string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(e string) bool { return e == s })
}
