package config

import "strings"

// thinkingAliases maps what OpenClaw accepts for a thinking level
// (trimmed, lower case) to the level.
var thinkingAliases = map[string]string{
	"off": "off", "none": "off",
	"on": "low", "enable": "low", "enabled": "low",
	"min": "minimal", "minimal": "minimal", "think": "minimal",
	"low": "low", "thinkhard": "low", "think-hard": "low", "think_hard": "low",
	"mid": "medium", "med": "medium", "medium": "medium", "thinkharder": "medium", "think-harder": "medium", "harder": "medium",
	"high": "high", "ultrathink": "high", "thinkhardest": "high", "highest": "high",
	"xhigh": "xhigh", "x-high": "xhigh", "x_high": "xhigh", "extrahigh": "xhigh", "extra-high": "xhigh", "extra_high": "xhigh",
	// Known to OpenClaw for models with provider-specific profiles; no
	// model in Talon's catalog offers them.
	"adaptive": "adaptive", "auto": "adaptive", "max": "max", "ultra": "ultra",
}

// ThinkingLevel is the thinking level raw names (a level or an alias of
// one, in any case); false when it names none. Which levels a model
// takes is the catalog's business (provider.ThinkingLevels).
func ThinkingLevel(raw string) (string, bool) {
	l, ok := thinkingAliases[strings.ToLower(strings.TrimSpace(raw))]
	return l, ok
}

// AgentThinking is the thinking level agents.list[] writes for agent id,
// else agents.defaults.thinkingDefault: "" when neither does or it is
// not a level (Validate reports that).
func (c *Config) AgentThinking(id string) string {
	raw := c.Agents.Defaults.ThinkingDefault
	if a, _ := c.Agent(id); a != nil && strings.TrimSpace(a.ThinkingDefault) != "" {
		raw = a.ThinkingDefault
	}
	l, _ := ThinkingLevel(raw)
	return l
}
