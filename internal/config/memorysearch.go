package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/net/http/httpguts"
)

// MemorySearch is agents.defaults.memorySearch, or an agent's own
// agents.list[].memorySearch, which overrides it key by key: the
// embeddings provider memory_search ranks by meaning with, and how it
// weighs meaning against words. OpenClaw 2026.9.6 moved the block to
// memory.search (with the same keys but the retired query.hybrid); Talon
// reads it where the OpenClaw release it follows has it.
type MemorySearch struct {
	// Provider is the embeddings provider: one of the MemoryProvider
	// constants or a models.providers id whose api is OpenAI-compatible.
	// Empty means none: Talon sends no memory text anywhere unless the
	// config says where.
	Provider string `json:"provider"`
	// Model is the embeddings model; openai and ollama have a default.
	Model  string        `json:"model"`
	Remote *MemoryRemote `json:"remote"`
	Query  *MemoryQuery  `json:"query"`
	// InputType is sent as input_type with every request; QueryInputType
	// and DocumentInputType, when set, replace it for queries and for the
	// indexed chunks (asymmetric embedding models).
	InputType         string `json:"inputType"`
	QueryInputType    string `json:"queryInputType"`
	DocumentInputType string `json:"documentInputType"`
}

// MemoryRemote is memorySearch.remote: the endpoint, when it is not the
// provider's own.
type MemoryRemote struct {
	// BaseURL is the API root; requests go to BaseURL + "/embeddings".
	BaseURL string `json:"baseUrl"`
	// APIKey is sent as a bearer token; "${NAME}" reads the env.
	APIKey  string            `json:"apiKey"`
	Headers map[string]string `json:"headers"`
}

// MemoryQuery is memorySearch.query.
type MemoryQuery struct {
	// MaxResults and MinScore are memory_search's defaults when a call
	// does not give its own.
	MaxResults *int          `json:"maxResults"`
	MinScore   *float64      `json:"minScore"`
	Hybrid     *MemoryHybrid `json:"hybrid"`
}

// MemoryHybrid is memorySearch.query.hybrid: how keyword and vector
// scores are merged.
type MemoryHybrid struct {
	// Enabled false ranks by meaning alone when embeddings work.
	Enabled      *bool    `json:"enabled"`
	VectorWeight *float64 `json:"vectorWeight"`
	TextWeight   *float64 `json:"textWeight"`
	// CandidateMultiplier times the results wanted is how many passages
	// each of the two searches contributes to the merge.
	CandidateMultiplier *int `json:"candidateMultiplier"`
}

// The memorySearch.provider values Talon knows besides models.providers
// ids.
const (
	MemoryProviderNone       = "none"
	MemoryProviderAuto       = "auto" // legacy OpenClaw; it means openai
	MemoryProviderOpenAI     = "openai"
	MemoryProviderOllama     = "ollama"
	MemoryProviderCompatible = "openai-compatible"
)

// memoryProviders are the MemoryProvider constants.
var memoryProviders = []string{MemoryProviderNone, MemoryProviderAuto, MemoryProviderOpenAI, MemoryProviderOllama, MemoryProviderCompatible}

// Defaults of memorySearch.query: OpenClaw's hybrid weights (0.7 vector,
// 0.3 text) and candidate multiplier. minScore is 0, not OpenClaw's 0.35,
// so memory_search without embeddings answers as it did before them.
const (
	DefaultMemoryVectorWeight        = 0.7
	DefaultMemoryTextWeight          = 0.3
	DefaultMemoryCandidateMultiplier = 4
	// MaxMemoryResults bounds query.maxResults, as memory_search's own
	// maxResults argument is bounded.
	MaxMemoryResults          = 50
	maxMemoryCandidateFactor  = 20
	maxMemoryInputType        = 64
	maxMemoryModel            = 200
	maxMemoryProvider         = 64
	maxMemoryHeaders          = 32
	maxMemoryHeaderValueBytes = 8192
)

// Ranking is memory_search's ranking settings with the defaults filled
// in; the weights add up to 1.
type Ranking struct {
	VectorWeight, TextWeight float64
	CandidateMultiplier      int
	// MaxResults is 0 when the config sets none (the tool's own default
	// applies); MinScore 0 keeps every match.
	MaxResults int
	MinScore   float64
}

