package memory

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"talon/internal/provider"
)

// concepts are the words the fake embeddings model takes for one meaning,
// so that a query finds a passage without sharing a word with it only
// through the vectors. Each meaning has a dimension of its own.
var concepts = map[string]int{
	"car": 0, "cars": 0, "automobile": 0, "vehicle": 0, "truck": 0,
	"physician": 1, "doctor": 1, "medic": 1,
	"holiday": 2, "vacation": 2, "trip": 2,
}

const conceptDims = 3

// fakeVector is the fake model's embedding of text: a bag of its words,
// a word of concepts on its meaning's dimension and any other hashed to
// one of the rest.
func fakeVector(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range queryTerms(text) {
		if c, ok := concepts[w]; ok {
			v[c]++
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[conceptDims+int(h.Sum32()%uint32(dims-conceptDims))]++
	}
	return v
}

// fakeEmbeddings is an OpenAI-compatible embeddings server on loopback
// that answers with fakeVector and counts what it is asked.
type fakeEmbeddings struct {
	*httptest.Server
	dims int

	mu       sync.Mutex
	requests int
	inputs   []string // every input embedded, documents and queries
	models   []string
	down     bool // answer 503
	auth     []string
}

func newFakeEmbeddings(t testing.TB, dims int) *fakeEmbeddings {
	t.Helper()
	f := &fakeEmbeddings{dims: dims}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeEmbeddings) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, 400)
		return
	}
	f.mu.Lock()
	f.requests++
	down := f.down
	if !down {
		f.inputs = append(f.inputs, req.Input...)
		f.models = append(f.models, req.Model)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
	}
	dims := f.dims
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if down {
		w.WriteHeader(503)
		fmt.Fprint(w, `{"error":{"message":"the model is loading"}}`)
		return
	}
	var items []string
	for i, in := range req.Input {
		v, _ := json.Marshal(fakeVector(in, dims))
		items = append(items, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, v))
	}
	fmt.Fprintf(w, `{"object":"list","data":[%s],"model":%q}`, strings.Join(items, ","), req.Model)
}

// client is an embeddings client of model at the fake, without retries
// so that a test of a failing provider does not wait for back-off.
func (f *fakeEmbeddings) client(model string) *provider.Embeddings {
	return provider.NewEmbeddings(provider.EmbeddingsOptions{Name: "fake", BaseURL: f.URL + "/v1", Model: model, HTTPClient: f.Client(), MaxRetries: -1})
}

// embedded returns the inputs embedded since the last call.
func (f *fakeEmbeddings) embedded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.inputs
	f.inputs = nil
	return in
}

func (f *fakeEmbeddings) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeEmbeddings) setDims(n int) {
	f.mu.Lock()
	f.dims = n
	f.mu.Unlock()
}

// lastAuth is the Authorization header of the last request answered.
func (f *fakeEmbeddings) lastAuth() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.auth[len(f.auth)-1]
}

func (f *fakeEmbeddings) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// searchWith runs memory_search with opts and decodes its answer.
func searchWith(t testing.TB, ix *Index, opts Options, agent, dir string, args any) searchResult {
	t.Helper()
	var st *searchTool
	for _, tl := range ix.Tools(opts) {
		if s, ok := tl.(*searchTool); ok {
			st = s
		}
	}
	res := call(t, st, agent, dir, args)
	if res.IsError {
		t.Fatalf("memory_search %v: %s", args, res.Text)
	}
	var out searchResult
	if err := json.Unmarshal([]byte(res.Text), &out); err != nil {
		t.Fatalf("memory_search answer %s: %v", res.Text, err)
	}
	return out
}
