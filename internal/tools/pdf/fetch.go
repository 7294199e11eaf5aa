package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"talon/internal/tools"
)

// Remote fetches: the time one may take, and the redirects followed.
const (
	fetchTimeout = 60 * time.Second
	maxRedirects = 5
)

// fetch downloads a PDF of at most maxBytes from u through the tenant's
// network rule (tools.Outbound.Client: every address dialled, redirects
// included, passes netguard).
func fetch(ctx context.Context, env *tools.Env, u *url.URL, maxBytes int64) ([]byte, error) {
	client := env.Outbound.Client(env.AllowLoopback, fetchTimeout)
	// Redirects are followed here rather than refused: a document link
	// often redirects, and no key travels with this request. Each hop is
	// a new request through the same guarded dialer.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for hop := 0; ; hop++ {
		resp, err := get(ctx, client, u)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			resp.Body.Close()
			next, err := u.Parse(resp.Header.Get("Location"))
			switch {
			case err != nil:
				return nil, fmt.Errorf("fetching %s: the redirect location cannot be read: %v", u.Redacted(), err)
			case next.Scheme != "http" && next.Scheme != "https":
				return nil, fmt.Errorf("fetching %s: refusing a redirect to scheme %q", u.Redacted(), next.Scheme)
			case hop == maxRedirects:
				return nil, fmt.Errorf("fetching %s: more than %d redirects", u.Redacted(), maxRedirects)
			}
			u = next
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return nil, fmt.Errorf("fetching %s: the server answered %s", u.Redacted(), resp.Status)
		}
		if resp.ContentLength > maxBytes {
			return nil, fmt.Errorf("fetching %s: %d bytes; the limit is %d", u.Redacted(), resp.ContentLength, maxBytes)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("fetching %s: reading the body: %w", u.Redacted(), describe(ctx, err))
		}
		if int64(len(data)) > maxBytes {
			return nil, fmt.Errorf("fetching %s: more than %d bytes; the limit is %d", u.Redacted(), maxBytes, maxBytes)
		}
		return data, nil
	}
}

func get(ctx context.Context, client *http.Client, u *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: building the request: %w", u.Redacted(), err)
	}
	req.Header.Set("Accept", "application/pdf")
	req.Header.Set("User-Agent", "Talon-pdf/1")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", u.Redacted(), describe(ctx, err))
	}
	return resp, nil
}

// describe unwraps the client's error to its cause: the guard's refusal,
// a timeout, the call's cancellation.
func describe(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
