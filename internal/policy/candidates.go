package policy

import (
	"slices"

	"talon/internal/config"
)

// CandidateTools is the candidate list OpenClaw builds for a config (§1.3),
// before construction gating: the coding tools, the WhatsApp login tool when
// the whatsapp channel is configured, the native tools, and the memory-core
// tools when memory-core holds the memory slot and plugins are on. Other
// plugins' tools are Registrations, resolved by the pipeline.
func CandidateTools(cfg *config.Config) []Tool {
	tools := make([]Tool, 0, len(StandardTools))
	for _, n := range []string{"read", "edit", "write", "apply_patch", "exec", "process"} {
		tools = append(tools, Tool{Name: n})
	}
	if _, ok := cfg.Channels["whatsapp"]; ok {
		tools = append(tools, Tool{Name: "whatsapp_login", OwnerOnly: true})
	}
	for _, n := range NativeTools {
		tools = append(tools, Tool{Name: n, OwnerOnly: slices.Contains(OwnerOnlyTools, n)})
	}
	if LoadState(cfg, MemoryPlugin, OriginBundled, "memory").Enabled {
		for _, n := range MemoryTools {
			tools = append(tools, Tool{Name: n, Plugin: MemoryPlugin})
		}
	}
	return tools
}
