package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/netguard"
	"talon/internal/untrusted"
)

// MaxResponseBytes bounds a provider's response body.
const MaxResponseBytes = 1 << 20

// maxDetailChars bounds the provider's own words quoted in an error.
const maxDetailChars = 300

// remoteError is a failure at or on the way to the provider, worded for
// the model; it becomes a kind "error" result.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

func remotef(format string, args ...any) error {
	return &remoteError{msg: fmt.Sprintf(format, args...)}
}

// call sends req with client and returns the body of a 2xx answer.
// Everything else is a *remoteError, with the key redacted from it.
func call(ctx context.Context, client *http.Client, req *http.Request, ep endpoint, timeout time.Duration, now func() time.Time) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, describe(ctx, ep, err, timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	switch {
	case err != nil:
		return nil, describe(ctx, ep, fmt.Errorf("reading the answer: %w", err), timeout)
	case len(body) > MaxResponseBytes:
		return nil, remotef("%s: the answer is larger than %d bytes", ep.provider, MaxResponseBytes)
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return body, nil
	}
	return nil, &remoteError{msg: redact(statusMessage(ep, resp, body, now()), ep.key)}
}

// statusMessage explains a status outside 2xx: a refused key, a rate
// limit with the wait the provider asked for, a refused request with the
// provider's reason, or a failure on its side.
func statusMessage(ep endpoint, resp *http.Response, body []byte, now time.Time) string {
	code := resp.StatusCode
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("%s: the API key was refused (HTTP %d); check %s", ep.provider, code, ep.keyHelp)
	case code == http.StatusTooManyRequests:
		msg := fmt.Sprintf("%s: rate limited (HTTP 429): the account's request rate or quota is used up", ep.provider)
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			return msg + fmt.Sprintf("; the provider asks to retry after %s", d)
		}
		return msg + "; the provider gave no retry time, so wait before searching again"
	case code >= 500:
		return fmt.Sprintf("%s: the provider failed (HTTP %d); try again later", ep.provider, code)
	}
	msg := fmt.Sprintf("%s: the provider refused the request (HTTP %d)", ep.provider, code)
	if d := detail(body); d != "" {
		msg += ": " + d
	}
	return msg
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now).Round(time.Second), 0), true
	}
	return 0, false
}

// detail is the provider's reason in an error body (Brave's
// error.detail, OpenAI-style error.message), bounded and defused.
func detail(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(e.Error, &s) != nil {
		var obj struct{ Detail, Message string }
		_ = json.Unmarshal(e.Error, &obj)
		s = or(obj.Detail, obj.Message)
	}
	s = strings.Join(strings.Fields(untrusted.Sanitize(s)), " ")
	if utf8.RuneCountInString(s) > maxDetailChars {
		s = truncate(s, maxDetailChars)
	}
	return s
}

// describe explains a transport failure: the network rule's refusal, the
// timeout, cancellation.
func describe(ctx context.Context, ep endpoint, err error, timeout time.Duration) error {
	var refused *netguard.RefusedError
	switch {
	case errors.As(err, &refused):
		return remotef("%s: %v; web_search reaches only public addresses, or those the operator allows (tenants.network.allowHosts)", ep.provider, refused)
	case errors.Is(ctx.Err(), context.Canceled):
		return remotef("%s: cancelled", ep.provider)
	case ctx.Err() != nil:
		return remotef("%s: the run's time ran out", ep.provider)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return remotef("%s: no answer within %s (tools.web.search.timeoutSeconds)", ep.provider, timeout)
	}
	return remotef("%s: %s", ep.provider, redact(err.Error(), ep.key))
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// redact removes key from s, in case a provider or proxy echoes it.
func redact(s, key string) string {
	if len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// newRequest builds the request of ep: Brave's GET or Sonar's POST, with
// the key in the provider's header.
func newRequest(ctx context.Context, ep endpoint, target string, body []byte) (*http.Request, error) {
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		method, rd = http.MethodPost, bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("%s: building the request: %w", ep.provider, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "Talon web_search")
	if ep.transport == transportBrave {
		req.Header.Set("X-Subscription-Token", ep.key)
	} else {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+ep.key)
	}
	return req, nil
}
