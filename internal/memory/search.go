package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/tools"
)

// Limits and defaults of memory_search.
const (
	maxQuery          = 1000
	defaultMaxResults = 6
	maxMaxResults     = 50
	maxSnippet        = 700
	minMatchScore     = 0.0001
)

// searchSchema is written out because tools.Object has no number type,
// which minScore needs; TestSchemas lints it.
var searchSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What to look for in the agent's memory files (MEMORY.md and memory/*.md), up to 1000 characters. Plain words: chunks holding more of them, and rarer ones, rank higher; operators and quotes are treated as text. When an embeddings provider is configured, passages close in meaning rank high too, without sharing a word."},` +
	`"maxResults":{"type":"integer","description":"Most results to return, 1 to 50; default 6 (or the config's)."},` +
	`"minScore":{"type":"number","description":"Leave out results scoring below this, 0 to 1; default 0 (or the config's)."}` +
	`},"required":["query"],"additionalProperties":false}`)

type searchTool struct {
	ix   *Index
	opts Options
}

func (*searchTool) Name() string { return "memory_search" }

func (*searchTool) Description() string {
	return "Search the agent's memory files (MEMORY.md and memory/**/*.md in its workspace) by words, and by meaning when an embeddings provider is configured. " +
		"Returns the best matching passages with their path, line range, a score from 0 to 1 and a snippet; " +
		"read more of a file with memory_get."
}

func (*searchTool) Schema() json.RawMessage { return searchSchema }

// hit is one result of memory_search.
type hit struct {
	Path      string  `json:"path"`
	StartLine int     `json:"startLine"`
	EndLine   int     `json:"endLine"`
	Score     float64 `json:"score"`
	Snippet   string  `json:"snippet"`
}

// Ranking modes of a result.
const (
	modeKeyword = "keyword" // BM25 alone
	modeHybrid  = "hybrid"  // BM25 and cosine similarity, weighted
	modeVector  = "vector"  // cosine similarity alone (hybrid.enabled false)
)

// searchResult is memory_search's answer.
type searchResult struct {
	Results  []hit    `json:"results"`
	Indexed  int      `json:"indexed"`
	Mode     string   `json:"mode"`
	Warnings []string `json:"warnings"`
	Note     string   `json:"note,omitempty"`
}

// addNote appends to the result's note.
func (r *searchResult) addNote(s string) {
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += s
}

// query is one memory_search call, its arguments checked.
type query struct {
	text     string
	terms    []string
	limit    int
	minScore float64
}

