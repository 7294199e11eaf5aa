package memory

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQueryTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{`"*:-()^{}`, nil},
		{"Hello, WORLD hello", []string{"hello", "world"}},
		{`NEAR(a b, 2)`, []string{"near", "a", "b", "2"}},
		{`text:foo bar*`, []string{"text", "foo", "bar"}},
		{"café naïve", []string{"café", "naïve"}},
		{"e\u0301t\u00e9", []string{"e\u0301t\u00e9"}},
		{"日本語 テキスト", []string{"日本語", "テキスト"}},
		{"a\x00b\xffc", []string{"a", "b", "c"}},
	} {
		if got := queryTerms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("queryTerms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := len(queryTerms(strings.Repeat("w", 0) + manyWords(100))); got != maxTerms {
		t.Errorf("%d terms kept of 100, want %d", got, maxTerms)
	}
	if got := matchExpr([]string{"a", `b"c`}); got != `"a" OR "b""c"` {
		t.Errorf("matchExpr = %s", got)
	}
}

func TestWithoutStopWords(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"what", "did", "we", "decide", "about", "the", "car"}, []string{"decide", "car"}},
		{[]string{"the", "who"}, []string{"the", "who"}}, // nothing else: kept
		{[]string{"kubernetes", "migration"}, []string{"kubernetes", "migration"}},
		{[]string{"über", "the"}, []string{"über"}},
	} {
		if got := withoutStopWords(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("withoutStopWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func manyWords(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(string(rune('a'+i%26)) + string(rune('a'+i/26)) + " ")
	}
	return b.String()
}

// FuzzMatch runs any query through the conversion and against a real
// index: the MATCH expression must never be an SQL or FTS5 error, and
// every term must be quoted.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"", `"`, `*`, `NEAR(`, `AND`, `-x`, `a:b`, `x" OR "y`, `{a b}: c`,
		"^start", "(((", "\x00", "\xff\xfe", "e\u0301", "'; DROP TABLE chunks; --", "kubernetes migration"} {
		f.Add(s)
	}
	ix := open(f)
	dir := f.TempDir()
	write(f, dir, "MEMORY.md", "# Notes\n\nkubernetes migration and café naïve text near the end\n")
	ctx := context.Background()
	if _, _, err := ix.refresh(ctx, "main", mustRoot(f, dir)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms := queryTerms(q)
		if len(terms) > maxTerms {
			t.Fatalf("%d terms", len(terms))
		}
		if len(terms) == 0 {
			return
		}
		expr := matchExpr(terms)
		if !strings.HasPrefix(expr, `"`) || !strings.HasSuffix(expr, `"`) {
			t.Fatalf("expression %s is not quoted terms", expr)
		}
		if _, err := ix.match(ctx, "main", terms, maxMaxResults); err != nil {
			t.Fatalf("query %q → %s: %v", q, expr, err)
		}
	})
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("filler ", 150) + "the OCELOT is here " + strings.Repeat("more ", 200)
	for _, tc := range []struct {
		name, text  string
		terms       []string
		has         string
		left, right bool // cut on that side
	}{
		{"short stays whole", "a short chunk", []string{"short"}, "a short chunk", false, false},
		{"around the first term", long, []string{"ocelot"}, "the OCELOT is here", true, true},
		{"cut at a word", long, []string{"ocelot"}, "…filler filler", true, true},
		{"no term found: the start", long, []string{"zzz"}, "filler filler", false, true},
		{"term at the end", strings.Repeat("x ", 500) + "tail", []string{"tail"}, "tail", true, false},
		{"runes not split", strings.Repeat("é", 800), []string{"é"}, "é", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snippet(tc.text, tc.terms)
			body := strings.TrimSuffix(strings.TrimPrefix(s, "…"), "…")
			if len(body) > maxSnippet || !strings.Contains(s, tc.has) || !utf8.ValidString(s) ||
				strings.HasPrefix(s, "…") != tc.left || strings.HasSuffix(s, "…") != tc.right {
				t.Errorf("snippet = %q (%d bytes)", s, len(body))
			}
		})
	}
}
