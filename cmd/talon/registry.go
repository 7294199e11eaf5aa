package main

import (
	"talon/internal/tools"
	"talon/internal/tools/fs"
	"talon/internal/tools/sessions"
)

// coreTools is the registry of the tools Talon implements today, in
// OpenClaw's construction order (tool-policy spec §1.3), which is the order
// models see them in.
func coreTools() (*tools.Registry, error) {
	byName := map[string]tools.Tool{}
	for _, t := range append(fs.All(), sessions.All()...) {
		byName[t.Name()] = t
	}
	order := []string{"read", "edit", "write", "apply_patch",
		"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"}
	ts := make([]tools.Tool, 0, len(order))
	for _, n := range order {
		ts = append(ts, byName[n])
	}
	return tools.NewRegistry(ts...)
}
