package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestMemorySearchDecode: the keys Talon reads decode typed; wrong types
// and values are errors naming the key; a provider Talon does not speak
// is a warning; the keys it does not read are reported unused.
func TestMemorySearchDecode(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		errs     map[string]string // path -> part of the message
		warnings map[string]string
	}{
		{name: "everything Talon reads", src: `{agents: {defaults: {memorySearch: {
			provider: "openai-compatible", model: "nomic-embed-text", inputType: "x", queryInputType: "query", documentInputType: "passage",
			remote: {baseUrl: "http://127.0.0.1:11434/v1", apiKey: "${EMB_KEY}", headers: {"X-Org": "acme"}},
			query: {maxResults: 8, minScore: 0.2, hybrid: {enabled: true, vectorWeight: 0.6, textWeight: 0.4, candidateMultiplier: 5}}}}}}`},
		{name: "a models.providers id", src: `{models: {providers: {gpu: {baseUrl: "http://10.0.0.2:8080/v1"}}}, agents: {list: [{id: "a", memorySearch: {provider: "gpu", model: "bge-m3"}}]}}`},
		{name: "none and auto", src: `{agents: {defaults: {memorySearch: {provider: "none"}}, list: [{id: "a", memorySearch: {provider: "auto"}}]}}`},
		{name: "a provider Talon does not speak", src: `{agents: {defaults: {memorySearch: {provider: "gemini"}}}}`,
			warnings: map[string]string{"agents.defaults.memorySearch.provider": `Talon speaks OpenAI-compatible embeddings`}},
		{name: "unused keys", src: `{agents: {defaults: {memorySearch: {enabled: true, sources: ["memory"], chunking: {tokens: 400}, remote: {batch: {enabled: true}}, query: {hybrid: {mmr: {enabled: true}}}}}}}`,
			warnings: map[string]string{
				"agents.defaults.memorySearch.enabled": MsgUnused, "agents.defaults.memorySearch.sources": MsgUnused,
				"agents.defaults.memorySearch.chunking": MsgUnused, "agents.defaults.memorySearch.remote.batch": MsgUnused,
				"agents.defaults.memorySearch.query.hybrid.mmr": MsgUnused,
			}},
		{name: "an unknown key", src: `{agents: {defaults: {memorySearch: {dimensions: 256}}}}`,
			warnings: map[string]string{"agents.defaults.memorySearch.dimensions": msgUnknownKey}},
		{name: "wrong types", src: `{agents: {defaults: {memorySearch: {provider: 1, remote: {headers: {A: 2}}, query: {maxResults: 2.5, hybrid: {enabled: "yes"}}}}}}`,
			errs: map[string]string{
				"agents.defaults.memorySearch.provider":             "expected string",
				"agents.defaults.memorySearch.remote.headers.A":     "expected string",
				"agents.defaults.memorySearch.query.maxResults":     "expected integer",
				"agents.defaults.memorySearch.query.hybrid.enabled": "expected boolean",
			}},
		{name: "bad values", src: `{agents: {defaults: {memorySearch: {provider: "open ai", model: "text embedding",
			queryInputType: "a\nb", query: {maxResults: 51, minScore: 1.5, hybrid: {vectorWeight: -0.1, textWeight: 2, candidateMultiplier: 0}}}}}}`,
			errs: map[string]string{
				"agents.defaults.memorySearch.provider":                         "expected a provider id",
				"agents.defaults.memorySearch.model":                            "expected a model id without spaces",
				"agents.defaults.memorySearch.queryInputType":                   "expected a short label",
				"agents.defaults.memorySearch.query.maxResults":                 "expected an integer from 1 to 50",
				"agents.defaults.memorySearch.query.minScore":                   "expected a number from 0 to 1",
				"agents.defaults.memorySearch.query.hybrid.vectorWeight":        "expected a number from 0 to 1",
				"agents.defaults.memorySearch.query.hybrid.textWeight":          "expected a number from 0 to 1",
				"agents.defaults.memorySearch.query.hybrid.candidateMultiplier": "expected an integer from 1 to 20",
			}},
		{name: "both weights 0", src: `{agents: {list: [{id: "a", memorySearch: {query: {hybrid: {vectorWeight: 0, textWeight: 0}}}}]}}`,
			errs: map[string]string{"agents.list[0].memorySearch.query.hybrid": "both 0"}},
		{name: "bad endpoints", src: `{agents: {list: [
			{id: "a", memorySearch: {remote: {baseUrl: "ftp://h/v1"}}},
			{id: "b", memorySearch: {remote: {baseUrl: "https://user:secret@h/v1"}}},
			{id: "c", memorySearch: {remote: {baseUrl: "https://h/v1?key=1"}}},
			{id: "d", memorySearch: {remote: {baseUrl: "https:///v1"}}},
			{id: "e", memorySearch: {remote: {headers: {"Bad Name": "v", "X-Ok": "a\r\nInjected: 1"}}}}]}}`,
			errs: map[string]string{
				"agents.list[0].memorySearch.remote.baseUrl":             "must be an http or https URL",
				"agents.list[1].memorySearch.remote.baseUrl":             "must not carry credentials",
				"agents.list[2].memorySearch.remote.baseUrl":             "must not have a query",
				"agents.list[3].memorySearch.remote.baseUrl":             "has no host",
				`agents.list[4].memorySearch.remote.headers["Bad Name"]`: "not an HTTP header name",
				"agents.list[4].memorySearch.remote.headers.X-Ok":        "not an HTTP header value",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, warns, err := decodeJSON5(t, tc.src)
			gotErrs := map[string]string{}
			for _, is := range issuesOf(t, err) {
				gotErrs[is.Path] = is.Message
			}
			compare(t, "errors", tc.errs, gotErrs)
			gotWarns := map[string]string{}
			for _, w := range warns {
				gotWarns[w.Path] = w.Message
			}
			compare(t, "warnings", tc.warnings, gotWarns)
			if strings.Contains(err2s(err), "secret") {
				t.Errorf("an error shows the URL's password: %v", err)
			}
		})
	}
}

