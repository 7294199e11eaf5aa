package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// WebSearch is `tools.web.search`: whether web_search is built, which
// provider answers and how many results, how long a call may take and how
// long its results are reused. A provider's own settings (key, base URL,
// mode, model) are OpenClaw 2026.9's plugins.entries.<id>.config.webSearch
// (SearchProviderConfig); the older tools.web.search.apiKey and
// tools.web.search.<provider> blocks are refused, as OpenClaw refuses them
// until `openclaw doctor --fix` moves them.
type WebSearch struct {
	Enabled *bool `json:"enabled"`
	// Provider is brave or perplexity; "" picks the first whose key is
	// found, in OpenClaw's order (brave, then perplexity).
	Provider        string   `json:"provider"`
	MaxResults      *int     `json:"maxResults"`
	TimeoutSeconds  *int     `json:"timeoutSeconds"`
	CacheTTLMinutes *float64 `json:"cacheTtlMinutes"`
	// Rest holds the other keys: OpenClaw's that Talon does not act on
	// (openaiCodex) and the legacy provider blocks, which are refused.
	Rest *Raw `talon:"rest"`
}

// Defaults and bounds of tools.web.search (OpenClaw's).
const (
	DefaultSearchResults    = 5
	MaxSearchResults        = 10
	DefaultSearchTimeoutSec = 30
	MaxSearchTimeoutSec     = 300
	DefaultSearchCacheTTL   = 15 // minutes
	MaxSearchCacheTTL       = 7 * 24 * 60
)

// SearchProviders are the web_search providers Talon builds, in
// OpenClaw's auto-detection order.
var SearchProviders = []string{"brave", "perplexity"}

// openClawSearchProviders are the other provider ids OpenClaw 2026.9
// declares: a config naming one loads, and web_search says it is not
// built.
var openClawSearchProviders = []string{"codex", "duckduckgo", "exa", "firecrawl", "gemini", "grok",
	"kimi", "minimax", "ollama", "parallel", "parallel-free", "searxng", "tavily"}

// legacySearchBlocks are the tools.web.search.<provider> blocks of
// OpenClaw before 2026.9 (and its apiKey, Brave's): provider config now
// lives in the plugin entry.
var legacySearchBlocks = append([]string{"apiKey", "brave", "perplexity"}, openClawSearchProviders...)

// Brave modes.
const (
	BraveModeWeb        = "web"
	BraveModeLLMContext = "llm-context"
)

// SearchProviderConfig is `plugins.entries.<brave|perplexity>.config.webSearch`.
type SearchProviderConfig struct {
	APIKey *Secret `json:"apiKey"`
	// BaseURL replaces the provider's public endpoint (a proxy, a test
	// server). Set, the operator's key is never sent to it.
	BaseURL string `json:"baseUrl"`
	// Mode is Brave's: web (default) or llm-context.
	Mode string `json:"mode"`
	// Model is Perplexity's chat-completions model; setting it (or
	// BaseURL) selects Sonar chat completions over the Search API.
	Model string `json:"model"`
	Rest  *Raw   `talon:"rest"`
}

// SearchProvider returns plugins.entries.<id>.config.webSearch; absent is
// the zero value. A malformed block is an error naming the key.
func (c *Config) SearchProvider(id string) (SearchProviderConfig, error) {
	var sp SearchProviderConfig
	v := searchBlock(c, id)
	if v == nil {
		return sp, nil
	}
	if _, err := Decode(v, &sp); err != nil {
		return sp, fmt.Errorf("%s: %w", searchBlockPath(id), err)
	}
	return sp, nil
}

func searchBlock(c *Config, id string) *Value {
	if c == nil {
		return nil
	}
	e, ok := c.Plugins.Entries[id]
	if !ok || e.Config == nil || e.Config.Value == nil || e.Config.Kind != Object {
		return nil
	}
	if v := e.Config.Get("webSearch"); !v.IsNull() {
		return v
	}
	return nil
}

func searchBlockPath(id string) string { return "plugins.entries." + id + ".config.webSearch" }

