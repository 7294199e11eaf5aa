package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"talon/internal/llm"
)

// Anthropic API defaults.
const (
	DefaultAnthropicBaseURL   = "https://api.anthropic.com"
	DefaultAnthropicMaxTokens = 4096
	anthropicVersion          = "2023-06-01"
)

// AnthropicOptions configures an Anthropic Messages client.
type AnthropicOptions struct {
	// Name prefixes errors; default "anthropic".
	Name string
	// BaseURL is used verbatim + "/v1/messages" (a trailing slash is
	// dropped). Default DefaultAnthropicBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key; empty sends none.
	APIKey string
	// Headers are sent with every request, after (and so overriding) the
	// client's own.
	Headers map[string]string
	// HTTPClient, Timeout, IdleTimeout and MaxRetries are as in
	// OpenAIOptions.
	HTTPClient  *http.Client
	Timeout     time.Duration
	IdleTimeout time.Duration
	MaxRetries  int
	// MaxTokens is sent when Request.MaxTokens is 0 (the API requires one).
	// Default DefaultAnthropicMaxTokens.
	MaxTokens int
	// Models is what the catalog says of the models, by id: which take a
	// thinking level, and their output limits.
	Models map[string]ModelInfo
}

// Anthropic is a client for the Anthropic Messages API. It is safe for
// concurrent use.
type Anthropic struct {
	t         transport
	url       string
	maxTokens int
	models    modelInfos
	frags     fragCache
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns a Messages client. It does no I/O.
func NewAnthropic(opts AnthropicOptions) *Anthropic {
	name := opts.Name
	if name == "" {
		name = "anthropic"
	}
	base := strings.TrimRight(opts.BaseURL, "/")
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	c := &Anthropic{
		t:         newTransport(name, opts.HTTPClient, opts.Timeout, opts.IdleTimeout, opts.MaxRetries),
		url:       base + "/v1/messages",
		maxTokens: opts.MaxTokens,
		models:    newModelInfos(opts.Models),
	}
	if c.maxTokens <= 0 {
		c.maxTokens = DefaultAnthropicMaxTokens
	}
	h := c.t.header
	h.Set("User-Agent", "talon")
	h.Set("Anthropic-Version", anthropicVersion)
	if opts.APIKey != "" {
		h.Set("X-Api-Key", opts.APIKey)
	}
	for k, v := range opts.Headers {
		h.Set(k, v)
	}
	return c
}

// Wire types.

type anRequest struct {
	Model       string      `json:"model"`
	System      []anText    `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Tools       []anTool    `json:"tools,omitempty"`
	MaxTokens   int         `json:"max_tokens"`
	Thinking    *anThinking `json:"thinking,omitempty"`
	Temperature *float64    `json:"temperature,omitempty"`
	Stream      bool        `json:"stream,omitempty"`
}

// anText is a system prompt block. The prompt is one block marked as a
// cache breakpoint: with the tools before it, it is the stable prefix of
// every request of an agent, which Anthropic then reads from its prompt
// cache at a tenth of the price (a prefix under the model's minimum is
// not cached, and costs nothing more).
type anText struct {
	Type         string   `json:"type"`
	Text         string   `json:"text"`
	CacheControl *anCache `json:"cache_control,omitempty"`
}

type anCache struct {
	Type string `json:"type"` // "ephemeral"
}

// ephemeral is the cache_control of a breakpoint; the last tool's
// definition is encoded with it appended (encodeParts).
var ephemeral = &anCache{Type: "ephemeral"}

const ephemeralMember = `"cache_control":{"type":"ephemeral"}`

type anThinking struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

// anBlock is a content block; which fields are set depends on Type.
type anBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// image and document
	Source *anSource `json:"source,omitempty"`
	// thinking (a pointer: the member is required, even when empty) and
	// redacted_thinking
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`
}

// anSource is an image block's inline data; encoding/json writes Data as
// base64, which is what the API wants.
type anSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
}

