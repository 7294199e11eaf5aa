package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"talon/internal/config"
)

// TestLogUnused: the operator's config logs its unused OpenClaw keys in
// one bounded line; other warnings and a config without any log nothing.
func TestLogUnused(t *testing.T) {
	unused := func(n int) []config.Issue {
		var out []config.Issue
		for i := range n {
			out = append(out, config.Issue{Path: fmt.Sprintf("channels.c%d.botToken", i), Message: config.MsgUnused})
		}
		return out
	}
	tests := []struct {
		name  string
		warns []config.Issue
		want  string // "" = nothing logged
	}{
		{"none", nil, ""},
		{"other warnings only", []config.Issue{{Path: "bogus", Message: "unknown key (kept, not used by Talon)"}}, ""},
		{"two", append(unused(2), config.Issue{Path: "bogus", Message: "unknown key"}),
			`keys="channels.c0.botToken, channels.c1.botToken"`},
		{"bounded", unused(25), "channels.c19.botToken, and 5 more\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			logUnused(slog.New(slog.NewTextHandler(&buf, nil)), tc.warns)
			got := buf.String()
			switch {
			case tc.want == "" && got != "":
				t.Errorf("logged %q, want nothing", got)
			case tc.want != "" && (!strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 || !strings.Contains(got, "level=WARN")):
				t.Errorf("logged %q, want one warning with %q", got, tc.want)
			}
		})
	}
}
