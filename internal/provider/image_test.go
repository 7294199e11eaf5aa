package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"talon/internal/llm"
)

// imageRequest is a turn whose last user message carries two images.
func imageRequest() *Request {
	return &Request{Model: "m", Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "earlier"},
		{Role: llm.RoleAssistant, Content: "ok"},
		{Role: llm.RoleUser, Content: "What is this?", Images: []llm.Image{
			{MIME: "image/png", Data: []byte("\x89PNG")},
			{MIME: "image/webp", Data: []byte("RIFFxxxxWEBP")},
		}},
	}}
}

// TestImageEncoding pins the exact wire shape of images: Chat Completions
// content parts with data URLs, Anthropic image blocks before the text.
func TestImageEncoding(t *testing.T) {
	oa := NewOpenAI(OpenAIOptions{})
	an := NewAnthropic(AnthropicOptions{})
	cases := []struct {
		name   string
		encode func(*Request) ([]byte, error)
		req    *Request
		want   string
	}{
		{"openai", func(r *Request) ([]byte, error) { return oa.encode(r, false) }, imageRequest(),
			`{"model":"m","messages":[{"role":"user","content":"earlier"},{"role":"assistant","content":"ok"},` +
				`{"role":"user","content":[{"type":"text","text":"What is this?"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}},` +
				`{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGRnh4eHhXRUJQ"}}]}]}`},
		{"openai image without text", func(r *Request) ([]byte, error) { return oa.encode(r, false) },
			&Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/gif", Data: []byte("GIF8")}}}}},
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGOA=="}}]}]}`},
		{"anthropic", func(r *Request) ([]byte, error) { return an.encode(r, false) }, imageRequest(),
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"earlier"}]},` +
				`{"role":"assistant","content":[{"type":"text","text":"ok"}]},` +
				`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw=="}},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklGRnh4eHhXRUJQ"}},` +
				`{"type":"text","text":"What is this?"}]}],"max_tokens":4096}`},
		{"anthropic image after tool results", func(r *Request) ([]byte, error) { return an.encode(r, false) },
			&Request{Model: "m", Messages: []llm.Message{
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "x", Arguments: "{}"}}},
				{Role: llm.RoleTool, ToolCallID: "c1", Content: "done"},
				{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/jpeg", Data: []byte{0xff, 0xd8}}}},
			}},
			`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"x","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"done"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9g="}}]}],"max_tokens":4096}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, err := c.encode(c.req)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != c.want {
				t.Errorf("body\n got %s\nwant %s", body, c.want)
			}
		})
	}
}

// TestImageEncodingRefuses checks that images the APIs would reject, or
// that a message cannot carry, fail the encoding instead of being dropped.
func TestImageEncodingRefuses(t *testing.T) {
	cases := []struct {
		name string
		msg  llm.Message
		want string
	}{
		{"assistant", llm.Message{Role: llm.RoleAssistant, Content: "x", Images: []llm.Image{{MIME: "image/png", Data: []byte("x")}}}, "only user messages"},
		{"tool", llm.Message{Role: llm.RoleTool, ToolCallID: "c", Images: []llm.Image{{MIME: "image/png", Data: []byte("x")}}}, "only user messages"},
		{"bad MIME", llm.Message{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/tiff", Data: []byte("x")}}}, `"image/tiff"`},
		{"no data", llm.Message{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/png"}}}, "no data"},
	}
	oa, an := NewOpenAI(OpenAIOptions{}), NewAnthropic(AnthropicOptions{})
	for _, c := range cases {
		for name, enc := range map[string]func(*Request, bool) ([]byte, error){"openai": oa.encode, "anthropic": an.encode} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				_, err := enc(&Request{Model: "m", Messages: []llm.Message{c.msg}}, false)
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "encoding request") {
					t.Errorf("err = %v, want one naming the encoding and %q", err, c.want)
				}
			})
		}
	}
}

