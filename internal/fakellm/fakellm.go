// Package fakellm is an OpenAI-compatible Chat Completions server on
// loopback for benchmarks and tests: the fake at the outside edge, so it
// speaks the real wire protocol. POST /v1/chat/completions answers with a
// chat.completion object or, with "stream": true, a text/event-stream of
// chat.completion.chunk events, each flushed as it is written, ending with
// "data: [DONE]" (and a usage chunk before it when
// stream_options.include_usage asks); GET /v1/models lists the one model.
//
// How it answers is set once, by Options: a latency before anything is
// sent, how many content chunks of what size a stream carries and over how
// long they are spread, and an optional tool call made once per turn, the
// text answering its result. Request bodies are validated as OpenAI
// does (bad JSON, no model, no messages, an unknown role: 400 with
// OpenAI's error envelope). A Server is safe for concurrent requests; its
// counters may be read at any time.
package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Model is the one model the server lists; requests may name any model,
// and answers echo the name they were given.
const Model = "fake-model"

// DefaultReply is the answer's text when Options.Reply is empty.
const DefaultReply = "pong from fake llm"

// maxBody bounds a request body; OpenClaw's first turn alone sends ≈60 KB.
const maxBody = 64 << 20

// ToolCall is the call the model makes instead of answering with text.
type ToolCall struct {
	Name      string // the function's name, e.g. "read"
	Arguments string // a JSON object, e.g. {"path":"notes.txt"}
}

// Options say how the server answers. The zero value answers at once with
// DefaultReply in one content chunk.
type Options struct {
	// Reply is the answer's text; empty means DefaultReply.
	Reply string
	// Latency passes before anything of an answer is sent (the model
	// thinking), streamed or not.
	Latency time.Duration
	// Chunks is how many content chunks a streamed text answer has; 0
	// means 1. Without ChunkSize the reply is cut into that many pieces of
	// nearly equal length, so it needs at least Chunks characters.
	Chunks int
	// ChunkSize, when set, makes every chunk that many bytes of Reply
	// repeated (Reply must then be ASCII), so the answer is
	// Chunks×ChunkSize bytes long.
	ChunkSize int
	// StreamDuration spreads a text answer over this long after Latency:
	// chunk i of n goes out at Latency + StreamDuration·i/n and the finish
	// at Latency + StreamDuration. A non-streamed text answer comes whole
	// after Latency + StreamDuration. Tool-call answers do not wait for it.
	StreamDuration time.Duration
	// ToolCall, when set, is made unless the turn in progress already has
	// a tool result (a "tool" message after the last assistant message
	// that called no tool); then the answer is the text.
	ToolCall *ToolCall
	// APIKey, when set, is required as "Authorization: Bearer KEY";
	// anything else gets OpenAI's 401.
	APIKey string
}

// Server is a running fake. URL is http://127.0.0.1:PORT.
type Server struct {
	URL string

	opts   Options
	text   string
	pieces []string
	srv    *http.Server
	served chan struct{}

	chats, toolCalls, rejected atomic.Int64
	inFlight, maxInFlight      atomic.Int64
	// reported sums the usage the server sent: calls, prompt and
	// completion tokens (a stream counts when it was asked for usage).
	reportedCalls, reportedPrompt, reportedCompletion atomic.Int64
	lastToolResult                                    atomic.Pointer[string]
}

