package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/sandbox"
	"talon/internal/store"
	"talon/internal/tools/core"
)

// thinkingLLM is Anthropic's Messages API on loopback for a run with
// thinking: each request's body is kept; the first answer of a turn is a
// signed thinking block and a tool call, the second a thinking block and
// the answer.
type thinkingLLM struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (l *thinkingLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	l.mu.Lock()
	l.bodies = append(l.bodies, body)
	n := len(l.bodies)
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n%2 == 1 {
		fmt.Fprint(w, `{"type":"message","content":[{"type":"thinking","thinking":"Look first.","signature":"sig-1"},
			{"type":"tool_use","id":"t1","name":"no_such_tool","input":{}}],"stop_reason":"tool_use",
			"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"output_tokens":5}}`)
		return
	}
	fmt.Fprint(w, `{"type":"message","content":[{"type":"thinking","thinking":"Two and two.","signature":"sig-2"},{"type":"text","text":"4"}],
		"stop_reason":"end_turn","usage":{"input_tokens":12,"cache_read_input_tokens":2000,"output_tokens":3}}`)
}

func (l *thinkingLLM) body(i int) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bodies[i]
}

// TestRunThinking runs turns on a reasoning model whose level comes from
// agents.defaults.thinkingDefault, then from the run: the level reaches
// the request, the tool loop's signed thinking goes back with the tool
// result, the answer holds no reasoning, the transcript keeps it, and the
// cache counts reach the run's usage. A run asking for off sends none.
func TestRunThinking(t *testing.T) {
	llmSrv := &thinkingLLM{}
	srv := httptest.NewServer(llmSrv)
	t.Cleanup(srv.Close)
	state := t.TempDir()
	cfg := mustConfig(t, fmt.Sprintf(`{
		agents: {defaults: {model: "fake/claude-r", workspace: %q, thinkingDefault: "think-hard"}},
		models: {providers: {fake: {baseUrl: %q, api: "anthropic-messages", models: [{id: "claude-r", reasoning: true}]}}},
	}`, filepath.Join(state, "workspace"), srv.URL))
	db, err := store.Open(filepath.Join(state, "talon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	boxes := sandbox.NewManager()
	t.Cleanup(func() { boxes.Close() })
	reg, err := core.Registry()
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Config: cfg, Policy: policy.New(cfg), Tools: reg, Store: db, StateDir: state, Sandboxes: boxes,
		Resolve: provider.NewMemo(cfg, provider.Options{Env: func(string) string { return "" }}).Resolve}

	res, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: key, Owner: true,
		Input: []llm.Message{{Role: llm.RoleUser, Content: "2+2?"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "4" {
		t.Errorf("answer %q, want 4 without the reasoning", res.Text)
	}
	if res.Usage.CacheWriteTokens != 2000 || res.Usage.CacheReadTokens != 2000 || res.Usage.PromptTokens != 4022 {
		t.Errorf("usage %+v, want the cache counts summed", res.Usage)
	}
	thinking := map[string]any{"type": "enabled", "budget_tokens": 2048.0}
	if diff := cmp.Diff(thinking, llmSrv.body(0)["thinking"]); diff != "" {
		t.Errorf("first request's thinking (-want +got):\n%s", diff)
	}
	msgs := llmSrv.body(1)["messages"].([]any)
	call := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
	if diff := cmp.Diff(map[string]any{"type": "thinking", "thinking": "Look first.", "signature": "sig-1"}, call[0]); diff != "" {
		t.Errorf("the tool loop's thinking was not sent back (-want +got):\n%s", diff)
	}

	e, err := db.GetSession(context.Background(), "main", key)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := db.TranscriptRecords(context.Background(), e.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]llm.Reasoning
	for _, rec := range recs {
		if rec.Message.Role == llm.RoleAssistant {
			kept = append(kept, rec.Message.Reasoning)
		}
	}
	want := [][]llm.Reasoning{{{Text: "Look first.", Signature: "sig-1"}}, {{Text: "Two and two.", Signature: "sig-2"}}}
	if diff := cmp.Diff(want, kept); diff != "" {
		t.Errorf("transcript reasoning (-want +got):\n%s", diff)
	}

	// The run's own level comes before the default; the next turn's
	// first request replays no earlier turn's thinking.
	if _, err := r.Run(context.Background(), Request{AgentID: "main", SessionKey: key, Owner: true, Thinking: "off",
		Input: []llm.Message{{Role: llm.RoleUser, Content: "again"}}}); err != nil {
		t.Fatal(err)
	}
	b := llmSrv.body(2)
	if _, ok := b["thinking"]; ok {
		t.Errorf("a run asking for off sent thinking: %v", b["thinking"])
	}
	raw, _ := json.Marshal(b["messages"])
	if strings.Contains(string(raw), "sig-1") || strings.Contains(string(raw), "sig-2") {
		t.Errorf("earlier turns' thinking was sent: %s", raw)
	}
}
