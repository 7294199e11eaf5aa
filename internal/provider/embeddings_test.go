package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/netguard"
)

// embedAnswer answers an embeddings request with, for input i, the
// vector [i, len(input)], listing the items in reverse order so that the
// client must sort them by index.
func embedAnswer(w http.ResponseWriter, r *http.Request) {
	var req embeddingsRequest
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var items []string
	for i := len(req.Input) - 1; i >= 0; i-- {
		items = append(items, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%d,%d]}`, i, i, len(req.Input[i])))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[%s],"model":%q}`, strings.Join(items, ","), req.Model)
}

// TestEmbed: texts go in batches of EmbeddingsBatch to /embeddings with
// the model, key, headers and input type; vectors come back in input
// order whatever the order of the answer's items.
func TestEmbed(t *testing.T) {
	f := newFakeServer(t, embedAnswer)
	e := NewEmbeddings(EmbeddingsOptions{Name: "local", BaseURL: f.URL + "/v1/", APIKey: "sk-1", Headers: map[string]string{"X-Org": "acme"},
		Model: "m1", QueryInputType: "query", DocumentInputType: "passage", HTTPClient: f.Client()})
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = strings.Repeat("x", i)
	}
	vs, err := e.Embed(context.Background(), texts, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		// Batch k holds inputs 64k..: the fake numbers them from 0.
		if want := []float32{float32(i % EmbeddingsBatch), float32(i)}; !cmp.Equal(v, want) {
			t.Fatalf("vector %d = %v, want %v", i, v, want)
		}
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests for 150 texts, want 3", len(reqs))
	}
	for i, n := range []int{64, 64, 22} {
		r := reqs[i]
		if r.Path != "/v1/embeddings" || len(r.Body["input"].([]any)) != n || r.Body["model"] != "m1" || r.Body["input_type"] != "passage" {
			t.Errorf("request %d: %s %v", i, r.Path, r.Body)
		}
		if r.Header.Get("Authorization") != "Bearer sk-1" || r.Header.Get("X-Org") != "acme" {
			t.Errorf("request %d headers: %v", i, r.Header)
		}
	}
	if _, err := e.Embed(context.Background(), []string{"q"}, true); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[3].Body["input_type"]; got != "query" {
		t.Errorf("query input_type = %v", got)
	}
	if e.Model() == NewEmbeddings(EmbeddingsOptions{Name: "local", BaseURL: f.URL + "/v1", Model: "m2"}).Model() {
		t.Error("two models have one identity")
	}
}