// anOutBlock is a content block in a response; fields of block types we do
// not use are not decoded, so that their shapes cannot fail the decode.
type anOutBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// reasoning is a thinking or redacted_thinking block as kept.
func (b *anOutBlock) reasoning() (llm.Reasoning, bool) {
	switch b.Type {
	case "thinking":
		return llm.Reasoning{Text: b.Thinking, Signature: b.Signature}, true
	case "redacted_thinking":
		return llm.Reasoning{Redacted: b.Data}, true
	}
	return llm.Reasoning{}, false
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anCache        `json:"cache_control,omitempty"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// prompt counts every input token, cached or not.
func (u *anUsage) prompt() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

func (u *anUsage) usage() Usage {
	p := u.prompt()
	out := Usage{PromptTokens: p, CompletionTokens: u.OutputTokens, TotalTokens: p + u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
	out.clampCache()
	return out
}

type anResponse struct {
	Type       string          `json:"type"`
	Content    []anOutBlock    `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      anUsage         `json:"usage"`
	Error      json.RawMessage `json:"error"`
}

// toolInput is the tool_use input for a call's arguments: the arguments
// when they are a JSON object, else {} (the API accepts only objects).
func toolInput(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(args)) != nil {
		return json.RawMessage(`{}`)
	}
	return b.Bytes()
}

// thinking returns the request's thinking member, with the
// max_tokens it needs, and whether the current tool loop's reasoning is
// sent back (from index start on): see reasoning.go.
func (c *Anthropic) thinking(req *Request, base int) (th *anThinking, maxTokens, start int) {
	start = loopStart(req.Messages)
	level := c.models.level(req)
	if level == "" || !replayable(req.Messages, start) {
		return nil, base, len(req.Messages)
	}
	maxTokens, budget := thinkingBudget(level, base, c.models[strings.ToLower(req.Model)].MaxTokens)
	if budget == 0 {
		return nil, base, len(req.Messages)
	}
	return &anThinking{Type: "enabled", BudgetTokens: budget}, maxTokens, start
}

// reasoningBlocks are m's signed reasoning as blocks to send back;
// unsigned text (another API's) is not, as the API would refuse it.
func reasoningBlocks(m *llm.Message) []anBlock {
	var out []anBlock
	for _, r := range m.Reasoning {
		switch {
		case r.Redacted != "":
			out = append(out, anBlock{Type: "redacted_thinking", Data: r.Redacted})
		case r.Signature != "":
			out = append(out, anBlock{Type: "thinking", Thinking: &r.Text, Signature: r.Signature})
		}
	}
	return out
}

func (c *Anthropic) encode(req *Request, stream bool) ([]byte, error) {
	w := anRequest{
		Model:       req.Model,
		Messages:    []anMessage{},
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		Stream:      stream,
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = c.maxTokens
	}
	th, maxTokens, replayFrom := c.thinking(req, w.MaxTokens)
	if th != nil {
		w.Thinking, w.MaxTokens, w.Temperature = th, maxTokens, nil
	}
	// lastIsResults says the last message so far is a user turn that
	// starts with tool results, which following results and user text
	// join (the API wants a tool turn's results in one user message).
	lastIsResults := false
	for i := range req.Messages {
		m := &req.Messages[i]
		if err := checkImages(i, m, true); err != nil {
			return nil, fmt.Errorf("%s: encoding request: %w", c.t.name, err)
		}
		switch m.Role {
		case llm.RoleTool:
			b := anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content, IsError: m.IsError}
			if lastIsResults {
				last := &w.Messages[len(w.Messages)-1]
				last.Content = append(last.Content, b)
			} else {
				w.Messages = append(w.Messages, anMessage{Role: "user", Content: []anBlock{b}})
				lastIsResults = true
			}
		case llm.RoleAssistant:
			var blocks []anBlock
			if i >= replayFrom {
				blocks = reasoningBlocks(m)
			}
			if m.Content != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
			}
			if len(blocks) == 0 {
				continue // the API rejects empty content
			}
			w.Messages = append(w.Messages, anMessage{Role: "assistant", Content: blocks})
			lastIsResults = false
		default: // user
			// Images go before the text, as Anthropic advises for
			// image prompts.
			var blocks []anBlock
			for _, d := range m.Documents {
				blocks = append(blocks, anBlock{Type: "document", Source: &anSource{Type: "base64", MediaType: d.MIME, Data: d.Data}})
			}
			for _, img := range m.Images {
				blocks = append(blocks, anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: img.MIME, Data: img.Data}})
			}
			if m.Content != "" { // the API rejects empty text blocks
				blocks = append(blocks, anBlock{Type: "text", Text: m.Content})
			}
			if len(blocks) == 0 {
				continue
			}
			if lastIsResults {
				last := &w.Messages[len(w.Messages)-1]
				last.Content = append(last.Content, blocks...)
				lastIsResults = false
				continue
			}
			w.Messages = append(w.Messages, anMessage{Role: "user", Content: blocks})
		}
	}
	b, err := c.encodeParts(&w, req)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding request: %w", c.t.name, err)
	}
	return b, nil
}

