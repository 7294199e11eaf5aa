package provider

import (
	"context"
	"testing"

	"talon/internal/config"
	"talon/internal/llm"
)

func TestThinkingBudget(t *testing.T) {
	tests := []struct {
		name               string
		level              string
		base, limit        int
		wantMax, wantSpend int
	}{
		{"minimal", "minimal", 4096, 0, 5120, 1024},
		{"low", "low", 4096, 0, 6144, 2048},
		{"medium", "medium", 4096, 0, 12288, 8192},
		{"high", "high", 4096, 0, 20480, 16384},
		{"xhigh is high's budget", "xhigh", 4096, 0, 20480, 16384},
		{"capped by the model's limit", "high", 4096, 16000, 16000, 14976},
		{"limit under the budget leaves room for the answer", "medium", 4096, 8192, 8192, 7168},
		{"too small for the minimum: no thinking", "low", 4096, 2000, 4096, 0},
		{"an unknown level: no thinking", "adaptive", 4096, 0, 4096, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotMax, gotBudget := thinkingBudget(tc.level, tc.base, tc.limit)
			if gotMax != tc.wantMax || gotBudget != tc.wantSpend {
				t.Errorf("thinkingBudget(%q, %d, %d) = %d, %d; want %d, %d", tc.level, tc.base, tc.limit, gotMax, gotBudget, tc.wantMax, tc.wantSpend)
			}
		})
	}
}

// TestResolveReadsReasoning checks that Resolve hands each client its
// catalog's reasoning flags: a configured reasoning model is sent its
// level, on both APIs, and a model the catalog does not mark is not.
func TestResolveReadsReasoning(t *testing.T) {
	yes := true
	limit := 10000.0
	for _, api := range []string{APIOpenAICompletions, APIAnthropicMessages} {
		for _, model := range []string{"thinker", "plain"} {
			t.Run(api+"/"+model, func(t *testing.T) {
				f := newFakeServer(t, jsonReply(200, `{"type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{},
					"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
				cfg := &config.Config{Models: config.Models{Providers: map[string]config.Provider{
					"p": {API: api, BaseURL: f.URL, Models: []config.Model{{ID: "thinker", Reasoning: &yes, MaxTokens: &limit}, {ID: "plain"}}},
				}}}
				p, id, err := Resolve(cfg, "p/"+model, func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				if _, err := p.Chat(context.Background(), &Request{Model: id, Thinking: "low", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil); err != nil {
					t.Fatal(err)
				}
				body := f.requests()[0].Body
				_, effort := body["reasoning_effort"]
				_, thinking := body["thinking"]
				if got, want := effort || thinking, model == "thinker"; got != want {
					t.Errorf("thinking sent = %v, want %v: %v", got, want, body)
				}
			})
		}
	}
}
