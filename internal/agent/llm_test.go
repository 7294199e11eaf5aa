package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// windowLLM is a model server on loopback that holds requests to a
// context window the way providers do: the fake at the outside edge,
// speaking OpenAI's Chat Completions or Anthropic's Messages. It counts a
// request's tokens as a quarter of the characters of every string in its
// body (no tokenizer, but what Talon is sent is what it counts), refuses
// one over the window with the provider's own error (OpenAI's 400
// context_length_exceeded, Anthropic's 400 "prompt is too long"), and
// reports the count as usage. It answers a summariser request
// (compaction's system prompt) with the headings a summary needs and
// every "FACT: …" line of the request, so facts travel through summaries
// of summaries; a memory flush's request with a write of memory/ and then
// NO_REPLY; anything else with a short text.
type windowLLM struct {
	t         *testing.T
	srv       *httptest.Server
	anthropic bool

	mu sync.Mutex
	// window is the limit it holds requests to; 0 refuses every request.
	window int
	// failSummaries answers summariser requests with nothing;
	// summariesDown answers them 500.
	failSummaries, summariesDown bool
	// Counters and the last requests it answered.
	answered, refused, summaries, flushes int
	maxAnswered                           int
	lastBody                              string // the last answered request that was neither a summary nor a flush
	lastSummary                           string // the last summariser request
	// ledger is what it answered by the usage ledger's kind of call
	// (turn, summary, memory-flush): calls and the tokens it reported.
	ledger map[string][2]int64
}

func newWindowLLM(t *testing.T, window int, anthropic bool) *windowLLM {
	w := &windowLLM{t: t, window: window, anthropic: anthropic}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

// providerConfig is the models.providers entry that reaches it, with the
// window Talon is told (which may differ from the one it holds).
func (w *windowLLM) providerConfig(told int) string {
	if w.anthropic {
		return fmt.Sprintf(`fake: {baseUrl: %q, api: "anthropic-messages", models: [{id: "m", contextWindow: %d}]}`, w.srv.URL, told)
	}
	return fmt.Sprintf(`fake: {baseUrl: %q, api: "openai-completions", models: [{id: "m", contextWindow: %d}]}`, w.srv.URL+"/v1", told)
}

var factPattern = regexp.MustCompile(`FACT: [^"\\\n]+`)

func (w *windowLLM) serve(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		http.Error(rw, "bad JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	tokens := (stringChars(v) + 3) / 4
	text := string(body)
	summary := strings.Contains(text, "You are a context summarization assistant")
	flush := strings.Contains(text, "Pre-compaction memory flush")

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case tokens > w.window:
		w.refused++
		w.overflow(rw, tokens)
		return
	case summary && w.summariesDown:
		http.Error(rw, `{"error":{"message":"summaries are down","type":"server_error"}}`, http.StatusInternalServerError)
		return
	case summary && w.failSummaries:
		w.summaries++
		w.count("summary", tokens, w.answer(rw, "", nil, tokens))
		return
	}
	w.answered++
	w.maxAnswered = max(w.maxAnswered, tokens)
	var answer string
	var call *[2]string
	switch {
	case summary:
		w.summaries++
		w.lastSummary = text
		answer = fakeSummary(text)
	case flush && !strings.Contains(text, "memory-written"):
		w.flushes++
		call = &[2]string{"write", `{"path":"memory/flush.md","content":"memory-written"}`}
	case flush:
		answer = "NO_REPLY"
	default:
		w.lastBody = text
		answer = "Noted. " + strings.Repeat("I keep it in mind. ", 20)
	}
	kind := "turn"
	switch {
	case summary:
		kind = "summary"
	case flush:
		kind = "memory-flush"
	}
	w.count(kind, tokens, w.answer(rw, answer, call, tokens))
}

// count adds an answered call of kind to the ledger the fake keeps.
func (w *windowLLM) count(kind string, prompt, out int) {
	if w.ledger == nil {
		w.ledger = map[string][2]int64{}
	}
	l := w.ledger[kind]
	w.ledger[kind] = [2]int64{l[0] + 1, l[1] + int64(prompt+out)}
}

// stringChars counts the characters of every string value in v.
func stringChars(v any) int {
	switch x := v.(type) {
	case string:
		return len([]rune(x))
	case []any:
		n := 0
		for _, e := range x {
			n += stringChars(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range x {
			n += stringChars(e)
		}
		return n
	}
	return 0
}

// fakeSummary is a summary with every fact of the request.
func fakeSummary(request string) string {
	var facts []string
	seen := map[string]bool{}
	for _, f := range factPattern.FindAllString(request, -1) {
		f = strings.TrimSpace(f)
		if !seen[f] {
			seen[f] = true
			facts = append(facts, "- "+f)
		}
	}
	if len(facts) == 0 {
		facts = []string{"- (none)"}
	}
	return "## Goal\n- Keep the user's facts.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n- [x] Talked.\n\n### In Progress\n- [ ] (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n- (none)\n\n## Next Steps\n1. Go on.\n\n## Critical Context\n" + strings.Join(facts, "\n")
}

func (w *windowLLM) overflow(rw http.ResponseWriter, tokens int) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusBadRequest)
	if w.anthropic {
		fmt.Fprintf(rw, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`, tokens, w.window)
		return
	}
	fmt.Fprintf(rw, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, w.window, tokens)
}

// answer answers and returns the output tokens it reported.
func (w *windowLLM) answer(rw http.ResponseWriter, text string, call *[2]string, prompt int) int {
	rw.Header().Set("Content-Type", "application/json")
	out := (len(text) + 3) / 4
	if w.anthropic {
		content := []any{map[string]any{"type": "text", "text": text}}
		stop := "end_turn"
		if call != nil {
			content = []any{map[string]any{"type": "tool_use", "id": fmt.Sprint("tu_", w.answered), "name": call[0], "input": json.RawMessage(call[1])}}
			stop = "tool_use"
		}
		json.NewEncoder(rw).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
			"content": content, "stop_reason": stop, "usage": map[string]int{"input_tokens": prompt, "output_tokens": out}})
		return out
	}
	msg := map[string]any{"role": "assistant", "content": text}
	finish := "stop"
	if call != nil {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": fmt.Sprint("call_", w.answered), "type": "function", "function": map[string]string{"name": call[0], "arguments": call[1]}}}}
		finish = "tool_calls"
	}
	json.NewEncoder(rw).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}})
	return out
}

// set changes the server's knobs between turns.
func (w *windowLLM) set(fn func(w *windowLLM)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(w)
}

// stats reads the counters.
func (w *windowLLM) stats() (answered, refused, summaries, flushes, maxAnswered int, last string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answered, w.refused, w.summaries, w.flushes, w.maxAnswered, w.lastBody
}
