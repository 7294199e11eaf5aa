package gateway

import (
	"strings"

	"talon/internal/config"
	"talon/internal/plugin"
	"talon/protocol"
)

// plugins.list is Talon's own: every plugin a run of the agent would
// consider (the four discovery places and the MCP servers), on or off and
// why, with the tools of those that are on and what failed to load. It
// loads them as a run would, so an MCP server starts if it had not.
func init() {
	register("plugins.list", protocol.ScopeRead, pluginsList)
}

type pluginsListParams struct {
	// AgentID defaults to the default agent.
	AgentID string `json:"agentId"`
}

type pluginsListResult struct {
	AgentID string          `json:"agentId"`
	Plugins []plugin.Status `json:"plugins"`
}

func pluginsList(_ *Server, c *call) (any, error) {
	const m = "plugins.list"
	var p pluginsListParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if e := checkField(m, "agentId", p.AgentID); e != nil {
		return nil, e
	}
	cfg := c.rt.file.Config
	id := cfg.DefaultAgentID()
	if strings.TrimSpace(p.AgentID) != "" {
		id = config.NormalizeAgentID(p.AgentID)
	}
	if !cfg.HasAgent(id) {
		return nil, protocol.Errorf("invalid %s params: agent %q is not in the config (agents.list)", m, id)
	}
	list := c.rt.runner.Plugins.List(c.ctx, c.pluginRun(id))
	return &pluginsListResult{AgentID: id, Plugins: list}, nil
}

// pluginRun is what the plugins of a run of agent id see.
func (c *call) pluginRun(id string) plugin.Run {
	return plugin.Run{AgentID: id, AgentDir: c.rt.file.Config.AgentWorkspace(c.t.dir, id)}
}
