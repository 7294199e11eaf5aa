package websearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// braveFreshness is Brave's code for each freshness.
var braveFreshness = map[string]string{"day": "pd", "week": "pw", "month": "pm", "year": "py"}

// braveURL is the GET URL of one search: Brave's query parameters. A
// date range needs its start: Brave's custom freshness is "FROMtoTO",
// and date_after alone runs to today (now, UTC).
func braveURL(endpoint string, r request, count int, now time.Time) (string, error) {
	q := url.Values{"q": {r.Query}, "count": {strconv.Itoa(count)}}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("country", r.Country)
	switch {
	case r.SearchLang != "" && r.Language != "" && r.SearchLang != r.Language:
		return "", errors.New(`give "language" or "search_lang", not two different ones`)
	case r.SearchLang != "":
		set("search_lang", r.SearchLang)
	default:
		set("search_lang", r.Language)
	}
	set("ui_lang", r.UILang)
	set("freshness", braveFreshness[r.Freshness])
	switch {
	case r.DateBefore != "" && r.DateAfter == "":
		return "", errors.New(`"date_before" needs "date_after": Brave's date ranges have a start and an end`)
	case r.DateAfter != "":
		set("freshness", r.DateAfter+"to"+or(r.DateBefore, now.UTC().Format(time.DateOnly)))
	}
	return endpoint + "?" + q.Encode(), nil
}

// braveResponse is the part of Brave's web search response the tool
// reads.
type braveResponse struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			PageAge     string `json:"page_age"`
		} `json:"results"`
	} `json:"web"`
}

// parseBrave reads Brave's results as hits, at most count.
func parseBrave(body []byte, count int) ([]hit, error) {
	var resp braveResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("reading Brave's answer: %w", err)
	}
	var hits []hit
	for _, r := range resp.Web.Results {
		if len(hits) == count {
			break
		}
		hits = append(hits, hit{Title: stripTags(r.Title), URL: r.URL, Snippet: stripTags(r.Description), Published: r.PageAge})
	}
	return hits, nil
}
