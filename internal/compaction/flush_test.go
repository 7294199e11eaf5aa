package compaction

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone database, whatever the machine has
)

// TestFlushTurn: R6.3, the date in the user's zone, the hints, custom
// prompts.
func TestFlushTurn(t *testing.T) {
	vienna, err := time.LoadLocation("Europe/Vienna")
	if err != nil {
		t.Fatalf("loading a zone (tzdata is needed): %v", err)
	}
	// 23:30 UTC on 31 December is already 1 January in Vienna.
	now := time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC)
	tests := []struct {
		name     string
		f        Flush
		loc      *time.Location
		path     string
		contains []string
	}{
		{"default prompt in the user's zone", Flush{}, vienna, "memory/2027-01-01.md", []string{
			"Pre-compaction memory flush. Store durable memories only in memory/2027-01-01.md (create memory/ if needed).",
			"APPEND new content only", "MEMORY.md, SOUL.md, TOOLS.md and AGENTS.md as read-only", "reply with NO_REPLY.",
			"(e.g., 2027-01-01-HHMM.md); always use the canonical 2027-01-01.md filename",
			"\nCurrent time: 2027-01-01 00:30 CET (Europe/Vienna)\nReference UTC: 2026-12-31 23:30 UTC",
		}},
		{"no zone is UTC", Flush{}, nil, "memory/2026-12-31.md", []string{"memory/2026-12-31.md", "(UTC)"}},
		{"a custom prompt gets the hints it lacks", Flush{Prompt: "Write notes for YYYY-MM-DD."}, time.UTC, "memory/2026-12-31.md", []string{
			"Write notes for 2026-12-31.\n\nStore durable memories only in memory/2026-12-31.md", "APPEND new content only",
			"If no user-visible reply is needed, start with NO_REPLY.",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft := tc.f.Prompts(now, tc.loc)
			if ft.Path != tc.path {
				t.Errorf("path %q, want %q", ft.Path, tc.path)
			}
			for _, want := range tc.contains {
				if !strings.Contains(ft.Prompt, want) {
					t.Errorf("prompt lacks %q:\n%s", want, ft.Prompt)
				}
			}
			if strings.Contains(ft.Prompt+ft.System, "YYYY-MM-DD") {
				t.Error("a date placeholder is left")
			}
			if !strings.Contains(ft.System, "Pre-compaction memory flush turn.") || !strings.Contains(ft.System, silentReply) {
				t.Errorf("system prompt: %s", ft.System)
			}
		})
	}
}
