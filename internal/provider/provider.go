package provider

import (
	"context"
	"fmt"

	"talon/internal/llm"
)

// imageMIMEs are the types both APIs take.
var imageMIMEs = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// DocumentReader is a provider that reads documents (llm.Document) as
// they are, without Talon extracting their text first.
type DocumentReader interface {
	ReadsDocuments() bool
}

// ReadsDocuments reports whether p takes llm.Message.Documents.
func ReadsDocuments(p Provider) bool {
	d, ok := p.(DocumentReader)
	return ok && d.ReadsDocuments()
}

// checkImages validates the images and documents of message i before they
// are encoded; documents only where the API reads them (documents).
func checkImages(i int, m *llm.Message, documents bool) error {
	if len(m.Documents) > 0 {
		if !documents {
			return fmt.Errorf("message %d has documents: this API does not read them", i)
		}
		if m.Role != llm.RoleUser {
			return fmt.Errorf("message %d (%s) has documents: only user messages may carry them", i, m.Role)
		}
		for j, d := range m.Documents {
			if d.MIME != "application/pdf" || len(d.Data) == 0 {
				return fmt.Errorf("message %d document %d: want a non-empty application/pdf, got %q (%d bytes)", i, j, d.MIME, len(d.Data))
			}
		}
	}
	if len(m.Images) == 0 {
		return nil
	}
	if m.Role != llm.RoleUser {
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

// Request is one model call.
type Request struct {
	// Model is the model id as the provider knows it (no provider prefix).
	Model       string
	System      string
	Messages    []llm.Message
	Tools       []llm.ToolSpec
	MaxTokens   int      // 0: provider default
	Temperature *float64 // nil: provider default
	// Thinking is the thinking level the run asks for (ThinkingLevels);
	// "" and "off" ask for none. A client sends it only for a model its
	// catalog entry marks reasoning: true (ModelInfo), so one request can
	// go to any model of a chain: see reasoning.go for what each API is
	// sent.
	Thinking string
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// CacheReadTokens and CacheWriteTokens are the prompt tokens the
	// provider read from and wrote to its prompt cache (0 when it does
	// not say); how each provider reports them is its client's business.
	// Both are part of PromptTokens, which counts every input token: the
	// uncached input is PromptTokens - CacheReadTokens - CacheWriteTokens.
	CacheReadTokens  int `json:"-"`
	CacheWriteTokens int `json:"-"`
}

// clampCache keeps the cache counts a server reported within the prompt:
// none negative, together no more than PromptTokens, so that a server's
// nonsense never makes the uncached input (and what it costs) negative.
func (u *Usage) clampCache() {
	p := max(u.PromptTokens, 0)
	u.CacheReadTokens = min(max(u.CacheReadTokens, 0), p)
	u.CacheWriteTokens = min(max(u.CacheWriteTokens, 0), p-u.CacheReadTokens)
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
	ToolCalls    []llm.ToolCall
	FinishReason string
	Usage        Usage
	// Reasoning is what the model thought before answering, apart from
	// Content: never streamed to onDelta, never part of the answer.
	Reasoning []llm.Reasoning
}

// Provider is an LLM client. Chat streams when onDelta is non-nil, calling
// it with each text fragment as it arrives, and returns the assembled
// response either way. It honours ctx for cancellation and deadlines.
// Implementations are safe for concurrent use.
type Provider interface {
	Chat(ctx context.Context, req *Request, onDelta func(text string)) (*Response, error)
}
