package automation

import (
	"strings"
	"time"

	"talon/internal/config"
)

// DefaultZone is the zone a cron schedule without tz gets (better-item
// 2): agents.defaults.userTimezone, else the host's, else UTC. Normalize
// stores it on the job.
func DefaultZone(cfg *config.Config) string {
	if tz := strings.TrimSpace(cfg.Agents.Defaults.UserTimezone); tz != "" {
		return tz
	}
	if name := time.Local.String(); name != "" && name != "Local" {
		return name
	}
	return "UTC"
}

// ChecksOf are the Checks a config gives: its agents and its configured
// chat channels. The caller adds what lives above this package (the
// webhook URL's network rule).
func ChecksOf(cfg *config.Config) Checks {
	var chans []string
	for _, id := range config.BuiltChannels {
		if _, ok := cfg.Channels[id]; ok {
			chans = append(chans, id)
		}
	}
	return Checks{Agents: cfg.AgentIDs(), Channels: chans}
}
