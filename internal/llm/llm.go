// Package llm is the vocabulary of a conversation with a model: messages
// and their roles, the tool calls a model makes, the tools it is offered,
// and the images a message carries. The store keeps transcripts of these,
// the tools describe themselves with them and the clients in
// internal/provider send and receive them; the package imports nothing of
// Talon's, so that the database layer and the tools do not depend on the
// LLM clients.
//
// The types are plain data, safe to share once built and not to mutate
// concurrently.
package llm

import (
	"encoding/json"
	"strings"
)

// Role is who wrote a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation. The system prompt is not a
// message; it travels in provider.Request.System.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name identify the call a tool turn answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// StopReason and Error mark the assistant message that closes a turn
	// which did not finish (StopAborted, StopError), as OpenClaw's
	// transcripts do; Content then holds the text streamed before the end.
	// Providers do not send them; internal/agent leaves a marker without
	// text out of the history it replays.
	StopReason string `json:"stopReason,omitempty"`
	Error      string `json:"errorMessage,omitempty"`
	// Reasoning is what the model thought before an assistant answer, as
	// the provider returned it, block by block: kept apart from Content so
	// that it never reaches a reader of the answer, and replayed only to
	// an API that asks for it back (Anthropic's signed thinking blocks in
	// a tool loop; never to an OpenAI-compatible server).
	Reasoning []Reasoning `json:"reasoning,omitempty"`
	// Images go with a user message's text (the image tool's call to an
	// image-capable model). Only user messages may carry them: the
	// encoders refuse them elsewhere rather than drop them.
	Images []Image `json:"images,omitempty"`
	// Documents go with a user message's text to a model that reads them
	// itself (the pdf tool's call to Anthropic's API); as Images, only
	// user messages may carry them.
	Documents []Document `json:"documents,omitempty"`
}

// Document is a file a model reads as it is: a PDF, with a name for the
// APIs that want one.
type Document struct {
	Name string `json:"name,omitempty"`
	MIME string `json:"mimeType"`
	Data []byte `json:"data"`
}

// Image is an image sent to a model: its MIME type (image/png,
// image/jpeg, image/gif or image/webp, as the APIs accept) and its bytes.
// In JSON the bytes are base64, as OpenClaw's transcripts hold images.
type Image struct {
	MIME string `json:"mimeType"`
	Data []byte `json:"data"`
}

// Reasoning is one block of a model's reasoning: its text, or for a block
// the provider redacted, only Redacted, its encrypted form. Signature is
// the provider's opaque proof of Text; only the API that issued a
// signature or a redacted block can read them back.
type Reasoning struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// ReasoningText is the message's reasoning text, blocks joined by a blank
// line; redacted blocks have none.
func (m *Message) ReasoningText() string {
	var b strings.Builder
	for _, r := range m.Reasoning {
		if r.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(r.Text)
	}
	return b.String()
}

// Stop reasons of a turn that did not finish.
const (
	StopAborted = "aborted" // the caller went away or cancelled the run
	StopError   = "error"   // the model call, a tool or the store failed
)

// ToolCall is one function call a model asked for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object text the model produced, as it produced
	// it; it may be invalid JSON.
	Arguments string `json:"arguments"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
}
