package policy

import (
	"slices"
	"testing"

	"talon/internal/config"
)

// Shared helpers for the rules_*_test.go files. The expectations in those
// files come from spec/tool-policy.md §1–§9, never from the tables in
// catalog.go, so the literal lists below are copied from the spec.

// mustConfig decodes an OpenClaw-shaped JSON config the way vector.go's
// decodeJSON does (config.FromJSON + config.Decode, which also validates).
func mustConfig(t testing.TB, js string) *config.Config {
	t.Helper()
	tree, err := config.FromJSON([]byte(js))
	if err != nil {
		t.Fatalf("config JSON: %v\n%s", err, js)
	}
	var cfg config.Config
	if _, err := config.Decode(tree, &cfg); err != nil {
		t.Fatalf("config decode: %v\n%s", err, js)
	}
	return &cfg
}

// specSTD is the 28-name standard candidate list of §1.3.
var specSTD = []string{
	"read", "edit", "write", "apply_patch", "exec", "process", "whatsapp_login", "browser", "canvas",
	"nodes", "cron", "message", "tts", "gateway", "agents_list", "sessions_list", "sessions_history",
	"sessions_send", "sessions_yield", "sessions_spawn", "subagents", "session_status", "web_search",
	"web_fetch", "image", "pdf", "memory_search", "memory_get",
}

// stdTools is specSTD with memory_search/memory_get marked as tools of the
// memory-core plugin, as the vectors use it.
func stdTools() []Tool {
	out := make([]Tool, len(specSTD))
	for i, n := range specSTD {
		out[i] = Tool{Name: n}
		if n == "memory_search" || n == "memory_get" {
			out[i].Plugin = "memory-core"
		}
	}
	return out
}

// allBuilt is an inventory with every specSTD tool built: the policy's own
// view, where the available rows are Evaluate's tool list.
var allBuilt = Inventory{Built: specSTD}

// coreTools builds plugin-less candidates.
func coreTools(names ...string) []Tool {
	out := make([]Tool, len(names))
	for i, n := range names {
		out[i] = Tool{Name: n}
	}
	return out
}

// minus returns list without the given names, order kept.
func minus(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// removalOf returns the first trace entry for a tool.
func removalOf(r *Result, tool string) (Removal, bool) {
	for _, rm := range r.Removed {
		if rm.Tool == tool {
			return rm, true
		}
	}
	return Removal{}, false
}

// stageKey returns the key of the removal of tool by the given stage, or ""
// when that stage did not remove it.
func stageKey(r *Result, tool, stage string) string {
	for _, rm := range r.Removed {
		if rm.Tool == tool && rm.Stage == stage {
			return rm.Key
		}
	}
	return ""
}

func intp(i int) *int { return &i }
