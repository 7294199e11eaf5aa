package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"talon/internal/agent"
	"talon/internal/authlimit"
	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/session"
	"talon/internal/sse"
	"talon/internal/store"
)

// bodyReadTimeout bounds reading a request body.
const bodyReadTimeout = 30 * time.Second

// noResponse is the content of a run that produced no text, as OpenClaw
// words it.
const noResponse = "No response from OpenClaw."

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	User          string        `json:"user"`
	Tools         []chatTool    `json:"tools"`
	ToolChoice    any           `json:"tool_choice"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

var (
	agentTargetPattern = regexp.MustCompile(`^(?i:openclaw[:/]|agent:)([a-z0-9][a-z0-9_-]{0,63})$`)
	toolNamePattern    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// request is a chat request resolved against its tenant.
type request struct {
	t      *tenant
	rt     *runtime
	body   chatRequest
	agent  string
	key    string
	runReq agent.Request
}

func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	t, rt, release := s.authenticate(w, r)
	if release == nil {
		return
	}
	defer release()
	ctx, unbind := t.bind(r.Context())
	defer unbind()
	r = r.WithContext(ctx)
	if !chatEnabled(rt.file.Config) {
		writeError(w, http.StatusNotFound, errNotFound, "not found")
		return
	}
	req, status, typ, msg := s.parseChat(w, r, t, rt)
	if status != 0 {
		writeError(w, status, typ, msg)
		return
	}
	if in := req.runReq.Input; len(in) == 1 && in[0].Role == llm.RoleUser {
		if cmd, arg, ok := chatCommand(in[0].Content); ok {
			s.chatCommand(w, r, req, cmd, arg)
			return
		}
	}
	// A spent budget answers 402 before the stream starts (the run
	// checks again, under the session's lock).
	if err := rt.admit(r.Context()); err != nil {
		s.runFailed(w, r, req, err)
		return
	}
	lk := sessionLockKey(t, req.key)
	req.runReq.Waiting = func() bool { return s.locks.waiting(lk) }
	unlock, err := s.locks.lock(r.Context(), lk)
	if err != nil {
		return // the client left while another run of its session went on
	}
	defer unlock()
	req.runReq.Input = withEvents(req.runReq.Input, t.events().drain(req.key), rt.file.Config)
	if req.body.Stream {
		s.streamChat(w, r, req)
		return
	}
	res, err := rt.runner.Run(r.Context(), req.runReq)
	if err != nil {
		s.runFailed(w, r, req, err)
		return
	}
	content := contentOf(res)
	answer := completionMessage{Role: "assistant", Content: &content}
	if len(res.ToolCalls) > 0 {
		answer.ToolCalls = wireCalls(res.ToolCalls, false)
		if res.Text == "" {
			answer.Content = nil // as OpenAI sends it
		}
	}
	// The body's model echoes the request's agent target, as OpenClaw's
	// does (clients compare it); the header names the model that
	// answered, a fallback's when the primary failed.
	if res.Model != "" {
		w.Header().Set(answeredHeader, res.Model)
	}
	writeJSON(w, http.StatusOK, completion{
		ID: completionID(), Object: "chat.completion", Created: time.Now().Unix(), Model: modelEcho(req),
		Choices: []completionChoice{{Message: answer, FinishReason: res.FinishReason}},
		Usage:   res.Usage,
	})
}

// chatCommand answers a chat command (/compact, /status) as the model's
// reply would be, streamed or not; the command does not wait for a run of
// the session to end (/compact says it cannot run now).
func (s *Server) chatCommand(w http.ResponseWriter, r *http.Request, req *request, cmd, arg string) {
	text, err := s.command(r.Context(), req.t, req.rt, req.agent, req.key, cmd, arg, nil)
	if err != nil {
		s.runFailed(w, r, req, err)
		return
	}
	if req.body.Stream {
		out := sse.Start(w)
		id, created, model := completionID(), time.Now().Unix(), modelEcho(req)
		for _, delta := range []map[string]any{{"role": "assistant"}, {"content": text}} {
			out.JSON("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
		}
		out.JSON("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": provider.FinishStop}}})
		out.Send("", []byte(streamDone))
		return
	}
	writeJSON(w, http.StatusOK, completion{
		ID: completionID(), Object: "chat.completion", Created: time.Now().Unix(), Model: modelEcho(req),
		Choices: []completionChoice{{Message: completionMessage{Role: "assistant", Content: &text}, FinishReason: provider.FinishStop}},
	})
}

// completion is a chat.completion body. Structs rather than maps, which
// encoding/json sorts on every turn; the fields are in sorted order, so
// the bytes are those the maps gave.
type completion struct {
	Choices []completionChoice `json:"choices"`
	Created int64              `json:"created"`
	ID      string             `json:"id"`
	Model   string             `json:"model"`
	Object  string             `json:"object"`
	Usage   provider.Usage     `json:"usage"`
}

type completionChoice struct {
	FinishReason string            `json:"finish_reason"`
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
}

type completionMessage struct {
	Content   *string        `json:"content"` // nil: null
	Role      string         `json:"role"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

