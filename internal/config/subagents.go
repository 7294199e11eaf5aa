package config

import (
	"math"
	"slices"
	"strings"
)

// Defaults of agents.defaults.subagents, OpenClaw's, and its range of
// maxChildrenPerAgent (1–20).
const (
	DefaultMaxChildrenPerAgent = 5
	DefaultMaxConcurrent       = 8
	MaxChildrenPerAgentLimit   = 20
)

// MaxChildrenPerAgent is how many children one session may have running
// at once: agents.defaults.subagents.maxChildrenPerAgent, from 1 to
// MaxChildrenPerAgentLimit as OpenClaw bounds it, so that no config lets
// one session's model fan out without end.
func (c *Config) MaxChildrenPerAgent() int {
	return min(MaxChildrenPerAgentLimit, atLeastOne(c.Agents.Defaults.Subagents.MaxChildrenPerAgent, DefaultMaxChildrenPerAgent))
}

// MaxConcurrentSubagents is how many children may run at once in the
// whole config (a tenant): agents.defaults.subagents.maxConcurrent.
func (c *Config) MaxConcurrentSubagents() int {
	return atLeastOne(c.Agents.Defaults.Subagents.MaxConcurrent, DefaultMaxConcurrent)
}

// SubagentRunTimeoutSeconds is a child's run timeout when sessions_spawn
// names none: agents.defaults.subagents.runTimeoutSeconds, 0 for none.
func (c *Config) SubagentRunTimeoutSeconds() int {
	v := c.Agents.Defaults.Subagents.RunTimeoutSeconds
	if v == nil || math.IsNaN(*v) || *v <= 0 {
		return 0
	}
	return int(math.Floor(min(*v, math.MaxInt32)))
}

func atLeastOne(v *float64, def int) int {
	if v == nil || math.IsNaN(*v) {
		return def
	}
	return max(1, int(math.Floor(min(*v, math.MaxInt32))))
}

// SubagentModel is the model an agent's children run with unless
// sessions_spawn names one: the primary of agents.list[].subagents.model,
// else of agents.defaults.subagents.model; "" for the parent's model.
func (c *Config) SubagentModel(id string) string {
	if a, _ := c.Agent(id); a != nil && a.Subagents != nil {
		if p := ModelPrimary(a.Subagents.Model); p != "" {
			return p
		}
	}
	return ModelPrimary(c.Agents.Defaults.Subagents.Model)
}

// SpawnTargets are the agents requester may run a child as, sorted, and
// whether its allowAgents has "*" (OpenClaw's
// resolveSubagentAllowedTargetIds): with no allowAgents (the agent's,
// else agents.defaults.subagents'), only requester itself; with "*",
// every configured agent; else the listed ones that are configured.
func (c *Config) SpawnTargets(requester string) (ids []string, any bool) {
	requester = NormalizeAgentID(requester)
	allow := c.Agents.Defaults.Subagents.AllowAgents
	if a, _ := c.Agent(requester); a != nil && a.Subagents != nil && a.Subagents.AllowAgents != nil {
		allow = a.Subagents.AllowAgents
	}
	if allow == nil {
		return []string{requester}, false
	}
	configured := c.AgentIDs()
	for _, v := range allow {
		v = strings.TrimSpace(v)
		switch {
		case v == "*":
			any = true
		case v != "" && slices.Contains(configured, NormalizeAgentID(v)):
			ids = append(ids, NormalizeAgentID(v))
		}
	}
	if any {
		ids = append(slices.Clone(configured), requester)
	}
	slices.Sort(ids)
	return slices.Compact(ids), any
}