// TestEmbedBatchesBySize: a batch also stops before its texts pass
// embeddingsBatchBytes, but always holds at least one text.
func TestEmbedBatchesBySize(t *testing.T) {
	f := newFakeServer(t, jsonReply(200, `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[2]}]}`), jsonReply(200, `{"data":[{"index":0,"embedding":[3]}]}`))
	e := NewEmbeddings(EmbeddingsOptions{BaseURL: f.URL, Model: "m", HTTPClient: f.Client()})
	big := strings.Repeat("a", embeddingsBatchBytes/2)
	vs, err := e.Embed(context.Background(), []string{big, big, big}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || len(f.requests()) != 2 {
		t.Fatalf("%d vectors in %d requests; want 3 in 2", len(vs), len(f.requests()))
	}
}

// TestEmbedBadAnswers: an answer the client cannot use is an *Error
// saying what is wrong; a 5xx is retried.
func TestEmbedBadAnswers(t *testing.T) {
	tests := []struct {
		name     string
		handlers []http.HandlerFunc
		want     string // part of the error; "" for success
		status   int
		reqs     int
	}{
		{"retries a 503", []http.HandlerFunc{jsonReply(503, `{"error":{"message":"loading model"}}`), jsonReply(200, `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1]}]}`)}, "", 0, 2},
		{"no index: answer order", []http.HandlerFunc{jsonReply(200, `{"data":[{"embedding":[1,0]},{"embedding":[0,1]}]}`)}, "", 0, 1},
		{"400 is final", []http.HandlerFunc{jsonReply(400, `{"error":{"message":"model not found"}}`)}, "model not found", 400, 1},
		{"too few vectors", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":[1]}]}`)}, "1 vectors for 2 inputs", 0, 1},
		{"repeated index", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}`)}, "out of range or repeated", 0, 1},
		{"index out of range", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":[1]},{"index":7,"embedding":[2]}]}`)}, "out of range or repeated", 0, 1},
		{"some items without an index", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":1,"embedding":[1]},{"embedding":[2]}]}`)}, "item 1 has no index", 0, 1},
		{"base64", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":"AACAPw=="},{"index":1,"embedding":"AACAPw=="}]}`)}, "not base64", 0, 1},
		{"empty vector", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1]}]}`)}, "0 dimensions", 0, 1},
		{"not numbers", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":["a"]},{"index":1,"embedding":[1]}]}`)}, "not an array of numbers", 0, 1},
		{"beyond float32", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":[1e300]},{"index":1,"embedding":[1]}]}`)}, "not a finite number", 0, 1},
		{"dimensions differ", []http.HandlerFunc{jsonReply(200, `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`)}, "vector 1 has 1 dimensions", 0, 1},
		{"not JSON", []http.HandlerFunc{jsonReply(200, `<html>`)}, "not an embeddings response", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.handlers...)
			e := NewEmbeddings(EmbeddingsOptions{Name: "emb", BaseURL: f.URL, Model: "m", HTTPClient: f.Client()})
			vs, err := e.Embed(context.Background(), []string{"a", "b"}, false)
			if n := len(f.requests()); n != tc.reqs {
				t.Errorf("%d requests, want %d", n, tc.reqs)
			}
			if tc.want == "" {
				if err != nil || len(vs) != 2 || !cmp.Equal(vs[0], []float32{1, 0}) {
					t.Fatalf("Embed = %v, %v", vs, err)
				}
				return
			}
			var e2 *Error
			if !errors.As(err, &e2) || e2.Provider != "emb" || e2.Status != tc.status || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want an *Error of emb, status %d, containing %q", err, tc.status, tc.want)
			}
		})
	}
}

