package websearch

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"talon/internal/config"
	"talon/internal/tools"
)

// Bounds of the arguments.
const (
	maxQueryChars = 2000
)

var schema = tools.Object(
	tools.Prop{Name: "query", Type: tools.TypeString, Required: true, Description: "Search query string."},
	tools.Prop{Name: "count", Type: tools.TypeInteger,
		Description: fmt.Sprintf("Number of results to return (1-%d).", config.MaxSearchResults)},
	tools.Prop{Name: "country", Type: tools.TypeString, Description: "2-letter country code (Brave)."},
	tools.Prop{Name: "language", Type: tools.TypeString, Description: "ISO 639-1 language (Brave)."},
	tools.Prop{Name: "search_lang", Type: tools.TypeString, Description: `Brave search-language code, e.g. "en-gb".`},
	tools.Prop{Name: "ui_lang", Type: tools.TypeString, Description: `UI language with region, e.g. "en-US" (Brave).`},
	tools.Prop{Name: "freshness", Type: tools.TypeString, Enum: []string{"day", "week", "month", "year"},
		Description: "Time filter; day is 24 hours."},
	tools.Prop{Name: "date_after", Type: tools.TypeString, Description: "Published after YYYY-MM-DD (Brave)."},
	tools.Prop{Name: "date_before", Type: tools.TypeString, Description: "Published before YYYY-MM-DD (Brave, with date_after)."},
)

// request is one checked call. Count 0 means the configured default.
// Perplexity's native Search API arguments (domain_filter, max_tokens,
// max_tokens_per_page) are not in the schema: that API is not built, so
// they are refused as unknown arguments.
type request struct {
	Query            string   `json:"q"`
	Count            int      `json:"n,omitempty"`
	Country          string   `json:"country,omitempty"`
	Language         string   `json:"language,omitempty"`
	SearchLang       string   `json:"searchLang,omitempty"`
	UILang           string   `json:"uiLang,omitempty"`
	Freshness        string   `json:"freshness,omitempty"`
	DateAfter        string   `json:"after,omitempty"`
	DateBefore       string   `json:"before,omitempty"`
	DomainFilter     []string `json:"domains,omitempty"`
	MaxTokens        int      `json:"maxTokens,omitempty"`
	MaxTokensPerPage int      `json:"maxTokensPerPage,omitempty"`
}

// codePatterns are the formats of the code arguments, compiled at first
// use: a gateway whose agents never search keeps no regexp for it.
var codePatterns = sync.OnceValue(func() [4]*regexp.Regexp {
	return [4]*regexp.Regexp{
		regexp.MustCompile(`^[A-Za-z]{2}$`),              // country
		regexp.MustCompile(`^[a-z]{2,3}$`),               // language
		regexp.MustCompile(`^[a-z]{2,3}(-[a-z]{2,4})?$`), // search_lang
		regexp.MustCompile(`^[a-z]{2,3}-[A-Za-z]{2}$`),   // ui_lang
	}
})

func parseRequest(raw []byte) (request, error) {
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return request{}, err
	}
	var r request
	q, err := a.String("query", true)
	if err != nil {
		return r, err
	}
	if r.Query, err = checkQuery(q); err != nil {
		return r, err
	}
	if r.Count, err = a.Int("count", false, 1, config.MaxSearchResults); err != nil {
		return r, err
	}
	if r.Freshness, err = a.StringEnum("freshness", false, "day", "week", "month", "year"); err != nil {
		return r, err
	}
	if err := r.parseCodes(a); err != nil {
		return r, err
	}
	if err := r.parseDates(a); err != nil {
		return r, err
	}
	return r, nil
}

func checkQuery(q string) (string, error) {
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return "", errors.New(`argument "query" must not be empty`)
	case utf8.RuneCountInString(q) > maxQueryChars:
		return "", fmt.Errorf(`argument "query" is longer than %d characters; search for fewer words`, maxQueryChars)
	case strings.IndexFunc(q, unicode.IsControl) >= 0:
		return "", errors.New(`argument "query" must be one line without control characters`)
	}
	return q, nil
}

// parseCodes reads the country and language codes, each checked against
// its format so nothing but a code reaches the provider's URL.
func (r *request) parseCodes(a tools.Args) error {
	re := codePatterns()
	codes := []struct {
		name, example string
		re            *regexp.Regexp
		to            *string
	}{
		{"country", `"US"`, re[0], &r.Country},
		{"language", `"en"`, re[1], &r.Language},
		{"search_lang", `"en" or "en-gb"`, re[2], &r.SearchLang},
		{"ui_lang", `"en-US"`, re[3], &r.UILang},
	}
	for _, c := range codes {
		s, err := a.String(c.name, false)
		if err != nil {
			return err
		}
		if s = strings.TrimSpace(s); s != "" && !c.re.MatchString(s) {
			return fmt.Errorf("argument %q must be a code such as %s, got %q", c.name, c.example, s)
		}
		*c.to = s
	}
	r.Country = strings.ToUpper(r.Country)
	return nil
}

func (r *request) parseDates(a tools.Args) error {
	for _, d := range []struct {
		name string
		to   *string
	}{{"date_after", &r.DateAfter}, {"date_before", &r.DateBefore}} {
		s, err := a.String(d.name, false)
		if err != nil {
			return err
		}
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return fmt.Errorf("argument %q must be a date YYYY-MM-DD, got %q", d.name, s)
		}
		*d.to = s
	}
	switch {
	case r.Freshness != "" && (r.DateAfter != "" || r.DateBefore != ""):
		return errors.New(`give either "freshness" or "date_after"/"date_before", not both`)
	case r.DateAfter != "" && r.DateBefore != "" && r.DateAfter > r.DateBefore:
		return fmt.Errorf(`"date_after" %s is later than "date_before" %s`, r.DateAfter, r.DateBefore)
	}
	return nil
}