// encodeParts writes w with the system prompt and the tool definitions
// from the client's fragment cache (see wire.go), in the order of
// anRequest's fields.
func (c *Anthropic) encodeParts(w *anRequest, req *Request) ([]byte, error) {
	var system []byte
	if req.System != "" {
		var err error
		if system, err = c.frags.text(req.System, systemBlocks); err != nil {
			return nil, err
		}
	}
	msgs, err := json.Marshal(w.Messages)
	if err != nil {
		return nil, err
	}
	size := len(system) + len(msgs) + 128
	tools := make([][]byte, 0, len(req.Tools))
	for _, t := range req.Tools {
		b, err := c.frags.tool(t, func(name, desc string, params json.RawMessage) any {
			return anTool{Name: name, Description: desc, InputSchema: params}
		})
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tools = append(tools, b)
		size += len(b) + 1
	}
	if n := len(tools); n > 0 {
		tools[n-1] = cacheBreakpoint(tools[n-1])
	}

	o := newJSONObject(size)
	if err := o.value("model", w.Model); err != nil {
		return nil, err
	}
	if system != nil {
		o.raw("system", system)
	}
	o.raw("messages", msgs)
	if len(tools) > 0 {
		o.array("tools", tools...)
	}
	o.int("max_tokens", w.MaxTokens)
	if w.Thinking != nil {
		if err := o.value("thinking", w.Thinking); err != nil {
			return nil, err
		}
	}
	if w.Temperature != nil {
		if err := o.value("temperature", *w.Temperature); err != nil {
			return nil, err
		}
	}
	if w.Stream {
		o.raw("stream", []byte("true"))
	}
	return o.bytes(), nil
}

// systemBlocks is the system prompt as the request's system member: one
// text block, a cache breakpoint.
func systemBlocks(prompt string) ([]byte, error) {
	return json.Marshal([]anText{{Type: "text", Text: prompt, CacheControl: ephemeral}})
}

// cacheBreakpoint is an encoded tool definition (an object) with
// cache_control as its last member, anTool's order. It copies: the
// definition is the fragment cache's.
func cacheBreakpoint(tool []byte) []byte {
	out := make([]byte, 0, len(tool)+len(ephemeralMember)+1)
	out = append(out, tool[:len(tool)-1]...)
	out = append(out, ',')
	out = append(out, ephemeralMember...)
	return append(out, '}')
}

// Chat implements Provider.
// ReadsDocuments: the Messages API reads PDFs as document blocks.
func (c *Anthropic) ReadsDocuments() bool { return true }

func (c *Anthropic) Chat(ctx context.Context, req *Request, onDelta func(string)) (*Response, error) {
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

func stopReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence", "pause_turn", "":
		return FinishStop
	case "max_tokens":
		return FinishLength
	case "tool_use":
		return FinishToolCalls
	case "refusal":
		return "content_filter"
	}
	return r
}

// anErrorStatus is the HTTP status Anthropic documents for an error type,
// so that an error event in a stream is as temporary as the same error
// returned as a status.
var anErrorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

func (c *Anthropic) errorValue(raw json.RawMessage) error {
	var ae apiError
	if json.Unmarshal(raw, &ae) != nil {
		return &Error{Provider: c.t.name, Message: string(raw)}
	}
	return &Error{Provider: c.t.name, Status: anErrorStatus[ae.Type], Type: ae.Type, Message: ae.Message}
}

// compactJSON re-encodes a tool_use input as compact JSON text.
func compactJSON(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func (c *Anthropic) parseBody(data []byte) (*Response, error) {
	var w anResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, malformed(c.t.name, "JSON in response body", err)
	}
	if w.Type == "error" || (len(w.Error) > 0 && string(w.Error) != "null") {
		return nil, c.errorValue(w.Error)
	}
	if w.Type != "message" && w.Type != "" {
		return nil, fmt.Errorf("%s: malformed response body: type %q, want \"message\"", c.t.name, w.Type)
	}
	r := &Response{FinishReason: stopReason(w.StopReason)}
	var text strings.Builder
	for _, b := range w.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: compactJSON(b.Input)})
		}
		if rb, ok := b.reasoning(); ok {
			r.Reasoning = append(r.Reasoning, rb)
		}
	}
	r.Content = text.String()
	r.Usage = w.Usage.usage()
	return r, nil
}

