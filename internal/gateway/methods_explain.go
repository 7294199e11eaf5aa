package gateway

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/sandbox"
	"talon/internal/session"
	"talon/internal/tools"
	"talon/protocol"
)

// tools.explain and sandbox.explain are Talon's own methods: the traces of
// `talon tools explain --json` and `talon sandbox explain --json` for the
// connection's tenant, computed by the same package functions from the
// config in force. They need read: they reveal the config's policy, as
// config.get does.
func init() {
	register("tools.explain", protocol.ScopeRead, toolsExplain)
	register("sandbox.explain", protocol.ScopeRead, sandboxExplain)
}

// Bounds on explain params: names and ids are short; the plugin tools a
// client declares are a handful, not a payload.
const (
	maxExplainField   = 256
	maxExplainPlugins = 256
)

// toolsExplainParams mirror the flags of `talon tools explain`.
type toolsExplainParams struct {
	AgentID    string `json:"agentId"`
	SessionKey string `json:"sessionKey"`
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	// Channel is the message channel (--channel); default: from the key.
	Channel string         `json:"channel"`
	Sender  *policy.Sender `json:"sender"`
	Owner   bool           `json:"owner"`
	// Sandboxed overrides what the config resolves, when present.
	Sandboxed   *bool              `json:"sandboxed"`
	PluginTools []pluginToolParams `json:"pluginTools"`
}

// pluginToolParams is one --plugin-tool NAME=PLUGIN[,optional][,origin=O].
type pluginToolParams struct {
	Name     string `json:"name"`
	PluginID string `json:"pluginId"`
	Optional bool   `json:"optional"`
	// Origin defaults to bundled, as on the command line.
	Origin string `json:"origin"`
}

func toolsExplain(s *Server, c *call) (any, error) {
	var p toolsExplainParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	cfg := c.rt.file.Config
	ctx, e := p.context(cfg)
	if e != nil {
		return nil, e
	}
	// The agent's real plugins join the tools the client declared: their
	// registrations go through the pipeline like a run's (the memory
	// slot's tools are catalog candidates already).
	id := ctx.AgentID
	if id == "" {
		id = session.AgentOf(ctx.SessionKey, cfg.DefaultAgentID())
	}
	live := c.rt.runner.Plugins.Tools(c.ctx, c.pluginRun(id))
	ctx.Plugins = append(live.Registrations, ctx.Plugins...)
	inv := policy.Inventory{Built: c.rt.runner.Built(live), Elsewhere: c.otherAgentsTools(cfg, id)}
	x := policy.Explain(cfg, ctx, policy.CandidateTools(cfg), inv)
	tools.PriceExplanation(&x, s.tools)
	return &toolsExplainResult{Explanation: &x, Plugins: live.Plugins}, nil
}

// otherAgentsTools are the plugin tools the runs of the config's other
// agents register (the api-tools files of their workspaces): an allow
// list naming one of them names a tool that exists, though not for id.
func (c *call) otherAgentsTools(cfg *config.Config, id string) []policy.Registration {
	var out []policy.Registration
	seen := map[string]bool{id: true}
	for _, a := range cfg.Agents.List {
		other := config.NormalizeAgentID(a.ID)
		if seen[other] {
			continue
		}
		seen[other] = true
		out = append(out, c.rt.runner.Plugins.Tools(c.ctx, c.pluginRun(other)).Registrations...)
	}
	return out
}

// toolsExplainResult is the policy's explanation and the plugins that
// were considered, on or off and why.
type toolsExplainResult struct {
	*policy.Explanation
	Plugins []plugin.Status `json:"plugins"`
}

// context validates the params and builds the run they describe, as the
// CLI does from its flags.
func (p *toolsExplainParams) context(cfg *config.Config) (policy.Context, *protocol.Error) {
	const m = "tools.explain"
	fields := []struct{ name, v string }{
		{"agentId", p.AgentID}, {"provider", p.Provider}, {"model", p.Model}, {"channel", p.Channel},
	}
	if p.Sender != nil {
		fields = append(fields, []struct{ name, v string }{
			{"sender.id", p.Sender.ID}, {"sender.e164", p.Sender.E164}, {"sender.username", p.Sender.Username}, {"sender.name", p.Sender.Name},
		}...)
	}
	for _, f := range fields {
		if e := checkField(m, f.name, f.v); e != nil {
			return policy.Context{}, e
		}
	}
	agentSet, keySet := strings.TrimSpace(p.AgentID) != "", strings.TrimSpace(p.SessionKey) != ""
	if agentSet == keySet {
		return policy.Context{}, protocol.Errorf("invalid %s params: pass exactly one of agentId or sessionKey", m)
	}
	if p.Model != "" && p.Provider == "" {
		return policy.Context{}, protocol.Errorf("invalid %s params: model needs provider", m)
	}
	regs, e := p.plugins()
	if e != nil {
		return policy.Context{}, e
	}
	ctx := policy.Context{
		SessionKey: strings.TrimSpace(p.SessionKey), ModelProvider: p.Provider, ModelID: p.Model,
		MessageProvider: p.Channel, SenderIsOwner: p.Owner, Sandboxed: p.Sandboxed, Plugins: regs,
	}
	if p.Sender != nil {
		ctx.Sender = *p.Sender
	}
	// An explanation of an agent the config does not have would describe
	// a run the gateway never makes.
	id := session.AgentOf(ctx.SessionKey, cfg.DefaultAgentID())
	if agentSet {
		id = config.NormalizeAgentID(p.AgentID)
		ctx.AgentID = id
		ctx.SessionKey = policy.MainSessionKey(cfg, id)
	} else if err := session.CheckKey(ctx.SessionKey); err != nil {
		return policy.Context{}, protocol.Errorf("invalid %s params: %v", m, err)
	}
	if !cfg.HasAgent(id) {
		return policy.Context{}, protocol.Errorf("invalid %s params: agent %q is not in the config (agents.list)", m, id)
	}
	return ctx, nil
}

