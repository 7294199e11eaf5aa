package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"talon/internal/config"
)

// Embedder turns texts into vectors: an embeddings provider
// (*provider.Embeddings is one).
type Embedder interface {
	// Model identifies the vectors Embed makes. Vectors of another
	// identity are never compared with them: a change of model embeds
	// every chunk anew.
	Model() string
	// Embed returns one vector per text, in order, all of one length;
	// query says the texts are search queries rather than documents.
	Embed(ctx context.Context, texts []string, query bool) ([][]float32, error)
}

// Options say how memory_search ranks. The zero value ranks by keywords
// alone (BM25), as the index did before embeddings.
type Options struct {
	// Embedder, when set, adds ranking by meaning.
	Embedder Embedder
	// Problem, when Embedder is nil, is why the configured provider is
	// not used (it did not resolve); results say so.
	Problem string
	// Ranking weighs the two; the zero value means config's defaults.
	Ranking config.Ranking
}

// ranking is opts.Ranking with the defaults filled in.
func (o Options) ranking() config.Ranking {
	if o.Ranking.CandidateMultiplier == 0 {
		r := config.MemorySearch{}.Ranking()
		r.MaxResults, r.MinScore = o.Ranking.MaxResults, o.Ranking.MinScore
		return r
	}
	return o.Ranking
}

const (
	// maxEmbedPerSearch bounds the chunks one search embeds: the first
	// index of a large memory is spread over several searches instead of
	// holding one up for minutes. The chunks left rank by keywords
	// alone meanwhile, and the result says so.
	maxEmbedPerSearch = 1024
	// retryAfterFailure is how long searches rank by keywords alone after
	// an embeddings call failed before they call the provider again, so
	// that a provider that is down costs one search its retries, not
	// every search.
	retryAfterFailure = time.Minute
)

// failure is an embeddings provider's last failure.
type failure struct {
	until time.Time
	err   string
}

// failing returns the failure of the model identity that still holds
// searches back, if any.
func (ix *Index) failing(model string) (failure, bool) {
	ix.failedMu.Lock()
	defer ix.failedMu.Unlock()
	f, ok := ix.failed[model]
	if ok && !ix.now().Before(f.until) {
		delete(ix.failed, model)
		ok = false
	}
	return f, ok
}

func (ix *Index) isFailing(model string) bool {
	_, ok := ix.failing(model)
	return ok
}

// fail records that an embeddings call of the model failed, and logs it
// once per back-off.
func (ix *Index) fail(model, agent string, err error) failure {
	f := failure{until: ix.now().Add(retryAfterFailure), err: err.Error()}
	ix.failedMu.Lock()
	ix.failed[model] = f
	ix.failedMu.Unlock()
	ix.log.Warn("memory search: the embeddings provider failed; ranking by keywords only for a while",
		"agent", agent, "model", model, "retry_after", retryAfterFailure, "err", err)
	return f
}

// note is what a result says about a failure.
func (f failure) note() string {
	return fmt.Sprintf("ranked by keywords only: the embeddings provider failed (%s); it is tried again after %s",
		f.err, f.until.UTC().Format(time.TimeOnly+" UTC"))
}

// doneMark says an agent's chunks all had vectors of a model when its
// write counter was at gen, but for over beyond maxVectors.
type doneMark struct {
	model string
	gen   uint64
	over  int
}