// Ranking resolves the query settings. Weights are scaled to add up to 1
// (so scores stay within 0..1); hybrid.enabled false is vector weight 1.
func (m MemorySearch) Ranking() Ranking {
	r := Ranking{VectorWeight: DefaultMemoryVectorWeight, TextWeight: DefaultMemoryTextWeight, CandidateMultiplier: DefaultMemoryCandidateMultiplier}
	q := m.Query
	if q == nil {
		return r
	}
	if q.MaxResults != nil {
		r.MaxResults = *q.MaxResults
	}
	if q.MinScore != nil {
		r.MinScore = *q.MinScore
	}
	h := q.Hybrid
	if h == nil {
		return r
	}
	if h.VectorWeight != nil {
		r.VectorWeight = *h.VectorWeight
	}
	if h.TextWeight != nil {
		r.TextWeight = *h.TextWeight
	}
	if h.CandidateMultiplier != nil {
		r.CandidateMultiplier = *h.CandidateMultiplier
	}
	if h.Enabled != nil && !*h.Enabled {
		r.VectorWeight, r.TextWeight = 1, 0
	}
	if sum := r.VectorWeight + r.TextWeight; sum > 0 {
		r.VectorWeight, r.TextWeight = r.VectorWeight/sum, r.TextWeight/sum
	} else {
		r.VectorWeight, r.TextWeight = DefaultMemoryVectorWeight, DefaultMemoryTextWeight
	}
	return r
}

// AgentMemorySearch is the memorySearch that applies to an agent: its own
// block over agents.defaults.memorySearch, key by key as OpenClaw merges
// them (remote.headers is replaced whole).
func (c *Config) AgentMemorySearch(id string) MemorySearch {
	if c == nil {
		return MemorySearch{}
	}
	var d, o MemorySearch
	if p := c.Agents.Defaults.MemorySearch; p != nil {
		d = *p
	}
	if a, _ := c.Agent(id); a != nil && a.MemorySearch != nil {
		o = *a.MemorySearch
	}
	out := MemorySearch{
		Provider:          strings.TrimSpace(firstString(o.Provider, d.Provider)),
		Model:             strings.TrimSpace(firstString(o.Model, d.Model)),
		InputType:         strings.TrimSpace(firstString(o.InputType, d.InputType)),
		QueryInputType:    strings.TrimSpace(firstString(o.QueryInputType, d.QueryInputType)),
		DocumentInputType: strings.TrimSpace(firstString(o.DocumentInputType, d.DocumentInputType)),
	}
	if d.Remote != nil || o.Remote != nil {
		dr, or := deref(d.Remote), deref(o.Remote)
		out.Remote = &MemoryRemote{
			BaseURL: strings.TrimSpace(firstString(or.BaseURL, dr.BaseURL)),
			APIKey:  strings.TrimSpace(firstString(or.APIKey, dr.APIKey)),
			Headers: maps.Clone(dr.Headers),
		}
		if or.Headers != nil {
			out.Remote.Headers = maps.Clone(or.Headers)
		}
	}
	if d.Query != nil || o.Query != nil {
		dq, oq := deref(d.Query), deref(o.Query)
		out.Query = &MemoryQuery{MaxResults: firstPtr(oq.MaxResults, dq.MaxResults), MinScore: firstPtr(oq.MinScore, dq.MinScore)}
		if dq.Hybrid != nil || oq.Hybrid != nil {
			dh, oh := deref(dq.Hybrid), deref(oq.Hybrid)
			out.Query.Hybrid = &MemoryHybrid{
				Enabled:             firstPtr(oh.Enabled, dh.Enabled),
				VectorWeight:        firstPtr(oh.VectorWeight, dh.VectorWeight),
				TextWeight:          firstPtr(oh.TextWeight, dh.TextWeight),
				CandidateMultiplier: firstPtr(oh.CandidateMultiplier, dh.CandidateMultiplier),
			}
		}
	}
	return out
}

