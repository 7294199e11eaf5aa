package provider

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/netguard"
)

func parseConfig(t *testing.T, src string) *config.Config {
	t.Helper()
	f, err := config.Parse("test.json5", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

// summary is what a resolved provider will do, for comparison.
type summary struct {
	Kind    string
	Name    string
	URL     string
	Header  map[string]string
	Timeout time.Duration
	Idle    time.Duration // the stream idle timeout
}

func summarize(p Provider) summary {
	var t *transport
	var s summary
	switch c := p.(type) {
	case Inspect:
		return summary{Kind: "inspect"}
	case *OpenAI:
		s, t = summary{Kind: "openai", URL: c.url}, &c.t
	case *Anthropic:
		s, t = summary{Kind: "anthropic", URL: c.url}, &c.t
	default:
		return summary{Kind: fmt.Sprintf("%T", p)}
	}
	s.Name, s.Timeout, s.Idle = t.name, t.timeout, t.idleTimeout
	s.Header = map[string]string{}
	for k, v := range t.header {
		if k != "User-Agent" {
			s.Header[k] = strings.Join(v, ",")
		}
	}
	return s
}

func TestResolve(t *testing.T) {
	anthropicHeader := func(key string) map[string]string {
		return map[string]string{"Anthropic-Version": "2023-06-01", "X-Api-Key": key}
	}
	tests := []struct {
		name      string
		cfg       string // JSON5; empty: nil config
		ref       string
		env       map[string]string
		want      summary
		wantModel string
		wantErr   string // substring
	}{
		{name: "inspect", ref: "inspect", want: summary{Kind: "inspect"}, wantModel: "inspect"},
		{name: "talon/inspect", ref: " talon/inspect ", want: summary{Kind: "inspect"}, wantModel: "inspect"},
		// config.ParseModelRef reads the offline model in any case, as
		// sessions.patch always did.
		{name: "inspect in any case", ref: "INSPECT", want: summary{Kind: "inspect"}, wantModel: "inspect"},
		{name: "talon/inspect in any case", ref: "Talon/Inspect", want: summary{Kind: "inspect"}, wantModel: "inspect"},
		{
			name: "openai from env",
			ref:  "openai/gpt-4o", env: map[string]string{"OPENAI_API_KEY": "sk-env"},
			want:      summary{Kind: "openai", Name: "openai", URL: "https://api.openai.com/v1/chat/completions", Header: map[string]string{"Authorization": "Bearer sk-env"}, Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "gpt-4o",
		},
		{
			name:    "openai without key",
			ref:     "openai/gpt-4o",
			wantErr: "openai: no API key: set OPENAI_API_KEY or models.providers.openai.apiKey",
		},
		{
			name: "openrouter keeps the model's slashes",
			ref:  "openrouter/google/gemini-3-flash", env: map[string]string{"OPENROUTER_API_KEY": "or-key"},
			want: summary{Kind: "openai", Name: "openrouter", URL: "https://openrouter.ai/api/v1/chat/completions", Timeout: DefaultTimeout, Idle: DefaultIdleTimeout,
				Header: map[string]string{"Authorization": "Bearer or-key", "X-Title": "Talon"}},
			wantModel: "google/gemini-3-flash",
		},
		{
			name:    "openrouter without key",
			ref:     "openrouter/google/gemini-3-flash",
			wantErr: "openrouter: no API key: set OPENROUTER_API_KEY or models.providers.openrouter.apiKey",
		},
		{
			name: "anthropic from env",
			ref:  "anthropic/claude-sonnet-4-5", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"},
			want:      summary{Kind: "anthropic", Name: "anthropic", URL: "https://api.anthropic.com/v1/messages", Header: anthropicHeader("sk-ant"), Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "claude-sonnet-4-5",
		},
		{
			name:    "anthropic without key",
			ref:     "anthropic/claude-sonnet-4-5",
			wantErr: "anthropic: no API key: set ANTHROPIC_API_KEY or models.providers.anthropic.apiKey",
		},
		{
			name:      "configured local server needs no key",
			cfg:       `{models: {providers: {ollama: {baseUrl: "http://127.0.0.1:11434/v1", models: [{id: "llama3"}]}}}}`,
			ref:       "ollama/llama3",
			want:      summary{Kind: "openai", Name: "ollama", URL: "http://127.0.0.1:11434/v1/chat/completions", Header: map[string]string{}, Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "llama3",
		},
		{
			name: "configured openai-completions with key, headers, timeout, model headers",
			cfg: `{models: {providers: {vllm: {baseUrl: "https://gpu.example/v1/", apiKey: "k1", api: "openai-completions",
				headers: {"X-Team": "a", "X-Over": "provider"}, timeoutSeconds: 2.5,
				models: [{id: "other", headers: {"X-No": "1"}}, {id: "qwen/q3", headers: {"X-Over": "model"}}]}}}}`,
			ref: "vllm/qwen/q3",
			want: summary{Kind: "openai", Name: "vllm", URL: "https://gpu.example/v1/chat/completions", Timeout: 2500 * time.Millisecond, Idle: 2500 * time.Millisecond,
				Header: map[string]string{"Authorization": "Bearer k1", "X-Team": "a", "X-Over": "model"}},
			wantModel: "qwen/q3",
		},
		{
			name:      "configured anthropic-messages",
			cfg:       `{models: {providers: {corp: {baseUrl: "https://llm.corp/anthropic", apiKey: "ck", api: "anthropic-messages", timeoutSeconds: 30}}}}`,
			ref:       "corp/claude",
			want:      summary{Kind: "anthropic", Name: "corp", URL: "https://llm.corp/anthropic/v1/messages", Header: anthropicHeader("ck"), Timeout: 30 * time.Second, Idle: 30 * time.Second},
			wantModel: "claude",
		},
		{
			name:      "configured anthropic-messages without baseUrl uses Anthropic's",
			cfg:       `{models: {providers: {mine: {apiKey: "mk", api: "anthropic-messages"}}}}`,
			ref:       "mine/claude",
			want:      summary{Kind: "anthropic", Name: "mine", URL: "https://api.anthropic.com/v1/messages", Header: anthropicHeader("mk"), Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "claude",
		},
		{
			name:    "unsupported api",
			cfg:     `{models: {providers: {g: {baseUrl: "https://x.example", api: "google-generative-ai"}}}}`,
			ref:     "g/gemini",
			wantErr: `models.providers.g.api "google-generative-ai" is not supported (supported: openai-completions, anthropic-messages)`,
		},
		{
			name:    "custom provider without baseUrl",
			cfg:     `{models: {providers: {local: {apiKey: "x"}}}}`,
			ref:     "local/m",
			wantErr: "models.providers.local.baseUrl is required",
		},
		{
			name:    "baseUrl not http",
			cfg:     `{models: {providers: {local: {baseUrl: "127.0.0.1:8080"}}}}`,
			ref:     "local/m",
			wantErr: `models.providers.local.baseUrl "127.0.0.1:8080" is not an http(s) URL`,
		},
		{
			name: "configured key beats env",
			cfg:  `{models: {providers: {openai: {apiKey: "sk-cfg"}}}}`,
			ref:  "openai/gpt-4o", env: map[string]string{"OPENAI_API_KEY": "sk-env"},
			want:      summary{Kind: "openai", Name: "openai", URL: "https://api.openai.com/v1/chat/completions", Header: map[string]string{"Authorization": "Bearer sk-cfg"}, Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "gpt-4o",
		},
		{
			name: "configured built-in without key falls back to env",
			cfg:  `{models: {providers: {openai: {headers: {"OpenAI-Organization": "org-1"}}}}}`,
			ref:  "openai/gpt-4o", env: map[string]string{"OPENAI_API_KEY": "sk-env"},
			want: summary{Kind: "openai", Name: "openai", URL: "https://api.openai.com/v1/chat/completions", Timeout: DefaultTimeout, Idle: DefaultIdleTimeout,
				Header: map[string]string{"Authorization": "Bearer sk-env", "Openai-Organization": "org-1"}},
			wantModel: "gpt-4o",
		},
		{
			name:      "built-in name pointed at another host needs no key",
			cfg:       `{models: {providers: {openai: {baseUrl: "http://localhost:8000/v1"}}}}`,
			ref:       "openai/gpt-4o",
			want:      summary{Kind: "openai", Name: "openai", URL: "http://localhost:8000/v1/chat/completions", Header: map[string]string{}, Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "gpt-4o",
		},
		{
			name:      "configured anthropic without api keeps the built-in api",
			cfg:       `{models: {providers: {anthropic: {apiKey: "sk-a"}}}}`,
			ref:       "anthropic/claude",
			want:      summary{Kind: "anthropic", Name: "anthropic", URL: "https://api.anthropic.com/v1/messages", Header: anthropicHeader("sk-a"), Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "claude",
		},
		{
			name: "apiKey from ${VAR}",
			cfg:  `{models: {providers: {corp: {baseUrl: "https://corp.example/v1", apiKey: "${CORP_KEY}"}}}}`,
			ref:  "corp/m", env: map[string]string{"CORP_KEY": "from-env"},
			want:      summary{Kind: "openai", Name: "corp", URL: "https://corp.example/v1/chat/completions", Header: map[string]string{"Authorization": "Bearer from-env"}, Timeout: DefaultTimeout, Idle: DefaultIdleTimeout},
			wantModel: "m",
		},
		{
			name:    "apiKey ${VAR} unset",
			cfg:     `{models: {providers: {corp: {baseUrl: "https://corp.example/v1", apiKey: "${CORP_KEY}"}}}}`,
			ref:     "corp/m",
			wantErr: "models.providers.corp.apiKey refers to CORP_KEY, which is not set",
		},
		{
			name:    "no provider",
			ref:     "gpt-4o",
			wantErr: `resolving model "gpt-4o": no provider: name a model as provider/model (for example openai/gpt-4o`,
		},
		{
			name:    "empty",
			ref:     "  ",
			wantErr: "resolving model: no model given: name a model as provider/model",
		},
		{
			name:    "empty model",
			ref:     "openai/",
			wantErr: `resolving model "openai/": empty provider or model`,
		},
		{
			name:    "unknown provider",
			cfg:     `{models: {providers: {local: {baseUrl: "http://127.0.0.1:1/v1"}}}}`,
			ref:     "mistral/large",
			wantErr: `resolving model "mistral/large": unknown provider "mistral": configure models.providers.mistral or use a built-in provider (openai, openrouter, anthropic)`,
		},
		{
			name:    "other talon models are not built in",
			ref:     "talon/other",
			wantErr: `unknown provider "talon"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg *config.Config
			if tc.cfg != "" {
				cfg = parseConfig(t, tc.cfg)
			}
			env := func(k string) string { return tc.env[k] }
			p, model, err := Resolve(cfg, tc.ref, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				if p != nil {
					t.Errorf("provider %T returned with an error", p)
				}
				var re *ResolveError
				if !errors.As(err, &re) || re.Ref != strings.TrimSpace(tc.ref) {
					t.Errorf("err is %T (%+v), want *ResolveError for %q", err, re, tc.ref)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if model != tc.wantModel {
				t.Errorf("model = %q, want %q", model, tc.wantModel)
			}
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("provider (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveEndToEnd drives a resolved provider against a loopback server.
func TestResolveEndToEnd(t *testing.T) {
	t.Run("openai-completions", func(t *testing.T) {
		f := newFakeServer(t, jsonReply(200, `{"choices":[{"message":{"content":"pong"},"finish_reason":"stop"}]}`))
		cfg := parseConfig(t, `{models: {providers: {fake: {baseUrl: "`+f.URL+`/v1", apiKey: "k", headers: {"X-Tenant": "t1"}}}}}`)
		p, model, err := Resolve(cfg, "fake/fake-model", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Chat(context.Background(), &Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}}, nil)
		if err != nil || got.Content != "pong" {
			t.Fatalf("got %+v, %v", got, err)
		}
		r := f.requests()[0]
		if r.Path != "/v1/chat/completions" || r.Body["model"] != "fake-model" || r.Header.Get("X-Tenant") != "t1" || r.Header.Get("Authorization") != "Bearer k" {
			t.Errorf("request = %+v", r)
		}
	})
	t.Run("anthropic-messages", func(t *testing.T) {
		f := newFakeServer(t, jsonReply(200, anOK))
		cfg := parseConfig(t, `{models: {providers: {proxy: {baseUrl: "`+f.URL+`", apiKey: "k", api: "anthropic-messages"}}}}`)
		p, model, err := Resolve(cfg, "proxy/claude-x", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Chat(context.Background(), &Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}}, nil)
		if err != nil || got.Content != "ok" {
			t.Fatalf("got %+v, %v", got, err)
		}
		r := f.requests()[0]
		if r.Path != "/v1/messages" || r.Body["model"] != "claude-x" || r.Header.Get("X-Api-Key") != "k" {
			t.Errorf("request = %+v", r)
		}
	})
}

func TestResolveSharesConnectionPool(t *testing.T) {
	env := func(string) string { return "k" }
	a, _, err := Resolve(nil, "openai/a", env)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Resolve(nil, "anthropic/b", env)
	if err != nil {
		t.Fatal(err)
	}
	if a.(*OpenAI).t.client != b.(*Anthropic).t.client || a.(*OpenAI).t.client != sharedHTTPClient() {
		t.Error("resolved clients do not share one http.Client")
	}
}

// TestResolveForTenant: a tenant's keys come from its own env; the
// operator's built-in keys go to the built-in's own host only; and a
// guarded client never reaches a private address.
func TestResolveForTenant(t *testing.T) {
	operator := map[string]string{"OPENAI_API_KEY": "sk-operator", "TALON_ADMIN_TOKEN": "admin-secret"}
	tenantEnv := map[string]string{"OWN_KEY": "sk-tenant"}
	opts := Options{
		Env:         func(k string) string { return tenantEnv[k] },
		BuiltinKeys: func(k string) string { return operator[k] },
	}
	for _, tc := range []struct {
		name, cfg, ref string
		key            string // the key the client sends
		err            string
	}{
		{name: "built-in at its own host gets the operator's key", cfg: `{}`, ref: "openai/gpt-4o", key: "sk-operator"},
		{name: "built-in pointed elsewhere gets no operator key", cfg: `{models: {providers: {openai: {baseUrl: "https://evil.example/v1"}}}}`, ref: "openai/gpt-4o", key: ""},
		{name: "the tenant's own key wins", cfg: `{models: {providers: {openai: {apiKey: "${OWN_KEY}"}}}}`, ref: "openai/gpt-4o", key: "sk-tenant"},
		{name: "an operator variable by name is not the tenant's", cfg: `{models: {providers: {x: {baseUrl: "https://evil.example/v1", apiKey: "${TALON_ADMIN_TOKEN}"}}}}`, ref: "x/m", err: "refers to TALON_ADMIN_TOKEN, which is not set"},
		{name: "an operator built-in key by name is not the tenant's", cfg: `{models: {providers: {x: {baseUrl: "https://evil.example/v1", apiKey: "${OPENAI_API_KEY}"}}}}`, ref: "x/m", err: "refers to OPENAI_API_KEY, which is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, err := ResolveWith(parseConfig(t, tc.cfg), tc.ref, opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "admin-secret") {
					t.Fatalf("err = %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.key != "" {
				want = "Bearer " + tc.key
			}
			if got := p.(*OpenAI).t.header.Get("Authorization"); got != want {
				t.Errorf("Authorization %q; want %q", got, want)
			}
		})
	}

	f := newFakeServer(t, jsonReply(200, `{"choices":[{"message":{"content":"pong"},"finish_reason":"stop"}]}`))
	cfg := parseConfig(t, `{models: {providers: {loop: {baseUrl: "`+f.URL+`/v1"}}}}`)
	guarded := Options{Env: opts.Env, BuiltinKeys: opts.BuiltinKeys, Guard: &netguard.Options{}}
	p, model, err := ResolveWith(cfg, "loop/m", guarded)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Chat(context.Background(), &Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "loopback address") || len(f.requests()) != 0 {
		t.Fatalf("guarded chat to loopback = %v (%d requests); want refused", err, len(f.requests()))
	}
	ap := netip.MustParseAddrPort(strings.TrimPrefix(f.URL, "http://"))
	opened := Options{Env: opts.Env, Guard: &netguard.Options{Allow: []netip.AddrPort{ap}}}
	if p, model, err = ResolveWith(cfg, "loop/m", opened); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Chat(context.Background(), &Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "ping"}}}, nil); err != nil || got.Content != "pong" {
		t.Fatalf("chat to the operator's exception = %+v, %v", got, err)
	}
}

// TestResolveTargetsProfiles: auth profiles give a provider one target
// per key, in auth.order's order, each key from the config's own
// environment; the operator's variables never fill a tenant's profile.
func TestResolveTargetsProfiles(t *testing.T) {
	tenantEnv := map[string]string{"OPENAI_API_KEY_WORK": "sk-work", "OPENAI_API_KEY_SPARE": "sk-spare", "OWN": "sk-own",
		"MY_LLM_API_KEY_B": "sk-b"}
	operator := map[string]string{"OPENAI_API_KEY": "sk-operator", "OPENAI_API_KEY_ADMIN": "sk-admin"}
	opts := Options{Env: func(k string) string { return tenantEnv[k] }, BuiltinKeys: func(k string) string { return operator[k] }}
	profiles := `auth: {profiles: {"openai:work": {provider: "openai", mode: "api_key"}, "openai:spare": {provider: "openai", mode: "token"},
		"openai:default": {provider: "openai", mode: "api_key"}, "openai:admin": {provider: "openai", mode: "api_key"},
		"openai:sso": {provider: "openai", mode: "oauth"}, "my-llm:b": {provider: "my-llm", mode: "api_key"}}`
	type got struct{ Profile, Auth string }
	for _, tc := range []struct {
		name, cfg, ref string
		want           []got
	}{
		{"without profiles, the provider's own key", `{}`, "openai/m", []got{{"", "Bearer sk-operator"}}},
		{"every keyed profile, in id order; the default is the own key", `{` + profiles + `}}`, "openai/m",
			[]got{{"openai:default", "Bearer sk-operator"}, {"openai:spare", "Bearer sk-spare"}, {"openai:work", "Bearer sk-work"}}},
		{"auth.order orders them and leaves the rest out", `{` + profiles + `, order: {openai: ["openai:work", "nobody", "openai:spare"]}}}`, "openai/m",
			[]got{{"openai:work", "Bearer sk-work"}, {"openai:spare", "Bearer sk-spare"}}},
		{"a configured provider's profile", `{models: {providers: {"my-llm": {baseUrl: "https://llm.example/v1", apiKey: "${OWN}"}}}, ` + profiles + `}}`, "my-llm/m",
			[]got{{"my-llm:b", "Bearer sk-b"}}},
		{"no profile with a key: the own key", `{auth: {profiles: {"openai:admin": {provider: "openai", mode: "api_key"}}}}`, "openai/m",
			[]got{{"", "Bearer sk-operator"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := ResolveTargets(parseConfig(t, tc.cfg), tc.ref, opts)
			if err != nil {
				t.Fatal(err)
			}
			var out []got
			for _, tg := range ts {
				out = append(out, got{tg.Profile, tg.Provider.(*OpenAI).t.header.Get("Authorization")})
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}
