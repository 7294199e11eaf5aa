package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/netguard"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/tools"
)

// memoryFiles are notes in which each query of TestSearchByMeaning has
// one passage it means.
var memoryFiles = map[string]string{
	"memory/cars.md":   "# Garage\n\nI bought a new car in May; it needs new tyres before winter.\n",
	"memory/health.md": "# Health\n\nThe physician said to walk every day and to sleep more.\n",
	"MEMORY.md":        "# Plans\n\nA vacation in Portugal in August, with the whole family.\n",
	"memory/misc.md":   "# Garden\n\nThe tomatoes need water every evening in July.\n",
}

func writeAll(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		write(t, dir, p, c)
	}
}

// TestSearchByMeaning: with embeddings a query finds the passage it
// means without sharing a word with it; without, memory_search ranks by
// keywords as before; both rank the passage that has the words first.
func TestSearchByMeaning(t *testing.T) {
	f := newFakeEmbeddings(t, 256)
	ix := open(t)
	dir := t.TempDir()
	writeAll(t, dir, memoryFiles)
	hybrid := Options{Embedder: f.client("fake-embed")}
	vectorOnly := Options{Embedder: f.client("fake-embed"), Ranking: config.Ranking{VectorWeight: 1, CandidateMultiplier: 4}}
	for _, tc := range []struct {
		name  string
		opts  Options
		query string
		top   string // "" for no results
		mode  string
	}{
		{"no shared word, by meaning", hybrid, "automobile", "memory/cars.md", modeHybrid},
		{"no shared word, by keywords", Options{}, "automobile", "", modeKeyword},
		{"a synonym and an unrelated word", hybrid, "doctor appointment", "memory/health.md", modeHybrid},
		{"words and meaning", hybrid, "holiday Portugal", "MEMORY.md", modeHybrid},
		{"words alone still rank", hybrid, "tomatoes", "memory/misc.md", modeHybrid},
		{"keywords as before", Options{}, "tomatoes", "memory/misc.md", modeKeyword},
		{"meaning alone", vectorOnly, "medic", "memory/health.md", modeVector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := searchWith(t, ix, tc.opts, "alice", dir, q(tc.query))
			if r.Mode != tc.mode {
				t.Errorf("mode %q, want %q (note %q)", r.Mode, tc.mode, r.Note)
			}
			if tc.top == "" {
				if len(r.Results) != 0 {
					t.Errorf("results %v, want none", paths(r))
				}
				return
			}
			if len(r.Results) == 0 || r.Results[0].Path != tc.top {
				t.Fatalf("results %v (%+v), want %s first", paths(r), r.Results, tc.top)
			}
			for i, h := range r.Results {
				if h.Score <= 0 || h.Score > 1 || (i > 0 && h.Score > r.Results[i-1].Score) {
					t.Errorf("scores not in (0,1] and descending: %+v", r.Results)
				}
			}
			if strings.Contains(r.Note, "keywords only") {
				t.Errorf("note %q", r.Note)
			}
		})
	}
	// Another agent's vectors are not alice's.
	bob := t.TempDir()
	write(t, bob, "MEMORY.md", "The truck is parked at the depot.\n")
	if r := searchWith(t, ix, hybrid, "bob", bob, q("automobile")); !slices.Equal(paths(r), []string{"MEMORY.md"}) {
		t.Errorf("bob: %v", paths(r))
	}
	for _, h := range searchWith(t, ix, hybrid, "alice", dir, map[string]any{"query": "automobile truck", "maxResults": 50}).Results {
		if strings.Contains(h.Snippet, "truck") {
			t.Errorf("alice sees bob's memory: %+v", h)
		}
	}
}

// section is a markdown section long enough to be a chunk of its own.
func section(title, words string) string {
	return "# " + title + "\n\n" + strings.Repeat(words+" ", 400/len(words)+1) + "\n\n"
}

