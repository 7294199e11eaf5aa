package provider

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"talon/internal/config"
)

// Defaults of the embeddings client.
const (
	DefaultOpenAIEmbeddingsModel = "text-embedding-3-small"
	DefaultOllamaBaseURL         = "http://127.0.0.1:11434/v1"
	DefaultOllamaEmbeddingsModel = "nomic-embed-text"
	// DefaultEmbeddingsTimeout bounds one request: a batch on a local
	// CPU server can take a while, a query should not.
	DefaultEmbeddingsTimeout = 60 * time.Second

	// EmbeddingsBatch is how many inputs one request carries at most, and
	// embeddingsBatchBytes how many bytes of them: well under OpenAI's
	// 2048 inputs and 300k tokens, small enough for a local server.
	EmbeddingsBatch      = 64
	embeddingsBatchBytes = 256 << 10
	// MaxEmbeddingDims bounds a vector's length; the largest models in use
	// have 4096.
	MaxEmbeddingDims = 16384
)

// EmbeddingsOptions configure an embeddings client.
type EmbeddingsOptions struct {
	// Name prefixes errors, as OpenAIOptions.Name does: the provider id.
	Name string
	// BaseURL is the API root; requests go to BaseURL + "/embeddings".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY"; empty sends none.
	APIKey string
	// Headers are sent with every request, after the client's own.
	Headers map[string]string
	Model   string
	// QueryInputType and DocumentInputType are sent as input_type with
	// queries and with documents when set.
	QueryInputType, DocumentInputType string
	HTTPClient                        *http.Client
	// Timeout bounds one attempt; 0 means DefaultEmbeddingsTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a temporary failure is retried. 0
	// means DefaultMaxRetries, negative none.
	MaxRetries int
}

// Embeddings is a client of an OpenAI-compatible /embeddings endpoint
// (OpenAI, ollama, llama-server, vLLM, LM Studio). It is safe for
// concurrent use.
type Embeddings struct {
	post                    PostOptions
	url, model, id          string
	queryType, documentType string
}

// NewEmbeddings returns an embeddings client. It does no I/O.
func NewEmbeddings(opts EmbeddingsOptions) *Embeddings {
	name := cmp.Or(opts.Name, "embeddings")
	base := strings.TrimRight(opts.BaseURL, "/")
	h := http.Header{}
	h.Set("User-Agent", "talon")
	if opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+opts.APIKey)
	}
	for k, v := range opts.Headers {
		h.Set(k, v)
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultEmbeddingsTimeout
	}
	return &Embeddings{
		post:      PostOptions{Name: name, Client: opts.HTTPClient, Header: h, Timeout: timeout, MaxRetries: opts.MaxRetries},
		url:       base + "/embeddings",
		model:     opts.Model,
		id:        strings.Join([]string{name, base, opts.Model, opts.DocumentInputType}, " "),
		queryType: opts.QueryInputType, documentType: opts.DocumentInputType,
	}
}

// Model identifies the vectors the client makes: the provider, endpoint,
// model and document input type. Vectors of two identities are not
// comparable, so a change of any of them means embedding anew.
func (e *Embeddings) Model() string { return e.id }

