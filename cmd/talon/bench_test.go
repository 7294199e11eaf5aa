package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchRefusesBadInput: every input is checked before anything is
// started, with exit status 2 and a message naming what is wrong.
func TestBenchRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.json")
	os.WriteFile(typo, []byte(`{"max":{"cold_start.ready_ms.p50":300}}`), 0o644)
	notNumber := filepath.Join(dir, "string.json")
	os.WriteFile(notNumber, []byte(`{"max":{"cold_start.ready_ms.median":"300"}}`), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no JSON file name", []string{"--json", ""}, "--json: a file name is required"},
		{"JSON into a missing directory", []string{"--json", filepath.Join(dir, "nope", "b.json")}, "no directory"},
		{"a missing budget file", []string{"--budget", filepath.Join(dir, "missing.json")}, "reading the budget file"},
		{"a budget for an unknown figure", []string{"--budget", typo}, `no such figure "cold_start.ready_ms.p50"`},
		{"a budget that is not a number", []string{"--budget", notNumber}, `want a number, got "300"`},
		{"the checked-in budget with a bad OpenClaw dir", []string{"--budget", "../../bench/budgets.json", "--compare-openclaw", "--openclaw-dir", dir},
			"--compare-openclaw: OpenClaw is not installed in " + dir},
		{"an OpenClaw dir without the comparison", []string{"--openclaw-dir", dir}, "--openclaw-dir is only used with --compare-openclaw"},
		{"an argument", []string{"extra"}, "unknown command"},
		{"no tenants", []string{"--tenants", "0"}, "--tenants 0: want 1 or more"},
		{"too many tenants", []string{"--tenants", "200000"}, "tenants n 200000: want 1 to 100000"},
		{"tenants against OpenClaw", []string{"--tenants", "10", "--compare-openclaw"}, "--tenants measures talon alone"},
		{"an idle timeout too short", []string{"--tenant-idle", "50ms"}, "tenants idle_ms 50: want 100 or more"},
		{"an idle timeout in microseconds", []string{"--tenant-idle", "1500us"}, "--tenant-idle 1.5ms: want whole milliseconds"},
		{"the checked-in budget with the tenants alone", []string{"--tenants", "300", "--budget", "../../bench/budgets.json"}, `no such figure "cold_start.ready_ms.median"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := talon(t, "", append([]string{"bench", "--quick"}, tt.args...)...)
			if code != 2 || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and %q", code, stderr, stdout, tt.want)
			}
		})
	}
}

// TestBenchInstallHint: without OpenClaw the comparison says how to
// install it.
func TestBenchInstallHint(t *testing.T) {
	_, stderr, code := talon(t, "", "bench", "--compare-openclaw", "--openclaw-dir", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "npm install openclaw@2026.9.6") || !strings.Contains(stderr, "setup.sh") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
