package websearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"talon/internal/netguard"
	"talon/internal/tools"
	"talon/internal/untrusted"
)

// MaxResponseBytes bounds a provider's response body.
const MaxResponseBytes = 1 << 20

// remoteError is a failure at or on the way to the provider, worded for
// the model; it becomes a kind "error" result.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

func remotef(format string, args ...any) error {
	return &remoteError{msg: fmt.Sprintf(format, args...)}
}

// call sends req with client and returns the body of a 2xx answer.
// Everything else is a *remoteError, with the key redacted from it: a
// refusal is explained as every remote API's is (tools.APIError), with
// where the key is set when it was the key.
func call(ctx context.Context, client *http.Client, req *http.Request, ep endpoint, timeout time.Duration) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, describe(ctx, ep, err, timeout)
	}
	defer resp.Body.Close()
	if code := resp.StatusCode; code < 200 || code > 299 {
		msg := untrusted.Sanitize(tools.APIError(ep.provider, resp, ep.key).Error())
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			msg += "; check " + ep.keyHelp
		}
		return nil, &remoteError{msg: msg}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	switch {
	case err != nil:
		return nil, describe(ctx, ep, fmt.Errorf("reading the answer: %w", err), timeout)
	case len(body) > MaxResponseBytes:
		return nil, remotef("%s: the answer is larger than %d bytes", ep.provider, MaxResponseBytes)
	}
	return body, nil
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