// streamDone is the data of the OpenAI stream's last event.
const streamDone = "[DONE]"

// streamChat runs with streaming and relays deltas as chat.completion.chunk
// events, ending with [DONE]. A write that fails (the client left) ends
// the stream; the run goes on to its end.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, req *request) {
	// The model that answers is known only at the end: it goes in a
	// trailer, which every HTTP/1.1 chunked or HTTP/2 client may read and
	// the others ignore.
	w.Header().Set("Trailer", answeredHeader)
	out := sse.Start(w)
	id, created, model := completionID(), time.Now().Unix(), modelEcho(req)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	out.JSON("", chunk(map[string]any{"role": "assistant"}, nil))
	streamed := false
	req.runReq.OnDelta = func(text string) {
		if text == "" {
			return
		}
		streamed = true
		out.JSON("", chunk(map[string]any{"content": text}, nil))
	}
	res, err := req.rt.runner.Run(r.Context(), req.runReq)
	if err != nil {
		s.log.Error("run failed", "tenant", req.t.id, "agent", req.agent, "session", req.key, "err", err)
		out.JSON("", chunk(map[string]any{"content": "Error: " + req.t.hideString(safeRunError(err))}, "stop"))
		out.Send("", []byte(streamDone))
		return
	}
	if !streamed && len(res.ToolCalls) == 0 {
		out.JSON("", chunk(map[string]any{"content": contentOf(res)}, nil))
	}
	if len(res.ToolCalls) > 0 {
		out.JSON("", chunk(map[string]any{"tool_calls": wireCalls(res.ToolCalls, true)}, nil))
	}
	out.JSON("", chunk(map[string]any{}, res.FinishReason))
	if res.Model != "" {
		w.Header().Set(answeredHeader, res.Model)
	}
	if req.body.StreamOptions != nil && req.body.StreamOptions.IncludeUsage {
		out.JSON("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": res.Usage})
	}
	out.Send("", []byte(streamDone))
}