func err2s(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// compare checks got has exactly want's paths, each message containing
// want's text.
func compare(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for p, msg := range want {
		if g, ok := got[p]; !ok || !strings.Contains(g, msg) {
			t.Errorf("%s at %s = %q, want one containing %q (all: %v)", what, p, g, msg, got)
		}
	}
	for p, msg := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected %s at %s: %s", what, p, msg)
		}
	}
}

// TestAgentMemorySearch: an agent's block overrides the defaults key by
// key, headers whole; Ranking fills the defaults and scales the weights.
func TestAgentMemorySearch(t *testing.T) {
	c, _, err := decodeJSON5(t, `{agents: {
		defaults: {memorySearch: {provider: "openai", model: "text-embedding-3-small", remote: {apiKey: "${K}", headers: {A: "1", B: "2"}},
			query: {maxResults: 4, hybrid: {vectorWeight: 0.6, textWeight: 0.2}}}},
		list: [{id: "main"},
			{id: "local", memorySearch: {provider: "ollama", remote: {baseUrl: "http://127.0.0.1:11434/v1", headers: {C: "3"}}, query: {minScore: 0.3, hybrid: {textWeight: 0.6, candidateMultiplier: 2}}}},
			{id: "vec", memorySearch: {query: {hybrid: {enabled: false}}}}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	f := func(x float64) *float64 { return &x }
	n := func(x int) *int { return &x }
	tests := []struct {
		agent   string
		want    MemorySearch
		ranking Ranking
	}{
		{"main", MemorySearch{Provider: "openai", Model: "text-embedding-3-small",
			Remote: &MemoryRemote{APIKey: "${K}", Headers: map[string]string{"A": "1", "B": "2"}},
			Query:  &MemoryQuery{MaxResults: n(4), Hybrid: &MemoryHybrid{VectorWeight: f(0.6), TextWeight: f(0.2)}}},
			Ranking{VectorWeight: 0.75, TextWeight: 0.25, CandidateMultiplier: 4, MaxResults: 4}},
		{"local", MemorySearch{Provider: "ollama", Model: "text-embedding-3-small",
			Remote: &MemoryRemote{BaseURL: "http://127.0.0.1:11434/v1", APIKey: "${K}", Headers: map[string]string{"C": "3"}},
			Query:  &MemoryQuery{MaxResults: n(4), MinScore: f(0.3), Hybrid: &MemoryHybrid{VectorWeight: f(0.6), TextWeight: f(0.6), CandidateMultiplier: n(2)}}},
			Ranking{VectorWeight: 0.5, TextWeight: 0.5, CandidateMultiplier: 2, MaxResults: 4, MinScore: 0.3}},
		{"vec", MemorySearch{Provider: "openai", Model: "text-embedding-3-small",
			Remote: &MemoryRemote{APIKey: "${K}", Headers: map[string]string{"A": "1", "B": "2"}},
			Query:  &MemoryQuery{MaxResults: n(4), Hybrid: &MemoryHybrid{Enabled: new(false), VectorWeight: f(0.6), TextWeight: f(0.2)}}},
			Ranking{VectorWeight: 1, TextWeight: 0, CandidateMultiplier: 4, MaxResults: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			got := c.AgentMemorySearch(tc.agent)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AgentMemorySearch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ranking, got.Ranking(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Ranking (-want +got):\n%s", diff)
			}
		})
	}
	if got := (MemorySearch{}).Ranking(); got != (Ranking{VectorWeight: DefaultMemoryVectorWeight, TextWeight: DefaultMemoryTextWeight, CandidateMultiplier: DefaultMemoryCandidateMultiplier}) {
		t.Errorf("default Ranking = %+v", got)
	}
	var none *Config
	if got := none.AgentMemorySearch("main"); got.Provider != "" || got.Remote != nil {
		t.Errorf("nil config: %+v", got)
	}
}
