package memory

import (
	"strings"
	"unicode"
)

// maxTerms bounds the words of one query; more add cost, not precision.
const maxTerms = 64

// queryTerms splits a query into its distinct words, lower-cased: runs of
// letters, digits and combining marks. Everything else separates words,
// which is where FTS5's unicode61 tokenizer splits too, so no operator,
// quote, column filter or prefix star in the query survives as syntax.
func queryTerms(q string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	}) {
		w = strings.ToLower(w)
		if seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
		if len(terms) == maxTerms {
			break
		}
	}
	return terms
}

// matchExpr is the FTS5 MATCH expression for terms: each one a quoted
// string, joined with OR, so that bm25 ranks chunks by how many of the
// words they hold and how rare those are. "" when there are no terms.
func matchExpr(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " OR ")
}
