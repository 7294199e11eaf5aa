package websearch

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"talon/internal/config"
	"talon/internal/tools"
)

// The providers' public endpoints and Sonar's default models.
const (
	BraveBaseURL      = "https://api.search.brave.com"
	PerplexityBaseURL = "https://api.perplexity.ai"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	sonarModel        = "sonar-pro"
	openRouterModel   = "perplexity/sonar-pro"
)

// Transports: how one provider is spoken to.
const (
	transportBrave = "brave-web"
	transportSonar = "sonar-chat"
)

// endpoint is where one call goes and with what key. key is never put in
// a result, a message or a log.
type endpoint struct {
	provider  string // brave or perplexity
	transport string
	url       string // the full URL of the API call
	model     string // Sonar's
	key       string
	keyHelp   string // where a key is set, for messages
}

// resolve picks the provider and its endpoint and key: the configured
// provider, else the first of config.SearchProviders with a key.
func resolve(cfg *config.Config, out tools.Outbound) (endpoint, error) {
	var name string
	if cfg != nil {
		name = strings.TrimSpace(cfg.Tools.Web.Search.Provider)
	}
	if name != "" {
		if !slices.Contains(config.SearchProviders, name) {
			return endpoint{}, fmt.Errorf("web search provider %q is not built in Talon; set tools.web.search.provider to brave or perplexity", name)
		}
		ep, err := endpointOf(cfg, out, name)
		if err == nil && ep.key == "" {
			err = fmt.Errorf("%s: no API key: set %s", name, ep.keyHelp)
		}
		return ep, err
	}
	for _, p := range config.SearchProviders {
		ep, err := endpointOf(cfg, out, p)
		if err != nil || ep.key != "" {
			return ep, err
		}
	}
	return endpoint{}, errors.New("web_search has no provider: no Brave or Perplexity API key is set " +
		"(BRAVE_API_KEY, PERPLEXITY_API_KEY or OPENROUTER_API_KEY, or plugins.entries.<brave|perplexity>.config.webSearch.apiKey)")
}

func endpointOf(cfg *config.Config, out tools.Outbound, name string) (endpoint, error) {
	sp, err := cfg.SearchProvider(name)
	if err != nil {
		return endpoint{}, err
	}
	if sp.BaseURL != "" {
		if err := config.CheckSearchBaseURL(sp.BaseURL); err != nil {
			return endpoint{}, fmt.Errorf("plugins.entries.%s.config.webSearch.baseUrl: %w", name, err)
		}
	}
	if name == "brave" {
		return braveEndpoint(sp, out)
	}
	return sonarEndpoint(sp, out)
}

func braveEndpoint(sp config.SearchProviderConfig, out tools.Outbound) (endpoint, error) {
	ep := endpoint{provider: "brave", transport: transportBrave,
		keyHelp: "plugins.entries.brave.config.webSearch.apiKey or BRAVE_API_KEY"}
	if sp.Mode == config.BraveModeLLMContext {
		return ep, errors.New(`brave: mode "llm-context" is not built in Talon; set plugins.entries.brave.config.webSearch.mode to "web"`)
	}
	key, err := out.Key(sp.APIKey, "BRAVE_API_KEY", sp.BaseURL == "")
	if err != nil {
		return ep, fmt.Errorf("brave: reading the API key: %w", err)
	}
	ep.key, ep.url = key, joinURL(or(sp.BaseURL, BraveBaseURL), "/res/v1/web/search")
	return ep, nil
}

// sonarEndpoint is Perplexity's Sonar through chat completions: directly,
// or through OpenRouter when the key is OpenRouter's (an sk-or- key, or
// OPENROUTER_API_KEY), as OpenClaw chooses.
func sonarEndpoint(sp config.SearchProviderConfig, out tools.Outbound) (endpoint, error) {
	ep := endpoint{provider: "perplexity", transport: transportSonar,
		keyHelp: "plugins.entries.perplexity.config.webSearch.apiKey, PERPLEXITY_API_KEY or OPENROUTER_API_KEY"}
	own := sp.BaseURL == ""
	key, err := out.Key(sp.APIKey, "PERPLEXITY_API_KEY", own)
	if err != nil {
		return ep, fmt.Errorf("perplexity: reading the API key: %w", err)
	}
	viaOpenRouter := strings.HasPrefix(key, "sk-or-")
	if key == "" {
		if key, err = out.Key(nil, "OPENROUTER_API_KEY", own); err != nil {
			return ep, fmt.Errorf("perplexity: reading the API key: %w", err)
		}
		viaOpenRouter = key != ""
	}
	base := sp.BaseURL
	if base == "" {
		base = PerplexityBaseURL
		if viaOpenRouter {
			base = OpenRouterBaseURL
		}
	}
	ep.model = sp.Model
	if ep.model == "" {
		ep.model = sonarModel
		if viaOpenRouter || hostOf(base) == "openrouter.ai" {
			ep.model = openRouterModel
		}
	}
	ep.key, ep.url = key, joinURL(base, "/chat/completions")
	return ep, nil
}

func joinURL(base, path string) string { return strings.TrimRight(base, "/") + path }

func hostOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unsupported says which argument the transport does not take, as
// OpenClaw refuses them rather than dropping them silently.
func unsupported(transport string, r request) error {
	type arg struct {
		name string
		set  bool
	}
	var refuse []arg
	why := ""
	switch transport {
	case transportSonar:
		refuse = []arg{{"country", r.Country != ""}, {"language", r.Language != ""}, {"search_lang", r.SearchLang != ""},
			{"ui_lang", r.UILang != ""}, {"date_after", r.DateAfter != ""}, {"date_before", r.DateBefore != ""}}
		why = "Perplexity's Sonar answers take only query, count and freshness"
	}
	for _, a := range refuse {
		if a.set {
			return fmt.Errorf("argument %q is not supported here: %s", a.name, why)
		}
	}
	return nil
}