// TestReembedOnlyChanged: a chunk is embedded once; an edit embeds the
// chunks whose text changed, not the file's others; a touch, a copy of a
// text the agent already has and an unchanged search embed nothing but
// the query; a removed file takes its vectors with it.
func TestReembedOnlyChanged(t *testing.T) {
	f := newFakeEmbeddings(t, 64)
	ix := open(t)
	dir := t.TempDir()
	opts := Options{Embedder: f.client("m")}
	a1, a2, b := section("One", "alpha beta"), section("Two", "gamma delta"), section("Three", "epsilon")
	write(t, dir, "memory/a.md", a1+a2)
	write(t, dir, "memory/b.md", b)
	const query = "alpha"
	docs := func() []string {
		var out []string
		for _, in := range f.embedded() {
			if in != query {
				out = append(out, strings.SplitN(in, "\n", 2)[0])
			}
		}
		slices.Sort(out)
		return out
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		name   string
		change func()
		want   []string // first lines of the documents embedded
	}{
		{"first search embeds every chunk", func() {}, []string{"# One", "# Three", "# Two"}},
		{"nothing changed", func() {}, nil},
		{"one section edited", func() { write(t, dir, "memory/a.md", a1+section("Two", "gamma changed")) }, []string{"# Two"}},
		{"touched only", func() { touch(t, dir, "memory/b.md", t0) }, nil},
		{"a copy of a text it has", func() { write(t, dir, "memory/c.md", b) }, nil},
		{"a file removed", func() { os.Remove(filepath.Join(dir, "memory/a.md")) }, nil},
	}
	for _, s := range steps {
		s.change()
		r := searchWith(t, ix, opts, "main", dir, q(query))
		if r.Mode != modeHybrid {
			t.Fatalf("%s: mode %q, note %q", s.name, r.Mode, r.Note)
		}
		if got := docs(); !slices.Equal(got, s.want) {
			t.Errorf("%s: embedded %q, want %q", s.name, got, s.want)
		}
	}
	var vecs, texts int
	ix.r.QueryRow(`SELECT count(*) FROM vectors WHERE agent = 'main'`).Scan(&vecs)
	ix.r.QueryRow(`SELECT count(DISTINCT hash) FROM chunks WHERE agent = 'main'`).Scan(&texts)
	if vecs != 1 || texts != 1 {
		t.Errorf("%d vectors for %d distinct texts; want the one text of b.md and c.md", vecs, texts)
	}
}

