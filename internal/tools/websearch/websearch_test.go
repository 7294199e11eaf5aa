package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"talon/internal/tools"
)

func braveCfg(base string) string {
	return `{"tools":{"web":{"search":{"provider":"brave"}}},"plugins":{"entries":{"brave":{"config":{"webSearch":{"apiKey":"${BRAVE_API_KEY}","baseUrl":"` + base + `"}}}}}}`
}

// TestBrave: a search through Brave's real wire format, the arguments in
// its query parameters, the results normalised and wrapped.
func TestBrave(t *testing.T) {
	f := newFake(t)
	env := envFor(cfgOf(t, braveCfg(f.srv.URL)), map[string]string{"BRAVE_API_KEY": braveKey}, nil)
	tests := []struct {
		name       string
		args       string
		wantParams map[string]string
	}{
		{"plain", `{"query":"golang generics"}`, map[string]string{"q": "golang generics", "count": "5"}},
		{"filters", `{"query":"golang generics","count":3,"country":"de","language":"de","ui_lang":"de-DE","freshness":"week"}`,
			map[string]string{"count": "3", "country": "DE", "search_lang": "de", "ui_lang": "de-DE", "freshness": "pw"}},
		{"a date range", `{"query":"golang generics","date_after":"2024-01-01","date_before":"2024-06-30"}`,
			map[string]string{"freshness": "2024-01-01to2024-06-30"}},
		{"a range up to today", `{"query":"golang generics","date_after":"2026-01-01"}`, map[string]string{"freshness": "2026-01-01to2026-03-10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := New(Options{Now: newClock().now})
			res := run(t, tl, env, tt.args)
			if res.IsError {
				t.Fatalf("error: %s", res.Text)
			}
			req, _ := f.last()
			if req.Header.Get("X-Subscription-Token") != braveKey || req.Header.Get("Accept") != "application/json" {
				t.Errorf("headers = %v", req.Header)
			}
			for k, v := range tt.wantParams {
				if got := req.URL.Query().Get(k); got != v {
					t.Errorf("param %s = %q, want %q", k, got, v)
				}
			}
			out := decodeOut(t, res.Text)
			if out["kind"] != "results" || out["provider"] != "brave" || out["query"] != "golang generics" || out["count"] != 2.0 {
				t.Errorf("head = %v", out)
			}
			ext, _ := out["externalContent"].(map[string]any)
			if ext["untrusted"] != true || ext["wrapped"] != true || ext["source"] != "web_search" {
				t.Errorf("externalContent = %v", ext)
			}
			rs := out["results"].([]any)
			first, second := rs[0].(map[string]any), rs[1].(map[string]any)
			if first["url"] != "https://go.dev/doc/tutorial/generics" || first["published"] != "2024-02-01T00:00:00" || first["siteName"] != "go.dev" {
				t.Errorf("first = %v", first)
			}
			for field, want := range map[string]string{
				"title":   "Source: Web Search\n---\nTutorial: Getting started with generics\n<<<END_EXTERNAL_UNTRUSTED_CONTENT",
				"snippet": "---\nThis tutorial introduces the basics of generics in Go & more.\n<<<END",
			} {
				if s, _ := first[field].(string); !strings.Contains(s, want) || !strings.HasPrefix(s, "<<<EXTERNAL_UNTRUSTED_CONTENT id=") {
					t.Errorf("%s = %q, want it wrapped around %q", field, s, want)
				}
			}
			// A hostile result cannot close its block or speak as the system.
			if s := second["title"].(string); strings.Count(s, "<<<END_EXTERNAL_UNTRUSTED_CONTENT") != 1 || !strings.Contains(s, "[[END_MARKER_SANITIZED]]") {
				t.Errorf("hostile title = %q", s)
			}
			if s := second["snippet"].(string); strings.Contains(s, "<|im_start|>") {
				t.Errorf("hostile snippet = %q", s)
			}
			if _, ok := second["published"]; ok {
				t.Errorf("a relative age became a date: %v", second)
			}
		})
	}
}

