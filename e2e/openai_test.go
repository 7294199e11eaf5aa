package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodeRun is the output of node/client.mjs.
type nodeRun struct {
	Node   string              `json:"node"`
	OpenAI string              `json:"openai"`
	Cases  map[string]nodeCase `json:"cases"`
}

// chatSummary is what client.mjs reports of one chat completion.
type chatSummary struct {
	ID           string     `json:"id"`
	Object       string     `json:"object"`
	Model        string     `json:"model"`
	Content      *string    `json:"content"`
	Role         *string    `json:"role"`
	ToolCalls    []toolCall `json:"tool_calls"`
	FinishReason *string    `json:"finish_reason"`
	Usage        *usage     `json:"usage"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// sdkError is what client.mjs reports of a call the SDK threw on.
type sdkError struct {
	Threw          bool   `json:"threw"`
	Class          string `json:"class"`
	Authentication bool   `json:"authentication"`
	BadRequest     bool   `json:"badRequest"`
	Status         *int   `json:"status"`
	Message        string `json:"message"`
	Error          *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// TestOpenAINodeSDK drives the gateway with the official openai npm
// package: chat completions plain and streamed, client tools, a gateway
// tool round trip, typed errors, the model list and a tenant.
func TestOpenAINodeSDK(t *testing.T) {
	t.Parallel()
	needCommands(t, "node", "npm")
	needNodeModules(t)
	s := startServer(t)

	var out nodeRun
	runNode(t, 60*time.Second, cleanEnv("OPENAI_*", "NODE_OPTIONS", "E2E_CASES"), &out,
		"client.mjs", s.base+"/v1", defaultToken, tenantID, tenantToken)
	t.Logf("node %s, openai npm package %s", out.Node, out.OpenAI)

	// result decodes one case's result, failing the subtest when the
	// case threw where it should not have.
	result := func(t *testing.T, name string, v any) {
		t.Helper()
		decodeCase(t, out.Cases, name, v)
	}

	var toolList string // the non-streamed answer, which the stream must repeat

	t.Run("nonstream", func(t *testing.T) {
		var r chatSummary
		result(t, "nonstream", &r)
		checkCompletion(t, r, "openclaw/main", "stop")
		if r.Content == nil {
			t.Fatal("content is null")
		}
		toolList = *r.Content
		checkToolList(t, toolList)
		if r.Usage == nil || r.Usage.PromptTokens <= 0 || r.Usage.CompletionTokens <= 0 || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
			t.Errorf("usage = %+v, want positive counts that add up", r.Usage)
		}
	})

	t.Run("stream", func(t *testing.T) {
		var r struct {
			Ended        bool     `json:"ended"`
			Chunks       int      `json:"chunks"`
			IDs          int      `json:"ids"`
			Object       string   `json:"object"`
			Role         string   `json:"role"`
			Deltas       []string `json:"deltas"`
			Content      string   `json:"content"`
			FinishReason string   `json:"finish_reason"`
			Usage        *usage   `json:"usage"`
		}
		result(t, "stream", &r)
		if !r.Ended {
			t.Fatal("the async iterator did not end")
		}
		if r.Object != "chat.completion.chunk" || r.IDs != 1 || r.Role != "assistant" {
			t.Errorf("chunks: object %q, %d distinct ids, role %q; want chat.completion.chunk, 1, assistant", r.Object, r.IDs, r.Role)
		}
		if len(r.Deltas) < 2 {
			t.Errorf("content came in %d delta(s), want it streamed in pieces: %q", len(r.Deltas), r.Deltas)
		}
		if r.Content != toolList || toolList == "" {
			t.Errorf("streamed text %q, want the non-streamed answer %q", r.Content, toolList)
		}
		if r.FinishReason != "stop" {
			t.Errorf("finish_reason %q, want stop", r.FinishReason)
		}
		if r.Usage == nil || r.Usage.TotalTokens <= 0 {
			t.Errorf("stream_options.include_usage: usage = %+v, want a usage chunk", r.Usage)
		}
	})

	t.Run("client_tools", func(t *testing.T) {
		var r struct {
			First  chatSummary  `json:"first"`
			Second *chatSummary `json:"second"`
		}
		result(t, "client_tools", &r)
		checkCompletion(t, r.First, "openclaw/main", "tool_calls")
		checkWeatherCall(t, r.First.ToolCalls)
		if r.Second == nil {
			t.Fatal("no follow-up: the first answer had no tool call")
		}
		checkCompletion(t, *r.Second, "openclaw/main", "stop")
		if r.Second.Content == nil || *r.Second.Content != "sunny" {
			t.Errorf("answer after the tool result = %v, want %q", deref(r.Second.Content), "sunny")
		}
	})

	t.Run("client_tools_stream", func(t *testing.T) {
		var r chatSummary
		result(t, "client_tools_stream", &r)
		if r.FinishReason == nil || *r.FinishReason != "tool_calls" {
			t.Errorf("finish_reason %v, want tool_calls", deref(r.FinishReason))
		}
		checkWeatherCall(t, r.ToolCalls)
	})

	t.Run("server_tools", func(t *testing.T) {
		var r struct {
			Write chatSummary `json:"write"`
			Read  chatSummary `json:"read"`
		}
		result(t, "server_tools", &r)
		checkCompletion(t, r.Write, "openclaw/main", "stop")
		checkCompletion(t, r.Read, "openclaw/main", "stop")
		if r.Read.Content == nil || !strings.Contains(*r.Read.Content, "hi") {
			t.Errorf("read answered %v, want the written text %q (write answered %v)", deref(r.Read.Content), "hi", deref(r.Write.Content))
		}
		data, err := os.ReadFile(filepath.Join(s.dir, "workspace", "hello.txt"))
		if err != nil {
			t.Fatalf("the write tool left no file in the main agent's workspace: %v", err)
		}
		if string(data) != "hi" {
			t.Errorf("workspace/hello.txt = %q, want %q", data, "hi")
		}
	})

	t.Run("error_auth", func(t *testing.T) {
		var r sdkError
		result(t, "error_auth", &r)
		if !r.Threw || !r.Authentication || r.Status == nil || *r.Status != 401 {
			t.Errorf("wrong apiKey: got %+v, want an AuthenticationError with status 401", r)
		}
		if r.Error == nil || r.Error.Type != "unauthorized" {
			t.Errorf("error body %+v, want type unauthorized", r.Error)
		}
	})

	t.Run("error_model", func(t *testing.T) {
		var r sdkError
		result(t, "error_model", &r)
		if !r.Threw || !r.BadRequest || r.Status == nil || *r.Status != 400 {
			t.Errorf("model gpt-4o: got %+v, want a BadRequestError with status 400", r)
		}
		if r.Error == nil || r.Error.Type != "invalid_request_error" || !strings.Contains(r.Error.Message, "openclaw/<agentId>") {
			t.Errorf("error body %+v, want invalid_request_error naming openclaw/<agentId>", r.Error)
		}
	})

	t.Run("models", func(t *testing.T) {
		var r struct {
			IDs []string `json:"ids"`
		}
		result(t, "models", &r)
		for _, want := range []string{"openclaw/main", "openclaw/somi"} {
			if !slices.Contains(r.IDs, want) {
				t.Errorf("models.list() = %q, want it to include %s", r.IDs, want)
			}
		}
	})

	t.Run("tenant", func(t *testing.T) {
		var r struct {
			chatSummary
			Models []string `json:"models"`
		}
		result(t, "tenant", &r)
		checkCompletion(t, r.chatSummary, "openclaw/somi", "stop")
		if r.Content == nil {
			t.Fatal("content is null")
		}
		checkToolList(t, *r.Content)
		if !slices.Contains(r.Models, "openclaw/somi") || slices.Contains(r.Models, "openclaw/main") {
			t.Errorf("tenant %s models = %q, want its own agent somi and not the default tenant's main", tenantID, r.Models)
		}
	})
}

// checkCompletion checks the envelope of a non-streamed chat completion.
func checkCompletion(t *testing.T, r chatSummary, model, finish string) {
	t.Helper()
	if r.Object != "chat.completion" || !strings.HasPrefix(r.ID, "chatcmpl") || r.Model != model {
		t.Errorf("object %q id %q model %q; want chat.completion, chatcmpl…, %s", r.Object, r.ID, r.Model, model)
	}
	if r.Role == nil || *r.Role != "assistant" {
		t.Errorf("message.role = %v, want assistant", deref(r.Role))
	}
	if r.FinishReason == nil || *r.FinishReason != finish {
		t.Errorf("finish_reason = %v, want %s", deref(r.FinishReason), finish)
	}
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkToolList checks the inspect model's answer to /tools: one tool name
// per line, among them the core file and session tools, and no exec
// (Talon has no exec tool yet).
func checkToolList(t *testing.T, text string) {
	t.Helper()
	names := strings.Split(text, "\n")
	seen := map[string]bool{}
	for _, n := range names {
		if !toolNameRE.MatchString(n) || seen[n] {
			t.Errorf("tool list line %q is not a new tool name; the list:\n%s", n, text)
		}
		seen[n] = true
	}
	for _, want := range []string{"read", "write", "edit", "exec", "process", "session_status"} {
		if !seen[want] {
			t.Errorf("tool list lacks %s:\n%s", want, text)
		}
	}
	for _, not := range []string{"canvas", "nodes"} { // not built in Talon
		if seen[not] {
			t.Errorf("tool list has %s, which Talon does not serve:\n%s", not, text)
		}
	}
}

// checkWeatherCall checks the one client tool call get_weather {"city":"Oslo"}.
func checkWeatherCall(t *testing.T, calls []toolCall) {
	t.Helper()
	if len(calls) != 1 {
		t.Fatalf("tool_calls = %+v, want one call", calls)
	}
	c := calls[0]
	if c.ID == "" || c.Type != "function" || c.Function.Name != "get_weather" {
		t.Errorf("tool call %+v, want a function call of get_weather with an id", c)
	}
	var args any
	if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil || !reflect.DeepEqual(args, map[string]any{"city": "Oslo"}) {
		t.Errorf("arguments %q, want {\"city\":\"Oslo\"}", c.Function.Arguments)
	}
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
