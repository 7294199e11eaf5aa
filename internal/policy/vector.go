package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"talon/internal/config"
)

// Vector is one conformance case in the shape of
// conformance/tool-policy/vectors.json. Expected fields are optional; they
// are not read by EvalVector.
type Vector struct {
	ID      string          `json:"id"`
	Kind    string          `json:"kind"`
	Config  json.RawMessage `json:"config"`
	Context VectorContext   `json:"context"`
	ToolsIn []string        `json:"tools_in"`

	ToolsOut       []string        `json:"tools_out,omitempty"`
	Warnings       []string        `json:"warnings,omitempty"`
	ExpectedPolicy *SandboxPolicy  `json:"expected_policy,omitempty"`
	ExpectedState  *EnableState    `json:"expected_state,omitempty"`
	SandboxPolicy  *SandboxPolicy  `json:"sandbox_policy,omitempty"`
	SubagentPolicy *SubagentPolicy `json:"subagent_policy,omitempty"`

	// Provenance, carried through untouched.
	OpenClawVersion string          `json:"openclaw_version,omitempty"`
	Source          string          `json:"source,omitempty"`
	Notes           string          `json:"notes,omitempty"`
	TestAssertions  json.RawMessage `json:"test_assertions,omitempty"`
}

// VectorContext is a vector's run context. The resolved fields (sandboxed,
// workspace_access, subagent_depth, subagent_role) override what Talon
// resolves from config and key when present.
type VectorContext struct {
	SessionKey          string            `json:"session_key,omitempty"`
	AgentID             string            `json:"agent_id,omitempty"`
	ModelProvider       string            `json:"model_provider,omitempty"`
	ModelID             string            `json:"model_id,omitempty"`
	MessageProvider     string            `json:"message_provider,omitempty"`
	SenderIsOwner       *bool             `json:"sender_is_owner,omitempty"`
	SenderID            string            `json:"sender_id,omitempty"`
	SpawnedBy           string            `json:"spawned_by,omitempty"`
	Sandboxed           *bool             `json:"sandboxed,omitempty"`
	SandboxMode         string            `json:"sandbox_mode,omitempty"`
	WorkspaceAccess     string            `json:"workspace_access,omitempty"`
	SubagentDepth       *int              `json:"subagent_depth,omitempty"`
	SubagentRole        string            `json:"subagent_role,omitempty"`
	SessionStore        Sessions          `json:"session_store,omitempty"`
	PluginTools         map[string]string `json:"plugin_tools,omitempty"`
	PluginRegistrations []Registration    `json:"plugin_registrations,omitempty"`
	OwnerOnlyTools      []string          `json:"owner_only_tools,omitempty"`
	PluginID            string            `json:"plugin_id,omitempty"`
	Origin              Origin            `json:"origin,omitempty"`
}

// VectorResult is what `talon policy eval` prints for one vector.
type VectorResult struct {
	ToolsOut []string           `json:"tools_out"`
	Policy   *SandboxPolicy     `json:"policy,omitempty"`
	State    *EnableState       `json:"state,omitempty"`
	Warnings []string           `json:"warnings"`
	Trace    []Removal          `json:"trace"`
	Ignored  []IgnoredAllowlist `json:"ignored_allowlists,omitempty"`
	// Resolved is the run context as the pipeline used it.
	Resolved *Resolved `json:"resolved,omitempty"`
}

// Resolved is the context the pipeline resolved for an effective vector.
type Resolved struct {
	AgentID         string `json:"agent_id,omitempty"`
	Sandboxed       bool   `json:"sandboxed"`
	SandboxMode     string `json:"sandbox_mode"`
	WorkspaceAccess string `json:"workspace_access,omitempty"`
	SubagentDepth   int    `json:"subagent_depth"`
	SubagentRole    string `json:"subagent_role,omitempty"`
}

// Vector kinds.
const (
	KindFilter        = "filter"
	KindEffective     = "effective"
	KindSandboxPolicy = "sandbox_policy"
	KindPluginEnable  = "plugin_enable"
)

