package provider

import (
	"math"

	"talon/internal/config"
)

// ContextWindow is the context window, in tokens, of the model a
// reference names, as the config states it:
// models.providers.<provider>.models[].contextWindow, with the provider
// and the model id matched as Resolve matches them (exactly; the id keeps
// its own slashes). It is 0 — unknown — when the config does not state
// it: Talon has no built-in table of windows, and shows "unknown" rather
// than OpenClaw's guess of 200,000.
func ContextWindow(cfg *config.Config, ref string) int64 {
	r, err := config.ParseModelRef(ref)
	if cfg == nil || err != nil || r.Provider == "" {
		return 0
	}
	for _, m := range cfg.Models.Providers[r.Provider].Models {
		if m.ID == r.Model && m.ContextWindow != nil && *m.ContextWindow >= 1 && *m.ContextWindow < math.MaxInt64 {
			return int64(*m.ContextWindow)
		}
	}
	return 0
}
