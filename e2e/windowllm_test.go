package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// windowLLM is a model server at the outside edge that enforces a context
// window, as real ones do: a request over it gets the provider's own
// context-length error (OpenAI's 400 context_length_exceeded, or
// Anthropic's 400 "prompt is too long"), and every answer reports the
// request's size as its usage. It counts a request's tokens as a quarter
// of its body's bytes (tool schemas and JSON included), which is more than
// Talon's estimate of the same messages, so Talon must keep a margin.
//
// It summarises as a summariser would for the test: a request whose
// system prompt asks for a summary is answered with the spec's headings
// and every "FACT:" line the request holds, so a fact stated in the first
// turn can reach the last one only through the summaries.
type windowLLM struct {
	srv       *httptest.Server
	api       string // "openai" or "anthropic"
	window    int    // tokens
	reply     string
	mu        sync.Mutex
	maxTokens int    // the largest request accepted
	rejected  int    // requests over the window
	summaries int    // summarisation requests answered
	last      string // the body of the last ordinary request accepted
	// onSummary, when set, is called (without the lock) before a
	// summarisation request is answered: a test holds it there, until
	// the request's context ends at the latest.
	onSummary func(ctx context.Context)
	// onChat is onSummary for the other requests: the agent's turns.
	onChat func(ctx context.Context)
}

func newWindowLLM(t *testing.T, api string, window int) *windowLLM {
	t.Helper()
	l := &windowLLM{api: api, window: window, reply: "noted"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", l.serve)
	mux.HandleFunc("POST /v1/messages", l.serve)
	l.srv = httptest.NewServer(mux)
	t.Cleanup(l.srv.Close)
	return l
}

var factLine = regexp.MustCompile(`FACT: [^"\\\n]*`)

// isSummary reports whether a request asks for a summary: its system
// prompt (OpenAI's system message or Anthropic's system field) says so.
func isSummary(body []byte) bool {
	var r struct {
		System   any `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &r)
	sys := fmt.Sprint(r.System)
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			sys += fmt.Sprint(m.Content)
		}
	}
	return strings.Contains(strings.ToLower(sys), "summar")
}

func (l *windowLLM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	tokens := len(body) / 4
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	l.mu.Lock()
	if tokens > l.window {
		l.rejected++
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		if l.api == "anthropic" {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`, tokens, l.window)
		} else {
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, l.window, tokens)
		}
		return
	}
	text := l.reply
	if hook := l.onSummary; hook != nil && isSummary(body) {
		l.mu.Unlock()
		hook(r.Context())
		l.mu.Lock()
	}
	if hook := l.onChat; hook != nil && !isSummary(body) {
		l.mu.Unlock()
		hook(r.Context())
		l.mu.Lock()
	}
	if isSummary(body) {
		l.summaries++
		facts := map[string]bool{}
		var kept []string
		for _, f := range factLine.FindAllString(string(body), -1) {
			if !facts[f] {
				facts[f] = true
				kept = append(kept, "- "+f)
			}
		}
		text = "## Goal\nKeep notes.\n## Constraints & Preferences\n(none)\n## Progress\n### Done\n- [x] talked\n### In Progress\n(none)\n### Blocked\n(none)\n## Key Decisions\n(none)\n## Next Steps\n1. Go on.\n## Critical Context\n" + strings.Join(kept, "\n")
	} else {
		l.last = string(body)
	}
	l.maxTokens = max(l.maxTokens, tokens)
	l.mu.Unlock()
	out := len(text) / 4
	if l.api == "anthropic" {
		l.anthropic(w, req.Model, req.Stream, text, tokens, out)
		return
	}
	l.openai(w, req.Model, req.Stream, text, tokens, out)
}

func (l *windowLLM) openai(w http.ResponseWriter, model string, stream bool, text string, in, out int) {
	usage := map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	if !stream {
		writeJSONBody(w, map[string]any{"id": "chatcmpl-w", "object": "chat.completion", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	base := map[string]any{"id": "chatcmpl-w", "object": "chat.completion.chunk", "created": 0, "model": model}
	with := func(delta map[string]any, finish any) map[string]any {
		m := map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	chunk(with(map[string]any{"role": "assistant", "content": text}, nil))
	chunk(with(map[string]any{}, "stop"))
	u := map[string]any{"choices": []any{}, "usage": usage}
	for k, v := range base {
		u[k] = v
	}
	chunk(u)
	io.WriteString(w, "data: [DONE]\n\n")
}

func (l *windowLLM) anthropic(w http.ResponseWriter, model string, stream bool, text string, in, out int) {
	if !stream {
		writeJSONBody(w, map[string]any{"id": "msg_w", "type": "message", "role": "assistant", "model": model,
			"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn",
			"usage": map[string]int{"input_tokens": in, "output_tokens": out}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_w", "type": "message", "role": "assistant",
		"content": []any{}, "model": model, "stop_reason": nil, "usage": map[string]int{"input_tokens": in, "output_tokens": 1}}})
	ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]int{"output_tokens": out}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (l *windowLLM) stats() (maxTokens, rejected, summaries int, last string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxTokens, l.rejected, l.summaries, l.last
}
