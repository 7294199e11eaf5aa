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
	CodeNotBuilt          = "tool-not-built"
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

// Tool states: what a row of an explanation says about a tool.
const (
	// StateAvailable: the policy allows the tool and Talon has it.
	StateAvailable = "available"
	// StateRemoved: Talon has the tool and the policy removes it.
	StateRemoved = "removed"
	// StateNotBuilt: Talon does not have the tool, whatever the policy
	// says of it.
	StateNotBuilt = "not-built"
)

// ReasonNotBuilt is the reason of a row in StateNotBuilt.
const ReasonNotBuilt = "not built in Talon"

// ToolRow is one candidate tool's outcome.
type ToolRow struct {
	Name   string `json:"name"`
	Plugin string `json:"plugin,omitempty"`
	// Available is true only for a tool the policy allows and Talon has:
	// the model is offered exactly the available rows.
	Available bool   `json:"available"`
	State     string `json:"state"`
	// Reason says why a row is not available.
	Reason string `json:"reason,omitempty"`
	// Removal is what removed the tool: for a tool Talon has, in the run
	// Talon makes; for one it does not have, in OpenClaw's policy over its
	// catalog (nil when that policy allows it).
	Removal *Removal `json:"removal,omitempty"`
	// Fix is the one-line change that would keep a removed tool, or what
	// it depends on when no config key can ("none in config: …"). A tool
	// Talon does not have gets none.
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
	// Counts sums up Tools.
	Counts   Counts       `json:"counts"`
	Steps    []StepReport `json:"steps"`
	Warnings []string     `json:"warnings"`
	Findings []Finding    `json:"findings"`
}

