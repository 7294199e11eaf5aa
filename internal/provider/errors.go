package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"talon/internal/netguard"
)

// Error is a failed model call: an HTTP error status, an error the API
// reported inside a response or stream, or a network failure (Status 0).
type Error struct {
	// Provider names the client, as in OpenAIOptions.Name ("openai",
	// "openrouter", "anthropic", a configured provider id).
	Provider string
	// Status is the HTTP status code. For an error reported inside a stream
	// it is the status the API documents for that error type (Anthropic's
	// overloaded_error is 529, api_error 500, ...), and 0 when there is none.
	// It is 0 for a network failure.
	Status int
	// Type is the API's error code or type ("rate_limit_exceeded",
	// "overloaded_error"); it may be empty.
	Type    string
	Message string
	// RetryAfter is the wait the server asked for (Retry-After or
	// retry-after-ms), 0 when it asked for none.
	RetryAfter time.Duration
	// Err is the underlying cause of a network failure, if any.
	Err error

	// early marks a network failure that happened before any byte of the
	// response was read, so that repeating the request is safe.
	early bool
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(":")
	if e.Status != 0 {
		b.WriteString(" ")
		b.WriteString(strconv.Itoa(e.Status))
		if e.Type != "" {
			b.WriteString(" ")
			b.WriteString(e.Type)
		}
		b.WriteString(":")
	} else if e.Type != "" {
		b.WriteString(" ")
		b.WriteString(e.Type)
		b.WriteString(":")
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg == "" && e.Status != 0 {
		msg = http.StatusText(e.Status)
	}
	if strings.TrimSpace(msg) == "" {
		// An API error without a message ({"error":""}, {"type":"error"}):
		// say so rather than hand the client an empty complaint.
		msg = "error reported without details"
	}
	b.WriteString(" ")
	b.WriteString(msg)
	return b.String()
}

// Unwrap returns the underlying cause, so errors.Is(err, context.Canceled)
// works on a cancelled call.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether repeating the same request may succeed: 408,
// 429 and 5xx statuses, and network failures that happened before any byte
// of the response was read, but for the network guard's refusal.
func (e *Error) Temporary() bool {
	switch {
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return true
	case e.Status >= 500 && e.Status <= 599:
		return true
	case e.Status == 0:
		// The network guard refusing an address refuses it every time.
		var refused *netguard.RefusedError
		return e.early && !errors.As(e.Err, &refused)
	}
	return false
}

// apiError is the error object both OpenAI and Anthropic put in error
// bodies: {"error": {"type", "message", "code"}}.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// kind returns the most specific identifier: the code if it is a non-empty
// string or a number, else the type.
func (a *apiError) kind() string {
	if len(a.Code) > 0 && string(a.Code) != "null" {
		var s string
		if json.Unmarshal(a.Code, &s) == nil {
			if s != "" {
				return s
			}
		} else {
			return string(a.Code)
		}
	}
	return a.Type
}

// maxErrorBody caps how much of an error response body is read.
const maxErrorBody = 1 << 20

// statusError builds an Error from a non-2xx response, reading (a bounded
// part of) its body.
func statusError(provider string, resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{
		Provider:   provider,
		Status:     resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, time.Now()),
	}
	var env struct {
		Error json.RawMessage `json:"error"`
		// Some compatible servers put the message at the top level.
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(body, &env) == nil {
		var ae apiError
		var s string
		switch {
		case len(env.Error) > 0 && json.Unmarshal(env.Error, &ae) == nil:
			e.Type, e.Message = ae.kind(), ae.Message
		case len(env.Error) > 0 && json.Unmarshal(env.Error, &s) == nil:
			e.Message = s
		case env.Message != "":
			e.Message = env.Message
		case env.Detail != "":
			e.Message = env.Detail
		}
	}
	if e.Message == "" {
		e.Message = truncate(strings.TrimSpace(string(body)), 500)
	}
	return e
}

// retryAfter parses Retry-After (delay seconds or an HTTP date) and the
// retry-after-ms header some APIs send; 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return wait(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return wait(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// wait is n units as a Duration: none for NaN and non-positive n, the
// longest Duration for n too large for one (Inf included), since converting
// such a float to an integer gives a negative number.
func wait(n float64, unit time.Duration) time.Duration {
	if !(n > 0) {
		return 0
	}
	d := n * float64(unit)
	if d >= float64(math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// networkError wraps a transport failure. early says no byte of the
// response had been read; ctx is the caller's context, whose end makes the
// failure final.
func networkError(ctx context.Context, provider string, err error, early bool) *Error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		return &Error{Provider: provider, Message: cause.Error(), Err: cause}
	}
	return &Error{Provider: provider, Err: err, early: early}
}

// malformed is the error for a response we cannot parse.
func malformed(provider, what string, err error) error {
	return fmt.Errorf("%s: malformed %s: %w", provider, what, err)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Do not cut a UTF-8 sequence in half.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// isTemporary reports whether err is an *Error that is Temporary.
func isTemporary(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Temporary()
}
