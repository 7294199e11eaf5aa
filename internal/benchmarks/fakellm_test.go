package benchmarks

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"
)

// fakeReply is the fake LLM's whole answer.
const fakeReply = "pong from fake llm"

// fakeLLM is an OpenAI-compatible chat completions server on loopback that
// answers at once with fakeReply: a chat.completion object, or with
// "stream": true a text/event-stream of chat.completion.chunk events (role,
// content, finish, usage when stream_options.include_usage asks for it,
// then [DONE]), each event flushed as it is written, as OpenAI does. It
// also serves GET /v1/models.
type fakeLLM struct {
	*httptest.Server
	chats atomic.Int64 // POST /v1/chat/completions answered
}

func newFakeLLM() *fakeLLM {
	f := &fakeLLM{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.chat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeFakeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}}})
	})
	f.Server = httptest.NewServer(mux)
	return f
}

// BaseURL is what a config's models.providers.<id>.baseUrl takes.
func (f *fakeLLM) BaseURL() string { return f.URL + "/v1" }

type fakeRequest struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (f *fakeLLM) chat(w http.ResponseWriter, r *http.Request) {
	var req fakeRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeFakeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "invalid JSON: " + err.Error(), "type": "invalid_request_error"}})
		return
	}
	if len(req.Messages) == 0 {
		writeFakeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "messages: at least one message is required", "type": "invalid_request_error"}})
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	f.chats.Add(1)
	model := req.Model
	if model == "" {
		model = "fake-model"
	}
	id := fmt.Sprintf("chatcmpl-fake%d", f.chats.Load())
	created := time.Now().Unix()
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		writeFakeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": fakeReply}}},
			"usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	event := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = w.Write(append(append([]byte("data: "), b...), '\n', '\n'))
		_ = rc.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	event(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	event(chunk(map[string]any{"content": fakeReply}, nil))
	event(chunk(map[string]any{}, "stop"))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		event(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

func writeFakeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