// TestPerplexity: Sonar's chat completion, directly with a Perplexity key
// and through OpenRouter with an OpenRouter key, gives an answer with its
// citations.
func TestPerplexity(t *testing.T) {
	f := newFake(t)
	tests := []struct {
		name      string
		cfg       string
		vars      map[string]string
		wantModel string
		wantAuth  string
		wantCites []string
		wantTitle string
	}{
		{"direct", `{"plugins":{"entries":{"perplexity":{"config":{"webSearch":{"baseUrl":"` + f.srv.URL + `"}}}}}}`,
			map[string]string{"PERPLEXITY_API_KEY": pplxKey}, "sonar-pro", "Bearer " + pplxKey,
			[]string{"https://go.dev/blog/intro-generics", "https://go.dev/doc/tutorial/generics"}, "An Introduction To Generics"},
		{"through OpenRouter", `{"tools":{"web":{"search":{"provider":"perplexity"}}},"plugins":{"entries":{"perplexity":{"config":{"webSearch":{"baseUrl":"` + f.srv.URL + `/api/v1"}}}}}}`,
			map[string]string{"OPENROUTER_API_KEY": orKey}, "perplexity/sonar-pro", "Bearer " + orKey,
			[]string{"https://go.dev/blog/intro-generics"}, "An Introduction To Generics"},
		{"a configured model", `{"plugins":{"entries":{"perplexity":{"config":{"webSearch":{"apiKey":"` + pplxKey + `","baseUrl":"` + f.srv.URL + `","model":"sonar-reasoning"}}}}}}`,
			nil, "sonar-reasoning", "Bearer " + pplxKey, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, New(Options{}), envFor(cfgOf(t, tt.cfg), tt.vars, nil), `{"query":"go generics","freshness":"month","count":3}`)
			if res.IsError {
				t.Fatalf("error: %s", res.Text)
			}
			req, body := f.last()
			var sent struct {
				Model    string `json:"model"`
				Messages []struct{ Role, Content string }
				Recency  string `json:"search_recency_filter"`
			}
			if err := json.Unmarshal([]byte(body), &sent); err != nil {
				t.Fatal(err)
			}
			if req.Header.Get("Authorization") != tt.wantAuth || sent.Model != tt.wantModel || sent.Recency != "month" ||
				len(sent.Messages) != 1 || sent.Messages[0].Content != "go generics" {
				t.Errorf("request: auth %q, body %s", req.Header.Get("Authorization"), body)
			}
			out := decodeOut(t, res.Text)
			if out["kind"] != "answer" || out["provider"] != "perplexity" || !strings.Contains(out["content"].(string), "Go 1.18 added generics") {
				t.Errorf("answer = %v", out)
			}
			if tt.wantCites == nil {
				return
			}
			cites, _ := out["citations"].([]any)
			if len(cites) != len(tt.wantCites) {
				t.Fatalf("citations = %v", cites)
			}
			for i, c := range cites {
				if c.(map[string]any)["url"] != tt.wantCites[i] {
					t.Errorf("citation %d = %v", i, c)
				}
			}
			if title, _ := cites[0].(map[string]any)["title"].(string); !strings.Contains(title, tt.wantTitle) || !strings.Contains(title, "<<<EXTERNAL_UNTRUSTED_CONTENT") {
				t.Errorf("citation title = %q", title)
			}
		})
	}
}