// TestResolveEmbeddings: which endpoint, key, headers and model a
// memorySearch block gives, and the errors that name what to set.
func TestResolveEmbeddings(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-env", "EMB": "sk-emb", "PROV": "sk-prov"}
	opts := Options{Env: func(k string) string { return env[k] }}
	tests := []struct {
		name, cfg string
		ms        config.MemorySearch
		url, key  string
		headers   map[string]string
		model     string
		err       string
	}{
		{name: "none", ms: config.MemorySearch{Provider: "none"}},
		{name: "unset", ms: config.MemorySearch{}},
		{name: "openai", ms: config.MemorySearch{Provider: "openai"}, url: DefaultOpenAIBaseURL + "/embeddings", key: "sk-env", model: DefaultOpenAIEmbeddingsModel},
		{name: "auto is openai", ms: config.MemorySearch{Provider: "auto", Model: "text-embedding-3-large"}, url: DefaultOpenAIBaseURL + "/embeddings", key: "sk-env", model: "text-embedding-3-large"},
		{name: "openai's configured entry", cfg: `{models: {providers: {openai: {baseUrl: "https://proxy.example/v1", apiKey: "${PROV}", headers: {"X-A": "1"}}}}}`,
			ms: config.MemorySearch{Provider: "openai"}, url: "https://proxy.example/v1/embeddings", key: "sk-prov", headers: map[string]string{"X-A": "1"}, model: DefaultOpenAIEmbeddingsModel},
		{name: "openai's key does not follow remote.baseUrl", ms: config.MemorySearch{Provider: "openai", Remote: &config.MemoryRemote{BaseURL: "https://elsewhere.example/v1"}},
			url: "https://elsewhere.example/v1/embeddings", key: "", model: DefaultOpenAIEmbeddingsModel},
		{name: "nor do the provider's headers", cfg: `{models: {providers: {gpu: {baseUrl: "http://10.0.0.2:8080/v1", apiKey: "lit", headers: {"X-A": "1"}}}}}`,
			ms:  config.MemorySearch{Provider: "gpu", Model: "bge", Remote: &config.MemoryRemote{BaseURL: "http://10.0.0.3:8080/v1", Headers: map[string]string{"X-B": "2"}}},
			url: "http://10.0.0.3:8080/v1/embeddings", key: "", headers: map[string]string{"X-B": "2"}, model: "bge"},
		{name: "remote.apiKey goes to remote.baseUrl", ms: config.MemorySearch{Provider: "openai", Remote: &config.MemoryRemote{BaseURL: "https://elsewhere.example/v1", APIKey: "${EMB}"}},
			url: "https://elsewhere.example/v1/embeddings", key: "sk-emb", model: DefaultOpenAIEmbeddingsModel},
		{name: "a configured provider", cfg: `{models: {providers: {gpu: {baseUrl: "http://10.0.0.2:8080/v1/", apiKey: "lit", headers: {"X-A": "1"}}}}}`,
			ms: config.MemorySearch{Provider: "gpu", Model: "bge", Remote: &config.MemoryRemote{Headers: map[string]string{"X-B": "2"}}}, url: "http://10.0.0.2:8080/v1/embeddings", key: "lit", headers: map[string]string{"X-A": "1", "X-B": "2"}, model: "bge"},
		{name: "ollama", ms: config.MemorySearch{Provider: "ollama"}, url: DefaultOllamaBaseURL + "/embeddings", model: DefaultOllamaEmbeddingsModel},
		{name: "openai-compatible", ms: config.MemorySearch{Provider: "openai-compatible", Model: "e5", Remote: &config.MemoryRemote{BaseURL: "http://127.0.0.1:8080/v1", APIKey: "${EMB}"}},
			url: "http://127.0.0.1:8080/v1/embeddings", key: "sk-emb", model: "e5"},

		{name: "openai without a key", ms: config.MemorySearch{Provider: "openai", Remote: &config.MemoryRemote{APIKey: ""}}, cfg: `{models: {providers: {openai: {apiKey: ""}}}}`,
			err: "no API key: set OPENAI_API_KEY"},
		{name: "openai-compatible without an endpoint", ms: config.MemorySearch{Provider: "openai-compatible", Model: "e5"}, err: "set memorySearch.remote.baseUrl"},
		{name: "openai-compatible without a model", ms: config.MemorySearch{Provider: "openai-compatible", Remote: &config.MemoryRemote{BaseURL: "http://h/v1"}}, err: "set memorySearch.model"},
		{name: "unknown provider", ms: config.MemorySearch{Provider: "gemini"}, err: `provider "gemini" is neither built in`},
		{name: "anthropic has no embeddings", cfg: `{models: {providers: {claude: {api: "anthropic-messages", baseUrl: "https://api.anthropic.com"}}}}`,
			ms: config.MemorySearch{Provider: "claude", Model: "x"}, err: "has no OpenAI-compatible embeddings endpoint"},
		{name: "a key variable that is not set", ms: config.MemorySearch{Provider: "openai-compatible", Model: "e5", Remote: &config.MemoryRemote{BaseURL: "http://h/v1", APIKey: "${NOPE}"}},
			err: "remote.apiKey refers to NOPE, which is not set"},
		{name: "not an http URL", ms: config.MemorySearch{Provider: "openai-compatible", Model: "e5", Remote: &config.MemoryRemote{BaseURL: "file:///etc/passwd"}}, err: "is not an http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg *config.Config
			if tc.cfg != "" {
				cfg = parseConfig(t, tc.cfg)
			}
			if tc.err != "" {
				env["OPENAI_API_KEY"] = ""
				defer func() { env["OPENAI_API_KEY"] = "sk-env" }()
			}
			e, err := ResolveEmbeddings(cfg, tc.ms, opts)
			if tc.err != "" {
				var re *ResolveError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "sk-") {
					t.Fatalf("err = %v; want a *ResolveError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.url == "" {
				if e != nil {
					t.Fatalf("got a client for %+v", tc.ms)
				}
				return
			}
			want := http.Header{"User-Agent": {"talon"}}
			if tc.key != "" {
				want.Set("Authorization", "Bearer "+tc.key)
			}
			for k, v := range tc.headers {
				want.Set(k, v)
			}
			if e.url != tc.url || e.model != tc.model || !cmp.Equal(e.post.Header, want) {
				t.Errorf("client %s %s %v; want %s %s %v", e.url, e.model, e.post.Header, tc.url, tc.model, want)
			}
		})
	}
}