// plugins turns pluginTools into registrations, with the CLI's checks.
func (p *toolsExplainParams) plugins() ([]policy.Registration, *protocol.Error) {
	const m = "tools.explain"
	if len(p.PluginTools) > maxExplainPlugins {
		return nil, protocol.Errorf("invalid %s params: pluginTools has %d entries, at most %d are allowed", m, len(p.PluginTools), maxExplainPlugins)
	}
	var out []policy.Registration
	for i, pt := range p.PluginTools {
		name, plugin := strings.TrimSpace(pt.Name), strings.TrimSpace(pt.PluginID)
		if name == "" || plugin == "" {
			return nil, protocol.Errorf("invalid %s params: pluginTools[%d] needs a name and a pluginId", m, i)
		}
		for _, f := range []struct{ name, v string }{{"name", name}, {"pluginId", plugin}} {
			if e := checkField(m, "pluginTools["+strconv.Itoa(i)+"]."+f.name, f.v); e != nil {
				return nil, e
			}
		}
		r := policy.Registration{Name: name, Plugin: plugin, Optional: pt.Optional, Origin: policy.OriginBundled}
		switch o := policy.Origin(pt.Origin); o {
		case "":
		case policy.OriginBundled, policy.OriginGlobal, policy.OriginWorkspace, policy.OriginConfig:
			r.Origin = o
		default:
			return nil, protocol.Errorf("invalid %s params: pluginTools[%d].origin must be bundled, global, workspace or config", m, i)
		}
		out = append(out, r)
	}
	return out, nil
}

// sandboxExplainParams mirror the flags of `talon sandbox explain`.
type sandboxExplainParams struct {
	AgentID string `json:"agentId"`
	// SessionKey defaults to the agent's main session.
	SessionKey string `json:"sessionKey"`
}

func sandboxExplain(_ *Server, c *call) (any, error) {
	const m = "sandbox.explain"
	var p sandboxExplainParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if e := checkField(m, "agentId", p.AgentID); e != nil {
		return nil, e
	}
	if strings.TrimSpace(p.AgentID) == "" {
		return nil, protocol.Errorf("invalid %s params: agentId is required", m)
	}
	cfg := c.rt.file.Config
	id := config.NormalizeAgentID(p.AgentID)
	if !cfg.HasAgent(id) {
		return nil, protocol.Errorf("invalid %s params: agent %q is not in the config (agents.list)", m, id)
	}
	key := strings.TrimSpace(p.SessionKey)
	if key == "" {
		key = policy.MainSessionKey(cfg, id)
	} else if err := session.CheckKey(key); err != nil {
		return nil, protocol.Errorf("invalid %s params: %v", m, err)
	}
	// What fails past these checks is the session's own sandbox config (a
	// key of another agent, a host backend with sandboxing on): the
	// client can read and fix it, so it gets the message.
	x, err := sandbox.Explain(c.ctx, cfg, c.t.dir, id, key)
	if err != nil {
		return nil, protocol.Errorf("%s: %v", m, err)
	}
	return x, nil
}

// checkField rejects a string param that no id or name holds: too long,
// not UTF-8, or with a control character. Session keys get
// session.CheckKey instead, which allows the longer keys the store does.
func checkField(method, name, v string) *protocol.Error {
	switch {
	case len(v) > maxExplainField:
		return protocol.Errorf("invalid %s params: %s is longer than %d bytes", method, name, maxExplainField)
	case !utf8.ValidString(v):
		return protocol.Errorf("invalid %s params: %s is not valid UTF-8", method, name)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return protocol.Errorf("invalid %s params: %s contains a control character", method, name)
	}
	return nil
}
