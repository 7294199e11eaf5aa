package websearch

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"talon/internal/untrusted"
)

// Caps of one result, so that even ten results of a hostile provider stay
// a few tens of kilobytes.
const (
	maxTitleChars   = 300
	maxSnippetChars = 1000
	maxAnswerChars  = 12000
	maxURLChars     = 2048
	maxSiteChars    = 100
	maxCitations    = 10
)

// hit is one result as a provider gave it.
type hit struct {
	Title, URL, Snippet, Published string
}

// citation is a source of an answer.
type citation struct {
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// external is OpenClaw's trust marker: the prose fields are wrapped.
type external struct {
	Untrusted bool   `json:"untrusted"`
	Source    string `json:"source"`
	Wrapped   bool   `json:"wrapped"`
	Provider  string `json:"provider"`
}

func externalOf(provider string) external {
	return external{Untrusted: true, Source: "web_search", Wrapped: true, Provider: provider}
}

// resultItem is one entry of a "results" output.
type resultItem struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Snippet   string `json:"snippet,omitempty"`
	Published string `json:"published,omitempty"`
	SiteName  string `json:"siteName,omitempty"`
}

// resultsOut is OpenClaw's kind "results".
type resultsOut struct {
	Kind            string       `json:"kind"`
	Provider        string       `json:"provider"`
	Query           string       `json:"query"`
	Count           int          `json:"count"`
	TookMs          int64        `json:"tookMs"`
	Results         []resultItem `json:"results"`
	ExternalContent external     `json:"externalContent"`
	Cached          bool         `json:"cached,omitempty"`
}

// answerOut is OpenClaw's kind "answer".
type answerOut struct {
	Kind            string     `json:"kind"`
	Provider        string     `json:"provider"`
	Query           string     `json:"query"`
	TookMs          int64      `json:"tookMs"`
	Content         string     `json:"content"`
	Citations       []citation `json:"citations,omitempty"`
	ExternalContent external   `json:"externalContent"`
	Cached          bool       `json:"cached,omitempty"`
}

// errorOut is OpenClaw's kind "error": what went wrong at the provider.
type errorOut struct {
	Kind     string `json:"kind"`
	Provider string `json:"provider"`
	Error    string `json:"error"`
	Message  string `json:"message"`
}

func providerError(provider, msg string) errorOut {
	return errorOut{Kind: "error", Provider: provider, Error: "provider_error", Message: msg}
}

// results normalises hits: a result whose URL is not http(s) is dropped,
// every field is capped, and title and snippet are wrapped as untrusted.
func results(provider, query string, hits []hit) resultsOut {
	out := resultsOut{Kind: "results", Provider: provider, Query: query, Results: []resultItem{}, ExternalContent: externalOf(provider)}
	for _, h := range hits {
		u, ok := webURL(h.URL)
		if !ok {
			continue
		}
		out.Results = append(out.Results, resultItem{
			Title: wrapField(h.Title, maxTitleChars), URL: u, Snippet: wrapField(h.Snippet, maxSnippetChars),
			Published: published(h.Published), SiteName: siteName(u),
		})
	}
	out.Count = len(out.Results)
	return out
}

// answer normalises a synthesized answer and its citations.
func answer(provider, query, content string, cites []citation) answerOut {
	out := answerOut{Kind: "answer", Provider: provider, Query: query, Content: wrapField(content, maxAnswerChars), ExternalContent: externalOf(provider)}
	for _, c := range cites {
		if len(out.Citations) == maxCitations {
			break
		}
		if u, ok := webURL(c.URL); ok {
			out.Citations = append(out.Citations, citation{URL: u, Title: wrapField(c.Title, maxTitleChars)})
		}
	}
	return out
}

// wrapField caps s and wraps it; "" stays "".
func wrapField(s string, max int) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return untrusted.Wrap(truncate(s, max), untrusted.Block{Source: untrusted.SourceWebSearch})
}

func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// webURL accepts an absolute http(s) URL with a host and no credentials,
// and gives its canonical form.
func webURL(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxURLChars {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return "", false
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	return u.String(), true
}

var isoDateRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$`)
})

// published keeps an ISO date or timestamp as given (no time zone is
// invented) and drops anything else, such as "2 days ago".
func published(s string) string {
	if s = strings.TrimSpace(s); isoDateRE().MatchString(s) {
		return s
	}
	return ""
}

// siteName is the result's host: a name the provider gives would be
// more prose to wrap, and the host is what the model can check.
func siteName(u string) string { return strings.TrimPrefix(hostOf(u), "www.") }

var tagRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`</?[a-zA-Z][^<>]*>`) })

// stripTags removes the markup Brave puts in descriptions (<strong>) and
// decodes its entities.
func stripTags(s string) string {
	return html.UnescapeString(tagRE().ReplaceAllString(s, ""))
}
