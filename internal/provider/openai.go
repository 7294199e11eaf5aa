package provider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"talon/internal/llm"
)

// OpenAI API defaults.
const (
	DefaultOpenAIBaseURL     = "https://api.openai.com/v1"
	DefaultOpenRouterBaseURL = "https://openrouter.ai/api/v1"
	// DefaultOpenRouterTitle identifies Talon to OpenRouter (its X-Title
	// attribution header); HTTP-Referer is sent only when configured.
	DefaultOpenRouterTitle = "Talon"
)

// OpenAIOptions configures an OpenAI-compatible Chat Completions client.
type OpenAIOptions struct {
	// Name prefixes errors ("openai", "openrouter", "ollama"); default "openai".
	Name string
	// BaseURL is used verbatim + "/chat/completions" (a trailing slash is
	// dropped), so it normally ends in /v1. Default DefaultOpenAIBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY"; empty sends no
	// Authorization header (local servers: ollama, llama-server, vLLM).
	APIKey string
	// Headers are sent with every request, after (and so overriding) the
	// client's own.
	Headers map[string]string
	// HTTPClient defaults to a shared client with pooled keep-alive
	// connections.
	HTTPClient *http.Client
	// Timeout bounds one attempt: the whole exchange for a non-streamed
	// call, and up to the response headers for a streamed one. 0 means
	// DefaultTimeout, negative none.
	Timeout time.Duration
	// IdleTimeout fails a stream that sends nothing for this long. 0 means
	// DefaultIdleTimeout, negative none.
	IdleTimeout time.Duration
	// MaxRetries is how many times a temporary failure is retried. 0 means
	// DefaultMaxRetries, negative none.
	MaxRetries int
	// Referer and Title are sent as HTTP-Referer and X-Title when the base
	// URL's host is openrouter.ai. Defaults: no Referer and
	// DefaultOpenRouterTitle.
	Referer, Title string
	// Models is what the catalog says of the models, by id: which take a
	// thinking level (reasoning_effort).
	Models map[string]ModelInfo
}

// OpenAI is a client for OpenAI-compatible Chat Completions APIs: OpenAI,
// OpenRouter, ollama, llama-server, vLLM and the like. It is safe for
// concurrent use.
type OpenAI struct {
	t      transport
	url    string
	models modelInfos
	frags  fragCache
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a Chat Completions client. It does no I/O.
func NewOpenAI(opts OpenAIOptions) *OpenAI {
	name := opts.Name
	if name == "" {
		name = "openai"
	}
	base := strings.TrimRight(opts.BaseURL, "/")
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	c := &OpenAI{
		t:      newTransport(name, opts.HTTPClient, opts.Timeout, opts.IdleTimeout, opts.MaxRetries),
		url:    base + "/chat/completions",
		models: newModelInfos(opts.Models),
	}
	h := c.t.header
	h.Set("User-Agent", "talon")
	if opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+opts.APIKey)
	}
	if isOpenRouter(base) {
		title := opts.Title
		if title == "" {
			title = DefaultOpenRouterTitle
		}
		if opts.Referer != "" {
			h.Set("HTTP-Referer", opts.Referer)
		}
		h.Set("X-Title", title)
	}
	for k, v := range opts.Headers {
		h.Set(k, v)
	}
	return c
}

func isOpenRouter(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return host == "openrouter.ai" || strings.HasSuffix(host, ".openrouter.ai")
}

// Wire types.