// ParseVector decodes one vector strictly: unknown top-level or context
// fields are errors, so a typo never passes as an empty context.
func ParseVector(data []byte) (Vector, error) {
	var v Vector
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("reading vector: %w", err)
	}
	if dec.More() {
		return v, errors.New("reading vector: more than one JSON value on input")
	}
	return v, nil
}

// EvalVector evaluates one vector. Its error means the vector could not be
// understood, never that the policy disagrees with its expectations.
func EvalVector(v Vector) (VectorResult, error) {
	res := VectorResult{ToolsOut: []string{}, Warnings: []string{}, Trace: []Removal{}}
	cfg, err := vectorConfig(v)
	if err != nil {
		return res, err
	}
	switch v.Kind {
	case KindFilter:
		var tp config.ToolPolicy
		if err := decodeJSON(v.Config, &tp); err != nil {
			return res, fmt.Errorf("vector %q: config: %w", v.ID, err)
		}
		rules := NewRules(tp.Allow, tp.Deny)
		for _, t := range v.ToolsIn {
			switch verdict, entry := rules.Check(t); verdict {
			case Allowed:
				res.ToolsOut = append(res.ToolsOut, t)
			case Denied:
				res.Trace = append(res.Trace, Removal{Tool: t, Stage: KindFilter, Key: "deny", Rule: RuleDenied, Entry: entry})
			default:
				res.Trace = append(res.Trace, Removal{Tool: t, Stage: KindFilter, Key: "allow", Rule: RuleNotAllowed})
			}
		}
	case KindSandboxPolicy:
		sp := ResolveSandboxPolicy(cfg, v.Context.AgentID)
		res.Policy = &sp
		for _, t := range v.ToolsIn {
			if ok, key := sandboxAllows(&sp, t); ok {
				res.ToolsOut = append(res.ToolsOut, t)
			} else {
				res.Trace = append(res.Trace, Removal{Tool: t, Stage: StepSandbox, Key: key, Rule: RuleNotAllowed})
			}
		}
	case KindPluginEnable:
		if v.Context.PluginID == "" {
			return res, fmt.Errorf("vector %q: context.plugin_id is required for kind plugin_enable", v.ID)
		}
		origin := v.Context.Origin
		switch origin {
		case OriginBundled, OriginConfig, OriginGlobal, OriginWorkspace:
		default:
			return res, fmt.Errorf("vector %q: context.origin must be bundled, config, global or workspace (got %q)", v.ID, origin)
		}
		st := PluginEnableState(cfg, v.Context.PluginID, origin)
		res.State = &st
	case KindEffective:
		if err := v.Context.validate(); err != nil {
			return res, fmt.Errorf("vector %q: %w", v.ID, err)
		}
		r := Evaluate(cfg, v.Context.runContext(), v.Context.candidates(v.ToolsIn))
		res.ToolsOut = append(res.ToolsOut, r.Names()...)
		res.Warnings = append(res.Warnings, r.Warnings...)
		res.Trace = append(res.Trace, r.Removed...)
		res.Ignored = r.Ignored
		res.Resolved = &Resolved{
			AgentID: r.AgentID, Sandboxed: r.Sandboxed, SandboxMode: r.SandboxMode,
			WorkspaceAccess: r.WorkspaceAccess,
		}
		if r.Subagent != nil {
			res.Resolved.SubagentDepth, res.Resolved.SubagentRole = r.Subagent.Depth, r.Subagent.Role
		}
	default:
		return res, fmt.Errorf("vector %q: unknown kind %q (want filter, effective, sandbox_policy or plugin_enable)", v.ID, v.Kind)
	}
	return res, nil
}

func vectorConfig(v Vector) (*config.Config, error) {
	cfg := &config.Config{}
	if v.Kind == KindFilter {
		return cfg, nil
	}
	if err := decodeJSON(v.Config, cfg); err != nil {
		return nil, fmt.Errorf("vector %q: config: %w", v.ID, err)
	}
	return cfg, nil
}