// authenticate finds the tenant and checks the bearer. Every failure is
// the same 401, so a client cannot probe which tenants exist. The tenant
// is pinned open until release; a nil release is a failure answered.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (_ *tenant, _ *runtime, release func()) {
	id := strings.TrimSpace(r.Header.Get("X-Tenant-ID"))
	t, err := s.lookup(id)
	if errors.Is(err, errMoving) {
		s.refuseMoving(w, r, id)
		return nil, nil, nil
	}
	if err != nil && !errors.Is(err, errNoTenant) {
		s.log.Error("tenant lookup", "err", err)
	}
	var cfg *config.Config
	if err == nil {
		// The secret is checked before the tenant opens: a client without
		// it must not make the gateway open tenants, closing others.
		cfg, err = s.authConfig(t)
	}
	if err != nil && !errors.Is(err, errNoTenant) {
		s.log.Error("tenant load", "tenant", id, "err", err)
		writeError(w, http.StatusInternalServerError, errAPI, "tenant configuration cannot be loaded")
		return nil, nil, nil
	}
	ok, wait := s.checkSecret(authlimit.Addr(r), id, t, cfg, bearer(r))
	if wait > 0 {
		rateLimited(w, wait)
		return nil, nil, nil
	}
	if !ok {
		writeError(w, http.StatusUnauthorized, errUnauthorized, "Unauthorized")
		return nil, nil, nil
	}
	release = s.enter(t)
	rt, err := t.current(s)
	switch {
	case errors.Is(err, errUnavailable):
		release()
		noRoom(w)
		return nil, nil, nil
	case errors.Is(err, errNoTenant): // deleted since its secret was checked
		release()
		writeError(w, http.StatusUnauthorized, errUnauthorized, "Unauthorized")
		return nil, nil, nil
	case err != nil:
		release()
		s.log.Error("tenant load", "tenant", t.id, "err", err)
		writeError(w, http.StatusInternalServerError, errAPI, "tenant configuration cannot be loaded")
		return nil, nil, nil
	}
	return t, rt, release
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// parseChat reads and validates the body and resolves agent and session.
// A non-zero status is an error to send.
func (s *Server) parseChat(w http.ResponseWriter, r *http.Request, t *tenant, rt *runtime) (*request, int, string, string) {
	cfg := rt.file.Config
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, http.StatusRequestEntityTooLarge, errTooLarge, "Payload too large"
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, http.StatusRequestTimeout, errTimeout, "Request body read timed out"
		}
		return nil, http.StatusBadRequest, errInvalidRequest, "Could not read the request body"
	}
	req := &request{t: t, rt: rt}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req.body); err != nil {
		return nil, http.StatusBadRequest, errInvalidRequest, "Invalid JSON body: " + err.Error()
	}

	// Agent: header, then model, then the default agent.
	if h := firstHeader(r, "X-OpenClaw-Agent-ID", "X-OpenClaw-Agent"); h != "" {
		req.agent = config.NormalizeAgentID(h)
	} else {
		m := strings.TrimSpace(req.body.Model)
		target := agentTargetPattern.FindStringSubmatch(m)
		switch {
		case m == "" || strings.EqualFold(m, "openclaw") || strings.EqualFold(m, "openclaw/default"):
			req.agent = cfg.DefaultAgentID()
		case target != nil:
			req.agent = strings.ToLower(target[1])
		default:
			return nil, http.StatusBadRequest, errInvalidRequest, "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."
		}
	}
	if !cfg.HasAgent(req.agent) {
		return nil, http.StatusBadRequest, errInvalidRequest, fmt.Sprintf("Unknown agent %q", req.agent)
	}

	// Session: header, then user, then a fresh one.
	fresh := false
	switch h, user := strings.TrimSpace(r.Header.Get("X-OpenClaw-Session-Key")), strings.TrimSpace(req.body.User); {
	case h != "":
		key, _, err := sessionFor(cfg, req.agent, h)
		if err != nil {
			return nil, http.StatusBadRequest, errInvalidRequest, err.Error()
		}
		req.key = key
	case user != "":
		req.key = session.OpenAIUser(req.agent, user)
		if err := session.CheckKey(req.key); err != nil {
			return nil, http.StatusBadRequest, errInvalidRequest, "user: " + err.Error()
		}
	default:
		req.key = session.OpenAIFresh(req.agent, store.NewID())
		fresh = true
	}

	rr, msg := convertMessages(req.body.Messages)
	if msg != "" {
		return nil, http.StatusBadRequest, errInvalidRequest, msg
	}
	if msg := samplingParams(&req.body, &rr); msg != "" {
		return nil, http.StatusBadRequest, errInvalidRequest, msg
	}
	tools, msg := s.clientTools(req.body, rt)
	if msg != "" {
		return nil, http.StatusBadRequest, errInvalidRequest, msg
	}
	rr.AgentID, rr.SessionKey, rr.ClientTools, rr.Owner = req.agent, req.key, tools, true
	rr.Model = strings.TrimSpace(r.Header.Get("X-OpenClaw-Model"))
	rr.Fresh = fresh
	req.runReq = rr
	return req, 0, "", ""
}

