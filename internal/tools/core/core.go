// Package core assembles the registry of every tool Talon implements, in
// OpenClaw's construction order (tool-policy spec §1.3), which is the order
// models see them in. It is safe for concurrent use: the registry it
// returns is immutable.
package core

import (
	"fmt"

	"talon/internal/tools"
	"talon/internal/tools/browser"
	"talon/internal/tools/cron"
	"talon/internal/tools/exec"
	"talon/internal/tools/fs"
	"talon/internal/tools/gateway"
	"talon/internal/tools/image"
	"talon/internal/tools/message"
	"talon/internal/tools/pdf"
	"talon/internal/tools/sessions"
	"talon/internal/tools/tts"
	"talon/internal/tools/web"
	"talon/internal/tools/websearch"
)

// Order is the construction order of the tools Talon has.
var Order = []string{
	"read", "edit", "write", "apply_patch", "exec", "process", "browser", "cron", "message", "tts", "gateway",
	"agents_list", "sessions_list", "sessions_history", "sessions_send", "sessions_yield", "sessions_spawn", "subagents", "session_status",
	"web_search", "web_fetch", "image", "pdf",
}

// Registry returns a new registry of the core tools. Its exec and process
// share a new table of background jobs: build one registry per gateway
// process.
func Registry() (*tools.Registry, error) {
	byName := map[string]tools.Tool{}
	all := append(fs.All(), exec.All()...)
	all = append(all, sessions.All()...)
	for _, t := range append(all, websearch.New(websearch.Options{}), web.New(), image.New(), pdf.New(), message.New(), cron.New(), tts.New(), gateway.New(), browser.New(browser.Options{})) {
		byName[t.Name()] = t
	}
	ts := make([]tools.Tool, 0, len(Order))
	for _, n := range Order {
		t, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("core tools: %q is in Order but not built", n)
		}
		ts = append(ts, t)
	}
	if len(ts) != len(byName) {
		return nil, fmt.Errorf("core tools: %d built but %d ordered", len(byName), len(ts))
	}
	return tools.NewRegistry(ts...)
}