// decodeJSON decodes raw JSON (absent or null means {}) through the config
// package, so vectors are held to the same type rules as config files.
func decodeJSON(raw json.RawMessage, out any) error {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		raw = json.RawMessage("{}")
	}
	tree, err := config.FromJSON(raw)
	if err != nil {
		return err
	}
	if tree.Kind != config.Object {
		return errors.New("expected an object")
	}
	_, err = config.Decode(tree, out)
	return err
}

func (c *VectorContext) validate() error {
	switch c.WorkspaceAccess {
	case "", AccessNone, AccessRO, AccessRW:
	default:
		return fmt.Errorf("context.workspace_access must be none, ro or rw (got %q)", c.WorkspaceAccess)
	}
	switch c.SubagentRole {
	case "", RoleMain, RoleOrchestrator, RoleLeaf:
	default:
		return fmt.Errorf("context.subagent_role must be main, orchestrator or leaf (got %q)", c.SubagentRole)
	}
	for i, r := range c.PluginRegistrations {
		if strings.TrimSpace(r.Name) == "" || strings.TrimSpace(r.Plugin) == "" {
			return fmt.Errorf("context.plugin_registrations[%d]: name and pluginId are required", i)
		}
		switch r.Origin {
		case "", OriginBundled, OriginConfig, OriginGlobal, OriginWorkspace:
		default:
			return fmt.Errorf("context.plugin_registrations[%d].origin must be bundled, config, global or workspace (got %q)", i, r.Origin)
		}
	}
	return nil
}

func (c *VectorContext) runContext() Context {
	ctx := Context{
		SessionKey:      c.SessionKey,
		AgentID:         c.AgentID,
		ModelProvider:   c.ModelProvider,
		ModelID:         c.ModelID,
		MessageProvider: c.MessageProvider,
		SenderIsOwner:   c.SenderIsOwner != nil && *c.SenderIsOwner,
		Sender:          Sender{ID: c.SenderID},
		SpawnedBy:       c.SpawnedBy,
		Sessions:        c.SessionStore,
		Sandboxed:       c.Sandboxed,
		WorkspaceAccess: c.WorkspaceAccess,
		// The vectors are OpenClaw's, whose sandboxed sessions get a
		// browser in the sandbox.
		SandboxBrowser: true,
		SubagentDepth:  c.SubagentDepth,
		SubagentRole:   c.SubagentRole,
		Plugins:        c.PluginRegistrations,
	}
	return ctx
}

func (c *VectorContext) candidates(names []string) []Tool {
	tools := make([]Tool, len(names))
	for i, n := range names {
		tools[i] = Tool{Name: n, Plugin: c.PluginTools[n]}
		for _, o := range c.OwnerOnlyTools {
			if o == n {
				tools[i].OwnerOnly = true
			}
		}
	}
	return tools
}

// sandboxAllows is OpenClaw's diagnostic sandbox checker (isToolAllowed):
// like the matcher, but without aliases or the apply_patch rule. It returns
// the key of the list that blocks the tool.
func sandboxAllows(sp *SandboxPolicy, name string) (bool, string) {
	n := normalizeName(name)
	deny, allow := ruleList{entries: literalEntries(sp.Deny)}, ruleList{entries: literalEntries(sp.Allow)}
	if _, ok := deny.match(n, nil); ok {
		return false, sp.Sources.Deny.Key
	}
	if allow.empty() {
		return true, ""
	}
	if _, ok := allow.match(n, nil); ok {
		return true, ""
	}
	return false, sp.Sources.Allow.Key
}

// literalEntries compiles already-expanded entries without re-applying
// aliases.
func literalEntries(list []string) []entry {
	out := make([]entry, 0, len(list))
	for _, e := range list {
		if n := normalizeName(e); n != "" {
			out = append(out, entry{name: n, pats: []pattern{compilePattern(n)}})
		}
	}
	return out
}
