package config

import (
	"strings"
	"testing"
)

func TestWebSearchCheck(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantErr  string // a path and message part of the error; "" means none
		wantWarn string
	}{
		{"defaults", `{tools: {web: {search: {enabled: true}}}}`, "", ""},
		{"brave in full", `{tools: {web: {search: {provider: "brave", maxResults: 10, timeoutSeconds: 30, cacheTtlMinutes: 0.5}}},
			plugins: {entries: {brave: {config: {webSearch: {apiKey: "${BRAVE_KEY}", mode: "web", baseUrl: "https://proxy.example.com/brave"}}}}}}`, "", ""},
		{"perplexity through a local proxy", `{plugins: {entries: {perplexity: {config: {webSearch: {apiKey: {source: "env", id: "PPLX"}, baseUrl: "http://10.0.0.5:8080/v1", model: "sonar-pro"}}}}}}`, "", ""},
		{"a typo in the provider", `{tools: {web: {search: {provider: "brvae"}}}}`, "tools.web.search.provider: expected one of brave, perplexity", ""},
		{"an OpenClaw provider Talon lacks", `{tools: {web: {search: {provider: "tavily"}}}}`, "", `tools.web.search.provider: "tavily" is not built in Talon`},
		{"too many results", `{tools: {web: {search: {maxResults: 11}}}}`, "tools.web.search.maxResults", ""},
		{"a negative cache", `{tools: {web: {search: {cacheTtlMinutes: -1}}}}`, "tools.web.search.cacheTtlMinutes: expected minutes from 0", ""},
		{"the legacy key", `{tools: {web: {search: {apiKey: "k"}}}}`, "tools.web.search.apiKey: moved in OpenClaw 2026.9", ""},
		{"the legacy provider block", `{tools: {web: {search: {perplexity: {apiKey: "k"}}}}}`, "tools.web.search.perplexity: moved", ""},
		{"a public http base URL", `{plugins: {entries: {brave: {config: {webSearch: {baseUrl: "http://search.example.com"}}}}}}`,
			"plugins.entries.brave.config.webSearch.baseUrl: http:// is accepted only for a loopback or private address", ""},
		{"a base URL with credentials", `{plugins: {entries: {brave: {config: {webSearch: {baseUrl: "https://u:p@search.example.com"}}}}}}`,
			"webSearch.baseUrl: expected a base URL without credentials", ""},
		{"a file base URL", `{plugins: {entries: {perplexity: {config: {webSearch: {baseUrl: "file:///etc"}}}}}}`, "webSearch.baseUrl: expected an https:// URL", ""},
		{"a bad brave mode", `{plugins: {entries: {brave: {config: {webSearch: {mode: "news"}}}}}}`, "webSearch.mode: expected one of web, llm-context", ""},
		{"a model with spaces", `{plugins: {entries: {perplexity: {config: {webSearch: {model: "sonar pro"}}}}}}`, "webSearch.model: expected a Perplexity model id", ""},
		{"a key of the wrong type", `{plugins: {entries: {brave: {config: {webSearch: {apiKey: 5}}}}}}`, "plugins.entries.brave.config.webSearch.apiKey", ""},
		{"an unknown key is kept", `{plugins: {entries: {brave: {config: {webSearch: {diagnostics: true}}}}}}`, "", "webSearch.diagnostics: " + MsgUnused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			warns, err := Decode(mustJSON5(t, tt.src), &c)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.wantWarn != "" {
				var all []string
				for _, w := range warns {
					all = append(all, w.String())
				}
				if !strings.Contains(strings.Join(all, "\n"), tt.wantWarn) {
					t.Errorf("warnings %q lack %q", all, tt.wantWarn)
				}
			}
		})
	}
}

func TestSearchProvider(t *testing.T) {
	var c Config
	src := `{plugins: {entries: {perplexity: {config: {webSearch: {apiKey: "${PPLX}", baseUrl: "https://openrouter.ai/api/v1", model: "perplexity/sonar-pro"}}}}}}`
	if _, err := Decode(mustJSON5(t, src), &c); err != nil {
		t.Fatal(err)
	}
	sp, err := c.SearchProvider("perplexity")
	if err != nil {
		t.Fatal(err)
	}
	if sp.APIKey == nil || sp.APIKey.EnvName() != "PPLX" || sp.BaseURL != "https://openrouter.ai/api/v1" || sp.Model != "perplexity/sonar-pro" {
		t.Errorf("SearchProvider = %+v", sp)
	}
	if sp, err := c.SearchProvider("brave"); err != nil || sp.BaseURL != "" || sp.APIKey != nil {
		t.Errorf("absent block = %+v, %v", sp, err)
	}
	if sp, err := (*Config)(nil).SearchProvider("brave"); err != nil || sp.BaseURL != "" {
		t.Errorf("nil config = %+v, %v", sp, err)
	}
}