// TestImageWireRoundTrip checks the image bodies against the typed wire
// structs, as TestOpenAIEncodeIsWireStruct does for the others.
func TestImageWireRoundTrip(t *testing.T) {
	body, err := NewOpenAI(OpenAIOptions{}).encode(imageRequest(), true)
	if err != nil {
		t.Fatal(err)
	}
	var w oaRequest
	if err := jsonRoundTrip(body, &w); err != nil {
		t.Fatal(err)
	}
	parts, ok := w.Messages[2].Content.([]oaPart)
	if !ok || len(parts) != 3 || parts[2].ImageURL == nil {
		t.Fatalf("content %#v, want three parts", w.Messages[2].Content)
	}
}

func TestInspectImages(t *testing.T) {
	cases := []struct {
		name string
		req  *Request
		want string
	}{
		{"two images", imageRequest(), `inspect: 2 image(s): image/png 4 bytes, image/webp 12 bytes; prompt: "What is this?"`},
		{"no prompt", &Request{Messages: []llm.Message{{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/gif", Data: []byte("GIF89a")}}}}},
			`inspect: 1 image(s): image/gif 6 bytes; prompt: ""`},
		{"images on an earlier message only", &Request{Messages: []llm.Message{
			{Role: llm.RoleUser, Images: []llm.Image{{MIME: "image/gif", Data: []byte("GIF89a")}}},
			{Role: llm.RoleAssistant, Content: "x"}, {Role: llm.RoleUser, Content: "hi"}}},
			"inspect: system prompt 0 bytes, 0 tools, 3 messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Inspect{}.Chat(context.Background(), c.req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != c.want || r.FinishReason != FinishStop {
				t.Errorf("got %q (%s), want %q", r.Content, r.FinishReason, c.want)
			}
		})
	}
}

// jsonRoundTrip decodes body into w and checks that encoding w again
// gives body back byte for byte.
func jsonRoundTrip(body []byte, w *oaRequest) error {
	if err := json.Unmarshal(body, w); err != nil {
		return fmt.Errorf("body is not a request: %v\n%s", err, body)
	}
	again, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, body) {
		return fmt.Errorf("round trip:\n got %s\nwant %s", again, body)
	}
	return nil
}

// TestDocumentEncoding: Anthropic's encoder sends a PDF as a document
// block before the text; a document it cannot carry, and any document to
// the OpenAI-compatible encoder (no ReadsDocuments), fail the encoding.
func TestDocumentEncoding(t *testing.T) {
	pdf := llm.Document{Name: "a.pdf", MIME: "application/pdf", Data: []byte("%PDF-1.7")}
	an, oa := NewAnthropic(AnthropicOptions{}), NewOpenAI(OpenAIOptions{})
	body, err := an.encode(&Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Sum it up", Documents: []llm.Document{pdf}}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjc="}},{"type":"text","text":"Sum it up"}]`) {
		t.Errorf("anthropic body %s", body)
	}
	if !ReadsDocuments(an) || ReadsDocuments(oa) || ReadsDocuments(Inspect{}) {
		t.Error("ReadsDocuments: want Anthropic only")
	}
	cases := []struct {
		name string
		enc  func(*Request, bool) ([]byte, error)
		msg  llm.Message
		want string
	}{
		{"openai reads none", oa.encode, llm.Message{Role: llm.RoleUser, Documents: []llm.Document{pdf}}, "does not read them"},
		{"not a user's", an.encode, llm.Message{Role: llm.RoleAssistant, Content: "x", Documents: []llm.Document{pdf}}, "only user messages"},
		{"not a PDF", an.encode, llm.Message{Role: llm.RoleUser, Documents: []llm.Document{{MIME: "text/plain", Data: []byte("x")}}}, "application/pdf"},
		{"empty", an.encode, llm.Message{Role: llm.RoleUser, Documents: []llm.Document{{MIME: "application/pdf"}}}, "non-empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.enc(&Request{Model: "m", Messages: []llm.Message{c.msg}}, false); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}