// embedMissing embeds the agent's chunk texts that have no vector of the
// embedder's model, at most maxEmbedPerSearch of them and no more than
// maxVectors allows, stores them and drops the agent's vectors of other
// models. It returns how many texts are still without a vector: left
// for later searches, over beyond maxVectors. Nothing is read when the
// agent's rows have not changed since the last call that left none.
func (ix *Index) embedMissing(ctx context.Context, agent string, e Embedder) (left, over int, err error) {
	model := e.Model()
	mu := ix.lock(agent)
	mu.Lock()
	defer mu.Unlock()
	if m, ok := ix.done.Load(agent); ok {
		if d := m.(doneMark); d.model == model && d.gen == ix.gen(agent).Load() {
			return 0, d.over, nil
		}
	}
	hashes, texts, err := ix.missing(ctx, agent, model)
	if err != nil {
		return 0, 0, indexErr{err}
	}
	have, dim, err := ix.stored(ctx, agent, model)
	if err != nil {
		return 0, 0, indexErr{err}
	}
	n := min(len(texts), maxEmbedPerSearch)
	if dim > 0 {
		n = min(n, max(0, ix.maxVectors(dim)-have))
	}
	if n > 0 {
		vs, err := e.Embed(ctx, texts[:n], false)
		if err != nil {
			return 0, 0, err
		}
		if len(vs) != n {
			return 0, 0, fmt.Errorf("the embeddings provider returned %d vectors for %d texts", len(vs), n)
		}
		if err := ix.storeVectors(ctx, agent, model, hashes[:n], vs); err != nil {
			return 0, 0, indexErr{err}
		}
		dim = len(vs[0])
	}
	left = len(texts) - n
	if room := max(0, ix.maxVectors(dim)-have-n); left > room {
		left, over = room, left-room
	}
	if left == 0 {
		ix.done.Store(agent, doneMark{model, ix.gen(agent).Load(), over})
	}
	return left, over, nil
}

// stored returns how many vectors of the model the agent has, and the
// length of one (0 when none).
func (ix *Index) stored(ctx context.Context, agent, model string) (n, dim int, err error) {
	var bytes int
	err = ix.r.QueryRowContext(ctx, `SELECT count(*), coalesce(max(length(vec)), 0) FROM vectors WHERE agent = ? AND model = ?`, agent, model).Scan(&n, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory index: %w", err)
	}
	return n, bytes / 4, nil
}

const missingSQL = `
SELECT c.hash, min(c.text) FROM chunks c
WHERE c.agent = ? AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.agent = c.agent AND v.model = ? AND v.hash = c.hash)
GROUP BY c.hash ORDER BY min(c.id)`

// missing lists the distinct chunk texts of the agent without a vector
// of the model, in index order.
func (ix *Index) missing(ctx context.Context, agent, model string) (hashes [][]byte, texts []string, err error) {
	rows, err := ix.r.QueryContext(ctx, missingSQL, agent, model)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the memory index: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h []byte
		var t string
		if err := rows.Scan(&h, &t); err != nil {
			return nil, nil, fmt.Errorf("reading the memory index: %w", err)
		}
		hashes, texts = append(hashes, h), append(texts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading the memory index: %w", err)
	}
	return hashes, texts, nil
}

// storeVectors writes vectors of the model, scaled to unit length, and
// drops the agent's vectors of any other model, in one transaction.
func (ix *Index) storeVectors(ctx context.Context, agent, model string, hashes [][]byte, vs [][]float32) error {
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("storing vectors: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE agent = ? AND model != ?`, agent, model); err != nil {
		return fmt.Errorf("storing vectors: %w", err)
	}
	st, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO vectors (agent, model, hash, vec) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("storing vectors: %w", err)
	}
	defer st.Close()
	for i, v := range vs {
		if _, err := st.ExecContext(ctx, agent, model, hashes[i], encodeVector(unit(v))); err != nil {
			return fmt.Errorf("storing vectors: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("storing vectors: %w", err)
	}
	ix.gen(agent).Add(1)
	return nil
}

// dropVectors deletes the agent's vectors of the model whose length is
// not dim: the provider now makes vectors of another length under the
// same identity, and the next search embeds those texts again.
func (ix *Index) dropVectors(ctx context.Context, agent, model string, dim int) error {
	mu := ix.lock(agent)
	mu.Lock()
	defer mu.Unlock()
	if _, err := ix.w.ExecContext(ctx, `DELETE FROM vectors WHERE agent = ? AND model = ? AND length(vec) != ?`, agent, model, 4*dim); err != nil {
		return fmt.Errorf("dropping vectors: %w", err)
	}
	ix.gen(agent).Add(1)
	return nil
}

// unit returns v scaled to length 1, so that cosine similarity is a dot
// product; a zero vector stays zero and matches nothing.
func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// encodeVector writes v as float32 little-endian.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decodeVector reads what encodeVector wrote into dst, which has room
// for exactly len(b)/4 values.
func decodeVector(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// errCanceled reports whether err is the caller's, not the provider's:
// the run was stopped, which says nothing about the provider.
func errCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled)
}
