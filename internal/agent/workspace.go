package agent

import (
	"os"
	"path/filepath"
	"strings"

	"talon/internal/config"
	"talon/internal/policy"
)

// WorkspaceDir is where an agent's workspace lives: its `workspace` key,
// else `agents.defaults.workspace` (for the default agent; other agents get
// a sibling `<that>-<id>`), else `<state>/workspace` for the default agent
// and `<state>/workspace-<id>` for the others. `~` expands to home.
func WorkspaceDir(cfg *config.Config, stateDir, agentID string) string {
	id := policy.NormalizeAgentID(agentID)
	for _, a := range cfg.Agents.List {
		if policy.NormalizeAgentID(a.ID) == id && strings.TrimSpace(a.Workspace) != "" {
			return absPath(stateDir, a.Workspace)
		}
	}
	isDefault := id == policy.DefaultAgentID(cfg)
	if d := strings.TrimSpace(cfg.Agents.Defaults.Workspace); d != "" {
		p := absPath(stateDir, d)
		if isDefault {
			return p
		}
		return p + "-" + id
	}
	if isDefault {
		return filepath.Join(stateDir, "workspace")
	}
	return filepath.Join(stateDir, "workspace-"+id)
}

func absPath(base, p string) string {
	p = strings.TrimSpace(p)
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}
