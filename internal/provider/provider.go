package provider

import (
	"context"
	"encoding/json"
	"fmt"
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
// message; it travels in Request.System.
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
	// Images go with a user message's text (the image tool's call to an
	// image-capable model). Only user messages may carry them: the
	// encoders refuse them elsewhere rather than drop them.
	Images []Image `json:"images,omitempty"`
}

// Image is an image sent to a model: its MIME type (image/png,
// image/jpeg, image/gif or image/webp, as the APIs accept) and its bytes.
// In JSON the bytes are base64, as OpenClaw's transcripts hold images.
type Image struct {
	MIME string `json:"mimeType"`
	Data []byte `json:"data"`
}

// imageMIMEs are the types both APIs take.
var imageMIMEs = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// checkImages validates the images of message i before they are encoded.
func checkImages(i int, m *Message) error {
	if len(m.Images) == 0 {
		return nil
	}
	if m.Role != RoleUser {
		return fmt.Errorf("message %d (%s) has images: only user messages may carry them", i, m.Role)
	}
	for j, img := range m.Images {
		if !imageMIMEs[img.MIME] {
			return fmt.Errorf("message %d image %d: MIME type %q is not image/png, image/jpeg, image/gif or image/webp", i, j, img.MIME)
		}
		if len(img.Data) == 0 {
			return fmt.Errorf("message %d image %d (%s) has no data", i, j, img.MIME)
		}
	}
	return nil
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

// Request is one model call.
type Request struct {
	// Model is the model id as the provider knows it (no provider prefix).
	Model       string
	System      string
	Messages    []Message
	Tools       []ToolSpec
	MaxTokens   int      // 0: provider default
	Temperature *float64 // nil: provider default
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Finish reasons.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// Response is a complete model answer.
type Response struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
}

// Provider is an LLM client. Chat streams when onDelta is non-nil, calling
// it with each text fragment as it arrives, and returns the assembled
// response either way. It honours ctx for cancellation and deadlines.
// Implementations are safe for concurrent use.
type Provider interface {
	Chat(ctx context.Context, req *Request, onDelta func(text string)) (*Response, error)
}