// Start validates opts and serves on a free loopback port until Close.
func Start(opts Options) (*Server, error) {
	pieces, err := opts.pieces()
	if err != nil {
		return nil, fmt.Errorf("fakellm: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakellm: listening: %w", err)
	}
	s := &Server{
		URL:    "http://" + ln.Addr().String(),
		opts:   opts,
		text:   strings.Join(pieces, ""),
		pieces: pieces,
		served: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown endpoint: "+r.Method+" "+r.URL.Path)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln); close(s.served) }()
	return s, nil
}

// pieces checks the options and cuts the answer into its chunks.
func (o Options) pieces() ([]string, error) {
	reply := o.Reply
	if reply == "" {
		reply = DefaultReply
	}
	n := o.Chunks
	switch {
	case n < 0:
		return nil, fmt.Errorf("chunks %d: want 0 or more", n)
	case n == 0:
		n = 1
	}
	if o.ChunkSize < 0 || o.Latency < 0 || o.StreamDuration < 0 {
		return nil, fmt.Errorf("chunk size %d, latency %v, stream duration %v: none may be negative", o.ChunkSize, o.Latency, o.StreamDuration)
	}
	if tc := o.ToolCall; tc != nil {
		if tc.Name == "" {
			return nil, errors.New("tool call: a name is required")
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil || args == nil {
			return nil, fmt.Errorf("tool call %s: arguments %q are not a JSON object", tc.Name, tc.Arguments)
		}
	}
	out := make([]string, n)
	if o.ChunkSize > 0 {
		for i := 0; i < len(reply); i++ {
			if reply[i] >= utf8.RuneSelf {
				return nil, errors.New("chunk size needs an ASCII reply")
			}
		}
		all := strings.Repeat(reply, (n*o.ChunkSize)/len(reply)+1)
		for i := range out {
			out[i] = all[i*o.ChunkSize : (i+1)*o.ChunkSize]
		}
		return out, nil
	}
	runes := []rune(reply)
	if len(runes) < n {
		return nil, fmt.Errorf("reply %q has %d characters, fewer than the %d chunks", reply, len(runes), n)
	}
	for i := range out {
		out[i] = string(runes[i*len(runes)/n : (i+1)*len(runes)/n])
	}
	return out, nil
}

// BaseURL is what a config's models.providers.<id>.baseUrl takes.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Text is the whole text of every answer that is not a tool call.
func (s *Server) Text() string { return s.text }

// Reported is the usage the server has sent: answers that carried one,
// and their prompt and completion tokens summed.
func (s *Server) Reported() (calls, prompt, completion int64) {
	return s.reportedCalls.Load(), s.reportedPrompt.Load(), s.reportedCompletion.Load()
}

func (s *Server) report(a *answer) {
	s.reportedCalls.Add(1)
	s.reportedPrompt.Add(int64(a.usage["prompt_tokens"]))
	s.reportedCompletion.Add(int64(a.usage["completion_tokens"]))
}

// Chats is how many chat completions were answered (status 200).
func (s *Server) Chats() int64 { return s.chats.Load() }

// ToolCalls is how many of those answers were tool calls.
func (s *Server) ToolCalls() int64 { return s.toolCalls.Load() }

// Rejected is how many chat requests got an error status.
func (s *Server) Rejected() int64 { return s.rejected.Load() }

// MaxInFlight is the most chat requests that were being answered at once.
func (s *Server) MaxInFlight() int64 { return s.maxInFlight.Load() }

// ResetMaxInFlight starts a new peak: from now MaxInFlight counts from
// the requests in flight at this moment.
func (s *Server) ResetMaxInFlight() { s.maxInFlight.Store(s.inFlight.Load()) }

// LastToolResult is the text of the tool result in the latest request that
// ended with one ("" before any).
func (s *Server) LastToolResult() string {
	if p := s.lastToolResult.Load(); p != nil {
		return *p
	}
	return ""
}

// Close stops the server, cutting streams in flight.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.served
	return err
}

// request is the part of a Chat Completions body the fake reads; other
// members (tools, tool_choice, temperature, …) are accepted and ignored.
type request struct {
	Model         *string   `json:"model"`
	Messages      []message `json:"messages"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []any           `json:"tool_calls"`
}

// toolResult finds the latest tool result of the turn in progress: after
// the last assistant message that called no tool (the end of the previous
// turn), so that a new question in a long conversation gets a new call.
// Clients may add messages after a result (OpenClaw appends a user
// message with context), so the result need not be the last message.
func (r *request) toolResult() (message, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		switch m := r.Messages[i]; {
		case m.Role == "tool":
			return m, true
		case m.Role == "assistant" && len(m.ToolCalls) == 0:
			return message{}, false
		}
	}
	return message{}, false
}

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// validate reports what OpenAI would refuse in the body, "" if nothing.
func (r *request) validate() string {
	if r.Model == nil || *r.Model == "" {
		return "you must provide a model parameter"
	}
	if len(r.Messages) == 0 {
		return "messages: at least one message is required"
	}
	for i, m := range r.Messages {
		if !roles[m.Role] {
			return fmt.Sprintf("messages[%d].role: %q is not one of system, developer, user, assistant, tool, function", i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return fmt.Sprintf("messages[%d]: a tool message needs tool_call_id", i)
		}
	}
	return ""
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		s.rejected.Add(1)
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.rejected.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "reading the body: "+err.Error())
		return
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		s.rejected.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	if dec.More() {
		s.rejected.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: data after the object")
		return
	}
	if msg := req.validate(); msg != "" {
		s.rejected.Add(1)
		writeError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	call := s.opts.ToolCall
	if result, ok := req.toolResult(); ok {
		text := contentText(result.Content)
		s.lastToolResult.Store(&text)
		call = nil
	}
	seq := s.chats.Add(1)
	if call != nil {
		s.toolCalls.Add(1)
	}
	a := answer{
		id: "chatcmpl-fake" + strconv.FormatInt(seq, 10), model: *req.Model, created: time.Now().Unix(),
		call: call, callID: "call_fake" + strconv.FormatInt(seq, 10),
		usage: map[string]int{"prompt_tokens": tokens(len(body)), "completion_tokens": tokens(len(s.text))},
	}
	a.usage["total_tokens"] = a.usage["prompt_tokens"] + a.usage["completion_tokens"]
	if !sleep(r.Context(), s.opts.Latency) {
		return
	}
	if req.Stream {
		s.stream(w, r.Context(), &a, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	s.report(&a)
	msg := map[string]any{"role": "assistant", "content": s.text}
	finish := "stop"
	if call != nil {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": a.callID, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": call.Arguments}}}
		finish = "tool_calls"
	} else if !sleep(r.Context(), s.opts.StreamDuration) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": a.id, "object": "chat.completion", "created": a.created, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   a.usage,
	})
}

// answer is what one response carries besides the text.
type answer struct {
	id, model, callID string
	created           int64
	call              *ToolCall
	usage             map[string]int
}

func (a *answer) chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
}

// stream writes the answer as SSE, flushing every event so that a client
// sees each chunk when it is sent.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, a *answer, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	event := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = w.Write(append(append([]byte("data: "), b...), '\n', '\n'))
		_ = rc.Flush()
	}
	event(a.chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if a.call != nil {
		// OpenAI sends the call's id and name first, then the arguments.
		event(a.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": a.callID, "type": "function",
			"function": map[string]any{"name": a.call.Name, "arguments": ""}}}}, nil))
		event(a.chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": a.call.Arguments}}}}, nil))
		event(a.chunk(map[string]any{}, "tool_calls"))
	} else {
		start := time.Now()
		d := s.opts.StreamDuration
		for i, p := range s.pieces {
			if !sleep(ctx, time.Until(start.Add(d*time.Duration(i)/time.Duration(len(s.pieces))))) {
				return
			}
			event(a.chunk(map[string]any{"content": p}, nil))
		}
		if !sleep(ctx, time.Until(start.Add(d))) {
			return
		}
		event(a.chunk(map[string]any{}, "stop"))
	}
	if usage {
		event(map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": a.created, "model": a.model,
			"choices": []any{}, "usage": a.usage})
		s.report(a)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
		map[string]any{"id": Model, "object": "model", "created": 0, "owned_by": "fakellm"}}})
}

// sleep waits d unless ctx ends first; it reports whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// contentText is a message content's text: the string, or the text parts
// of an array of parts, joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// tokens estimates a token count from a byte count, as ≈4 bytes a token.
func tokens(n int) int { return max(1, (n+3)/4) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError sends OpenAI's error envelope.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
}
