package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"talon/internal/channel"
)

// maxResponse bounds a Web API response body; Slack's answers to the calls
// made here are a few KB.
const maxResponse = 1 << 20

// maxRetryAfter is the longest Retry-After a 429 may ask for before the
// post is given up instead of waited for.
const maxRetryAfter = time.Minute

// APIError is Slack's refusal of a Web API call: the HTTP status was 200 but
// the answer said ok:false.
type APIError struct {
	Method string
	Code   string // Slack's error string: channel_not_found, invalid_auth, …
	Needed string // for missing_scope, the scope the call needs
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("slack %s: %s", e.Method, e.Code)
	if hint := hints[e.Code]; hint != "" {
		msg += " (" + hint + ")"
	}
	if e.Needed != "" {
		msg += " (needed scope: " + e.Needed + ")"
	}
	return msg
}

// hints explain the errors a person can fix.
var hints = map[string]string{
	"channel_not_found":      "the conversation does not exist or the bot cannot see it",
	"not_in_channel":         "the bot is not a member of the channel; invite it",
	"is_archived":            "the channel is archived",
	"msg_too_long":           "the text is longer than Slack's 40,000 characters",
	"no_text":                "the message has no text",
	"restricted_action":      "a workspace setting forbids the bot to post there",
	"invalid_auth":           "the token is not valid",
	"not_authed":             "no token was sent",
	"token_revoked":          "the token was revoked",
	"token_expired":          "the token expired",
	"account_inactive":       "the app was uninstalled or the user deactivated",
	"missing_scope":          "the token lacks a scope",
	"not_allowed_token_type": "this call needs a different kind of token",
	"ratelimited":            "Slack's rate limit",
}

// permanent are the errors that retrying cannot fix: Run stops on them.
var permanent = map[string]bool{
	"invalid_auth": true, "not_authed": true, "token_revoked": true, "token_expired": true,
	"account_inactive": true, "missing_scope": true, "not_allowed_token_type": true,
	"no_permission": true, "team_access_not_granted": true,
}

// isPermanent reports whether err is a refusal that retrying cannot fix.
func isPermanent(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && permanent[ae.Code]
}

// RateLimitError is a 429 answer.
type RateLimitError struct {
	Method     string
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("slack %s: rate limited, retry after %s", e.Method, e.RetryAfter)
}

// UnconfirmedError is a call whose request may have reached Slack but whose
// answer was lost or unreadable: Slack may have done it. It is never resent.
type UnconfirmedError struct {
	Method string
	Err    error
}

func (e *UnconfirmedError) Error() string {
	return fmt.Sprintf("slack %s: unconfirmed, not resent: %v", e.Method, e.Err)
}

// Unwrap lets errors.Is find both the cause and channel.ErrUnconfirmed,
// which tells the hub the message may have been delivered.
func (e *UnconfirmedError) Unwrap() []error { return []error{channel.ErrUnconfirmed, e.Err} }

// call POSTs body (url.Values as a form, anything else as JSON, nothing
// when nil) to method with token and
// decodes the answer into out, which must have the ok/error fields of
// envelope. It makes exactly one request.
func (a *App) call(ctx context.Context, method, token string, body any, out any) error {
	return a.callUpTo(ctx, method, token, body, out, maxResponse)
}

// callUpTo is call for an answer of at most limit bytes.
func (a *App) callUpTo(ctx context.Context, method, token string, body any, out any, limit int64) error {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case url.Values:
		// Slack's read methods take only form or query arguments.
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("slack %s: encoding the request: %w", method, err)
		}
		rd, ctype = bytes.NewReader(j), "application/json; charset=utf-8"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.apiURL+method, rd)
	if err != nil {
		return fmt.Errorf("slack %s: building the request: %w", method, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		// Tokens travel only in the Authorization header, so the error
		// (which quotes the URL) carries none.
		return &UnconfirmedError{Method: method, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return &UnconfirmedError{Method: method, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return &RateLimitError{Method: method, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	}
	if resp.StatusCode != http.StatusOK {
		return &UnconfirmedError{Method: method, Err: fmt.Errorf("HTTP %d", resp.StatusCode)}
	}
	if int64(len(raw)) > limit {
		return &UnconfirmedError{Method: method, Err: fmt.Errorf("answer larger than %d bytes", limit)}
	}
	var env struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Needed string `json:"needed"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return &UnconfirmedError{Method: method, Err: fmt.Errorf("decoding the answer: %w", err)}
	}
	if !env.OK {
		code := env.Error
		if code == "" {
			code = "unknown_error"
		}
		if code == "ratelimited" || code == "rate_limited" {
			return &RateLimitError{Method: method, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return &APIError{Method: method, Code: clip(code, 64), Needed: clip(env.Needed, 200)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return &UnconfirmedError{Method: method, Err: fmt.Errorf("decoding the answer: %w", err)}
		}
	}
	return nil
}

// retryAfter parses a Retry-After of whole seconds; a missing or odd value
// means one second, Slack's usual.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return time.Second
	}
	if n > 3600 {
		n = 3600
	}
	return time.Duration(n) * time.Second
}

// clip bounds a string taken from an answer before it reaches an error.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