func firstString(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

func firstPtr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// memorySearch checks one memorySearch block at path. Whether its
// provider resolves (a models.providers entry, its key) is known only
// when it is used, as for a model reference: memory_search then ranks by
// keywords and says why. A provider Talon does not know is a warning, so
// that an OpenClaw config naming gemini or voyage still loads.
func (k *checker) memorySearch(path string, m *MemorySearch, providers map[string]Provider) {
	if m == nil {
		return
	}
	if p := strings.TrimSpace(m.Provider); p != "" {
		_, configured := providers[p]
		switch {
		case len(p) > maxMemoryProvider || strings.IndexFunc(p, badIDRune) >= 0:
			k.fail(path+".provider", fmt.Sprintf("expected a provider id: %s, or a models.providers id (got %q)", strings.Join(memoryProviders, ", "), p))
		case !slices.Contains(memoryProviders, p) && !configured:
			k.warns = append(k.warns, Issue{Path: path + ".provider", Message: fmt.Sprintf(
				"Talon speaks OpenAI-compatible embeddings: %s, or a models.providers id (got %q); memory_search ranks by keywords only", strings.Join(memoryProviders, ", "), p)})
		}
	}
	if s := m.Model; s != "" && (len(s) > maxMemoryModel || strings.IndexFunc(strings.TrimSpace(s), badIDRune) >= 0) {
		k.fail(path+".model", fmt.Sprintf("expected a model id without spaces, at most %d bytes (got %q)", maxMemoryModel, s))
	}
	for key, s := range map[string]string{"inputType": m.InputType, "queryInputType": m.QueryInputType, "documentInputType": m.DocumentInputType} {
		if len(s) > maxMemoryInputType || strings.IndexFunc(s, unicode.IsControl) >= 0 {
			k.fail(path+"."+key, fmt.Sprintf("expected a short label such as \"query\" or \"passage\" (at most %d bytes, no control characters)", maxMemoryInputType))
		}
	}
	if r := m.Remote; r != nil {
		k.memoryRemote(path+".remote", r)
	}
	if q := m.Query; q != nil {
		k.between(path+".query.maxResults", q.MaxResults, MaxMemoryResults)
		k.fraction(path+".query.minScore", q.MinScore)
		if h := q.Hybrid; h != nil {
			k.fraction(path+".query.hybrid.vectorWeight", h.VectorWeight)
			k.fraction(path+".query.hybrid.textWeight", h.TextWeight)
			if h.VectorWeight != nil && h.TextWeight != nil && *h.VectorWeight == 0 && *h.TextWeight == 0 {
				k.fail(path+".query.hybrid", "vectorWeight and textWeight are both 0: nothing would rank (to rank by meaning alone, set enabled: false)")
			}
			k.between(path+".query.hybrid.candidateMultiplier", h.CandidateMultiplier, maxMemoryCandidateFactor)
		}
	}
}

// badIDRune is a rune no provider or model id holds.
func badIDRune(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// fraction checks an optional number is from 0 to 1.
func (k *checker) fraction(path string, v *float64) {
	if v != nil && (*v < 0 || *v > 1) {
		k.fail(path, fmt.Sprintf("expected a number from 0 to 1 (got %g)", *v))
	}
}

// memoryRemote checks the endpoint: an http(s) URL with a host and
// nothing a key could hide in, and headers net/http can send.
func (k *checker) memoryRemote(path string, r *MemoryRemote) {
	if s := strings.TrimSpace(r.BaseURL); s != "" {
		u, err := url.Parse(s)
		var why string
		switch {
		case err != nil:
			why = "is not a URL"
		case u.Scheme != "http" && u.Scheme != "https":
			why = "must be an http or https URL"
		case u.Hostname() == "":
			why = "has no host"
		case u.User != nil:
			why = "must not carry credentials (use remote.apiKey)"
		case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
			why = "must not have a query or fragment"
		}
		if why != "" {
			k.fail(path+".baseUrl", fmt.Sprintf("%q %s, e.g. \"https://api.openai.com/v1\" or \"http://127.0.0.1:11434/v1\"", redactURL(s), why))
		}
	}
	if len(r.Headers) > maxMemoryHeaders {
		k.fail(path+".headers", fmt.Sprintf("%d headers; at most %d", len(r.Headers), maxMemoryHeaders))
	}
	for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
		v := r.Headers[name]
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			k.fail(JoinKey(path+".headers", name), "not an HTTP header name")
		case !httpguts.ValidHeaderFieldValue(v) || len(v) > maxMemoryHeaderValueBytes:
			k.fail(JoinKey(path+".headers", name), fmt.Sprintf("not an HTTP header value (no line breaks or control characters, at most %d bytes)", maxMemoryHeaderValueBytes))
		}
	}
}
