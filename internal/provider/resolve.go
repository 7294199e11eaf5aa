package provider

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"talon/internal/config"
	"talon/internal/netguard"
)

// The api values of models.providers.<id>.api that Talon speaks.
const (
	APIOpenAICompletions = "openai-completions"
	APIAnthropicMessages = "anthropic-messages"
)

// ResolveError is a model reference Resolve cannot turn into a provider:
// no or an unknown provider, an unsupported api, a bad baseUrl, a missing
// API key. Its message names config keys and environment variables, never
// their values, so it is safe to show to whoever picked the model.
type ResolveError struct {
	Ref     string // the model reference as given, trimmed
	Message string
}

func (e *ResolveError) Error() string { return e.Message }

func resolveErr(ref, format string, args ...any) error {
	return &ResolveError{Ref: ref, Message: fmt.Sprintf(format, args...)}
}

// builtin is a provider Talon knows without configuration.
type builtin struct {
	api, baseURL, keyEnv string
}

var builtins = map[string]builtin{
	"openai":     {APIOpenAICompletions, DefaultOpenAIBaseURL, "OPENAI_API_KEY"},
	"openrouter": {APIOpenAICompletions, DefaultOpenRouterBaseURL, "OPENROUTER_API_KEY"},
	"anthropic":  {APIAnthropicMessages, DefaultAnthropicBaseURL, "ANTHROPIC_API_KEY"},
}

const howToName = `name a model as provider/model (for example openai/gpt-4o, ` +
	`anthropic/claude-sonnet-4-5, openrouter/google/gemini-3-flash, or a provider ` +
	`configured under models.providers), or use "inspect" for the offline model`

// envRef matches an apiKey written as "${NAME}".
var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// Resolve picks the provider for a model reference and returns it with the
// model id to put in Request.Model.
//
//   - The reference is read by config.ParseModelRef: "inspect" and
//     "talon/inspect", in any case, are the offline Inspect model;
//     "provider/model" splits at the first slash, so the model id keeps its
//     own slashes ("openrouter/google/gemini-3-flash" → "google/gemini-3-flash").
//     A provider configured under models.providers is used with its api
//     (openai-completions, anthropic-messages; empty means the built-in's
//     api for a built-in name, else openai-completions), baseUrl, apiKey,
//     headers (the provider's, then the matching models[] entry's) and
//     timeoutSeconds, which bounds each attempt (the whole answer, or a
//     stream's wait for its headers) and also each silence of a stream
//     between chunks, so that a stream that stops sending fails after the
//     time the operator chose rather than DefaultIdleTimeout. The built-ins
//     openai, openrouter and anthropic work unconfigured.
//   - An apiKey is taken from the config, where "${NAME}" reads the
//     environment variable NAME, else for a built-in from its variable
//     (OPENAI_API_KEY, OPENROUTER_API_KEY, ANTHROPIC_API_KEY). A built-in
//     at its hosted address without a key is an error; other providers
//     without a key send none (local servers).
//
// env reads environment variables; nil means os.Getenv. Resolve does no
// I/O, and the clients it builds share one connection pool, so calling it
// for every run is cheap.
func Resolve(cfg *config.Config, ref string, env func(string) string) (Provider, string, error) {
	return ResolveWith(cfg, ref, Options{Env: env})
}

// Options say where Resolve reads keys and how its clients connect.
type Options struct {
	// Env reads the variable of an apiKey written "${NAME}", and the key
	// variable of a built-in provider unless BuiltinKeys is set; nil
	// means os.Getenv.
	Env func(string) string
	// BuiltinKeys, when set, reads the key variables of the built-in
	// providers (OPENAI_API_KEY, …) instead of Env, and such a key is
	// sent to the built-in's own host only: a tenant gets the operator's
	// environment here and its own config's env as Env, so that pointing
	// "openai" elsewhere never carries the operator's key there.
	BuiltinKeys func(string) string
	// Guard, when set, makes every client connect through netguard with
	// these options, at each connect and redirect, and through no proxy:
	// a tenant's providers are public addresses, or the exact ones the
	// operator opened.
	Guard *netguard.Options
}

