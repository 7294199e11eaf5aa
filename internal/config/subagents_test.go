package config

import (
	"slices"
	"testing"
)

func TestSubagentLimits(t *testing.T) {
	for _, tc := range []struct {
		name, cfg            string
		children, concurrent int
		timeout              int
	}{
		{"defaults", `{}`, DefaultMaxChildrenPerAgent, DefaultMaxConcurrent, 0},
		{"set", `{agents: {defaults: {subagents: {maxChildrenPerAgent: 2, maxConcurrent: 3, runTimeoutSeconds: 90}}}}`, 2, 3, 90},
		{"floored", `{agents: {defaults: {subagents: {maxChildrenPerAgent: 2.9, maxConcurrent: 3.5, runTimeoutSeconds: 1.5}}}}`, 2, 3, 1},
		{"zero is one, no timeout", `{agents: {defaults: {subagents: {maxChildrenPerAgent: 0, maxConcurrent: -4, runTimeoutSeconds: 0}}}}`, 1, 1, 0},
		{"children capped at OpenClaw's 20", `{agents: {defaults: {subagents: {maxChildrenPerAgent: 1e9, maxConcurrent: 1e9}}}}`, MaxChildrenPerAgentLimit, 1e9, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.cfg)
			if got := cfg.MaxChildrenPerAgent(); got != tc.children {
				t.Errorf("MaxChildrenPerAgent = %d, want %d", got, tc.children)
			}
			if got := cfg.MaxConcurrentSubagents(); got != tc.concurrent {
				t.Errorf("MaxConcurrentSubagents = %d, want %d", got, tc.concurrent)
			}
			if got := cfg.SubagentRunTimeoutSeconds(); got != tc.timeout {
				t.Errorf("SubagentRunTimeoutSeconds = %d, want %d", got, tc.timeout)
			}
		})
	}
}

func TestSpawnTargets(t *testing.T) {
	const agents = `list: [{id: "main"}, {id: "ops"}, {id: "web", subagents: {allowAgents: ["main"]}}]`
	for _, tc := range []struct {
		name, cfg, requester string
		want                 []string
		any                  bool
	}{
		{"none set: only itself", `{agents: {` + agents + `}}`, "main", []string{"main"}, false},
		{"listed and configured", `{agents: {defaults: {subagents: {allowAgents: ["ops", "ghost", " "]}}, ` + agents + `}}`, "main", []string{"ops"}, false},
		{"any", `{agents: {defaults: {subagents: {allowAgents: ["*"]}}, ` + agents + `}}`, "main", []string{"main", "ops", "web"}, true},
		{"the agent's own list wins", `{agents: {defaults: {subagents: {allowAgents: ["*"]}}, ` + agents + `}}`, "web", []string{"main"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, any := mustParse(t, tc.cfg).SpawnTargets(tc.requester)
			if !slices.Equal(ids, tc.want) || any != tc.any {
				t.Errorf("SpawnTargets(%q) = %v, %v; want %v, %v", tc.requester, ids, any, tc.want, tc.any)
			}
		})
	}
}