// webSearch checks tools.web.search and the provider blocks Talon reads.
func (k *checker) webSearch(c *Config) {
	const at = "tools.web.search"
	s := &c.Tools.Web.Search
	switch p := strings.TrimSpace(s.Provider); {
	case p == "" || slices.Contains(SearchProviders, p):
	case slices.Contains(openClawSearchProviders, p):
		k.warns = append(k.warns, Issue{Path: at + ".provider", Message: fmt.Sprintf(
			"%q is not built in Talon, whose web_search has %s: web_search says so when called", p, strings.Join(SearchProviders, " and "))})
	default:
		k.fail(at+".provider", fmt.Sprintf("expected one of %s (got %q)", strings.Join(SearchProviders, ", "), p))
	}
	k.between(at+".maxResults", s.MaxResults, MaxSearchResults)
	k.between(at+".timeoutSeconds", s.TimeoutSeconds, MaxSearchTimeoutSec)
	if m := s.CacheTTLMinutes; m != nil && (*m < 0 || *m > MaxSearchCacheTTL) {
		k.fail(at+".cacheTtlMinutes", fmt.Sprintf("expected minutes from 0 (no cache) to %d (got %g)", MaxSearchCacheTTL, *m))
	}
	if s.Rest != nil && s.Rest.Value != nil {
		for _, m := range s.Rest.Members {
			if slices.Contains(legacySearchBlocks, m.Key) {
				k.fail(joinKey(at, m.Key), "moved in OpenClaw 2026.9 to plugins.entries.<plugin>.config.webSearch (run \"openclaw doctor --fix\", or move it by hand)")
			}
		}
	}
	for _, id := range SearchProviders {
		k.searchProvider(c, id)
	}
}

// searchProvider checks one provider block: its types, mode, model and
// base URL.
func (k *checker) searchProvider(c *Config, id string) {
	at := searchBlockPath(id)
	if e, ok := c.Plugins.Entries[id]; ok && e.Config != nil && e.Config.Value != nil && e.Config.Kind != Object {
		k.fail("plugins.entries."+id+".config", "expected object")
		return
	}
	v := searchBlock(c, id)
	if v == nil {
		return
	}
	var sp SearchProviderConfig
	warns, err := Decode(v, &sp)
	if err != nil {
		if ve, ok := err.(*ValidationError); ok {
			for _, is := range ve.Issues {
				k.fail(joinKey(at, is.Path), is.Message)
			}
			return
		}
		k.fail(at, err.Error())
		return
	}
	for _, w := range warns {
		k.warns = append(k.warns, Issue{Path: joinKey(at, w.Path), Message: w.Message})
	}
	if sp.Rest != nil && sp.Rest.Value != nil {
		for _, m := range sp.Rest.Members {
			k.warns = append(k.warns, Issue{Path: joinKey(at, m.Key), Message: MsgUnused})
		}
	}
	if id == "brave" {
		k.oneOf(at+".mode", sp.Mode, []string{BraveModeWeb, BraveModeLLMContext})
	} else if sp.Mode != "" {
		k.fail(at+".mode", "only Brave's web search has a mode")
	}
	if sp.Model != "" && (id != "perplexity" || len(sp.Model) > 200 || strings.IndexFunc(sp.Model, unicode.IsSpace) >= 0) {
		k.fail(at+".model", fmt.Sprintf("expected a Perplexity model id without spaces such as \"sonar-pro\" (got %q)", sp.Model))
	}
	if sp.BaseURL != "" {
		if err := CheckSearchBaseURL(sp.BaseURL); err != nil {
			k.fail(at+".baseUrl", err.Error())
		}
	}
}

// CheckSearchBaseURL accepts an https URL, or an http one whose host is
// loopback or private (a proxy on the operator's network), as OpenClaw
// does: a search query and its key never cross the internet in clear.
func CheckSearchBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("expected an https:// URL with a host (got %q)", redactURL(s))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("expected a base URL without credentials, query or fragment (got %q)", redactURL(s))
	}
	if u.Scheme == "http" && !localHost(u.Hostname()) {
		return fmt.Errorf("http:// is accepted only for a loopback or private address; use https:// (got %q)", redactURL(s))
	}
	return nil
}

func localHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && (a.IsLoopback() || a.IsPrivate())
}