// ResolveWith is Resolve with options: the first of ResolveTargets.
func ResolveWith(cfg *config.Config, ref string, opts Options) (Provider, string, error) {
	ts, err := ResolveTargets(cfg, ref, opts)
	if err != nil {
		return nil, "", err
	}
	return ts[0].Provider, ts[0].Model, nil
}

// Target is one way to call a model: a client holding one key of its
// provider.
type Target struct {
	Provider Provider
	// Model is the id to put in Request.Model.
	Model string
	// ProviderID is the provider's id ("openai", a models.providers key,
	// "talon" for the offline model) and Profile the auth profile whose
	// key the client holds, "" for the provider's own key: together they
	// name the credential a cool-down applies to, and an attempt in
	// errors.
	ProviderID, Profile string
}

// ResolveTargets resolves ref as Resolve does, to one Target per key of
// its provider, in the order to try them: the keys of the provider's
// auth profiles (config.Config.AuthProfiles: auth.order, else every
// api_key or token profile of the provider), each read from
// config.ProfileKeyEnv through opts.Env (never the operator's variables:
// those give a tenant its built-in provider's own key only), the
// "<provider>:default" profile being the provider's own key; profiles
// whose variable is unset are passed over. Without a profile that has a
// key, the one target holds the provider's own key, as Resolve finds it.
func ResolveTargets(cfg *config.Config, ref string, opts Options) ([]Target, error) {
	s, err := settle(cfg, ref, opts)
	if err != nil {
		return nil, err
	}
	if s.inspect {
		return []Target{{Provider: Inspect{}, Model: config.InspectModel, ProviderID: config.InspectProvider}}, nil
	}
	env := opts.Env
	if env == nil {
		env = os.Getenv
	}
	var out []Target
	var keys []string
	for _, id := range cfg.AuthProfiles(s.id) {
		key, name := "", config.ProfileKeyEnv(s.id, id)
		if name == "" {
			k, err := s.ownKey(env, opts)
			if err != nil {
				continue
			}
			key = k
		} else {
			key = strings.TrimSpace(env(name))
		}
		if key == "" || slices.Contains(keys, key) {
			continue
		}
		keys = append(keys, key)
		out = append(out, s.target(key, id, opts))
	}
	if len(out) > 0 {
		return out, nil
	}
	key, err := s.ownKey(env, opts)
	if err != nil {
		return nil, err
	}
	return []Target{s.target(key, "", opts)}, nil
}

// settled is a model reference resolved but for its key.
type settled struct {
	ref, id, model, api, base string
	inspect                   bool
	pc                        config.Provider
	bi                        builtin
	known                     bool
	headers                   map[string]string
	timeout                   time.Duration
}

func settle(cfg *config.Config, ref string, opts Options) (*settled, error) {
	ref = strings.TrimSpace(ref)
	m, err := config.ParseModelRef(ref)
	switch {
	case errors.Is(err, config.ErrNoModel):
		return nil, &ResolveError{Message: "resolving model: no model given: " + howToName}
	case err != nil:
		return nil, resolveErr(ref, "resolving model %q: empty provider or model: %s", ref, howToName)
	case m.IsInspect():
		return &settled{ref: ref, inspect: true}, nil
	case m.Provider == "":
		return nil, resolveErr(ref, "resolving model %q: no provider: %s", ref, howToName)
	}
	s := &settled{ref: ref, id: m.Provider, model: m.Model}
	configured := false
	if cfg != nil {
		s.pc, configured = cfg.Models.Providers[s.id]
	}
	s.bi, s.known = builtins[s.id]
	id, pc := s.id, s.pc
	if !configured && !s.known {
		return nil, resolveErr(ref, "resolving model %q: unknown provider %q: configure models.providers.%s or use a built-in provider (openai, openrouter, anthropic)", ref, id, id)
	}

	s.api = pc.API
	if s.api == "" {
		s.api = APIOpenAICompletions
		if s.known {
			s.api = s.bi.api
		}
	}
	if s.api != APIOpenAICompletions && s.api != APIAnthropicMessages {
		return nil, resolveErr(ref, "resolving model %q: models.providers.%s.api %q is not supported (supported: %s, %s)",
			ref, id, s.api, APIOpenAICompletions, APIAnthropicMessages)
	}

	s.base = strings.TrimSpace(pc.BaseURL)
	switch {
	case s.base != "":
	case s.known && s.api == s.bi.api:
		s.base = s.bi.baseURL
	case s.api == APIAnthropicMessages:
		s.base = DefaultAnthropicBaseURL
	default:
		return nil, resolveErr(ref, "resolving model %q: models.providers.%s.baseUrl is required", ref, id)
	}
	if u, err := url.Parse(s.base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, resolveErr(ref, "resolving model %q: models.providers.%s.baseUrl %q is not an http(s) URL", ref, id, s.base)
	}

	s.headers = maps.Clone(pc.Headers)
	for _, m := range pc.Models {
		if m.ID == s.model && len(m.Headers) > 0 {
			if s.headers == nil {
				s.headers = map[string]string{}
			}
			maps.Copy(s.headers, m.Headers)
		}
	}
	if pc.TimeoutSeconds != nil && *pc.TimeoutSeconds > 0 {
		s.timeout = time.Duration(*pc.TimeoutSeconds * float64(time.Second))
	}
	return s, nil
}