// TestModelChange: another model embeds every chunk anew and its vectors
// replace the old model's; the request names the model.
func TestModelChange(t *testing.T) {
	f := newFakeEmbeddings(t, 64)
	ix := open(t)
	dir := t.TempDir()
	writeAll(t, dir, memoryFiles)
	for i, model := range []string{"m1", "m2", "m1"} {
		r := searchWith(t, ix, Options{Embedder: f.client(model)}, "main", dir, q("automobile"))
		if len(r.Results) == 0 || r.Results[0].Path != "memory/cars.md" {
			t.Errorf("%s: %v", model, paths(r))
		}
		if n := len(f.embedded()); n != len(memoryFiles)+1 {
			t.Errorf("step %d, model %s: %d inputs embedded, want every chunk and the query (%d)", i, model, n, len(memoryFiles)+1)
		}
		var models []string
		rows, _ := ix.r.Query(`SELECT DISTINCT model FROM vectors`)
		for rows.Next() {
			var m string
			rows.Scan(&m)
			models = append(models, m)
		}
		rows.Close()
		if want := []string{f.client(model).Model()}; !slices.Equal(models, want) {
			t.Errorf("models stored %q, want %q", models, want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := f.models[len(f.models)-1]; got != "m1" {
		t.Errorf("request model %q", got)
	}
}

// TestProviderDown: an embeddings provider that fails, at indexing or at
// the query, leaves memory_search ranking by keywords with a note; it is
// not called again until the back-off has passed, then ranking by
// meaning resumes.
func TestProviderDown(t *testing.T) {
	f := newFakeEmbeddings(t, 64)
	ix := open(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ix.now = func() time.Time { return now }
	var logged strings.Builder
	ix.SetLog(slog.New(slog.NewTextHandler(&logged, nil)))
	dir := t.TempDir()
	writeAll(t, dir, memoryFiles)
	opts := Options{Embedder: f.client("m")}
	keywordsOnly := func(step string, wantRequests int) {
		t.Helper()
		r := searchWith(t, ix, opts, "main", dir, q("car automobile"))
		if r.Mode != modeKeyword || !slices.Equal(paths(r), []string{"memory/cars.md"}) ||
			!strings.Contains(r.Note, "ranked by keywords only: the embeddings provider failed (fake: 503") || !strings.Contains(r.Note, "12:01:00 UTC") {
			t.Errorf("%s: %+v", step, r)
		}
		if n := f.count(); n != wantRequests {
			t.Errorf("%s: %d requests to the provider, want %d", step, n, wantRequests)
		}
	}
	f.setDown(true)
	keywordsOnly("down while indexing", 1)
	now = now.Add(30 * time.Second)
	keywordsOnly("within the back-off", 1)
	if n := strings.Count(logged.String(), "the embeddings provider failed"); n != 1 || !strings.Contains(logged.String(), "503") {
		t.Errorf("%d log lines, want one with the error:\n%s", n, logged.String())
	}

	f.setDown(false)
	now = now.Add(retryAfterFailure)
	r := searchWith(t, ix, opts, "main", dir, q("automobile"))
	if r.Mode != modeHybrid || len(r.Results) == 0 || r.Results[0].Path != "memory/cars.md" || r.Note != "" {
		t.Fatalf("after the back-off: %+v", r)
	}

	// Indexed; now only the query's embedding fails.
	f.setDown(true)
	before := f.count()
	r = searchWith(t, ix, opts, "main", dir, q("car automobile"))
	if r.Mode != modeKeyword || !strings.Contains(r.Note, "embeddings provider failed") || f.count() != before+1 {
		t.Errorf("query embedding down: %+v, %d requests", r, f.count()-before)
	}

	// A provider the config names but that does not resolve.
	r = searchWith(t, ix, Options{Problem: `provider "gemini" is neither built in`}, "main", dir, q("car"))
	if r.Mode != modeKeyword || len(r.Results) != 1 || !strings.Contains(r.Note, `not usable: provider "gemini"`) {
		t.Errorf("unresolved provider: %+v", r)
	}
}

// TestEmbeddingSpreadOverSearches: one search embeds at most
// maxEmbedPerSearch chunks; the others rank by keywords, said in the
// note, until a later search embeds them.
func TestEmbeddingSpreadOverSearches(t *testing.T) {
	f := newFakeEmbeddings(t, 32)
	ix := open(t)
	dir := t.TempDir()
	n := maxEmbedPerSearch + 6
	for i := range n {
		write(t, dir, fmt.Sprintf("memory/%04d.md", i), fmt.Sprintf("note number %d\n", i))
	}
	opts := Options{Embedder: f.client("m")}
	r := searchWith(t, ix, opts, "main", dir, q("note"))
	if got := len(f.embedded()); got != maxEmbedPerSearch+1 || !strings.Contains(r.Note, "6 passages have no embedding yet") {
		t.Errorf("first search: %d embedded, note %q", got, r.Note)
	}
	r = searchWith(t, ix, opts, "main", dir, q("note"))
	if got := len(f.embedded()); got != 7 || r.Note != "" {
		t.Errorf("second search: %d embedded, note %q", got, r.Note)
	}
}

// TestVectorLimit: an agent has at most maxVectors vectors; the chunks
// beyond rank by keywords alone, and every search says so.
func TestVectorLimit(t *testing.T) {
	f := newFakeEmbeddings(t, 32)
	ix := open(t)
	ix.setBytes = 3 * 4 * 32 // three vectors of 32 dimensions
	dir := t.TempDir()
	write(t, dir, "memory/a.md", "first note about a car\n")
	write(t, dir, "memory/b.md", "second note\n")
	opts := Options{Embedder: f.client("m")}
	if r := searchWith(t, ix, opts, "main", dir, q("automobile")); r.Note != "" || len(f.embedded()) != 3 {
		t.Fatalf("within the limit: %+v", r)
	}
	for i := range 3 {
		write(t, dir, fmt.Sprintf("memory/c%d.md", i), fmt.Sprintf("another note %d\n", i))
	}
	for _, step := range []string{"embeds up to the limit", "says so again"} {
		r := searchWith(t, ix, opts, "main", dir, q("automobile"))
		if !strings.Contains(r.Note, "2 passages rank by keywords alone: an agent's memory search holds at most 3 vectors") || r.Mode != modeHybrid {
			t.Errorf("%s: %+v", step, r)
		}
		var n int
		ix.r.QueryRow(`SELECT count(*) FROM vectors`).Scan(&n)
		if n != 3 {
			t.Errorf("%s: %d vectors stored", step, n)
		}
	}
	if got := len(f.embedded()); got != 1+1+1 {
		t.Errorf("%d inputs embedded; want one chunk and two queries", got)
	}
}

// TestVectorLengthChange: a provider that starts making vectors of
// another length under the same identity has the old ones dropped and
// embedded again.
func TestVectorLengthChange(t *testing.T) {
	f := newFakeEmbeddings(t, 32)
	ix := open(t)
	dir := t.TempDir()
	writeAll(t, dir, memoryFiles)
	opts := Options{Embedder: f.client("m")}
	searchWith(t, ix, opts, "main", dir, q("automobile"))
	f.embedded()
	f.setDims(48)
	r := searchWith(t, ix, opts, "main", dir, q("automobile"))
	if !strings.Contains(r.Note, fmt.Sprintf("%d passages have no embedding yet", len(memoryFiles))) {
		t.Errorf("after the change: %+v", r)
	}
	r = searchWith(t, ix, opts, "main", dir, q("automobile"))
	if got := len(f.embedded()); got != 2+len(memoryFiles) || r.Note != "" || r.Results[0].Path != "memory/cars.md" {
		t.Errorf("embedded again: %d inputs, %+v", got, r)
	}
}

// TestMemorySearchConfig: memory-core reads the agent's memorySearch,
// with its key from the config's env; a tenant's embeddings endpoint on
// loopback is never dialled, unless the operator opened that address.
func TestMemorySearchConfig(t *testing.T) {
	f := newFakeEmbeddings(t, 64)
	ap := netip.MustParseAddrPort(strings.TrimPrefix(f.URL, "http://"))
	src := `{env: {EMB_KEY: "sk-tenant"}, agents: {defaults: {memorySearch: {provider: "openai-compatible", model: "m",
		remote: {baseUrl: "` + f.URL + `/v1", apiKey: "${EMB_KEY}"}, query: {maxResults: 2}}},
		list: [{id: "main"}, {id: "plain", memorySearch: {provider: "none"}}]}}`
	file, err := config.Parse("talon.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		guard    *netguard.Options
		agent    string
		mode     string
		requests bool
		note     string
	}{
		{"operator", nil, "main", modeHybrid, true, ""},
		{"provider none", nil, "plain", modeKeyword, false, ""},
		{"tenant: loopback refused", &netguard.Options{}, "main", modeKeyword, false, "loopback address"},
		{"tenant: the operator's exception", &netguard.Options{Allow: []netip.AddrPort{ap}}, "main", modeHybrid, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := plugin.NewHost(plugin.Options{StateDir: t.TempDir(), Guard: tc.guard})
			t.Cleanup(func() { h.Close() })
			dir := t.TempDir()
			writeAll(t, dir, memoryFiles)
			rt := h.Configure(file.Config).Tools(context.Background(), plugin.Run{AgentID: tc.agent, AgentDir: dir})
			st, ok := rt.Get(policy.MemoryPlugin, "memory_search")
			if !ok {
				t.Fatal("no memory_search")
			}
			before := f.count()
			res, err := st.Run(context.Background(), &tools.Env{AgentID: tc.agent, AgentDir: dir}, []byte(`{"query":"car automobile vacation"}`))
			if err != nil || res.IsError {
				t.Fatalf("memory_search: %v %s", err, res.Text)
			}
			r := decode(t, res.Text)
			if r.Mode != tc.mode || !strings.Contains(r.Note, tc.note) || (tc.note == "" && r.Note != "") {
				t.Errorf("mode %q, note %q; want %q, %q", r.Mode, r.Note, tc.mode, tc.note)
			}
			if got := f.count() > before; got != tc.requests {
				t.Errorf("the embeddings endpoint was called: %v, want %v", got, tc.requests)
			}
			if len(r.Results) > 2 {
				t.Errorf("%d results; query.maxResults is 2", len(r.Results))
			}
			if got := f.lastAuth(); tc.requests && got != "Bearer sk-tenant" {
				t.Errorf("Authorization %q", got)
			}
		})
	}
}

// TestMemorySearchKeys: the default tenant's provider reads its key from
// the gateway's environment; a tenant's never does, even at the same
// endpoint.
func TestMemorySearchKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-operator-process")
	f := newFakeEmbeddings(t, 64)
	ap := netip.MustParseAddrPort(strings.TrimPrefix(f.URL, "http://"))
	file, err := config.Parse("talon.json", []byte(`{models: {providers: {openai: {baseUrl: "`+f.URL+`/v1"}}},
		agents: {defaults: {memorySearch: {provider: "openai"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts plugin.Options
		auth string
	}{
		{"default tenant", plugin.Options{ProcessEnv: true}, "Bearer sk-operator-process"},
		{"tenant", plugin.Options{Guard: &netguard.Options{Allow: []netip.AddrPort{ap}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.StateDir = t.TempDir()
			h := plugin.NewHost(tc.opts)
			t.Cleanup(func() { h.Close() })
			dir := t.TempDir()
			writeAll(t, dir, memoryFiles)
			rt := h.Configure(file.Config).Tools(context.Background(), plugin.Run{AgentID: "main", AgentDir: dir})
			st, _ := rt.Get(policy.MemoryPlugin, "memory_search")
			res, err := st.Run(context.Background(), &tools.Env{AgentID: "main", AgentDir: dir}, []byte(`{"query":"automobile"}`))
			if err != nil || res.IsError {
				t.Fatalf("memory_search: %v %s", err, res.Text)
			}
			if r := decode(t, res.Text); r.Mode != modeHybrid {
				t.Fatalf("%+v", r)
			}
			if got := f.lastAuth(); got != tc.auth {
				t.Errorf("Authorization %q, want %q", got, tc.auth)
			}
		})
	}
}

// TestNearest: the heap gives the k most similar rows, best first, as a
// full sort does.
func TestNearest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ rows, dim, k int }{{0, 8, 3}, {5, 8, 10}, {100, 16, 1}, {1000, 33, 24}, {50, 4, 50}} {
		t.Run(fmt.Sprintf("%d rows k %d", tc.rows, tc.k), func(t *testing.T) {
			s := &vecSet{dim: tc.dim, row: map[int64]int{}}
			for i := range tc.rows {
				v := make([]float32, tc.dim)
				for j := range v {
					v[j] = rng.Float32()*2 - 1
				}
				if i%10 == 3 && i > 0 {
					copy(v, s.data[(i-1)*tc.dim:i*tc.dim]) // ties
				}
				s.ids = append(s.ids, int64(i))
				s.data = append(s.data, unit(v)...)
			}
			qv := make([]float32, tc.dim)
			for j := range qv {
				qv[j] = rng.Float32()
			}
			qv = unit(qv)
			var all []near
			for i := range tc.rows {
				all = append(all, near{i, dot(qv, s.data[i*tc.dim:(i+1)*tc.dim])})
			}
			sort.SliceStable(all, func(a, b int) bool { return all[a].sim > all[b].sim })
			want := all[:min(tc.k, len(all))]
			if got := s.nearest(qv, tc.k); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("nearest = %v\nwant %v", got, want)
			}
		})
	}
}

// TestVecCache: sets are kept by key and write count, the least recently
// used dropped over the budget, one larger than the budget not kept.
func TestVecCache(t *testing.T) {
	set := func(gen uint64, floats int) *vecSet {
		return &vecSet{gen: gen, dim: 1, data: make([]float32, floats), ids: make([]int64, floats)}
	}
	c := vecCache{budget: 3 * 20 * 10} // three sets of 10 rows
	c.put("a", set(1, 10))
	c.put("b", set(1, 10))
	c.put("c", set(1, 10))
	if c.get("a", 1) == nil || c.get("a", 2) != nil {
		t.Fatal("get by key and write count")
	}
	c.put("d", set(1, 10)) // b is the least recently used
	for key, kept := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if got := c.get(key, 1) != nil; got != kept {
			t.Errorf("%s kept: %v, want %v", key, got, kept)
		}
	}
	c.put("big", set(1, 31))
	if c.get("big", 1) != nil || c.size != 3*200 {
		t.Errorf("a set over the budget was kept (size %d)", c.size)
	}
}

func TestUnit(t *testing.T) {
	for _, tc := range []struct{ in, want []float32 }{
		{[]float32{3, 4}, []float32{0.6, 0.8}},
		{[]float32{0, 0}, []float32{0, 0}},
		{[]float32{-2}, []float32{-1}},
	} {
		got := unit(tc.in)
		b := encodeVector(got)
		back := make([]float32, len(got))
		decodeVector(back, b)
		if !slices.Equal(got, tc.want) || !slices.Equal(back, got) {
			t.Errorf("unit(%v) = %v, round trip %v; want %v", tc.in, got, back, tc.want)
		}
	}
}

func decode(t *testing.T, text string) searchResult {
	t.Helper()
	var r searchResult
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return r
}
