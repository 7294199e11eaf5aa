package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// maxResponse bounds what one Bot API answer may weigh: getUpdates
// returns at most pollLimit updates of a few KB each.
const maxResponse = 8 << 20

// APIError is a Bot API refusal: the server answered {"ok":false,…}. The
// request provably failed, so a caller may retry it.
type APIError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  time.Duration // 429: wait this long
	MigrateTo   int64         // the group became this supergroup
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// unauthorized says the token is refused: 401, or 404 which Telegram
// answers for a token it does not know the shape of.
func (e *APIError) unauthorized() bool { return e.Code == 401 || e.Code == 404 }

// transportError is a request that got no Bot API answer. Written says
// the request reached the wire, so Telegram may have acted on it.
type transportError struct {
	method  string
	written bool
	err     error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("telegram %s: %v", e.method, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

// client calls the Bot API for one token. It never puts the token in an
// error: the request URL is the only place it appears.
type client struct {
	http  *http.Client
	base  string // <apiRoot>/bot<token>/
	files string // <apiRoot>/file/bot<token>/
	token string
}

// call posts params as JSON to method and decodes the result into out.
func (c *client) call(ctx context.Context, method string, params, out any) error {
	body, contentType, err := encode(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encode request: %w", method, err)
	}
	var written atomic.Bool // set on the transport's goroutine
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			written.Store(true)
		}
	}}
	ctx = httptrace.WithClientTrace(ctx, trace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: build request: %w", method, c.scrub(err))
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.http.Do(req)
	if err != nil {
		return &transportError{method: method, written: written.Load(), err: c.scrub(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return &transportError{method: method, written: true, err: c.scrub(err)}
	}
	if len(raw) > maxResponse {
		return fmt.Errorf("telegram %s: response larger than %d bytes", method, maxResponse)
	}
	var r apiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("telegram %s: HTTP %d with a body that is not a Bot API answer: %w", method, resp.StatusCode, err)
	}
	if !r.OK {
		if c.token != "" {
			r.Description = strings.ReplaceAll(r.Description, c.token, "<token>")
		}
		return apiErr(method, resp.StatusCode, &r)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("telegram %s: decode result: %w", method, err)
	}
	return nil
}

func apiErr(method string, status int, r *apiResponse) *APIError {
	e := &APIError{Method: method, Code: r.ErrorCode, Description: r.Description}
	if e.Code == 0 {
		e.Code = status
	}
	if r.Parameters != nil {
		e.RetryAfter = time.Duration(r.Parameters.RetryAfter) * time.Second
		e.MigrateTo = r.Parameters.MigrateToChatID
	}
	return e
}

// scrub removes the request URL (which holds the token) from an error:
// *url.Error prints it, so only its cause is kept, and any other mention
// of the token is masked.
func (c *client) scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if c.token != "" && strings.Contains(err.Error(), c.token) {
		return &scrubbed{msg: strings.ReplaceAll(err.Error(), c.token, "<token>"), err: err}
	}
	return err
}

// scrubbed is an error whose text held the token. It unwraps only to a
// context error, so that errors.Is(err, context.Canceled) still works
// while no caller can reach the unmasked text.
type scrubbed struct {
	msg string
	err error
}

func (s *scrubbed) Error() string { return s.msg }

func (s *scrubbed) Unwrap() error {
	for _, c := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(s.err, c) {
			return c
		}
	}
	return nil
}
