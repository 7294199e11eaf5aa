package provider

import (
	"context"
	"net/http"
	"time"
)

// PostOptions configures PostJSON.
type PostOptions struct {
	// Name prefixes errors, as OpenAIOptions.Name does; default "http".
	Name string
	// Client defaults to the shared pooled client.
	Client *http.Client
	// Header is sent with every attempt (Authorization and the like);
	// Content-Type and Accept are set to application/json.
	Header http.Header
	// Timeout bounds one attempt. 0 means DefaultTimeout, negative none.
	Timeout time.Duration
	// MaxRetries is how many times a temporary failure is retried. 0 means
	// DefaultMaxRetries, negative none.
	MaxRetries int
}

// PostJSON POSTs body to url and returns the body of the 2xx answer (at
// most 32 MiB). It is for OpenAI-compatible endpoints the Chat clients do
// not model (OpenRouter's image output): the same retries of 429, 5xx and
// early network failures with backoff or the server's Retry-After, and the
// same *Error values, so callers map failures as they do for Chat.
func PostJSON(ctx context.Context, opts PostOptions, url string, body []byte) ([]byte, error) {
	name := opts.Name
	if name == "" {
		name = "http"
	}
	t := newTransport(name, opts.Client, opts.Timeout, -1, opts.MaxRetries)
	for k, vs := range opts.Header {
		t.header[k] = vs
	}
	var out []byte
	_, err := t.do(ctx, url, body, false, nil, parser{body: func(data []byte) (*Response, error) {
		out = data
		return &Response{}, nil
	}})
	if err != nil {
		return nil, err
	}
	return out, nil
}
