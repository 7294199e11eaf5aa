package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkSearchUnchanged is a search over 200 memory files of about
// 3 KB each when none changed since the last: the cost of the stat pass
// plus the query.
func BenchmarkSearchUnchanged(b *testing.B) {
	ix := open(b)
	dir := b.TempDir()
	for i := range 200 {
		var s strings.Builder
		fmt.Fprintf(&s, "# Day %d\n\n", i)
		for j := range 6 {
			fmt.Fprintf(&s, "Paragraph %d of day %d: the team talked about topic%d and topic%d, and the deploy went fine.\n%s\n\n",
				j, i, i%17, (i+j)%23, strings.Repeat("filler words for length ", 15))
		}
		write(b, dir, fmt.Sprintf("memory/%03d/day%d.md", i/20, i), s.String())
	}
	search(b, ix, "main", dir, q("topic5 deploy")) // index once
	b.ReportAllocs()
	for b.Loop() {
		if r := search(b, ix, "main", dir, q("topic5 deploy")); len(r.Results) == 0 || r.Indexed != 200 {
			b.Fatalf("got %d results of %d files", len(r.Results), r.Indexed)
		}
	}
}

// localEmbedder is the fake model in process: it indexes the benchmark's
// 10,000 chunks without 30 MB of JSON through loopback. It reports the
// model identity of the fake server's client, so that a client of the
// server finds those vectors its own.
type localEmbedder struct {
	model string
	dims  int
}

func (e localEmbedder) Model() string { return e.model }

func (e localEmbedder) Embed(_ context.Context, texts []string, _ bool) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeVector(t, e.dims)
	}
	return out, nil
}

// benchNotes writes files of sections notes each: a heading and some 95
// words, a third of them common English ones, the rest drawn with Zipf's
// law from 4,000 made-up words, as a real vocabulary is; one section in
// 97 says the car needs repairs.
func benchNotes(b *testing.B, dir string, files, sections int) {
	syllables := []string{"ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "ga", "bu", "fe", "zo", "wi", "ha", "ju"}
	vocab := make([]string, 4000)
	for i := range vocab {
		var w strings.Builder
		for n := i + 16; n > 0; n /= 16 {
			w.WriteString(syllables[n%16])
		}
		vocab[i] = w.String()
	}
	common := []string{"the", "a", "of", "to", "and", "in", "for", "with", "on", "is", "was", "we", "it", "that", "about"}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1))
	for i := range files {
		var s strings.Builder
		for j := range sections {
			fmt.Fprintf(&s, "# Note %d.%d\n\n", i, j)
			for k := range 95 {
				if k%3 == 0 {
					s.WriteString(common[rng.IntN(len(common))])
				} else {
					s.WriteString(vocab[zipf.Uint64()])
				}
				s.WriteByte(' ')
			}
			if (i*sections+j)%97 == 0 {
				s.WriteString("The car needs repairs: new tyres. ")
			}
			s.WriteString("\n\n")
		}
		write(b, dir, fmt.Sprintf("memory/%02d/notes-%03d.md", i/50, i), s.String())
	}
}

// BenchmarkSearchEmbeddings10k is memory_search over 10,000 chunks (500
// files of 20 sections) with 768-dimension vectors, none changed since
// the last search: the stat pass, BM25 over the words, the brute-force
// cosine scan and the merge. "ranking" embeds the query in process;
// "loopback" asks an OpenAI-compatible server on loopback, as a search
// with a local ollama does (one HTTP request more).
func BenchmarkSearchEmbeddings10k(b *testing.B) {
	const files, sections, dims = 500, 20, 768
	ix := open(b)
	dir := b.TempDir()
	benchNotes(b, dir, files, sections)
	f := newFakeEmbeddings(b, dims)
	remote := f.client("bench-embed")
	local := localEmbedder{model: remote.Model(), dims: dims}
	for r := searchWith(b, ix, Options{Embedder: local}, "main", dir, q("x")); r.Note != ""; r = searchWith(b, ix, Options{Embedder: local}, "main", dir, q("x")) {
	} // index and embed, maxEmbedPerSearch at a time
	var chunks, vecs int
	ix.r.QueryRow(`SELECT count(*) FROM chunks`).Scan(&chunks)
	ix.r.QueryRow(`SELECT count(*) FROM vectors`).Scan(&vecs)
	if chunks != files*sections || vecs != chunks {
		b.Fatalf("%d chunks, %d vectors; want %d of each", chunks, vecs, files*sections)
	}
	for _, bc := range []struct {
		name string
		e    Embedder
	}{{"ranking", local}, {"loopback", remote}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := Options{Embedder: bc.e}
			args := q("what did we decide about the automobile repairs")
			if r := searchWith(b, ix, opts, "main", dir, args); r.Mode != modeHybrid || len(r.Results) != defaultMaxResults || r.Note != "" ||
				!strings.Contains(r.Results[0].Snippet, "car needs repairs") {
				b.Fatalf("search: %+v", r)
			}
			b.ReportAllocs()
			for b.Loop() {
				searchWith(b, ix, opts, "main", dir, args)
			}
		})
	}
}
