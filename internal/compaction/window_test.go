package compaction

import (
	"errors"
	"strings"
	"testing"
)

// TestResolveWindow: R2.1's order, the known models and the legacy cap.
func TestResolveWindow(t *testing.T) {
	cfg := parseConfig(t, `{models: {providers: {
		local: {baseUrl: "http://127.0.0.1:1/v1", models: [{id: "big", contextWindow: 128000}, {id: "frac", contextWindow: 8191.9},
			{id: "capped", contextWindow: 128000, contextTokens: 64000}, {id: "cap-only", contextTokens: 50000}, {id: "none"}]},
		lan: {baseUrl: "http://10.0.0.5:8080/v1", contextWindow: 65536, contextTokens: 60000, models: [{id: "own", contextWindow: 32000}]},
		anthropic: {models: [{id: "claude-opus-5", contextTokens: 300000}, {id: "claude-sonnet-4-6", contextWindow: 150000}]},
		openrouter: {baseUrl: "https://openrouter.ai/api/v1", models: [{id: "google/gemini-3-flash", contextWindow: 1048576}]},
	}}}`)
	tests := []struct {
		ref    string
		tokens int64
		source string
		local  bool
	}{
		{"local/big", 128_000, SourceModelsConfig, true},
		{" local/big ", 128_000, SourceModelsConfig, true},
		{"local/frac", 8_191, SourceModelsConfig, true},
		{"local/capped", 64_000, SourceModelsConfig, true},
		{"local/cap-only", 50_000, SourceModelsConfig, true},
		{"local/none", DefaultWindow, SourceDefault, true},
		{"local/BIG", DefaultWindow, SourceDefault, true}, // ids match exactly, as the resolver matches them
		{"lan/own", 32_000, SourceModelsConfig, true},     // the model's window, under the provider's cap
		{"lan/other", 60_000, SourceModelsConfig, true},   // the provider's defaults
		{"anthropic/claude-opus-5", 300_000, SourceModelsConfig, false},
		{"anthropic/claude-sonnet-4-6", 150_000, SourceModelsConfig, false},
		{"anthropic/claude-sonnet-4.6-20260101", 1_000_000, SourceModel, false},
		{"anthropic/claude-opus-5-5", 1_000_000, SourceModel, false},
		{"anthropic/claude-opus-4-5", DefaultWindow, SourceDefault, false},
		{"anthropic/claude-sonnet-4-60", DefaultWindow, SourceDefault, false},
		{"openai/gpt-5.4", 1_050_000, SourceModel, false},
		{"openai/gpt-5.4-mini", 400_000, SourceModel, false},
		{"openai/GPT-5.4-nano", 400_000, SourceModel, false},
		{"openai/gpt-5.40", DefaultWindow, SourceDefault, false},
		{"openrouter/anthropic/claude-opus-5", DefaultWindow, SourceDefault, false}, // known windows are the built-in providers'
		{"openrouter/google/gemini-3-flash", 1_048_576, SourceModelsConfig, false},
		{"inspect", DefaultWindow, SourceDefault, false},
		{"", DefaultWindow, SourceDefault, false},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			w := ResolveWindow(cfg, tc.ref)
			if w.Tokens != tc.tokens || w.Source != tc.source || w.Local != tc.local {
				t.Errorf("ResolveWindow(%q) = %+v, want %d from %s, local %v", tc.ref, w, tc.tokens, tc.source, tc.local)
			}
		})
	}
	if w := ResolveWindow(nil, "anthropic/claude-fable-5"); w.Tokens != 1_000_000 {
		t.Errorf("nil config, known model: %+v", w)
	}
}

// TestResolveWindowLegacyCap: agents.defaults.contextTokens caps every
// model's window, and only lowers it.
func TestResolveWindowLegacyCap(t *testing.T) {
	cfg := parseConfig(t, `{agents: {defaults: {contextTokens: 100000}}, models: {providers: {p: {models: [{id: "small", contextWindow: 50000}]}}}}`)
	if w := ResolveWindow(cfg, "openai/gpt-5.4"); w.Tokens != 100_000 || w.Source != SourceAgentsConfig {
		t.Errorf("capped: %+v", w)
	}
	if w := ResolveWindow(cfg, "p/small"); w.Tokens != 50_000 || w.Source != SourceModelsConfig {
		t.Errorf("below the cap: %+v", w)
	}
}

// TestWindowCheck: R2.2 and OpenClaw's hints for configured and local
// windows.
func TestWindowCheck(t *testing.T) {
	tests := []struct {
		name     string
		w        Window
		refuse   bool
		contains string
	}{
		{"default window", Window{Ref: "a/b", Tokens: DefaultWindow, Source: SourceDefault}, false, ""},
		{"8000 is enough", Window{Ref: "a/b", Tokens: 8_000, Source: SourceModelsConfig}, false, ""},
		{"warn, remote", Window{Ref: "a/b", Tokens: 7_999, Source: SourceModelsConfig}, false, "low context window: a/b ctx=7999 (warn<8000) source=modelsConfig"},
		{"warn, local server", Window{Ref: "a/b", Tokens: 4_000, Source: SourceModel, Local: true}, false, "until the server's context length is raised"},
		{"warn, local configured", Window{Ref: "a/b", Tokens: 4_000, Source: SourceModelsConfig, Local: true}, false, "raise contextWindow/contextTokens"},
		{"refuse", Window{Ref: "a/b", Tokens: 3_999, Source: SourceDefault}, true, "Model context window too small (3999 tokens; source=default). Minimum is 4000."},
		{"refuse, configured", Window{Ref: "a/b", Tokens: 1_000, Source: SourceAgentsConfig}, true, "Raise contextWindow/contextTokens"},
		{"refuse, local", Window{Ref: "a/b", Tokens: 1_000, Source: SourceModel, Local: true}, true, "This looks like a local model endpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			warn, err := tc.w.Check()
			var we *WindowError
			if tc.refuse != errors.As(err, &we) {
				t.Fatalf("err = %v", err)
			}
			got := warn
			if err != nil {
				got = err.Error()
			}
			if (tc.contains == "") != (got == "") || !strings.Contains(got, tc.contains) {
				t.Errorf("got %q, want it to contain %q", got, tc.contains)
			}
		})
	}
}

func TestLocalURL(t *testing.T) {
	for url, want := range map[string]bool{
		"http://127.0.0.1:8000/v1": true, "http://localhost:11434": true, "http://[::1]:8080": true,
		"http://192.168.1.10/v1": true, "http://169.254.1.1": true, "http://ollama.local:11434": true,
		"https://api.openai.com/v1": false, "http://8.8.8.8": false, "": false, "::::": false,
	} {
		if got := localURL(url); got != want {
			t.Errorf("localURL(%q) = %v, want %v", url, got, want)
		}
	}
}
