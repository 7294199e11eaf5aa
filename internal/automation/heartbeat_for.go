package automation

import "talon/internal/config"

// HeartbeatFor is agentID's heartbeat settings whether or not it runs
// scheduled heartbeats (R9.1): its block over agents.defaults.heartbeat,
// defaults filled in. A wake (R8.4) runs a heartbeat-style turn with
// them in any agent's session.
func HeartbeatFor(cfg *config.Config, agentID string) HeartbeatSettings {
	if cfg == nil {
		cfg = &config.Config{}
	}
	var own *config.Heartbeat
	if a, _ := cfg.Agent(agentID); a != nil {
		own = a.Heartbeat
	}
	return mergeHeartbeat(cfg, config.NormalizeAgentID(agentID), own)
}
