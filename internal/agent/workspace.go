package agent

import (
	"talon/internal/config"
	"talon/internal/sandbox"
)

// WorkspaceDir is where an agent's workspace lives (sandbox.AgentWorkspace):
// its `workspace` key, else `agents.defaults.workspace` (for the default
// agent; other agents get a sibling `<that>-<id>`), else `<state>/workspace`
// for the default agent and `<state>/workspace-<id>` for the others.
func WorkspaceDir(cfg *config.Config, stateDir, agentID string) string {
	return sandbox.AgentWorkspace(cfg, stateDir, agentID)
}
