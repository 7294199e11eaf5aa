package policy

import (
	"testing"

	"talon/internal/config"
)

// benchConfig is a realistic tenant config: a profile, an agent with its own
// allow and deny, a sandbox with its own allow list, and byProvider entries.
const benchConfig = `{
  "tools": {
    "profile": "coding",
    "deny": ["gateway"],
    "byProvider": {"openai/gpt-5.2": {"deny": ["web_fetch"]}, "anthropic": {"profile": "full"}}
  },
  "agents": {
    "defaults": {"sandbox": {"mode": "all", "workspaceAccess": "rw"}},
    "list": [
      {"id": "main"},
      {"id": "somi", "tools": {
        "allow": ["group:fs", "group:runtime", "group:sessions", "image", "web_*", "memory_search"],
        "alsoAllow": ["generate_image"],
        "deny": ["sessions_spawn"],
        "byProvider": {"openai": {"deny": ["process"]}},
        "sandbox": {"tools": {"allow": ["exec", "process", "read", "write", "edit", "image", "sessions_list", "sessions_history", "sessions_send", "session_status", "web_search", "generate_image"]}}
      }}
    ]
  }
}`

func benchSetup(b *testing.B) (*Engine, Context, []Tool) {
	tree, err := config.FromJSON([]byte(benchConfig))
	if err != nil {
		b.Fatal(err)
	}
	var cfg config.Config
	if _, err := config.Decode(tree, &cfg); err != nil {
		b.Fatal(err)
	}
	tools := make([]Tool, len(StandardTools))
	for i, n := range StandardTools {
		tools[i] = Tool{Name: n}
		if n == "memory_search" || n == "memory_get" {
			tools[i].Plugin = MemoryPlugin
		}
	}
	ctx := Context{
		SessionKey: "agent:somi:openai-user:42", ModelProvider: "openai", ModelID: "gpt-5.2", SenderIsOwner: true,
	}
	return New(&cfg), ctx, tools
}

// BenchmarkEvaluate measures one effective-tool-set evaluation on a
// compiled engine: the per-turn cost.
func BenchmarkEvaluate(b *testing.B) {
	e, ctx, tools := benchSetup(b)
	r := e.Evaluate(ctx, tools)
	if len(r.Tools) == 0 || len(r.Tools) == len(tools) {
		b.Fatalf("benchmark config should keep some tools and remove others, kept %d", len(r.Tools))
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Evaluate(ctx, tools)
	}
}

// BenchmarkCompileAndEvaluate includes compiling the config, the cost when
// the config changed since the last turn.
func BenchmarkCompileAndEvaluate(b *testing.B) {
	e, ctx, tools := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		New(e.cfg).Evaluate(ctx, tools)
	}
}