// sessionFor canonicalises a session key a client named (spec §5.1) for
// agentID, and returns it with its agent; with agentID "" the key names
// its agent (a bare key, the default agent's). Keys in the namespaces the
// gateway mints itself are refused, and so is another agent's key. The
// HTTP endpoint and the WS chat methods share it; errors are for the
// client.
func sessionFor(cfg *config.Config, agentID, raw string) (string, string, error) {
	if session.IsReserved(raw) {
		return "", "", errors.New("session key is in a reserved namespace (subagent:, cron:, acp:)")
	}
	key, err := session.Canonical(cfg, agentID, raw)
	if err != nil {
		return "", "", err
	}
	owner := agentID
	if owner == "" {
		owner = cfg.DefaultAgentID()
	}
	a := session.AgentOf(key, owner)
	if agentID != "" && a != agentID {
		return "", "", fmt.Errorf("session key belongs to agent %q, not %q", a, agentID)
	}
	return key, a, nil
}

// convertMessages splits an OpenAI conversation into the caller's
// instructions, the history before the last assistant turn, and the new
// input after it.
func convertMessages(msgs []chatMessage) (agent.Request, string) {
	var rr agent.Request
	var system []string
	var conv []llm.Message
	for i, m := range msgs {
		text, err := contentText(m.Content)
		if err != "" {
			return rr, fmt.Sprintf("messages[%d].content: %s", i, err)
		}
		switch m.Role {
		case "system", "developer":
			if text != "" {
				system = append(system, text)
			}
		case "user":
			conv = append(conv, llm.Message{Role: llm.RoleUser, Content: text})
		case "assistant":
			pm := llm.Message{Role: llm.RoleAssistant, Content: text}
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Function.Name == "" {
					return rr, fmt.Sprintf("messages[%d].tool_calls[%d]: id and function.name are required", i, j)
				}
				pm.ToolCalls = append(pm.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
			conv = append(conv, pm)
		case "tool", "function":
			if m.Role == "tool" && m.ToolCallID == "" {
				return rr, fmt.Sprintf("messages[%d]: a tool message needs tool_call_id", i)
			}
			conv = append(conv, llm.Message{Role: llm.RoleTool, Content: text, ToolCallID: m.ToolCallID, Name: m.Name})
		default:
			return rr, fmt.Sprintf("messages[%d].role: unknown role %q", i, m.Role)
		}
	}
	rr.ExtraSystem = strings.Join(system, "\n\n")
	last := -1
	for i, m := range conv {
		if m.Role == llm.RoleAssistant {
			last = i
		}
	}
	rr.History, rr.Input = conv[:last+1], conv[last+1:]
	hasInput := false
	for _, m := range rr.Input {
		if m.Role == llm.RoleTool || strings.TrimSpace(m.Content) != "" {
			hasInput = true
		}
	}
	if !hasInput {
		return rr, "Missing user message in `messages`"
	}
	return rr, ""
}

// samplingParams validates max_tokens / max_completion_tokens and
// temperature and passes them to the run.
func samplingParams(b *chatRequest, rr *agent.Request) string {
	limit := b.MaxCompletionTokens
	if limit == nil {
		limit = b.MaxTokens
	}
	if limit != nil {
		if *limit < 1 {
			return "max_tokens must be a positive integer"
		}
		rr.MaxTokens = *limit
	}
	if t := b.Temperature; t != nil {
		if *t < 0 || *t > 2 {
			return "temperature must be between 0 and 2"
		}
		rr.Temperature = t
	}
	return ""
}

// contentText flattens string or text-part content. Images are refused
// rather than dropped: the endpoint does not pass a client's images on to
// the model yet (llm.Message can carry them; the image tool uses it).
func contentText(raw json.RawMessage) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", ""
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", "invalid string"
		}
		return s, ""
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "expected a string or an array of content parts"
	}
	var texts []string
	for i, p := range parts {
		switch p.Type {
		case "text", "input_text":
			texts = append(texts, p.Text)
		case "image_url", "input_image":
			return "", fmt.Sprintf("part %d: image inputs are not supported by Talon yet", i)
		default:
			return "", fmt.Sprintf("part %d: unsupported content part type %q", i, p.Type)
		}
	}
	return strings.Join(texts, "\n"), ""
}

