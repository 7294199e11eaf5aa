package discord

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

	"talon/internal/channel"
)

// maxBody bounds a REST response read from Discord (a message object is
// a few KB; a channel object less).
const maxBody = 1 << 20

// maxRetryAfter is the longest 429 wait honoured inside a call; a longer
// one is returned as an error so a reply is not held for minutes.
const maxRetryAfter = 60 * time.Second

// max429 is how many 429s in a row one call waits out before giving up.
const max429 = 5

// userAgent is the form Discord requires of bots
// ("DiscordBot ($url, $versionNumber)").
const userAgent = "DiscordBot (https://github.com/talon, 1)"

// APIError is a refusal from Discord's REST API: the HTTP status and
// Discord's JSON error code and message.
type APIError struct {
	Status  int
	Code    int
	Message string
}

func (e *APIError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("discord answered %d (code %d): %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("discord answered %d: %s", e.Status, e.Message)
}

// ErrUnconfirmed marks a send whose outcome is unknown: Discord may or
// may not have posted the message (a lost response, a 5xx, a success
// without a message id). It is never re-sent blindly (spec R8.12).
var ErrUnconfirmed = fmt.Errorf("discord: %w", channel.ErrUnconfirmed)

// answerLost wraps a failure after the request may have reached Discord:
// no answer, or one that cannot be read.
type answerLost struct{ err error }

func (e *answerLost) Error() string { return e.err.Error() }
func (e *answerLost) Unwrap() error { return e.err }

// rateLimited is Discord's 429 body.
type rateLimited struct {
	Message    string  `json:"message"`
	RetryAfter float64 `json:"retry_after"`
	Global     bool    `json:"global"`
}

// call does one REST request, waiting out 429s (a 429 means Discord did
// not act on the request, so repeating it is safe even for a POST) and
// the bot-wide global limit. out may be nil.
func (b *Bot) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
	}
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return b.callBody(ctx, method, path, body, contentType, out)
}

// callBody is call with a body already encoded (a multipart form).
func (b *Bot) callBody(ctx context.Context, method, path string, body []byte, contentType string, out any) error {
	for attempt := 0; ; attempt++ {
		if err := b.waitGlobal(ctx); err != nil {
			return err
		}
		wait, err := b.once(ctx, method, path, body, contentType, out)
		if wait == 0 {
			return err
		}
		if attempt+1 >= max429 || wait > maxRetryAfter {
			return fmt.Errorf("%s %s: rate limited, retry after %s: %w", method, path, wait, err)
		}
		b.log.Debug("discord rate limited", "account", b.account, "path", path, "retryAfter", wait)
		if err := b.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// once sends the request; a 429 is returned as the wait it asks for.
func (b *Bot) once(ctx context.Context, method, path string, body []byte, contentType string, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.apiURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bot "+b.token)
	req.Header.Set("User-Agent", userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, &answerLost{redact(err, b.token)})
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, fmt.Errorf("%s %s: reading the answer: %w", method, path, &answerLost{err})
	}
	if len(data) > maxBody {
		return 0, fmt.Errorf("%s %s: %w", method, path, &answerLost{fmt.Errorf("answer larger than %d bytes", maxBody)})
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return b.limited(resp, data)
	}
	if resp.StatusCode >= 300 {
		return 0, apiError(resp.StatusCode, data)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return 0, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, fmt.Errorf("%s %s: decoding the answer: %w", method, path, &answerLost{err})
	}
	return 0, nil
}

// limited reads a 429: how long to wait, and whether the whole bot must.
func (b *Bot) limited(resp *http.Response, data []byte) (time.Duration, error) {
	var rl rateLimited
	_ = json.Unmarshal(data, &rl) // a body we cannot read falls back to the header
	secs := rl.RetryAfter
	if secs <= 0 {
		secs, _ = strconv.ParseFloat(resp.Header.Get("Retry-After"), 64)
	}
	wait := time.Duration(secs * float64(time.Second))
	if wait <= 0 || wait > time.Hour {
		wait = time.Second
	}
	if rl.Global || strings.EqualFold(resp.Header.Get("X-RateLimit-Global"), "true") {
		b.mu.Lock()
		b.globalUntil = b.now().Add(wait)
		b.mu.Unlock()
	}
	return wait, &APIError{Status: http.StatusTooManyRequests, Message: "rate limited"}
}

func (b *Bot) waitGlobal(ctx context.Context) error {
	b.mu.Lock()
	until := b.globalUntil
	b.mu.Unlock()
	if d := until.Sub(b.now()); d > 0 {
		return b.sleep(ctx, d)
	}
	return nil
}

func apiError(status int, data []byte) error {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) != nil || e.Message == "" {
		e.Message = http.StatusText(status)
	}
	if len(e.Message) > 300 {
		e.Message = e.Message[:300]
	}
	return &APIError{Status: status, Code: e.Code, Message: e.Message}
}

// redact removes the token from an error text (a client or proxy error
// should never carry it, but an error is shown in Status and logs).
func redact(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}

// sleep waits d or until ctx ends.
func (b *Bot) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