func (t *searchTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil || env.AgentID == "" {
		return tools.Result{}, errors.New("running memory_search: no agent id in the tool environment")
	}
	a, err := tools.ParseArgsFor(raw, searchSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	text, err := a.String("query", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	switch n := len([]rune(text)); {
	case strings.TrimSpace(text) == "":
		return tools.Errorf(`argument "query" must not be empty`), nil
	case n > maxQuery:
		return tools.Errorf(`argument "query" is %d characters; the limit is %d`, n, maxQuery), nil
	}
	limit, err := a.Int("maxResults", false, 1, maxMaxResults)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	rank := t.opts.ranking()
	minScore, given, err := number(raw, "minScore", 0, 1)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if !given {
		minScore = rank.MinScore
	}
	q := query{text: text, terms: withoutStopWords(queryTerms(text)), limit: cmp.Or(limit, rank.MaxResults, defaultMaxResults), minScore: minScore}
	res, err := t.ix.search(ctx, env.AgentID, env.AgentDir, q, t.opts)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.JSONResult(res)
}

// search refreshes the agent's rows and runs the query.
func (ix *Index) search(ctx context.Context, agent, dir string, q query, opts Options) (searchResult, error) {
	res := searchResult{Results: []hit{}, Warnings: []string{}, Mode: modeKeyword}
	if dir == "" {
		res.Note = "this agent has no workspace directory, so it has no memory files"
		return res, nil
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		// The workspace is gone, and so is its memory.
		if err := ix.forget(ctx, agent); err != nil {
			return res, fmt.Errorf("running memory_search: %w", err)
		}
		res.Note = "the agent workspace does not exist, so there are no memory files"
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("running memory_search: opening the agent workspace: %w", err)
	}
	defer root.Close()
	n, warnings, err := ix.refresh(ctx, agent, root)
	if err != nil {
		return res, fmt.Errorf("running memory_search: %w", err)
	}
	res.Indexed = n
	res.Warnings = append(res.Warnings, warnings...)
	if n == 0 {
		res.Note = "no memory files: write notes to MEMORY.md or to .md files under memory/ in the workspace"
		return res, nil
	}
	if len(q.terms) == 0 {
		res.Note = "the query has no words to search for (only punctuation or symbols)"
		return res, nil
	}
	ranked, err := ix.semantic(ctx, agent, q, opts, &res)
	if err == nil && !ranked {
		res.Results, err = ix.keyword(ctx, agent, q)
	}
	if err != nil {
		return res, fmt.Errorf("running memory_search: %w", err)
	}
	if len(res.Results) == 0 {
		res.addNote("no passage matches the query")
	}
	return res, nil
}

// semantic ranks by meaning and words when an embedder is configured and
// works, and reports whether it did. When it is not usable the result
// says why and the caller ranks by keywords; only a failure of the index
// itself, or the caller's cancellation, is an error.
func (ix *Index) semantic(ctx context.Context, agent string, q query, opts Options, res *searchResult) (bool, error) {
	e := opts.Embedder
	if e == nil {
		if opts.Problem != "" {
			// Logged once a back-off, as a failing provider is.
			if key := "config: " + opts.Problem; !ix.isFailing(key) {
				ix.fail(key, agent, errors.New(opts.Problem))
			}
			res.addNote("ranked by keywords only: the configured embeddings provider is not usable: " + opts.Problem)
		}
		return false, nil
	}
	model := e.Model()
	if f, ok := ix.failing(model); ok {
		res.addNote(f.note())
		return false, nil
	}
	providerFailed := func(err error) (bool, error) {
		if errCanceled(ctx, err) {
			return false, err
		}
		res.addNote(ix.fail(model, agent, err).note())
		return false, nil
	}
	left, over, err := ix.embedMissing(ctx, agent, e)
	if err != nil {
		if isIndexErr(err) {
			return false, err
		}
		return providerFailed(err)
	}
	qvs, err := e.Embed(ctx, []string{q.text}, true)
	if err == nil && (len(qvs) != 1 || len(qvs[0]) == 0) {
		err = fmt.Errorf("the embeddings provider returned %d vectors for one query", len(qvs))
	}
	if err != nil {
		return providerFailed(err)
	}
	qv := unit(qvs[0])
	vs, err := ix.vectors(ctx, agent, model, len(qv))
	if err != nil {
		return false, err
	}
	if vs.other > 0 {
		// The provider changed the length of its vectors under one
		// identity: those are embedded again by the next search.
		if err := ix.dropVectors(ctx, agent, model, len(qv)); err != nil {
			return false, err
		}
		left += vs.other
	}
	if left > 0 {
		res.addNote(fmt.Sprintf("%d passages have no embedding yet and rank by keywords alone; later searches embed them", left))
	}
	if over > 0 {
		res.addNote(fmt.Sprintf("%d passages rank by keywords alone: an agent's memory search holds at most %d vectors of this model", over, ix.maxVectors(len(qv))))
	}
	rank := opts.ranking()
	res.Mode = modeHybrid
	if rank.TextWeight == 0 {
		res.Mode = modeVector
	}
	res.Results, err = ix.hybrid(ctx, agent, q, qv, vs, rank)
	return true, err
}

// indexErr marks a failure of the index rather than of the provider.
type indexErr struct{ error }

func (e indexErr) Unwrap() error { return e.error }

func isIndexErr(err error) bool {
	var ie indexErr
	return errors.As(err, &ie)
}

// candidate is a chunk that may be a result.
type candidate struct {
	id   int64
	hit  hit
	text string
	// words is the 0..1 score of its BM25 rank, 0 when the words did
	// not find it; sim its cosine similarity to the query.
	words, sim float64
}

// keyword ranks by BM25 alone.
func (ix *Index) keyword(ctx context.Context, agent string, q query) ([]hit, error) {
	cs, err := ix.match(ctx, agent, q.terms, q.limit)
	if err != nil {
		return nil, err
	}
	hits := []hit{}
	for _, c := range cs {
		if c.words < q.minScore {
			continue
		}
		c.hit.Score = c.words
		c.hit.Snippet = snippet(c.text, q.terms)
		hits = append(hits, c.hit)
	}
	return hits, nil
}

// hybrid merges the best limit×CandidateMultiplier passages by words and
// as many by meaning, and ranks them by
//
//	score = vectorWeight × max(0, cosine) + textWeight × bm25score
//
// where bm25score is r/(1+r) of the BM25 relevance r (0 for a passage the
// words did not find) and the weights add up to 1: OpenClaw's merge, with
// its defaults 0.7 and 0.3.
func (ix *Index) hybrid(ctx context.Context, agent string, q query, qv []float32, vs *vecSet, r config.Ranking) ([]hit, error) {
	k := q.limit * r.CandidateMultiplier
	byID := map[int64]*candidate{}
	if r.TextWeight > 0 {
		cs, err := ix.match(ctx, agent, q.terms, k)
		if err != nil {
			return nil, err
		}
		for i := range cs {
			byID[cs[i].id] = &cs[i]
		}
	}
	var fetch []int64
	for _, n := range vs.nearest(qv, k) {
		id := vs.ids[n.row]
		if _, ok := byID[id]; !ok {
			byID[id] = &candidate{id: id}
			fetch = append(fetch, id)
		}
	}
	if err := ix.chunksByID(ctx, agent, fetch, byID); err != nil {
		return nil, err
	}
	var ranked []*candidate
	for _, c := range byID {
		if v := vs.vec(c.id); v != nil {
			c.sim = float64(dot(qv, v))
		}
		s := r.VectorWeight*max(0, c.sim) + r.TextWeight*c.words
		if s <= 0 {
			continue
		}
		c.hit.Score = math.Round(s*1e4) / 1e4
		if c.words > 0 {
			c.hit.Score = max(c.hit.Score, minMatchScore)
		}
		if c.hit.Score >= q.minScore && c.hit.Score > 0 {
			ranked = append(ranked, c)
		}
	}
	slices.SortFunc(ranked, func(a, b *candidate) int {
		return cmp.Or(cmp.Compare(b.hit.Score, a.hit.Score), strings.Compare(a.hit.Path, b.hit.Path), cmp.Compare(a.hit.StartLine, b.hit.StartLine))
	})
	hits := []hit{}
	for _, c := range ranked[:min(len(ranked), q.limit)] {
		c.hit.Snippet = snippet(c.text, q.terms)
		hits = append(hits, c.hit)
	}
	return hits, nil
}

// chunksByID fills in the place and text of the candidates ids.
func (ix *Index) chunksByID(ctx context.Context, agent string, ids []int64, into map[int64]*candidate) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, agent)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := ix.r.QueryContext(ctx, `SELECT id, path, start_line, end_line, text FROM chunks WHERE +agent = ? AND id IN (?`+
		strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return fmt.Errorf("querying the memory index: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.hit.Path, &c.hit.StartLine, &c.hit.EndLine, &c.text); err != nil {
			return fmt.Errorf("querying the memory index: %w", err)
		}
		if p := into[c.id]; p != nil {
			p.hit, p.text = c.hit, c.text
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("querying the memory index: %w", err)
	}
	// A chunk the vectors named but a write removed since is no result.
	for _, id := range ids {
		if into[id].hit.Path == "" {
			delete(into, id)
		}
	}
	return nil
}

// forget drops everything indexed for the agent.
func (ix *Index) forget(ctx context.Context, agent string) error {
	mu := ix.lock(agent)
	mu.Lock()
	defer mu.Unlock()
	old, err := ix.indexedFiles(ctx, agent)
	if err != nil || len(old) == 0 {
		return err
	}
	return ix.apply(ctx, agent, nil, old)
}

const matchSQL = `
SELECT c.id, c.path, c.start_line, c.end_line, c.text, bm25(chunks_fts) AS rank
FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
WHERE chunks_fts MATCH ? AND c.agent = ?
ORDER BY rank, c.path, c.start_line
LIMIT ?`

// match runs the query's words over the agent's chunks, best first.
func (ix *Index) match(ctx context.Context, agent string, terms []string, limit int) ([]candidate, error) {
	rows, err := ix.r.QueryContext(ctx, matchSQL, matchExpr(terms), agent, limit)
	if err != nil {
		return nil, fmt.Errorf("querying the memory index: %w", err)
	}
	defer rows.Close()
	var cs []candidate
	for rows.Next() {
		var c candidate
		var rank float64
		if err := rows.Scan(&c.id, &c.hit.Path, &c.hit.StartLine, &c.hit.EndLine, &c.text, &rank); err != nil {
			return nil, fmt.Errorf("querying the memory index: %w", err)
		}
		c.words = score(rank)
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("querying the memory index: %w", err)
	}
	return cs, nil
}

// score maps FTS5's bm25 rank (negative; lower is better) to 0..1: r/(1+r)
// of the relevance r = -rank, rounded to 4 places. bm25 gives a word found
// in half the chunks or more almost no weight, so in a small index such a
// match scores near 0; every match scores at least 0.0001, so minScore 0
// and the smallest positive minScore still tell matches from nothing.
func score(rank float64) float64 {
	r := -rank
	if math.IsNaN(r) || r <= 0 {
		return minMatchScore
	}
	if math.IsInf(r, 1) {
		return 1
	}
	return math.Max(minMatchScore, math.Round(r/(1+r)*1e4)/1e4)
}

// snippet is up to maxSnippet bytes of a chunk, around the first place a
// query word occurs when the chunk is longer.
func snippet(text string, terms []string) string {
	if len(text) <= maxSnippet {
		return text
	}
	at := -1
	if lower := strings.ToLower(text); len(lower) == len(text) {
		for _, t := range terms {
			if i := strings.Index(lower, t); i >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
	}
	start := max(0, min(at-maxSnippet/4, len(text)-maxSnippet))
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	// Begin at a word where one starts soon.
	if i := strings.IndexAny(text[start:min(len(text), start+40)], " \n"); start > 0 && i >= 0 {
		start += i + 1
	}
	end := min(len(text), start+maxSnippet)
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end--
	}
	s := text[start:end]
	if start > 0 {
		s = "…" + s
	}
	if end < len(text) {
		s += "…"
	}
	return s
}