// anEvent is any streamed event; which fields are set depends on Type.
type anEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage anUsage `json:"usage"`
	} `json:"message"`
	Index        int         `json:"index"`
	ContentBlock *anOutBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage        `json:"usage"`
	Error json.RawMessage `json:"error"`
}

type anBlockBuilder struct {
	kind     string
	id, name string
	start    json.RawMessage // input given in content_block_start
	args     strings.Builder
	// thinking and redacted_thinking
	thinking  strings.Builder
	signature string
	data      string
}

func (c *Anthropic) parseStream(events func() (sseEvent, error), emit func(string)) (*Response, error) {
	var (
		blocks = map[int]*anBlockBuilder{}
		// text is what was streamed, in arrival order: the content is
		// exactly the fragments the caller saw, whatever the indexes say.
		text    strings.Builder
		usage   anUsage
		stop    string
		stopped bool // message_stop seen
	)
	for !stopped {
		ev, err := events()
		if err == io.EOF {
			if stop == "" {
				return nil, &Error{Provider: c.t.name, Message: "stream ended early: no message_stop and no stop_reason"}
			}
			break
		}
		if err != nil {
			return nil, err
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		var e anEvent
		if err := json.Unmarshal(data, &e); err != nil {
			name := ev.Event
			if name == "" {
				name = "stream"
			}
			return nil, malformed(c.t.name, "JSON in "+name+" event", err)
		}
		typ := ev.Event
		if typ == "" {
			typ = e.Type
		}
		switch typ {
		case "message_start":
			if e.Message != nil {
				usage = e.Message.Usage
			}
		case "content_block_start":
			if e.ContentBlock == nil {
				return nil, fmt.Errorf("%s: malformed content_block_start event: no content_block", c.t.name)
			}
			cb := e.ContentBlock
			b := &anBlockBuilder{kind: cb.Type, id: cb.ID, name: cb.Name, start: cb.Input, signature: cb.Signature, data: cb.Data}
			b.thinking.WriteString(cb.Thinking)
			if b.kind == "text" && e.ContentBlock.Text != "" {
				text.WriteString(e.ContentBlock.Text)
				emit(e.ContentBlock.Text)
			}
			blocks[e.Index] = b
		case "content_block_delta":
			b := blocks[e.Index]
			if b == nil || e.Delta == nil {
				return nil, fmt.Errorf("%s: malformed content_block_delta event: no block %d started", c.t.name, e.Index)
			}
			switch e.Delta.Type {
			case "text_delta":
				if b.kind == "text" {
					text.WriteString(e.Delta.Text)
					emit(e.Delta.Text)
				}
			case "input_json_delta":
				b.args.WriteString(e.Delta.PartialJSON)
			case "thinking_delta":
				b.thinking.WriteString(e.Delta.Thinking)
			case "signature_delta":
				b.signature += e.Delta.Signature
			}
		case "message_delta":
			if e.Delta != nil && e.Delta.StopReason != "" {
				stop = e.Delta.StopReason
			}
			if e.Usage != nil {
				usage.OutputTokens = e.Usage.OutputTokens
				if e.Usage.prompt() > 0 {
					usage.InputTokens = e.Usage.InputTokens
					usage.CacheCreationInputTokens = e.Usage.CacheCreationInputTokens
					usage.CacheReadInputTokens = e.Usage.CacheReadInputTokens
				}
			}
		case "message_stop":
			stopped = true
		case "error":
			return nil, c.errorValue(e.Error)
		}
		// content_block_stop, ping and unknown events need nothing.
	}
	idxs := make([]int, 0, len(blocks))
	for i := range blocks {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	r := &Response{FinishReason: stopReason(stop)}
	for _, i := range idxs {
		b := blocks[i]
		switch b.kind {
		case "tool_use":
			args := b.args.String()
			if strings.TrimSpace(args) == "" {
				args = compactJSON(b.start)
			}
			r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		case "thinking":
			r.Reasoning = append(r.Reasoning, llm.Reasoning{Text: b.thinking.String(), Signature: b.signature})
		case "redacted_thinking":
			r.Reasoning = append(r.Reasoning, llm.Reasoning{Redacted: b.data})
		}
	}
	r.Content = text.String()
	r.Usage = usage.usage()
	return r, nil
}