type embeddingsRequest struct {
	Model     string   `json:"model"`
	Input     []string `json:"input"`
	InputType string   `json:"input_type,omitempty"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

// Embed returns the vector of each text, in order, as the provider gave
// it (not normalised). query says the texts are search queries rather
// than documents, for models that embed the two differently. Texts are
// sent in batches of at most EmbeddingsBatch, one after the other; every
// vector has the same length.
func (e *Embeddings) Embed(ctx context.Context, texts []string, query bool) ([][]float32, error) {
	kind := e.documentType
	if query {
		kind = e.queryType
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); {
		end, size := start, 0
		for end < len(texts) && end-start < EmbeddingsBatch && (end == start || size+len(texts[end]) <= embeddingsBatchBytes) {
			size += len(texts[end])
			end++
		}
		vs, err := e.batch(ctx, texts[start:end], kind)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && len(vs[0]) != len(out[0]) {
			return nil, e.bad("vectors of %d and %d dimensions for one model", len(out[0]), len(vs[0]))
		}
		out = append(out, vs...)
		start = end
	}
	return out, nil
}

// batch embeds one request's texts.
func (e *Embeddings) batch(ctx context.Context, texts []string, kind string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{Model: e.model, Input: texts, InputType: kind})
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the embeddings request: %w", e.post.Name, err)
	}
	raw, err := PostJSON(ctx, e.post, e.url, body)
	if err != nil {
		return nil, err
	}
	var resp embeddingsResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, e.bad("the answer is not an embeddings response: %v", err)
	}
	return e.vectors(resp, len(texts))
}

// vectors checks an answer for n inputs and puts its vectors in input
// order: by index, or in the order given when no item has one.
func (e *Embeddings) vectors(resp embeddingsResponse, n int) ([][]float32, error) {
	if len(resp.Data) != n {
		return nil, e.bad("%d vectors for %d inputs", len(resp.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range resp.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		} else if resp.Data[0].Index != nil {
			return nil, e.bad("item %d has no index", i)
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, e.bad("item %d has index %d, out of range or repeated", i, at)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, e.bad("item %d: %v", i, err)
		}
		out[at] = v
	}
	dims := len(out[0])
	for i, v := range out {
		if len(v) != dims {
			return nil, e.bad("vector %d has %d dimensions, vector 0 has %d", i, len(v), dims)
		}
	}
	return out, nil
}

// decodeVector reads an embedding: a non-empty array of finite numbers
// no longer than MaxEmbeddingDims.
func decodeVector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New("the embedding is not an array of numbers (Talon asks for floats, not base64)")
	}
	var fs []float64
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, fmt.Errorf("the embedding is not an array of numbers: %w", err)
	}
	if len(fs) == 0 || len(fs) > MaxEmbeddingDims {
		return nil, fmt.Errorf("the embedding has %d dimensions; expected 1 to %d", len(fs), MaxEmbeddingDims)
	}
	v := make([]float32, len(fs))
	for i, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
			return nil, fmt.Errorf("the embedding's value %d is not a finite number", i)
		}
		v[i] = float32(f)
	}
	return v, nil
}

// bad is an answer the client cannot use; repeating the request will not
// help.
func (e *Embeddings) bad(format string, args ...any) error {
	return &Error{Provider: e.post.Name, Message: "embeddings: " + fmt.Sprintf(format, args...)}
}

// embeddingsBuiltin is an embeddings provider Talon knows without
// configuration.
type embeddingsBuiltin struct {
	baseURL, keyEnv, model string
	// keyRequired: the hosted API refuses calls without a key.
	keyRequired bool
}

var embeddingsBuiltins = map[string]embeddingsBuiltin{
	config.MemoryProviderOpenAI:     {DefaultOpenAIBaseURL, "OPENAI_API_KEY", DefaultOpenAIEmbeddingsModel, true},
	config.MemoryProviderOllama:     {DefaultOllamaBaseURL, "", DefaultOllamaEmbeddingsModel, false},
	config.MemoryProviderCompatible: {},
}

// ResolveEmbeddings builds the embeddings client of a memorySearch block
// (config.Config.AgentMemorySearch gives an agent's), or nil when it
// names no provider (none set, or "none"). The error, a *ResolveError,
// names config keys and environment variables, never their values.
//
//   - provider openai (and the legacy "auto"), ollama and
//     openai-compatible are built in; any other is a models.providers id
//     whose api is OpenAI-compatible. A configured entry of a built-in
//     name (models.providers.openai) gives its baseUrl, apiKey, headers
//     and timeoutSeconds.
//   - The endpoint is remote.baseUrl, else the provider's own.
//   - The key is remote.apiKey; else, only when the endpoint is the
//     provider's own destination (same scheme, host and port), the
//     provider's apiKey or its built-in variable (OPENAI_API_KEY) as
//     ResolveWith reads them, so that a key never follows remote.baseUrl
//     elsewhere. Headers follow the same rule, with remote.headers last.
//     "${NAME}" reads opts.Env.
//   - Every connection goes through opts.Guard when it is set.
func ResolveEmbeddings(cfg *config.Config, ms config.MemorySearch, opts Options) (*Embeddings, error) {
	env := opts.Env
	if env == nil {
		env = func(string) string { return "" }
	}
	id := strings.TrimSpace(ms.Provider)
	switch id {
	case "", config.MemoryProviderNone:
		return nil, nil
	case config.MemoryProviderAuto:
		id = config.MemoryProviderOpenAI
	}
	fail := func(format string, args ...any) error {
		return &ResolveError{Ref: id, Message: "memorySearch: " + fmt.Sprintf(format, args...)}
	}
	var pc config.Provider
	configured := false
	if cfg != nil {
		pc, configured = cfg.Models.Providers[id]
	}
	bi, known := embeddingsBuiltins[id]
	switch {
	case !known && !configured:
		return nil, fail("provider %q is neither built in (openai, ollama, openai-compatible) nor configured under models.providers", id)
	case configured && pc.API != "" && pc.API != APIOpenAICompletions:
		return nil, fail("provider %q: models.providers.%s.api %q has no OpenAI-compatible embeddings endpoint", id, id, pc.API)
	}
	own := cmp.Or(strings.TrimSpace(pc.BaseURL), bi.baseURL)
	r := ms.Remote
	if r == nil {
		r = &config.MemoryRemote{}
	}
	base := cmp.Or(strings.TrimSpace(r.BaseURL), own)
	if base == "" {
		return nil, fail("provider %q has no endpoint: set memorySearch.remote.baseUrl", id)
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fail("the endpoint of provider %q is not an http(s) URL", id)
	}
	home := own != "" && sameOrigin(base, own)

	key, err := expandKey(strings.TrimSpace(r.APIKey), env)
	if err != nil {
		return nil, fail("remote.apiKey %v", err)
	}
	if key == "" && home {
		if key, err = expandKey(strings.TrimSpace(pc.APIKey), env); err != nil {
			return nil, fail("models.providers.%s.apiKey %v", id, err)
		}
		if key == "" && bi.keyEnv != "" {
			key = strings.TrimSpace(env(bi.keyEnv))
			if key == "" && opts.BuiltinKeys != nil && sameHost(base, bi.baseURL) {
				key = strings.TrimSpace(opts.BuiltinKeys(bi.keyEnv))
			}
		}
	}
	if key == "" && bi.keyRequired && sameHost(base, bi.baseURL) {
		return nil, fail("provider %q: no API key: set %s, models.providers.%s.apiKey or memorySearch.remote.apiKey", id, bi.keyEnv, id)
	}
	headers := map[string]string{}
	if home {
		for k, v := range pc.Headers {
			headers[k] = v
		}
	}
	for k, v := range r.Headers {
		headers[k] = v
	}
	model := cmp.Or(strings.TrimSpace(ms.Model), bi.model)
	if model == "" {
		return nil, fail("provider %q has no default model: set memorySearch.model", id)
	}
	var timeout time.Duration
	if pc.TimeoutSeconds != nil && *pc.TimeoutSeconds > 0 {
		timeout = time.Duration(*pc.TimeoutSeconds * float64(time.Second))
	}
	var client *http.Client
	if opts.Guard != nil {
		client = guardedClient(*opts.Guard)
	}
	return NewEmbeddings(EmbeddingsOptions{
		Name: id, BaseURL: base, APIKey: key, Headers: headers, Model: model,
		QueryInputType:    cmp.Or(ms.QueryInputType, ms.InputType),
		DocumentInputType: cmp.Or(ms.DocumentInputType, ms.InputType),
		HTTPClient:        client, Timeout: timeout,
	}), nil
}

// expandKey reads a key written "${NAME}" from env; it is an error when
// NAME is not set.
func expandKey(key string, env func(string) string) (string, error) {
	m := envRef.FindStringSubmatch(key)
	if m == nil {
		return key, nil
	}
	v := strings.TrimSpace(env(m[1]))
	if v == "" {
		return "", fmt.Errorf("refers to %s, which is not set", m[1])
	}
	return v, nil
}

// sameOrigin reports whether two URLs have the same scheme, host and port.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Hostname(), ub.Hostname()) && port(ua) == port(ub)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