// Counts sums up the rows of an explanation.
type Counts struct {
	Tools     int `json:"tools"`
	Available int `json:"available"`
	Removed   int `json:"removed"`
	// NotBuilt counts the rows Talon does not have; AllowedNotBuilt those
	// of them that OpenClaw's policy allows.
	NotBuilt        int `json:"not_built"`
	AllowedNotBuilt int `json:"allowed_not_built"`
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

// Inventory is what Talon has, kept apart from what the policy allows:
// OpenClaw's policy decides over its whole catalog (the conformance
// vectors' tools_out), while a model is offered only tools Talon has built.
type Inventory struct {
	// Built names the candidate tools Talon has for the run: its core
	// registry and the memory slot's tools. A registration in
	// Context.Plugins is built: a plugin registered it for the run (or,
	// offline, the caller declared it).
	Built []string
	// Elsewhere are plugin tools registered for other agents of the
	// config (api-tools files of their workspaces): they make a name an
	// allow list holds known, never available to this run.
	Elsewhere []Registration
}

// built splits candidates into the tools Talon has and the rest.
func (inv *Inventory) built(candidates []Tool) (have []Tool, missing map[string]bool) {
	missing = map[string]bool{}
	for _, t := range candidates {
		if slices.Contains(inv.Built, t.Name) {
			have = append(have, t)
		} else {
			missing[t.Name] = true
		}
	}
	return have, missing
}

// Explain evaluates one run twice: OpenClaw's policy over candidates (its
// catalog), and the run Talon makes, over the candidates it has built,
// which is the run's real tool list (an allow list naming only tools
// Talon lacks is ignored there, as OpenClaw ignores one naming tools its
// runtime lacks). Rows of tools Talon has come from the run, the others
// from the policy; steps and findings describe the run, warnings are
// what OpenClaw logs for the policy. Plugin registrations in ctx appear
// as rows too.
func Explain(cfg *config.Config, ctx Context, candidates []Tool, inv Inventory) Explanation {
	eng := New(cfg)
	have, missing := inv.built(candidates)
	// OpenClaw's own evaluation runs its sandbox browser.
	octx := ctx
	octx.SandboxBrowser = true
	allowed := eng.Evaluate(octx, candidates)
	r := eng.Evaluate(ctx, have)
	x := Explanation{
		Agent: r.AgentID, SessionKey: ctx.SessionKey, Owner: ctx.SenderIsOwner,
		ModelProvider: ctx.ModelProvider, ModelID: ctx.ModelID,
		Sandboxed: r.Sandboxed, SandboxMode: r.SandboxMode, WorkspaceAccess: r.WorkspaceAccess,
		Subagent: r.Subagent, Steps: r.Steps, Warnings: allowed.Warnings,
	}
	if x.Warnings == nil {
		x.Warnings = []string{}
	}
	a, idx := cfg.Agent(r.AgentID)
	run, catalog := removals(&r), removals(&allowed)
	for _, t := range candidates {
		if missing[t.Name] {
			x.Tools = append(x.Tools, ToolRow{
				Name: t.Name, Plugin: t.Plugin, State: StateNotBuilt, Reason: ReasonNotBuilt,
				Removal: catalog.pipeline[t.Name],
			})
			continue
		}
		x.Tools = append(x.Tools, run.row(cfg, t, nil, idx))
	}
	for _, reg := range ctx.Plugins {
		x.Tools = append(x.Tools, run.row(cfg, Tool{Name: reg.Name, Plugin: reg.Plugin}, run.registry[reg.Name], idx))
	}
	x.Counts = count(x.Tools)
	// A name a plugin registers for the run names a tool the run has,
	// even where OpenClaw's catalog tool of that name is not built.
	for _, reg := range ctx.Plugins {
		delete(missing, reg.Name)
	}
	lists := namingLists(cfg, a, idx)
	x.Findings = append(x.Findings, runFindings(cfg, &r, lists, idx, missing)...)
	x.Findings = append(x.Findings, notBuiltFindings(x.Tools, lists, missing)...)
	x.Findings = append(x.Findings, ConfigFindings(cfg, append(slices.Clip(ctx.Plugins), inv.Elsewhere...))...)
	if x.Findings == nil {
		x.Findings = []Finding{}
	}
	return x
}

// traced indexes a result's removals by tool. A plugin registration is
// traced at the plugin stage when it is dropped there, and like any
// candidate when a later stage removes it; names are unique past the
// plugin stage, so matching by name is exact.
type traced struct {
	pipeline, registry map[string]*Removal
}

func removals(r *Result) traced {
	t := traced{pipeline: map[string]*Removal{}, registry: map[string]*Removal{}}
	for i := range r.Removed {
		m := t.pipeline
		if r.Removed[i].Stage == StagePlugin {
			m = t.registry
		}
		if _, seen := m[r.Removed[i].Tool]; !seen {
			m[r.Removed[i].Tool] = &r.Removed[i]
		}
	}
	return t
}

// row is the row of a tool Talon has; dropped is its plugin-stage
// removal, if any.
func (tr traced) row(cfg *config.Config, t Tool, dropped *Removal, idx int) ToolRow {
	row := ToolRow{Name: t.Name, Plugin: t.Plugin, Removal: dropped, State: StateAvailable}
	if row.Removal == nil {
		row.Removal = tr.pipeline[t.Name]
	}
	if rm := row.Removal; rm != nil {
		row.State, row.Reason, row.Fix = StateRemoved, "removed by "+describeRemoval(*rm), rowFix(cfg, *rm, idx)
	}
	row.Available = row.State == StateAvailable
	return row
}

func count(rows []ToolRow) Counts {
	c := Counts{Tools: len(rows)}
	for _, r := range rows {
		switch r.State {
		case StateAvailable:
			c.Available++
		case StateRemoved:
			c.Removed++
		case StateNotBuilt:
			c.NotBuilt++
			if r.Removal == nil {
				c.AllowedNotBuilt++
			}
		}
	}
	return c
}

// notBuiltFindings name the tools an allow list asks for that the run
// does not have (missing): no config change makes them available, so
// they get no fix that adds them anywhere.
func notBuiltFindings(rows []ToolRow, lists []namedList, missing map[string]bool) []Finding {
	var out []Finding
	for _, r := range rows {
		if r.State != StateNotBuilt || !missing[r.Name] {
			continue
		}
		by, named := namedBy(lists, r.Name)
		if !named {
			continue
		}
		out = append(out, Finding{
			Severity: SeverityWarning, Code: CodeNotBuilt, Key: by,
			Message: fmt.Sprintf("%q is named in %s, but it is %s: OpenClaw's policy may allow it, no model is offered it", r.Name, by, ReasonNotBuilt),
			Fix:     fmt.Sprintf("none in config: Talon does not have %q (keep the entry for OpenClaw, or remove it from %s)", r.Name, by),
		})
	}
	return out
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

// runFindings are the mistakes of the run Talon makes; missing are the
// candidates it does not have, which the findings of ignored allow lists
// name.
func runFindings(cfg *config.Config, r *Result, lists []namedList, idx int, missing map[string]bool) []Finding {
	var out []Finding
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
		out = append(out, ignoredFinding(ig, missing))
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
	case rm.Stage == StageConstruction && rm.Entry == BrowserSandboxed:
		return fmt.Sprintf("none for a sandboxed session: Talon runs the browser only in unsandboxed ones (%s \"off\", or \"non-main\" for other sessions; never for a tenant)", rm.Key)
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

func ignoredFinding(ig IgnoredAllowlist, missing map[string]bool) Finding {
	f := Finding{Severity: SeverityError, Code: CodeAllowlistIgnored, Key: ig.Key}
	entries := quoteList(ig.Entries)
	var lacking []string
	for _, e := range ig.Entries {
		if missing[Normalize(e)] {
			lacking = append(lacking, e)
		}
	}
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
	// No fix may point at tools no config can make available.
	switch {
	case len(lacking) == 0:
	case len(lacking) == len(ig.Entries):
		f.Message = fmt.Sprintf("%s names only tools that are %s %s, so %s ignores it and every core tool stays", ig.Key, ReasonNotBuilt, entries, ig.Step)
		f.Fix = fmt.Sprintf("name in %s the tools you want among those Talon has", ig.Key)
	default:
		f.Message += fmt.Sprintf(" (%s: %s)", ReasonNotBuilt, quoteList(lacking))
		if ig.Why == WhyUnavailableCore {
			f.Fix = fmt.Sprintf("name in %s the tools you want among those Talon has", ig.Key)
		}
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
