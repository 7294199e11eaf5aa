package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/netguard"
	"talon/internal/tools"
)

// Limits of one fetch.
const (
	// MaxBodyBytes is how much of a response body is read; the rest is cut
	// and the result says so.
	MaxBodyBytes = 2 << 20
	// Timeout bounds a whole fetch: connect, redirects and body.
	Timeout = 30 * time.Second
	// MaxRedirects is how many redirects a fetch follows.
	MaxRedirects = 5
	// DefaultMaxChars is how many characters of text a result holds when
	// the call does not say.
	DefaultMaxChars = 50000
	minMaxChars     = 100
	maxMaxChars     = 200000
	maxURLChars     = 4096
)

// userAgent names Talon so site owners can tell what fetched their page.
const userAgent = "Mozilla/5.0 (compatible; Talon web_fetch)"

// accept prefers what the tool can read.
const accept = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,application/json;q=0.7,text/*;q=0.5,*/*;q=0.1"

type fetchTool struct {
	// strict and loopback are the guarded clients for runs without and
	// with tools.network.allowLoopback.
	strict, loopback *http.Client
	timeout          time.Duration
}

var _ tools.Tool = (*fetchTool)(nil)

// New returns the web_fetch tool, with the system resolver.
func New() tools.Tool { return newTool(nil, Timeout) }

// newTool builds the tool on resolver (nil: the system's) with timeout;
// tests pass a resolver that maps test names to chosen addresses.
func newTool(resolver netguard.Resolver, timeout time.Duration) *fetchTool {
	client := func(loopback bool) *http.Client {
		return netguard.NewClient(netguard.Options{AllowLoopback: loopback, Resolver: resolver,
			DialTimeout: 10 * time.Second, Timeout: timeout, MaxRedirects: MaxRedirects})
	}
	return &fetchTool{strict: client(false), loopback: client(true), timeout: timeout}
}

var schema = tools.Object(
	tools.Prop{Name: "url", Type: tools.TypeString, Required: true,
		Description: "The http or https URL to fetch, e.g. \"https://go.dev/doc/\". Private, loopback and metadata addresses are refused."},
	tools.Prop{Name: "extractMode", Type: tools.TypeString, Enum: []string{"markdown", "text"},
		Description: `How to render an HTML page: "markdown" (default) keeps headings, lists, links, code and tables; "text" gives plain text.`},
	tools.Prop{Name: "maxChars", Type: tools.TypeInteger,
		Description: fmt.Sprintf("Most characters of text to return, %d to %d; default %d. Longer text is cut and marked truncated.", minMaxChars, maxMaxChars, DefaultMaxChars)},
)

func (*fetchTool) Name() string { return "web_fetch" }

func (*fetchTool) Description() string {
	return "Fetch a web page (http or https GET) and return its readable text as JSON: url, finalUrl, status, contentType, title, " +
		"extractMode, truncated, length and text. HTML is rendered as markdown or plain text without navigation, scripts and ads; " +
		"plain text and JSON are returned as they are; images, PDFs and other binary types are refused. " +
		"Limits: 30 s, 5 redirects, 2 MiB of body. Private and local network addresses are not reachable."
}

func (*fetchTool) Schema() json.RawMessage { return schema }

// request is one checked call.
type request struct {
	url      *url.URL
	markdown bool
	maxChars int
}

func parseRequest(raw json.RawMessage) (request, error) {
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return request{}, err
	}
	s, err := a.String("url", true)
	if err != nil {
		return request{}, err
	}
	u, err := checkURL(strings.TrimSpace(s))
	if err != nil {
		return request{}, err
	}
	mode, err := a.StringEnum("extractMode", false, "markdown", "text")
	if err != nil {
		return request{}, err
	}
	req := request{url: u, markdown: mode != "text", maxChars: DefaultMaxChars}
	if a.Has("maxChars") {
		if req.maxChars, err = a.Int("maxChars", false, minMaxChars, maxMaxChars); err != nil {
			return request{}, err
		}
	}
	return req, nil
}

// checkURL accepts an absolute http or https URL with a host and without
// credentials (which the client would send as Basic auth to whoever the
// model named).
func checkURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New(`argument "url" must not be empty`)
	}
	if n := utf8.RuneCountInString(s); n > maxURLChars {
		return nil, fmt.Errorf(`argument "url" is %d characters; the limit is %d`, n, maxURLChars)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf(`argument "url" is not a valid URL: %v`, err)
	}
	switch {
	case u.Scheme == "":
		return nil, fmt.Errorf(`argument "url" must be an absolute http or https URL such as "https://example.com/page", got %q`, s)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf(`argument "url" must be an http or https URL, not scheme %q`, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf(`argument "url" %q has no host`, s)
	case u.User != nil:
		return nil, errors.New(`argument "url" must not contain credentials (user@host); web_fetch sends none`)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

func (t *fetchTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	req, err := parseRequest(raw)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	client := t.strict
	if env != nil && env.AllowLoopback {
		client = t.loopback
	}
	resp, err := t.get(ctx, client, req.url)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	page, err := render(resp, req)
	if resp.status < 200 || resp.status > 299 {
		// The status is the news; the body's text, when readable, says why.
		return tools.ErrorResult(statusError(resp, page.Text)), nil
	}
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("web_fetch %s: %w", resp.finalURL.Redacted(), err)), nil
	}
	out := result{
		URL: req.url.String(), FinalURL: resp.finalURL.String(), Status: resp.status,
		ContentType: resp.contentType, Title: page.Title, ExtractMode: map[bool]string{true: "markdown", false: "text"}[req.markdown],
		Truncated: page.Truncated, Length: utf8.RuneCountInString(page.Text), Text: page.Text, Warning: page.Warning,
	}
	return encode(out)
}

// result is the JSON the model gets. Length counts the characters of Text.
type result struct {
	URL         string `json:"url"`
	FinalURL    string `json:"finalUrl"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Title       string `json:"title"`
	ExtractMode string `json:"extractMode"`
	Truncated   bool   `json:"truncated"`
	Length      int    `json:"length"`
	Text        string `json:"text"`
	Warning     string `json:"warning,omitempty"`
}

// encode writes r without HTML escaping: "&" in a URL stays "&" for the
// model to read.
func encode(r result) (tools.Result, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return tools.Result{}, fmt.Errorf("encoding web_fetch result: %w", err)
	}
	return tools.Result{Text: strings.TrimSuffix(b.String(), "\n")}, nil
}

// statusError reports a response outside 2xx with the start of its text,
// which often says why.
func statusError(resp fetched, text string) error {
	msg := fmt.Sprintf("web_fetch %s: HTTP %s", resp.finalURL.Redacted(), resp.statusText)
	if text = strings.TrimSpace(text); text != "" {
		msg += "; the response says: " + cutRunes(text, 500)
	}
	return errors.New(msg)
}
