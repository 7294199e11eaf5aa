package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestContextKeysDecode: the spec's example configuration (context.md §11)
// decodes into typed fields with no warning, an agent's override included.
func TestContextKeysDecode(t *testing.T) {
	c, warns, err := decodeJSON5(t, `{
		models: {providers: {local: {baseUrl: "http://127.0.0.1:8000/v1", api: "openai-completions", contextWindow: 65536,
			models: [{id: "qwen3-32b", contextWindow: 32768, contextTokens: 30000, maxTokens: 4096}]}}},
		agents: {
			defaults: {
				contextTokens: 200000,
				userTimezone: "Europe/Vienna",
				compaction: {mode: "safeguard", keepRecentTokens: 20000, reserveTokensFloor: 20000, timeoutSeconds: 600,
					model: "local/qwen3-32b", identifierPolicy: "strict", notifyUser: true, maxActiveTranscriptBytes: "20mb",
					qualityGuard: {enabled: true, maxRetries: 2}, midTurnPrecheck: {enabled: true},
					memoryFlush: {enabled: true, softThresholdTokens: 4000, forceFlushTranscriptBytes: 0}},
				contextPruning: {mode: "cache-ttl", ttl: "5m", keepLastAssistants: 3, softTrimRatio: 0.3,
					tools: {deny: ["browser", "canvas"]}, hardClear: {enabled: true, placeholder: "[cleared]"}},
			},
			list: [{id: "ops", compaction: {keepRecentTokens: 8000}, contextPruning: {mode: "off"}}],
		},
	}`)
	if err != nil || len(warns) > 0 {
		t.Fatalf("err %v, warnings %v", err, warns)
	}
	d := c.Agents.Defaults
	if *d.Compaction.KeepRecentTokens != 20000 || d.Compaction.Model != "local/qwen3-32b" || *d.Compaction.QualityGuard.MaxRetries != 2 ||
		!*d.Compaction.MidTurnPrecheck.Enabled || *d.Compaction.MemoryFlush.SoftThresholdTokens != 4000 {
		t.Errorf("compaction = %+v", d.Compaction)
	}
	if n, err := ByteSize(d.Compaction.MaxActiveTranscriptBytes); err != nil || n != 20<<20 {
		t.Errorf("maxActiveTranscriptBytes = %d, %v", n, err)
	}
	if d.ContextPruning.TTL != "5m" || *d.ContextPruning.SoftTrimRatio != 0.3 || d.ContextPruning.HardClear.Placeholder != "[cleared]" ||
		!cmp.Equal(d.ContextPruning.Tools.Deny, List{"browser", "canvas"}) {
		t.Errorf("contextPruning = %+v", d.ContextPruning)
	}
	if a := c.Agents.List[0]; *a.Compaction.KeepRecentTokens != 8000 || a.ContextPruning.Mode != "off" {
		t.Errorf("agent override = %+v %+v", a.Compaction, a.ContextPruning)
	}
	if loc, err := UserLocation(d.UserTimezone); err != nil || loc.String() != "Europe/Vienna" {
		t.Errorf("userTimezone = %v, %v", loc, err)
	}
	p := c.Models.Providers["local"]
	if *p.ContextWindow != 65536 || *p.Models[0].ContextTokens != 30000 || *d.ContextTokens != 200000 {
		t.Errorf("windows: provider %v, model tokens %v, defaults %v", *p.ContextWindow, *p.Models[0].ContextTokens, *d.ContextTokens)
	}
}