// clientTools validates the caller's function tools. tool_choice "none"
// hides them; other choices are accepted and behave as "auto".
func (s *Server) clientTools(body chatRequest, rt *runtime) ([]llm.ToolSpec, string) {
	if c, ok := body.ToolChoice.(string); ok && c == "none" {
		return nil, ""
	}
	switch c := body.ToolChoice.(type) {
	case nil, map[string]any:
	case string:
		if c != "auto" && c != "required" {
			return nil, fmt.Sprintf("tool_choice: unknown value %q (want auto, none, required or a function)", c)
		}
	default:
		return nil, "tool_choice: expected a string or an object"
	}
	var out []llm.ToolSpec
	for i, t := range body.Tools {
		if t.Type != "function" {
			return nil, fmt.Sprintf("tools[%d].type: only \"function\" tools are supported", i)
		}
		name := t.Function.Name
		if !toolNamePattern.MatchString(name) {
			return nil, fmt.Sprintf("tools[%d].function.name: must match ^[A-Za-z0-9_-]{1,64}$", i)
		}
		if _, taken := s.tools.Get(name); taken {
			return nil, fmt.Sprintf("tools[%d].function.name: %q is a gateway tool; rename the client tool", i, name)
		}
		params := t.Function.Parameters
		if p := bytes.TrimSpace(params); bytes.Equal(p, []byte("null")) {
			params = nil // null is no schema, as an absent one is
		}
		if len(bytes.TrimSpace(params)) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(params, &obj); err != nil {
				return nil, fmt.Sprintf("tools[%d].function.parameters: expected a JSON Schema object", i)
			}
		}
		for _, prev := range out {
			if prev.Name == name {
				return nil, fmt.Sprintf("tools[%d].function.name: %q appears twice", i, name)
			}
		}
		out = append(out, llm.ToolSpec{Name: name, Description: t.Function.Description, Parameters: params})
	}
	return out, ""
}

func (s *Server) runFailed(w http.ResponseWriter, r *http.Request, req *request, err error) {
	if r.Context().Err() != nil {
		if errors.Is(context.Cause(r.Context()), errMoving) {
			unavailable(w) // drained at its bound: the client retries on the tenant's new node
		}
		return // the client went away; nobody to answer
	}
	if e := budgetRefusal(err); e != nil {
		writeBudgetError(w, e)
		return
	}
	s.log.Error("run failed", "tenant", req.t.id, "agent", req.agent, "session", req.key, "err", err)
	var perr *provider.Error
	var serr *sandbox.Error
	var oerr *agent.OverflowError
	var werr *compaction.WindowError
	switch {
	case errors.As(err, &oerr):
		writeError(w, http.StatusBadRequest, errContextLength, req.t.hideString(safeRunError(err)))
	case errors.As(err, &werr):
		writeError(w, http.StatusBadRequest, errInvalidRequest, req.t.hideString(safeRunError(err)))
	case errors.As(err, &perr):
		writeError(w, http.StatusBadGateway, errAPI, req.t.hideString(safeRunError(err)))
	case errors.As(err, &serr):
		writeError(w, http.StatusServiceUnavailable, errAPI, req.t.hideString(safeRunError(err)))
	default:
		writeError(w, http.StatusInternalServerError, errAPI, req.t.hideString(safeRunError(err)))
	}
}