type oaMessage struct {
	Role string `json:"role"`
	// Content is a *string (nil for null: an assistant turn of tool calls
	// only) or, for a user message with images, []oaPart. An interface
	// rather than a custom marshaler keeps the common text message on
	// encoding/json's reflection path, with no second pass over its bytes.
	Content    any          `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

// oaPart is one element of a content array: text or an image.
type oaPart struct {
	Type     string      `json:"type"`
	Text     string      `json:"text,omitempty"`
	ImageURL *oaImageURL `json:"image_url,omitempty"`
}

type oaImageURL struct {
	URL string `json:"url"`
}

// UnmarshalJSON reads Content back as the encoder wrote it (*string, nil
// or []oaPart), so a request body round-trips through oaMessage; Talon
// only decodes requests in tests and in fakes of the API.
func (m *oaMessage) UnmarshalJSON(b []byte) error {
	type plain oaMessage
	var w struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = oaMessage(w.plain)
	switch c := bytes.TrimSpace(w.Content); {
	case len(c) == 0 || string(c) == "null":
		m.Content = nil
	case c[0] == '[':
		var parts []oaPart
		if err := json.Unmarshal(c, &parts); err != nil {
			return err
		}
		m.Content = parts
	default:
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return err
		}
		m.Content = &s
	}
	return nil
}

// userContent is a user message's content: its text, or with images an
// array of the text (when there is any) and one image_url part per image,
// each a base64 data URL, the form Chat Completions takes inline images in.
func userContent(m *llm.Message) any {
	if len(m.Images) == 0 {
		return strptr(m.Content)
	}
	parts := make([]oaPart, 0, len(m.Images)+1)
	if m.Content != "" {
		parts = append(parts, oaPart{Type: "text", Text: m.Content})
	}
	for _, img := range m.Images {
		du := make([]byte, 0, len("data:;base64,")+len(img.MIME)+base64.StdEncoding.EncodedLen(len(img.Data)))
		du = append(du, "data:"...)
		du = append(du, img.MIME...)
		du = append(du, ";base64,"...)
		du = base64.StdEncoding.AppendEncode(du, img.Data)
		parts = append(parts, oaPart{Type: "image_url", ImageURL: &oaImageURL{URL: string(du)}})
	}
	return parts
}

type oaToolCall struct {
	Index    *int       `json:"index,omitempty"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name string `json:"name,omitempty"`
	// Arguments is a JSON string on the wire; some servers send an object.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

type oaTool struct {
	Type     string        `json:"type"`
	Function oaFunctionDef `json:"function"`
}

type oaFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// oaUsage is a usage member. Cached prompt tokens are part of
// prompt_tokens; servers name them in one of three ways: OpenAI's (and
// OpenRouter's) prompt_tokens_details.cached_tokens, DeepSeek's
// prompt_cache_hit_tokens, and OpenRouter's cache writes,
// prompt_tokens_details.cache_write_tokens. OpenAI caches by itself and
// reports no writes.
type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptCacheHit      int `json:"prompt_cache_hit_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *oaUsage) usage() Usage {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	out := Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total, CacheReadTokens: u.PromptCacheHit}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = max(out.CacheReadTokens, d.CachedTokens)
		out.CacheWriteTokens = d.CacheWriteTokens
	}
	out.clampCache()
	return out
}

// oaReasoning is the reasoning text of a message or a delta, which
// servers name reasoning_content (DeepSeek, vLLM, llama-server),
// reasoning (OpenRouter, ollama) or reasoning_text; OpenAI's own API
// returns none.
type oaReasoning struct {
	ReasoningContent string `json:"reasoning_content"`
	Reasoning        string `json:"reasoning"`
	ReasoningText    string `json:"reasoning_text"`
}

func (r *oaReasoning) text() string {
	switch {
	case r.ReasoningContent != "":
		return r.ReasoningContent
	case r.Reasoning != "":
		return r.Reasoning
	}
	return r.ReasoningText
}

// reasoningOf is reasoning text as a response carries it: one unsigned
// block, which no API takes back.
func reasoningOf(text string) []llm.Reasoning {
	if text == "" {
		return nil
	}
	return []llm.Reasoning{{Text: text}}
}

type oaResponse struct {
	Choices []struct {
		Message struct {
			Content   json.RawMessage `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []oaToolCall    `json:"tool_calls"`
			oaReasoning
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage        `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type oaChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   json.RawMessage `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []oaToolCall    `json:"tool_calls"`
			oaReasoning
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage        `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// emptySchema is sent for a tool without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func strptr(s string) *string { return &s }

// encode builds the request body. The system prompt and the tool
// definitions come from the client's fragment cache (see wire.go); the
// members are in the order of oaRequest's fields (wire_test.go), the
// struct encoding/json would write the same body from.
func (c *OpenAI) encode(req *Request, stream bool) ([]byte, error) {
	msgs := make([]oaMessage, 0, len(req.Messages))
	for i := range req.Messages {
		m := &req.Messages[i]
		if err := checkImages(i, m, false); err != nil {
			return nil, fmt.Errorf("%s: encoding request: %w", c.t.name, err)
		}
		om := oaMessage{Role: string(m.Role)}
		switch m.Role {
		case llm.RoleUser:
			om.Content = userContent(m)
		case llm.RoleAssistant:
			if m.Content != "" || len(m.ToolCalls) == 0 {
				om.Content = strptr(m.Content)
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				raw, _ := json.Marshal(args)
				om.ToolCalls = append(om.ToolCalls, oaToolCall{
					ID: tc.ID, Type: "function",
					Function: oaFunction{Name: tc.Name, Arguments: raw},
				})
			}
		case llm.RoleTool:
			om.Content = strptr(m.Content)
			om.ToolCallID = m.ToolCallID
		default:
			om.Content = strptr(m.Content)
		}
		msgs = append(msgs, om)
	}
	b, err := c.encodeParts(req, stream, msgs)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", c.t.name, err)
	}
	return b, nil
}

func (c *OpenAI) encodeParts(req *Request, stream bool, msgs []oaMessage) ([]byte, error) {
	var system []byte
	if req.System != "" {
		var err error
		if system, err = c.frags.text(req.System, systemMessage); err != nil {
			return nil, err
		}
	}
	rest, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	tools := make([][]byte, 0, len(req.Tools))
	for _, t := range req.Tools {
		b, err := c.frags.tool(t, func(name, desc string, params json.RawMessage) any {
			return oaTool{Type: "function", Function: oaFunctionDef{Name: name, Description: desc, Parameters: params}}
		})
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tools = append(tools, b)
	}

	size := len(system) + len(rest) + 128
	for _, t := range tools {
		size += len(t) + 1
	}
	o := newJSONObject(size)
	if err := o.value("model", req.Model); err != nil {
		return nil, err
	}
	o.array("messages", system, elements(rest))
	if len(tools) > 0 {
		o.array("tools", tools...)
	}
	if req.MaxTokens != 0 {
		o.int("max_tokens", req.MaxTokens)
	}
	if req.Temperature != nil {
		if err := o.value("temperature", *req.Temperature); err != nil {
			return nil, err
		}
	}
	if effort := reasoningEfforts[c.models.level(req)]; effort != "" {
		if err := o.value("reasoning_effort", effort); err != nil {
			return nil, err
		}
	}
	if stream {
		o.raw("stream", []byte("true"))
		o.raw("stream_options", []byte(`{"include_usage":true}`))
	}
	return o.bytes(), nil
}

// systemMessage is the system prompt as a message of the request.
func systemMessage(prompt string) ([]byte, error) {
	return json.Marshal(oaMessage{Role: "system", Content: &prompt})
}

// Chat implements Provider.
func (c *OpenAI) Chat(ctx context.Context, req *Request, onDelta func(string)) (*Response, error) {
	if req == nil {
		return nil, fmt.Errorf("%s: nil request", c.t.name)
	}
	stream := onDelta != nil
	body, err := c.encode(req, stream)
	if err != nil {
		return nil, err
	}
	return c.t.do(ctx, c.url, body, stream, onDelta, parser{body: c.parseBody, stream: c.parseStream})
}

// apiErrorValue turns an "error" member found in a 200 response or a stream
// chunk into an Error.
func apiErrorValue(provider string, raw json.RawMessage) error {
	var ae apiError
	var s string
	switch {
	case json.Unmarshal(raw, &ae) == nil:
		e := &Error{Provider: provider, Type: ae.kind(), Message: ae.Message}
		// OpenRouter puts the upstream HTTP status in code.
		var n int
		if json.Unmarshal(ae.Code, &n) == nil && n >= 400 && n <= 599 {
			e.Status, e.Type = n, ae.Type
		}
		if e.Message == "" {
			e.Message = string(raw)
		}
		return e
	case json.Unmarshal(raw, &s) == nil:
		return &Error{Provider: provider, Message: s}
	}
	return &Error{Provider: provider, Message: string(raw)}
}

// contentText reads a message content: a string, null, or an array of
// {type: "text", text} parts.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// argumentsText reads function.arguments: a JSON string, or (from some
// servers) the object itself.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	return string(raw), nil
}

func finishReason(reason string, toolCalls int) string {
	switch reason {
	case "function_call":
		reason = FinishToolCalls
	case "", FinishStop:
		// Some servers report "stop" (or nothing) for a tool-call turn.
		if toolCalls > 0 {
			reason = FinishToolCalls
		} else {
			reason = FinishStop
		}
	}
	return reason
}

func (c *OpenAI) parseBody(data []byte) (*Response, error) {
	var w oaResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, malformed(c.t.name, "JSON in response body", err)
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		return nil, apiErrorValue(c.t.name, w.Error)
	}
	if len(w.Choices) == 0 {
		return nil, fmt.Errorf("%s: malformed response body: no choices", c.t.name)
	}
	ch := w.Choices[0]
	text, err := contentText(ch.Message.Content)
	if err != nil {
		return nil, malformed(c.t.name, "message content in response body", err)
	}
	if text == "" {
		text = ch.Message.Refusal
	}
	r := &Response{Content: text, Reasoning: reasoningOf(ch.Message.text())}
	for i, tc := range ch.Message.ToolCalls {
		args, err := argumentsText(tc.Function.Arguments)
		if err != nil {
			return nil, malformed(c.t.name, fmt.Sprintf("arguments of tool call %d in response body", i), err)
		}
		r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	r.FinishReason = finishReason(ch.FinishReason, len(r.ToolCalls))
	if w.Usage != nil {
		r.Usage = w.Usage.usage()
	}
	return r, nil
}

// callBuilder assembles one streamed tool call.
type callBuilder struct {
	id, name string
	args     strings.Builder
}

func (c *OpenAI) parseStream(events func() (sseEvent, error), emit func(string)) (*Response, error) {
	var (
		text      strings.Builder
		reasoning strings.Builder
		calls     = map[int]*callBuilder{}
		lastIdx   = -1
		finish    string
		finished  bool
		usage     *oaUsage
	)
	for {
		ev, err := events()
		if err == io.EOF {
			if !finished {
				return nil, &Error{Provider: c.t.name, Message: "stream ended early: no [DONE] and no finish_reason"}
			}
			break
		}
		if err != nil {
			return nil, err
		}
		data := bytes.TrimSpace(ev.Data)
		if string(data) == "[DONE]" {
			break
		}
		if len(data) == 0 {
			continue
		}
		var ch oaChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return nil, malformed(c.t.name, "JSON in stream chunk", err)
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return nil, apiErrorValue(c.t.name, ch.Error)
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
		for _, choice := range ch.Choices {
			if choice.Index != 0 {
				continue
			}
			frag, err := contentText(choice.Delta.Content)
			if err != nil {
				return nil, malformed(c.t.name, "delta content in stream chunk", err)
			}
			if frag == "" {
				frag = choice.Delta.Refusal
			}
			// Reasoning is kept, never streamed as the answer.
			reasoning.WriteString(choice.Delta.text())
			if frag != "" {
				text.WriteString(frag)
				emit(frag)
			}
			for _, tc := range choice.Delta.ToolCalls {
				idx := lastIdx
				switch {
				case tc.Index != nil:
					idx = *tc.Index
				case tc.ID != "" && (lastIdx < 0 || calls[lastIdx].id != tc.ID):
					// No index: a new id starts a new call.
					idx = len(calls)
				case idx < 0:
					idx = 0
				}
				b := calls[idx]
				if b == nil {
					b = &callBuilder{}
					calls[idx] = b
				}
				lastIdx = idx
				if b.id == "" {
					b.id = tc.ID
				}
				if b.name == "" {
					b.name = tc.Function.Name
				}
				args, err := argumentsText(tc.Function.Arguments)
				if err != nil {
					return nil, malformed(c.t.name, "tool call arguments in stream chunk", err)
				}
				b.args.WriteString(args)
			}
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				finish = *choice.FinishReason
				finished = true
			}
		}
	}
	r := &Response{Content: text.String(), Reasoning: reasoningOf(reasoning.String())}
	idxs := make([]int, 0, len(calls))
	for i := range calls {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		b := calls[i]
		r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()})
	}
	r.FinishReason = finishReason(finish, len(r.ToolCalls))
	if usage != nil {
		r.Usage = usage.usage()
	}
	return r, nil
}
