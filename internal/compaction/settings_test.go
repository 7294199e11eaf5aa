package compaction

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSettingsFor: the defaults of §5.1 and §6.1, and an agent's block
// over agents.defaults field by field.
func TestSettingsFor(t *testing.T) {
	def := Settings{
		Enabled: true, ReserveTokens: 16_384, ReserveTokensFloor: 20_000, KeepRecentTokens: 20_000, Timeout: 900 * time.Second,
		IdentifierPolicy: "strict", Flush: Flush{Enabled: true, SoftThresholdTokens: 4_000, ForceTranscriptBytes: 2 << 20},
	}
	cfg := parseConfig(t, `{agents: {
		defaults: {compaction: {mode: "safeguard", keepRecentTokens: 30000, model: "local/sum", notifyUser: true, timeoutSeconds: 60,
			maxActiveTranscriptBytes: "20mb", midTurnPrecheck: {enabled: true},
			memoryFlush: {softThresholdTokens: 6000, model: "local/flush", forceFlushTranscriptBytes: 0}}},
		list: [{id: "main"}, {id: "ops", compaction: {enabled: false, keepRecentTokens: 8000, identifierPolicy: "custom",
			identifierInstructions: " keep ticket ids ", qualityGuard: {maxRetries: 3}, memoryFlush: {enabled: false}}},
			{id: "plain", compaction: {mode: "default", qualityGuard: {enabled: false}}}],
	}}`)
	mainWant := def
	mainWant.Safeguard, mainWant.KeepRecentTokens, mainWant.Model, mainWant.NotifyUser, mainWant.Timeout = true, 30_000, "local/sum", true, time.Minute
	mainWant.MaxActiveTranscriptBytes, mainWant.MidTurnPrecheck, mainWant.QualityRetries = 20<<20, true, 1
	mainWant.Flush = Flush{Enabled: true, SoftThresholdTokens: 6_000, Model: "local/flush"}
	opsWant := mainWant
	opsWant.Enabled, opsWant.KeepRecentTokens, opsWant.IdentifierPolicy, opsWant.IdentifierInstructions, opsWant.QualityRetries = false, 8_000, "custom", "keep ticket ids", 3
	opsWant.Flush.Enabled = false
	plainWant := mainWant
	plainWant.Safeguard, plainWant.QualityRetries = false, 0
	tests := []struct {
		name  string
		got   Settings
		wants Settings
	}{
		{"no config", SettingsFor(nil, "main"), def},
		{"the defaults' block", SettingsFor(cfg, "main"), mainWant},
		{"an agent's block over it", SettingsFor(cfg, "ops"), opsWant},
		{"an agent turning the guard off", SettingsFor(cfg, "plain"), plainWant},
		{"an agent not in the list", SettingsFor(cfg, "nobody"), mainWant},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.wants, tc.got); d != "" {
				t.Errorf("settings (-want +got):\n%s", d)
			}
		})
	}
}

// TestReserve: R5.1 with the legacy keys.
func TestReserve(t *testing.T) {
	tests := []struct {
		name               string
		reserve, floor     int64
		window, want       int64
		threshold, flushAt int64
	}{
		{"200k", 16_384, 20_000, 200_000, 20_000, 180_000, 176_000},
		{"32k is capped at a quarter", 16_384, 20_000, 32_768, 8_192, 24_576, 20_576},
		{"floor 0 disables it", 16_384, 0, 200_000, 16_384, 183_616, 179_616},
		{"a reserve above the floor", 30_000, 20_000, 1_000_000, 30_000, 970_000, 966_000},
		{"a tiny window halves the soft threshold", 16_384, 20_000, 8_000, 2_000, 6_000, 3_000},
		{"no window", 16_384, 20_000, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Settings{ReserveTokens: tc.reserve, ReserveTokensFloor: tc.floor, Flush: Flush{SoftThresholdTokens: 4_000}}
			if got := s.Reserve(tc.window); got != tc.want {
				t.Errorf("Reserve = %d, want %d", got, tc.want)
			}
			if got := s.Threshold(tc.window); got != tc.threshold {
				t.Errorf("Threshold = %d, want %d", got, tc.threshold)
			}
			if got := s.FlushThreshold(tc.window); got != tc.flushAt {
				t.Errorf("FlushThreshold = %d, want %d", got, tc.flushAt)
			}
		})
	}
}

// TestCompactDue: R5.2 (only when enabled) and R5.5 (either way).
func TestCompactDue(t *testing.T) {
	on := SettingsFor(nil, "main")
	off := on
	off.Enabled = false
	sized := off
	sized.MaxActiveTranscriptBytes = 1_000
	tests := []struct {
		name string
		s    Settings
		t    Turn
		want bool
	}{
		{"under", on, Turn{Window: 200_000, Tokens: 100_000}, false},
		{"over", on, Turn{Window: 200_000, Tokens: 190_000}, true},
		{"disabled", off, Turn{Window: 200_000, Tokens: 190_000}, false},
		{"disabled, but the view is large", sized, Turn{Window: 200_000, Tokens: 10, ViewBytes: 1_000}, true},
		{"disabled, view small", sized, Turn{Window: 200_000, Tokens: 10, ViewBytes: 999}, false},
		{"no window", on, Turn{Tokens: 190_000}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.CompactDue(tc.t); got != tc.want {
				t.Errorf("CompactDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFlushDue: R6.2 and the skips of R6.4.
func TestFlushDue(t *testing.T) {
	s := SettingsFor(nil, "main")
	off := s
	off.Flush.Enabled = false
	high := Turn{Window: 200_000, Tokens: 177_000}
	tests := []struct {
		name string
		s    Settings
		t    Turn
		want bool
	}{
		{"due", s, high, true},
		{"below", s, Turn{Window: 200_000, Tokens: 175_999}, false},
		{"once per cycle", s, Turn{Window: 200_000, Tokens: 177_000, Flushed: true}, false},
		{"not on heartbeats", s, Turn{Window: 200_000, Tokens: 177_000, Heartbeat: true}, false},
		{"not in a read-only workspace", s, Turn{Window: 200_000, Tokens: 177_000, ReadOnly: true}, false},
		{"not incognito", s, Turn{Window: 200_000, Tokens: 177_000, Incognito: true}, false},
		{"disabled", off, high, false},
		{"a large view forces it", s, Turn{Window: 200_000, Tokens: 10, ViewBytes: 2 << 20}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.FlushDue(tc.t); got != tc.want {
				t.Errorf("FlushDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBudget: the kept tail fits beside the summary below the threshold,
// and leaves room to grow.
func TestBudget(t *testing.T) {
	s := SettingsFor(nil, "main")
	tests := []struct {
		window, fixed int64
		want          Budget
	}{
		{200_000, 5_000, Budget{Keep: 20_000, MaxTail: 171_000}},
		{32_768, 2_000, Budget{Keep: 9_288, MaxTail: 18_576}},
		{8_000, 5_000, Budget{Keep: 0, MaxTail: 0}},
	}
	for _, tc := range tests {
		if got := s.Budget(tc.window, tc.fixed); got != tc.want {
			t.Errorf("Budget(%d, %d) = %+v, want %+v", tc.window, tc.fixed, got, tc.want)
		}
	}
}