// safeRunError is what a client is told about a failed run: the advice
// after a context overflow compaction could not recover, a model window
// too small to run in, the model provider's own complaint, or why the
// session's sandbox cannot run (its backend, the reason and the fix),
// which the operator needs; otherwise "internal error".
func safeRunError(err error) string {
	if e := budgetRefusal(err); e != nil {
		return e.Error()
	}
	var oerr *agent.OverflowError
	if errors.As(err, &oerr) {
		return oerr.Error()
	}
	var werr *compaction.WindowError
	if errors.As(err, &werr) {
		return "model configuration error: " + werr.Error()
	}
	var xerr *provider.ExhaustedError
	if errors.As(err, &xerr) {
		return "model provider error: " + safeAttempts(xerr)
	}
	var perr *provider.Error
	if errors.As(err, &perr) {
		return "model provider error: " + perr.Error()
	}
	var rerr *provider.ResolveError
	if errors.As(err, &rerr) {
		return "model configuration error: " + rerr.Error()
	}
	var serr *sandbox.Error
	if errors.As(err, &serr) {
		return "sandbox error: " + serr.Error()
	}
	return "internal error"
}

// safeAttempts lists the attempts of a model chain that found no answer,
// each failure as safeRunError would say it alone.
func safeAttempts(x *provider.ExhaustedError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no model answered (%d tried):", len(x.Attempts))
	for i, a := range x.Attempts {
		if i > 0 {
			b.WriteString(";")
		}
		if a.Err != nil {
			a.Err = errors.New(strings.TrimPrefix(safeRunError(a.Err), "model provider error: "))
		}
		b.WriteString(" " + a.String())
	}
	return b.String()
}

func contentOf(res *agent.Result) string {
	if res.Text == "" && len(res.ToolCalls) == 0 {
		return noResponse
	}
	return res.Text
}

func wireCalls(calls []llm.ToolCall, indexed bool) []wireToolCall {
	out := make([]wireToolCall, len(calls))
	for i, c := range calls {
		out[i].ID, out[i].Type = c.ID, "function"
		out[i].Function.Name, out[i].Function.Arguments = c.Name, c.Arguments
		if indexed {
			n := i
			out[i].Index = &n
		}
	}
	return out
}

// answeredHeader is the response header that names the model that
// answered a non-streamed completion (the request header of the same
// name chooses one).
const answeredHeader = "X-OpenClaw-Model"

func modelEcho(req *request) string {
	if m := strings.TrimSpace(req.body.Model); m != "" {
		return m
	}
	return "openclaw/" + req.agent
}

// chatEnabled: Talon serves the endpoint unless the config turns it off
// (OpenClaw's default is off; Talon's main job is this endpoint).
func chatEnabled(cfg *config.Config) bool {
	if cfg.Gateway.HTTP == nil || cfg.Gateway.HTTP.Value == nil {
		return true
	}
	v := cfg.Gateway.HTTP.Lookup("endpoints", "chatCompletions", "enabled")
	return v == nil || v.Kind != config.Bool || v.Bool
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	_, rt, release := s.authenticate(w, r)
	if release == nil {
		return
	}
	release()
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": modelList(rt.file.Config)})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	_, rt, release := s.authenticate(w, r)
	if release == nil {
		return
	}
	release()
	id := r.PathValue("id")
	for _, m := range modelList(rt.file.Config) {
		if m["id"] == id {
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeError(w, http.StatusNotFound, errNotFound, fmt.Sprintf("model %q not found", id))
}

// modelList names every agent as a model: openclaw (the default agent) and
// openclaw/<id>.
func modelList(cfg *config.Config) []map[string]any {
	entry := func(id string) map[string]any {
		return map[string]any{"id": id, "object": "model", "created": 0, "owned_by": "talon"}
	}
	out := []map[string]any{entry("openclaw")}
	for _, id := range cfg.AgentIDs() {
		out = append(out, entry("openclaw/"+id))
	}
	return out
}

func firstHeader(r *http.Request, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(r.Header.Get(n)); v != "" {
			return v
		}
	}
	return ""
}

func completionID() string { return "chatcmpl_" + store.NewID() }