// ownKey is the provider's own key: models.providers.<id>.apiKey ("${NAME}"
// read through env), else a built-in's variable, from the operator's
// environment (opts.BuiltinKeys) only at the built-in's own host.
func (s *settled) ownKey(env func(string) string, opts Options) (string, error) {
	ref, id, bi := s.ref, s.id, s.bi
	key := strings.TrimSpace(s.pc.APIKey)
	if m := envRef.FindStringSubmatch(key); m != nil {
		key = strings.TrimSpace(env(m[1]))
		if key == "" {
			return "", resolveErr(ref, "resolving model %q: models.providers.%s.apiKey refers to %s, which is not set", ref, id, m[1])
		}
	}
	if key == "" && s.known {
		switch {
		case opts.BuiltinKeys == nil:
			key = strings.TrimSpace(env(bi.keyEnv))
		case sameHost(s.base, bi.baseURL):
			if key = strings.TrimSpace(env(bi.keyEnv)); key == "" {
				key = strings.TrimSpace(opts.BuiltinKeys(bi.keyEnv))
			}
		default:
			key = strings.TrimSpace(env(bi.keyEnv))
		}
		if key == "" && sameHost(s.base, bi.baseURL) {
			return "", resolveErr(ref, "%s: no API key: set %s or models.providers.%s.apiKey", id, bi.keyEnv, id)
		}
	}
	return key, nil
}

// target builds the client of s with key.
func (s *settled) target(key, profile string, opts Options) Target {
	var client *http.Client
	if opts.Guard != nil {
		client = guardedClient(*opts.Guard)
	}
	t := Target{Model: s.model, ProviderID: s.id, Profile: profile}
	infos := modelsOf(s.pc.Models)
	if s.api == APIAnthropicMessages {
		t.Provider = NewAnthropic(AnthropicOptions{Name: s.id, BaseURL: s.base, APIKey: key, Headers: s.headers, Timeout: s.timeout, IdleTimeout: s.timeout, HTTPClient: client, Models: infos})
	} else {
		t.Provider = NewOpenAI(OpenAIOptions{Name: s.id, BaseURL: s.base, APIKey: key, Headers: s.headers, Timeout: s.timeout, IdleTimeout: s.timeout, HTTPClient: client, Models: infos})
	}
	return t
}

// modelsOf is what a provider's catalog entries say of their models.
func modelsOf(list []config.Model) map[string]ModelInfo {
	out := make(map[string]ModelInfo, len(list))
	for _, m := range list {
		var info ModelInfo
		info.Reasoning = m.Reasoning != nil && *m.Reasoning
		if m.MaxTokens != nil && *m.MaxTokens >= 1 {
			info.MaxTokens = int(min(*m.MaxTokens, math.MaxInt32))
		}
		out[m.ID] = info
	}
	return out
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Hostname(), ub.Hostname())
}