// TestContextKeysValidate: each value rule of the context keys refuses a
// bad value with an issue at its path.
func TestContextKeysValidate(t *testing.T) {
	tests := []struct {
		name, src, path string
	}{
		{"mode", `{agents: {defaults: {compaction: {mode: "aggressive"}}}}`, "agents.defaults.compaction.mode"},
		{"keepRecentTokens zero", `{agents: {defaults: {compaction: {keepRecentTokens: 0}}}}`, "agents.defaults.compaction.keepRecentTokens"},
		{"reserve negative", `{agents: {defaults: {compaction: {reserveTokensFloor: -1}}}}`, "agents.defaults.compaction.reserveTokensFloor"},
		{"reserve huge", `{agents: {defaults: {compaction: {reserveTokens: 20000000}}}}`, "agents.defaults.compaction.reserveTokens"},
		{"timeout", `{agents: {defaults: {compaction: {timeoutSeconds: 0}}}}`, "agents.defaults.compaction.timeoutSeconds"},
		{"identifier policy", `{agents: {defaults: {compaction: {identifierPolicy: "loose"}}}}`, "agents.defaults.compaction.identifierPolicy"},
		{"custom needs text", `{agents: {defaults: {compaction: {identifierPolicy: "custom"}}}}`, "agents.defaults.compaction.identifierInstructions"},
		{"retries", `{agents: {defaults: {compaction: {qualityGuard: {maxRetries: 11}}}}}`, "agents.defaults.compaction.qualityGuard.maxRetries"},
		{"byte size unit", `{agents: {defaults: {compaction: {maxActiveTranscriptBytes: "20 parsecs"}}}}`, "agents.defaults.compaction.maxActiveTranscriptBytes"},
		{"byte size fraction", `{agents: {defaults: {compaction: {memoryFlush: {forceFlushTranscriptBytes: 1.5}}}}}`, "agents.defaults.compaction.memoryFlush.forceFlushTranscriptBytes"},
		{"byte size type", `{agents: {defaults: {compaction: {maxActiveTranscriptBytes: true}}}}`, "agents.defaults.compaction.maxActiveTranscriptBytes"},
		{"summary model", `{agents: {defaults: {compaction: {model: "/x"}}}}`, "agents.defaults.compaction.model"},
		{"flush model", `{agents: {defaults: {compaction: {memoryFlush: {model: "p/"}}}}}`, "agents.defaults.compaction.memoryFlush.model"},
		{"pruning mode", `{agents: {defaults: {contextPruning: {mode: "always"}}}}`, "agents.defaults.contextPruning.mode"},
		{"ttl", `{agents: {defaults: {contextPruning: {ttl: "5 minutes"}}}}`, "agents.defaults.contextPruning.ttl"},
		{"ratio", `{agents: {defaults: {contextPruning: {hardClearRatio: 1.5}}}}`, "agents.defaults.contextPruning.hardClearRatio"},
		{"soft trim", `{agents: {defaults: {contextPruning: {softTrim: {headChars: -1}}}}}`, "agents.defaults.contextPruning.softTrim.headChars"},
		{"per agent", `{agents: {list: [{id: "a", compaction: {mode: "x"}}]}}`, "agents.list[0].compaction.mode"},
		{"per agent pruning", `{agents: {list: [{id: "a", contextPruning: {ttl: "-1m"}}]}}`, "agents.list[0].contextPruning.ttl"},
		{"model window", `{models: {providers: {p: {models: [{id: "m", contextWindow: 0}]}}}}`, "models.providers.p.models[0].contextWindow"},
		{"model tokens", `{models: {providers: {p: {models: [{id: "m", contextTokens: 1e9}]}}}}`, "models.providers.p.models[0].contextTokens"},
		{"provider window", `{models: {providers: {p: {contextWindow: -5}}}}`, "models.providers.p.contextWindow"},
		{"negative price", `{models: {providers: {p: {models: [{id: "m", cost: {input: -1}}]}}}}`, "models.providers.p.models[0].cost.input"},
		{"absurd price", `{models: {providers: {p: {models: [{id: "m", cost: {cacheWrite: 1e12}}]}}}}`, "models.providers.p.models[0].cost.cacheWrite"},
		{"legacy cap", `{agents: {defaults: {contextTokens: 0.5}}}`, "agents.defaults.contextTokens"},
		{"time zone", `{agents: {defaults: {userTimezone: "Mars/Olympus"}}}`, "agents.defaults.userTimezone"},
		{"time zone path", `{agents: {defaults: {userTimezone: "../../etc/passwd"}}}`, "agents.defaults.userTimezone"},
		{"local time", `{agents: {defaults: {userTimezone: "Local"}}}`, "agents.defaults.userTimezone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeJSON5(t, tc.src)
			issues := issuesOf(t, err)
			if len(issues) != 1 || issues[0].Path != tc.path {
				t.Errorf("issues = %v, want one at %s", issues, tc.path)
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"500", 500, true}, {"2mb", 2 << 20, true}, {"20MB", 20 << 20, true}, {" 1.5k ", 1536, true},
		{"1g", 1 << 30, true}, {"1tb", 1 << 40, true}, {"0", 0, true},
		{"2tb", 0, false}, {"", 0, false}, {"mb", 0, false}, {"-1", 0, false}, {"5 mb", 0, false}, {"3pb", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseByteSize(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5", 5 * time.Minute, true}, {"5m", 5 * time.Minute, true}, {"1h", time.Hour, true}, {"1H30M", 90 * time.Minute, true},
		{"500ms", 500 * time.Millisecond, true}, {"1.5s", 1500 * time.Millisecond, true}, {"1d", 24 * time.Hour, true},
		{"0", 0, true}, {"", 0, false}, {"5 m", 0, false}, {"m5", 0, false}, {"1h30", 0, false}, {"400d", 0, false}, {"-1m", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in, time.Minute)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}
