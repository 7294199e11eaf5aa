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
	"strings"
	"unicode/utf8"

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
	`"query":{"type":"string","description":"Words to look for in the agent's memory files (MEMORY.md and memory/*.md), up to 1000 characters. Plain words: chunks holding more of them, and rarer ones, rank higher; operators and quotes are treated as text."},` +
	`"maxResults":{"type":"integer","description":"Most results to return, 1 to 50; default 6."},` +
	`"minScore":{"type":"number","description":"Leave out results scoring below this, 0 to 1; default 0."}` +
	`},"required":["query"],"additionalProperties":false}`)

type searchTool struct{ ix *Index }

func (*searchTool) Name() string { return "memory_search" }

func (*searchTool) Description() string {
	return "Search the agent's memory files (MEMORY.md and memory/**/*.md in its workspace) by words. " +
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

// searchResult is memory_search's answer.
type searchResult struct {
	Results  []hit    `json:"results"`
	Indexed  int      `json:"indexed"`
	Warnings []string `json:"warnings"`
	Note     string   `json:"note,omitempty"`
}

func (t *searchTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil || env.AgentID == "" {
		return tools.Result{}, errors.New("running memory_search: no agent id in the tool environment")
	}
	a, err := tools.ParseArgsFor(raw, searchSchema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	query, err := a.String("query", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	switch n := len([]rune(query)); {
	case strings.TrimSpace(query) == "":
		return tools.Errorf(`argument "query" must not be empty`), nil
	case n > maxQuery:
		return tools.Errorf(`argument "query" is %d characters; the limit is %d`, n, maxQuery), nil
	}
	limit, err := a.Int("maxResults", false, 1, maxMaxResults)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	limit = cmp.Or(limit, defaultMaxResults)
	minScore, err := number(raw, "minScore", 0, 1)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	res, err := t.ix.search(ctx, env.AgentID, env.AgentDir, query, limit, minScore)
	if err != nil {
		return tools.Result{}, err
	}
	return tools.JSONResult(res)
}

// search refreshes the agent's rows and runs the query.
func (ix *Index) search(ctx context.Context, agent, dir, query string, limit int, minScore float64) (searchResult, error) {
	res := searchResult{Results: []hit{}, Warnings: []string{}}
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
	terms := queryTerms(query)
	if len(terms) == 0 {
		res.Note = "the query has no words to search for (only punctuation or symbols)"
		return res, nil
	}
	res.Results, err = ix.match(ctx, agent, terms, limit, minScore)
	if err != nil {
		return res, fmt.Errorf("running memory_search: %w", err)
	}
	if len(res.Results) == 0 {
		res.Note = "no passage matches the query"
	}
	return res, nil
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
SELECT c.path, c.start_line, c.end_line, c.text, bm25(chunks_fts) AS rank
FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
WHERE chunks_fts MATCH ? AND c.agent = ?
ORDER BY rank, c.path, c.start_line
LIMIT ?`

// match runs the query over the agent's chunks, best first.
func (ix *Index) match(ctx context.Context, agent string, terms []string, limit int, minScore float64) ([]hit, error) {
	rows, err := ix.r.QueryContext(ctx, matchSQL, matchExpr(terms), agent, limit)
	if err != nil {
		return nil, fmt.Errorf("querying the memory index: %w", err)
	}
	defer rows.Close()
	hits := []hit{}
	for rows.Next() {
		var h hit
		var text string
		var rank float64
		if err := rows.Scan(&h.Path, &h.StartLine, &h.EndLine, &text, &rank); err != nil {
			return nil, fmt.Errorf("querying the memory index: %w", err)
		}
		if h.Score = score(rank); h.Score < minScore {
			continue
		}
		h.Snippet = snippet(text, terms)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("querying the memory index: %w", err)
	}
	return hits, nil
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
