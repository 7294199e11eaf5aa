package websearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// sonarRequest is the chat completion that asks Sonar to search.
type sonarRequest struct {
	Model    string         `json:"model"`
	Messages []sonarMessage `json:"messages"`
	// Recency is Perplexity's search_recency_filter: day, week, month,
	// year.
	Recency string `json:"search_recency_filter,omitempty"`
}

type sonarMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func sonarBody(model string, r request) ([]byte, error) {
	return json.Marshal(sonarRequest{Model: model, Messages: []sonarMessage{{Role: "user", Content: r.Query}}, Recency: r.Freshness})
}

// sonarResponse is what the tool reads of a Sonar chat completion:
// Perplexity's top-level citations and search_results, and OpenRouter's
// url_citation annotations.
type sonarResponse struct {
	Choices []struct {
		Message struct {
			Content     string `json:"content"`
			Annotations []struct {
				Type        string `json:"type"`
				URLCitation struct {
					URL   string `json:"url"`
					Title string `json:"title"`
				} `json:"url_citation"`
			} `json:"annotations"`
		} `json:"message"`
	} `json:"choices"`
	Citations     []string `json:"citations"`
	SearchResults []struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"search_results"`
}

// parseSonar reads the answer and its sources, each URL once, in the
// order the provider gave them.
func parseSonar(body []byte) (string, []citation, error) {
	var resp sonarResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", nil, fmt.Errorf("reading the chat completion: %w", err)
	}
	if len(resp.Choices) == 0 {
		return "", nil, errors.New("the chat completion has no choices")
	}
	msg := resp.Choices[0].Message
	if strings.TrimSpace(msg.Content) == "" {
		return "", nil, errors.New("the chat completion's answer is empty")
	}
	titles := map[string]string{}
	for _, s := range resp.SearchResults {
		titles[s.URL] = s.Title
	}
	var cites []citation
	seen := map[string]bool{}
	add := func(u, title string) {
		if u == "" || seen[u] {
			return
		}
		seen[u] = true
		cites = append(cites, citation{URL: u, Title: or(title, titles[u])})
	}
	for _, u := range resp.Citations {
		add(u, "")
	}
	for _, s := range resp.SearchResults {
		add(s.URL, s.Title)
	}
	for _, a := range msg.Annotations {
		if a.Type == "url_citation" {
			add(a.URLCitation.URL, a.URLCitation.Title)
		}
	}
	return msg.Content, cites, nil
}
