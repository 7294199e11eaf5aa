package benchmarks

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"talon/internal/provider"
)

// TestFakeLLM checks the fake LLM speaks the wire format: raw, and as
// talon's own OpenAI client reads it, streamed and not.
func TestFakeLLM(t *testing.T) {
	f := newFakeLLM()
	defer f.Close()

	resp, err := http.Post(f.BaseURL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"fake-model","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Object  string `json:"object"`
		Choices []struct {
			Message      struct{ Role, Content string } `json:"message"`
			FinishReason string                         `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || got.Object != "chat.completion" || len(got.Choices) != 1 ||
		got.Choices[0].Message.Role != "assistant" || got.Choices[0].Message.Content != fakeReply ||
		got.Choices[0].FinishReason != "stop" || got.Usage.TotalTokens != 15 {
		t.Fatalf("non-streamed: status %d, %+v, err %v", resp.StatusCode, got, err)
	}

	resp, err = http.Post(f.BaseURL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	resp.Body.Close()
	if len(events) != 5 || events[4] != "[DONE]" || !strings.Contains(events[1], `"content":"`+fakeReply+`"`) ||
		!strings.Contains(events[2], `"finish_reason":"stop"`) || !strings.Contains(events[3], `"usage"`) {
		t.Fatalf("streamed events: %q", events)
	}
	if content, ok := firstContent([]byte("data: " + events[1])); !ok || content != fakeReply {
		t.Errorf("firstContent(%s) = %q, %v", events[1], content, ok)
	}

	resp, err = http.Post(f.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: status %d, want 400", resp.StatusCode)
	}

	c := provider.NewOpenAI(provider.OpenAIOptions{Name: "fake", BaseURL: f.BaseURL(), APIKey: "sk-test"})
	req := &provider.Request{Model: "fake-model", System: "be brief",
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}
	out, err := c.Chat(context.Background(), req, nil)
	if err != nil || out.Content != fakeReply || out.FinishReason != provider.FinishStop || out.Usage.TotalTokens != 15 {
		t.Fatalf("talon client, non-streamed: %+v, %v", out, err)
	}
	var deltas []string
	out, err = c.Chat(context.Background(), req, func(s string) { deltas = append(deltas, s) })
	if err != nil || out.Content != fakeReply || strings.Join(deltas, "") != fakeReply || out.Usage.TotalTokens != 15 {
		t.Fatalf("talon client, streamed: %+v, deltas %q, %v", out, deltas, err)
	}
	if n := f.chats.Load(); n != 4 {
		t.Errorf("fake counted %d chats, want 4", n)
	}
}