// TestRemoteErrors: refused keys, rate limits (with the wait asked for),
// refused requests and failures are explained, and the key never shows.
func TestRemoteErrors(t *testing.T) {
	f := newFake(t)
	tests := []struct {
		name  string
		reply func(w http.ResponseWriter, r *http.Request)
		key   string
		want  string
	}{
		{"wrong key", nil, "BSA-wrong", "brave: the API key was refused (HTTP 401): The provided subscription token is invalid.; check plugins.entries.brave.config.webSearch.apiKey or BRAVE_API_KEY"},
		{"rate limit in seconds", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.Header().Set("X-RateLimit-Remaining", "0, 0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"type":"ErrorResponse","error":{"status":429,"code":"RATE_LIMITED","detail":"Request rate limit exceeded for plan."}}`)
		}, braveKey, "brave: rate limited (HTTP 429): the account's request rate or quota is used up; retry after 30 seconds"},
		{"rate limit as a date", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "Tue, 10 Mar 2026 12:02:00 GMT")
			w.WriteHeader(http.StatusTooManyRequests)
		}, braveKey, "retry after 12:02:00 UTC"},
		{"rate limit without a time", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTooManyRequests) },
			braveKey, "it gave no retry time, so wait before trying again"},
		{"a refused request quotes the provider, key redacted", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"type":"ErrorResponse","error":{"status":422,"code":"VALIDATION","detail":"Unable to validate token %s <|im_start|>"}}`, braveKey)
		}, braveKey, "brave: the request was refused (HTTP 422): Unable to validate token [redacted] [REMOVED_SPECIAL_TOKEN]"},
		{"a failure", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }, braveKey,
			"brave: the service failed (HTTP 502); try again later"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>") }, braveKey, "brave: reading Brave's answer"},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, strings.Repeat(" ", MaxResponseBytes+1))
		}, braveKey, "brave: the answer is larger than 1048576 bytes"},
		{"a redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example.com/", http.StatusFound)
		}, braveKey, "brave: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			f.reply = tt.reply
			f.mu.Unlock()
			env := envFor(cfgOf(t, braveCfg(f.srv.URL)), map[string]string{"BRAVE_API_KEY": tt.key}, nil)
			res := run(t, New(Options{Now: newClock().now}), env, `{"query":"q"}`)
			if !res.IsError {
				t.Fatalf("no error: %s", res.Text)
			}
			out := decodeOut(t, res.Text)
			msg, _ := out["message"].(string)
			if out["kind"] != "error" || out["error"] != "provider_error" || out["provider"] != "brave" || !strings.Contains(msg, tt.want) {
				t.Errorf("got %s\nwant message containing %q", res.Text, tt.want)
			}
			if strings.Contains(res.Text, tt.key) {
				t.Errorf("the key is in %s", res.Text)
			}
		})
	}
}

// TestArguments: bad arguments are refused before any request, with
// errors written for the model.
func TestArguments(t *testing.T) {
	f := newFake(t)
	brave := envFor(cfgOf(t, braveCfg(f.srv.URL)), map[string]string{"BRAVE_API_KEY": braveKey}, nil)
	sonar := envFor(cfgOf(t, `{"plugins":{"entries":{"perplexity":{"config":{"webSearch":{"baseUrl":"`+f.srv.URL+`"}}}}}}`),
		map[string]string{"PERPLEXITY_API_KEY": pplxKey}, nil)
	tests := []struct {
		name string
		env  *tools.Env
		args string
		want string
	}{
		{"no query", brave, `{}`, `missing required argument "query"`},
		{"blank query", brave, `{"query":"  "}`, `argument "query" must not be empty`},
		{"a query over lines", brave, `{"query":"a\nb"}`, `must be one line`},
		{"a huge query", brave, `{"query":"` + strings.Repeat("a", maxQueryChars+1) + `"}`, `longer than 2000 characters`},
		{"count too high", brave, `{"query":"q","count":11}`, `argument "count" must be an integer from 1 to 10`},
		{"unknown argument", brave, `{"query":"q","site":"x"}`, `unknown argument "site"`},
		{"a bad country", brave, `{"query":"q","country":"USA&x=1"}`, `argument "country" must be a code such as "US"`},
		{"a bad ui_lang", brave, `{"query":"q","ui_lang":"en"}`, `argument "ui_lang" must be a code such as "en-US"`},
		{"a bad date", brave, `{"query":"q","date_after":"01/02/2024"}`, `argument "date_after" must be a date YYYY-MM-DD`},
		{"dates reversed", brave, `{"query":"q","date_after":"2024-02-01","date_before":"2024-01-01"}`, `is later than`},
		{"freshness and dates", brave, `{"query":"q","freshness":"day","date_after":"2024-01-01"}`, `not both`},
		{"an end without a start", brave, `{"query":"q","date_before":"2024-01-01"}`, `"date_before" needs "date_after"`},
		{"two languages", brave, `{"query":"q","language":"en","search_lang":"de"}`, `not two different ones`},
		{"Perplexity's Search API filter", brave, `{"query":"q","domain_filter":["go.dev"]}`, `unknown argument "domain_filter"`},
		{"Brave's filter on Sonar", sonar, `{"query":"q","country":"US"}`, `argument "country" is not supported here: Perplexity's Sonar answers take only query, count and freshness`},
		{"max_tokens on Sonar", sonar, `{"query":"q","max_tokens":100}`, `unknown argument "max_tokens"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.calls()
			res := run(t, New(Options{Now: newClock().now}), tt.env, tt.args)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("got %v %q, want an error containing %q", res.IsError, res.Text, tt.want)
			}
			if f.calls() != before {
				t.Error("a bad call reached the provider")
			}
		})
	}
}

// TestCache: a repeated search is answered from the cache for the TTL,
// per argument and per agent; a TTL of 0 caches nothing.
func TestCache(t *testing.T) {
	f := newFake(t)
	clk := newClock()
	tl := New(Options{Now: clk.now})
	cfg := func(ttl string) *tools.Env {
		src := `{"tools":{"web":{"search":{"cacheTtlMinutes":` + ttl + `}}},"plugins":{"entries":{"brave":{"config":{"webSearch":{"baseUrl":"` + f.srv.URL + `"}}}}}}`
		return envFor(cfgOf(t, src), map[string]string{"BRAVE_API_KEY": braveKey}, nil)
	}
	env, other := cfg("15"), cfg("15")
	other.AgentDir = "/agents/b"
	steps := []struct {
		name      string
		env       *tools.Env
		args      string
		advance   time.Duration
		wantCalls int
		cached    bool
	}{
		{"first search", env, `{"query":"q"}`, 0, 1, false},
		{"the same search", env, `{"query":"q"}`, 14 * time.Minute, 1, true},
		{"another count", env, `{"query":"q","count":2}`, 0, 2, false},
		{"another agent", other, `{"query":"q"}`, 0, 3, false},
		{"a shorter TTL limits reuse", cfg("10"), `{"query":"q"}`, 0, 4, false},
		{"expired", env, `{"query":"q","count":2}`, 16 * time.Minute, 5, false},
		{"no cache", cfg("0"), `{"query":"nocache"}`, 0, 6, false},
		{"no cache again", cfg("0"), `{"query":"nocache"}`, 0, 7, false},
	}
	for _, s := range steps {
		clk.add(s.advance)
		res := run(t, tl, s.env, s.args)
		if res.IsError {
			t.Fatalf("%s: %s", s.name, res.Text)
		}
		_, cached := decodeOut(t, res.Text)["cached"]
		if f.calls() != s.wantCalls || cached != s.cached {
			t.Errorf("%s: calls %d cached %v, want %d %v", s.name, f.calls(), cached, s.wantCalls, s.cached)
		}
	}
}

// TestCacheBound: the cache never holds more than its bound.
func TestCacheBound(t *testing.T) {
	c, now := newCache(3), time.Unix(0, 0)
	for i := range 5 {
		c.put(fmt.Sprint(i), i, now, time.Hour)
	}
	if c.len() != 3 {
		t.Errorf("len = %d", c.len())
	}
	for k, want := range map[string]bool{"0": false, "1": false, "2": true, "4": true} {
		if _, ok := c.get(k, now, time.Hour); ok != want {
			t.Errorf("get(%s) = %v", k, ok)
		}
	}
}

// TestKeys: which key a call uses and where it may go. The operator's key
// reaches only the provider's own host; a tenant's base URL never gets it.
func TestKeys(t *testing.T) {
	op := map[string]string{"BRAVE_API_KEY": operators, "PERPLEXITY_API_KEY": operators}
	tests := []struct {
		name                 string
		cfg                  string
		vars, builtin        map[string]string
		wantURL, wantKey     string
		wantModel, wantError string
	}{
		{"the operator's Brave key at Brave", `{}`, nil, op, BraveBaseURL + "/res/v1/web/search", operators, "", ""},
		{"never at a tenant's base URL", `{"tools":{"web":{"search":{"provider":"brave"}}},"plugins":{"entries":{"brave":{"config":{"webSearch":{"baseUrl":"https://proxy.example.com"}}}}}}`,
			nil, op, "", "", "", "brave: no API key"},
		{"nor a tenant's Perplexity URL", `{"plugins":{"entries":{"perplexity":{"config":{"webSearch":{"baseUrl":"https://proxy.example.com"}}}}}}`,
			nil, map[string]string{"PERPLEXITY_API_KEY": operators}, "", "", "", "web_search has no provider"},
		{"Brave first", `{}`, map[string]string{"BRAVE_API_KEY": braveKey, "PERPLEXITY_API_KEY": pplxKey}, nil, BraveBaseURL + "/res/v1/web/search", braveKey, "", ""},
		{"Perplexity when Brave has no key", `{}`, map[string]string{"PERPLEXITY_API_KEY": pplxKey}, nil, PerplexityBaseURL + "/chat/completions", pplxKey, "sonar-pro", ""},
		{"an OpenRouter key goes to OpenRouter", `{}`, map[string]string{"OPENROUTER_API_KEY": orKey}, nil, OpenRouterBaseURL + "/chat/completions", orKey, "perplexity/sonar-pro", ""},
		{"so does an sk-or- key in the config", `{"plugins":{"entries":{"perplexity":{"config":{"webSearch":{"apiKey":"` + orKey + `"}}}}}}`, nil, nil,
			OpenRouterBaseURL + "/chat/completions", orKey, "perplexity/sonar-pro", ""},
		{"an unset variable is an error", `{"plugins":{"entries":{"brave":{"config":{"webSearch":{"apiKey":"${MINE}"}}}}}}`, nil, op, "", "", "", "brave: reading the API key"},
		{"a provider Talon lacks", `{"tools":{"web":{"search":{"provider":"tavily"}}}}`, nil, op, "", "", "", `"tavily" is not built in Talon`},
		{"llm-context mode", `{"plugins":{"entries":{"brave":{"config":{"webSearch":{"mode":"llm-context"}}}}}}`, nil, op, "", "", "", `mode "llm-context" is not built`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := envFor(cfgOf(t, tt.cfg), tt.vars, tt.builtin)
			ep, err := resolve(env.Config, env.Outbound)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err = %v, want %q", err, tt.wantError)
				}
				return
			}
			if err != nil || ep.url != tt.wantURL || ep.key != tt.wantKey || ep.model != tt.wantModel {
				t.Errorf("resolve = %q %q %q, %v", ep.url, ep.key, ep.model, err)
			}
		})
	}
}

// TestHostileBaseURL: a tenant's base URL at a private address is refused
// by the network guard, loopback allowed or not; the key never leaves.
func TestHostileBaseURL(t *testing.T) {
	tests := []struct {
		name, base string
		loopback   bool
		want       string
	}{
		{"private", "http://10.255.255.1:9", true, "netguard: refusing"},
		{"metadata over http", "http://169.254.169.254", true, "http:// is accepted only for a loopback or private address"},
		{"metadata over https", "https://169.254.169.254", true, "netguard: refusing"},
		{"loopback without the operator's leave", "http://127.0.0.1:9", false, "netguard: refusing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The config is set past its check, as a tool must not rely on it.
			env := envFor(cfgOf(t, `{"plugins":{"entries":{"brave":{"config":{"webSearch":{"baseUrl":"https://placeholder.invalid"}}}}}}`), map[string]string{"BRAVE_API_KEY": braveKey}, nil)
			env.Config.Plugins.Entries["brave"].Config.Get("webSearch").Get("baseUrl").Str = tt.base
			env.AllowLoopback = tt.loopback
			res := run(t, New(Options{}), env, `{"query":"q"}`)
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("got %q, want an error containing %q", res.Text, tt.want)
			}
		})
	}
}

// TestCancelled: a cancelled run makes no request and says so.
func TestCancelled(t *testing.T) {
	f := newFake(t)
	env := envFor(cfgOf(t, braveCfg(f.srv.URL)), map[string]string{"BRAVE_API_KEY": braveKey}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := New(Options{}).Run(ctx, env, json.RawMessage(`{"query":"q"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "brave: cancelled") {
		t.Errorf("Run = %q, %v", res.Text, err)
	}
}

func TestSchema(t *testing.T) {
	if err := tools.LintSchema(New(Options{}).Schema()); err != nil {
		t.Fatal(err)
	}
}
