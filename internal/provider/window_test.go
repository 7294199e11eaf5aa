package provider

import "testing"

func TestContextWindow(t *testing.T) {
	cfg := parseConfig(t, `{models: {providers: {
		local: {baseUrl: "http://127.0.0.1:1/v1", models: [{id: "big", contextWindow: 128000}, {id: "frac", contextWindow: 8191.9}, {id: "none"}, {id: "zero", contextWindow: 0}]},
		openrouter: {models: [{id: "google/gemini-3-flash", contextWindow: 1048576}]},
	}}}`)
	tests := []struct {
		ref  string
		want int64
	}{
		{"local/big", 128000},
		{" local/big ", 128000},
		{"local/frac", 8191},
		{"local/none", 0},
		{"local/zero", 0},
		{"local/BIG", 0}, // Resolve matches ids exactly, so the window does too
		{"openrouter/google/gemini-3-flash", 1048576},
		{"openai/gpt-5.2", 0}, // a built-in provider, not configured
		{"inspect", 0},
		{"talon/inspect", 0},
		{"", 0},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			if got := ContextWindow(cfg, tc.ref); got != tc.want {
				t.Errorf("ContextWindow(%q) = %d, want %d", tc.ref, got, tc.want)
			}
		})
	}
	if got := ContextWindow(nil, "local/big"); got != 0 {
		t.Errorf("nil config: %d", got)
	}
}
