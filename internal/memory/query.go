package memory

import (
	"slices"
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

// stopWords are English words so common that BM25 gives them next to no
// weight in any index of more than a few chunks, while ranking the chunks
// that hold them costs as much as any word's: every chunk holds one.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further
		had has have having he her here hers herself him himself his how i if in into is it its itself just
		me more most my myself no nor not now of off on once only or other our ours ourselves out over own same
		she should so some such than that the their theirs them themselves then there these they this those
		through to too under until up very was we were what when where which while who whom why will with would
		you your yours yourself yourselves`) {
		stopWords[w] = true
	}
}

// withoutStopWords drops the stop words of terms when a word of another
// kind remains; a query of stop words alone keeps them.
func withoutStopWords(terms []string) []string {
	kept := slices.DeleteFunc(slices.Clone(terms), func(t string) bool { return stopWords[t] })
	if len(kept) == 0 {
		return terms
	}
	return kept
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
