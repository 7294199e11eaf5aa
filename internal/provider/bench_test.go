package provider

import (
	"encoding/json"
	"strings"
	"testing"

	"talon/internal/llm"
)

// BenchmarkOpenAIEncode encodes a first-turn request of the size the
// gateway sends: a system prompt of bootstrap files, the core tools'
// schemas, one user message.
func BenchmarkOpenAIEncode(b *testing.B) {
	c := NewOpenAI(OpenAIOptions{Name: "bench", BaseURL: "http://127.0.0.1:1/v1"})
	var specs []llm.ToolSpec
	for i := range 9 {
		specs = append(specs, llm.ToolSpec{
			Name:        "tool" + strings.Repeat("x", i),
			Description: strings.Repeat("Reads a file from the workspace. ", 4),
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"Path of the file, relative to the workspace."},` +
				`"offset":{"type":"integer","description":"First line to read, 1-based."},"limit":{"type":"integer","description":"How many lines to read."}},"required":["path"],"additionalProperties":false}`),
		})
	}
	req := &Request{
		Model:    "fake-model",
		System:   strings.Repeat("You are a helpful agent.\nFollow AGENTS.md \"rules\" <always>.\n", 150),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		Tools:    specs,
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.encode(req, false); err != nil {
			b.Fatal(err)
		}
	}
}