// TestResolveEmbeddingsForTenant: a tenant's embeddings client reads keys
// from the tenant's env, the operator's built-in key only at OpenAI's own
// host, and never dials a private address.
func TestResolveEmbeddingsForTenant(t *testing.T) {
	tenantEnv := map[string]string{"OWN": "sk-tenant"}
	operator := map[string]string{"OPENAI_API_KEY": "sk-operator"}
	opts := Options{Env: func(k string) string { return tenantEnv[k] }, BuiltinKeys: func(k string) string { return operator[k] }, Guard: &netguard.Options{}}
	e, err := ResolveEmbeddings(nil, config.MemorySearch{Provider: "openai"}, opts)
	if err != nil || e.post.Header.Get("Authorization") != "Bearer sk-operator" {
		t.Fatalf("openai at its own host: %v, %v", e, err)
	}
	e, err = ResolveEmbeddings(nil, config.MemorySearch{Provider: "openai", Remote: &config.MemoryRemote{BaseURL: "https://evil.example/v1"}}, opts)
	if err != nil || e.post.Header.Get("Authorization") != "" {
		t.Fatalf("openai pointed elsewhere carries a key: %v, %v", e.post.Header, err)
	}
	if _, err = ResolveEmbeddings(nil, config.MemorySearch{Provider: "openai-compatible", Model: "m", Remote: &config.MemoryRemote{BaseURL: "https://x.example/v1", APIKey: "${OPENAI_API_KEY}"}}, opts); err == nil || !strings.Contains(err.Error(), "refers to OPENAI_API_KEY, which is not set") {
		t.Fatalf("a tenant named the operator's variable: %v", err)
	}

	f := newFakeServer(t, embedAnswer)
	ms := config.MemorySearch{Provider: "openai-compatible", Model: "m", Remote: &config.MemoryRemote{BaseURL: f.URL + "/v1", APIKey: "${OWN}"}}
	if e, err = ResolveEmbeddings(nil, ms, opts); err != nil {
		t.Fatal(err)
	}
	_, err = e.Embed(context.Background(), []string{"x"}, true)
	if err == nil || !strings.Contains(err.Error(), "loopback address") || len(f.requests()) != 0 {
		t.Fatalf("guarded embeddings to loopback = %v (%d requests); want refused", err, len(f.requests()))
	}
	if pe := (*Error)(nil); !errors.As(err, &pe) || pe.Temporary() {
		t.Errorf("the guard's refusal %#v is retried", err)
	}
	ap := netip.MustParseAddrPort(strings.TrimPrefix(f.URL, "http://"))
	opened := opts
	opened.Guard = &netguard.Options{Allow: []netip.AddrPort{ap}}
	if e, err = ResolveEmbeddings(nil, ms, opened); err != nil {
		t.Fatal(err)
	}
	if vs, err := e.Embed(context.Background(), []string{"x"}, true); err != nil || len(vs) != 1 {
		t.Fatalf("embeddings at the operator's exception = %v, %v", vs, err)
	}
	if got := f.requests()[0].Header.Get("Authorization"); got != "Bearer sk-tenant" {
		t.Errorf("Authorization %q", got)
	}
}
