package provider

import (
	"errors"
	"fmt"
	"testing"

	"talon/internal/config"
)

func TestMemo(t *testing.T) {
	cfg := &config.Config{}
	cfg.Models.Providers = map[string]config.Provider{"local": {BaseURL: "http://127.0.0.1:11434/v1"}}
	key := ""
	m := NewMemo(cfg, Options{Env: func(name string) string {
		if name == "OPENAI_API_KEY" {
			return key
		}
		return ""
	}})

	p1, model, err := m.Resolve("local/llama3")
	if err != nil || model != "llama3" {
		t.Fatalf("Resolve = %v, %q, %v", p1, model, err)
	}
	p2, _, _ := m.Resolve("local/llama3")
	if p1 != p2 {
		t.Error("the same reference built a second client")
	}
	if p3, _, _ := m.Resolve("local/other"); p3 == p1 {
		t.Error("another model shares the first model's entry")
	}

	// A failure is not remembered: once the key is there, it resolves.
	var rerr *ResolveError
	if _, _, err := m.Resolve("openai/gpt-4o"); !errors.As(err, &rerr) {
		t.Fatalf("without a key: %v, want a ResolveError", err)
	}
	key = "sk-test"
	if _, _, err := m.Resolve("openai/gpt-4o"); err != nil {
		t.Fatalf("with a key: %v", err)
	}

	// Bounded: references past maxMemo still resolve, and are not kept.
	for i := range 2 * maxMemo {
		if _, _, err := m.Resolve(fmt.Sprintf("local/m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(m.seen) > maxMemo {
		t.Errorf("%d entries kept, bound is %d", len(m.seen), maxMemo)
	}
}
