package imagegen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"talon/internal/provider"
)

// request is the Chat Completions body OpenRouter's image output takes.
type request struct {
	Model       string       `json:"model"`
	Messages    []message    `json:"messages"`
	Modalities  []string     `json:"modalities"`
	ImageConfig *imageConfig `json:"image_config,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type imageConfig struct {
	AspectRatio string `json:"aspect_ratio"`
}

// response is the part of a Chat Completions answer the tool reads.
type response struct {
	Choices []struct {
		Message struct {
			// Content is a string, null, or (from some providers) an array
			// of parts.
			Content json.RawMessage `json:"content"`
			Images  []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"images"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	// OpenRouter may report an upstream failure in a 200 answer.
	Error *struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// answer is what the model gave back.
type answer struct {
	text         string
	urls         []string // image URLs, in order
	finishReason string
}

// generate asks the model for an image. A failure worded for the model is
// a *callError; other errors are the caller's cancellation.
func (t *Tool) generate(ctx context.Context, key, prompt, aspect string) (answer, error) {
	body := request{
		Model:      t.cfg.Model,
		Messages:   []message{{Role: "user", Content: prompt}},
		Modalities: []string{"image", "text"},
	}
	if aspect != "" {
		body.ImageConfig = &imageConfig{AspectRatio: aspect}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return answer{}, fmt.Errorf("image-gen: encoding the request: %w", err)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+key)
	h.Set("User-Agent", "talon")
	h.Set("X-Title", provider.DefaultOpenRouterTitle)

	timeout := t.cfg.timeout()
	errTimeout := fmt.Errorf("no answer within %s (timeoutMs %d)", timeout, t.cfg.TimeoutMs)
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	data, err := provider.PostJSON(cctx, provider.PostOptions{
		Name: "openrouter", Client: t.client, Header: h,
		// The call's deadline bounds every attempt and wait, so that a
		// timeout always reads as errTimeout.
		Timeout: -1, MaxRetries: noneIfZero(t.retries),
	}, t.url, raw)
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		if errors.Is(context.Cause(cctx), errTimeout) {
			return answer{}, &callError{fmt.Sprintf("image-gen: %s from %s: %v", t.cfg.Model, t.cfg.BaseURL, errTimeout)}
		}
		return answer{}, t.describe(err)
	}
	return parseAnswer(data)
}

// callError is a failure to report to the model as an IsError result.
type callError struct{ msg string }

func (e *callError) Error() string { return e.msg }

// describe words a failed request for the model.
func (t *Tool) describe(err error) error {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return &callError{"image-gen: request to OpenRouter failed: " + err.Error()}
	}
	detail := strings.TrimSpace(pe.Message)
	if detail == "" && pe.Err != nil {
		detail = pe.Err.Error()
	}
	if detail == "" {
		detail = http.StatusText(pe.Status)
	}
	detail = truncate(detail, 500)
	var what string
	switch s := pe.Status; {
	case s == 0:
		what = fmt.Sprintf("could not reach %s", t.cfg.BaseURL)
	case s == http.StatusUnauthorized:
		what = fmt.Sprintf("OpenRouter rejected the API key in %s (401)", t.cfg.APIKeyEnv)
	case s == http.StatusPaymentRequired:
		what = "OpenRouter refused for lack of credits on the account (402)"
	case s == http.StatusForbidden:
		what = "OpenRouter refused the request (403; a moderation flag or a key limit)"
	case s == http.StatusTooManyRequests:
		what = "OpenRouter is rate limiting this key (429)"
	case s >= 500:
		what = fmt.Sprintf("OpenRouter or the model's provider failed (%d)", s)
	case s == http.StatusBadRequest || s == http.StatusNotFound:
		what = fmt.Sprintf("OpenRouter refused the request for model %q (%d; is it an image-output model?)", t.cfg.Model, s)
	default:
		what = fmt.Sprintf("OpenRouter answered %d", s)
	}
	msg := "image-gen: " + what + ": " + detail
	if pe.Temporary() {
		if t.retries > 0 {
			msg += fmt.Sprintf(" (after %d retries)", t.retries)
		}
		if pe.RetryAfter > 0 {
			msg += fmt.Sprintf("; the server asks to wait %s before trying again", pe.RetryAfter.Round(time.Second))
		}
	}
	return &callError{msg}
}

// parseAnswer reads a 200 answer.
func parseAnswer(data []byte) (answer, error) {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return answer{}, &callError{fmt.Sprintf("image-gen: OpenRouter's answer is not the expected JSON: %v", err)}
	}
	if r.Error != nil {
		code := strings.Trim(string(r.Error.Code), `"`)
		return answer{}, &callError{fmt.Sprintf("image-gen: OpenRouter reported an error (code %s): %s", code, truncate(r.Error.Message, 500))}
	}
	if len(r.Choices) == 0 {
		return answer{}, &callError{"image-gen: OpenRouter's answer has no choices"}
	}
	c := r.Choices[0]
	a := answer{text: contentText(c.Message.Content), finishReason: c.FinishReason}
	for _, img := range c.Message.Images {
		if img.ImageURL.URL != "" {
			a.urls = append(a.urls, img.ImageURL.URL)
		}
	}
	return a, nil
}

// contentText is the text of a message's content: a string, or the text
// parts of an array.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" && p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return strings.TrimSpace(b.String())
}

// noneIfZero maps "no retries" to PostOptions' spelling of it.
func noneIfZero(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
