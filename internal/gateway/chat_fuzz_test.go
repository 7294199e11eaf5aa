package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/session"
	"talon/internal/tools/core"
)

// FuzzParseChat drives the chat-completions request parsing (parseChat:
// JSON body, agent and session headers, messages, sampling parameters,
// client tools) with any body and headers. The answer is a request that
// holds its invariants, or a 400 whose message becomes a well-formed
// OpenAI error envelope. A validated body, encoded again, parses to the
// same run.
func FuzzParseChat(f *testing.F) {
	dir := f.TempDir()
	cfg := `{agents: {list: [{id: "main", default: true}, {id: "ops"}]}, session: {mainKey: "work"}}`
	if err := os.WriteFile(filepath.Join(dir, "talon.json"), []byte(cfg), 0o600); err != nil {
		f.Fatal(err)
	}
	reg, err := core.Registry()
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Options{StateDir: dir, Tools: reg, Env: func(string) string { return "" },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.closeTenants)
	tn := s.defaultTenant
	rt, err := tn.current(s)
	if err != nil {
		f.Fatal(err)
	}

	headers := [][2]string{{"", ""}, {"", "agent:ops:thread:1"}, {"ops", ""}, {"", "subagent:x"}, {"Ops", "main"}, {"nobody", ""}}
	bodies := scenarioBodies(f)
	bodies = append(bodies,
		`{"messages":[{"role":"developer","content":[{"type":"input_text","text":"be brief"}]},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"model":"agent:ops","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"},{"role":"function","name":"f","content":"r"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:"}}]}]}`,
		`{"messages":[{"role":"tool","content":"r"}],"tool_choice":{"type":"function"},"tools":[{"type":"function","function":{"name":"read"}}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"tool_choice":"none","tools":[{"type":"x"}],"max_completion_tokens":3,"max_tokens":-1}`,
		`{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a","parameters":[]}},{"type":"function","function":{"name":"a"}}]}`,
		`{"user":"  Bob  ","messages":[{"role":"assistant","tool_calls":[{"id":"","function":{"name":"x"}}]}]}`,
		`{"messages":[{"role":"user","content":"   "}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":null}`, `[]`, `{} {}`, ``,
	)
	for i, b := range bodies {
		h := headers[i%len(headers)]
		f.Add([]byte(b), h[0], h[1])
	}
	f.Fuzz(func(t *testing.T, body []byte, agentID, sessionKey string) {
		if !headerValue(agentID) || !headerValue(sessionKey) {
			return // no HTTP server lets such a header through
		}
		req, status, typ, msg := parseWith(s, tn, rt, body, agentID, sessionKey)
		if status != 0 {
			checkErrorEnvelope(t, status, typ, msg)
			return
		}
		checkChatRequest(t, s, rt, req)

		// Encoded again, the validated body gives the same run.
		again, err := json.Marshal(req.body)
		if err != nil {
			t.Fatalf("encoding a validated body: %v", err)
		}
		req2, status, _, msg := parseWith(s, tn, rt, again, agentID, sessionKey)
		if status != 0 {
			t.Fatalf("re-encoded body refused: %d %s\n%s", status, msg, again)
		}
		a, b := req.runReq, req2.runReq
		if strings.Contains(req.key, ":openai:") { // a fresh session per call
			a.SessionKey, b.SessionKey = "", ""
		}
		if d := cmp.Diff(a, b, cmp.Transformer("compact", compactJSON)); d != "" {
			t.Fatalf("re-encoded body gives another run (-first +second):\n%s\nbody: %s", d, again)
		}
	})
}

// parseWith runs parseChat on one POST.
func parseWith(s *Server, tn *tenant, rt *runtime, body []byte, agentID, sessionKey string) (*request, int, string, string) {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if agentID != "" {
		r.Header.Set("X-OpenClaw-Agent-ID", agentID)
	}
	if sessionKey != "" {
		r.Header.Set("X-OpenClaw-Session-Key", sessionKey)
	}
	return s.parseChat(httptest.NewRecorder(), r, tn, rt)
}

// checkErrorEnvelope: a refused body is a 400 invalid_request_error with a
// readable message, sent as {"error":{"message","type"}}.
func checkErrorEnvelope(t *testing.T, status int, typ, msg string) {
	t.Helper()
	if status != http.StatusBadRequest || typ != errInvalidRequest {
		t.Fatalf("refused with %d %s, want 400 %s: %s", status, typ, errInvalidRequest, msg)
	}
	if strings.TrimSpace(msg) == "" || !utf8.ValidString(msg) {
		t.Fatalf("error message %q is empty or not UTF-8", msg)
	}
	w := httptest.NewRecorder()
	writeError(w, status, typ, msg)
	var env struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || w.Code != status || env.Error.Message != msg || env.Error.Type != typ {
		t.Fatalf("envelope %d %s (%v) does not carry %q", w.Code, w.Body, err, msg)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error content type %q", ct)
	}
}

// checkChatRequest: what a validated request promises the runner.
func checkChatRequest(t *testing.T, s *Server, rt *runtime, req *request) {
	t.Helper()
	cfg := rt.file.Config
	rr := req.runReq
	if !cfg.HasAgent(req.agent) || rr.AgentID != req.agent {
		t.Fatalf("agent %q (run %q) is not configured", req.agent, rr.AgentID)
	}
	if err := session.CheckKey(req.key); err != nil || rr.SessionKey != req.key {
		t.Fatalf("session key %q (run %q) cannot be stored: %v", req.key, rr.SessionKey, err)
	}
	if session.IsReserved(req.key) {
		t.Fatalf("session key %q is in a reserved namespace", req.key)
	}
	if a := session.AgentOf(req.key, req.agent); a != req.agent {
		t.Fatalf("session key %q belongs to agent %q, not %q", req.key, a, req.agent)
	}
	if n := len(rr.History); n > 0 && rr.History[n-1].Role != llm.RoleAssistant {
		t.Fatalf("history ends with a %s turn", rr.History[n-1].Role)
	}
	input := false
	for _, m := range rr.Input {
		if m.Role == llm.RoleAssistant {
			t.Fatal("an assistant turn in the new input")
		}
		if m.Role == llm.RoleTool || strings.TrimSpace(m.Content) != "" {
			input = true
		}
	}
	if !input {
		t.Fatal("a request without new input was accepted")
	}
	seen := map[string]bool{}
	for _, tool := range rr.ClientTools {
		if !toolNamePattern.MatchString(tool.Name) || seen[tool.Name] {
			t.Fatalf("client tool %q is invalid or repeated", tool.Name)
		}
		if _, taken := s.tools.Get(tool.Name); taken {
			t.Fatalf("client tool %q shadows a gateway tool", tool.Name)
		}
		seen[tool.Name] = true
	}
	if rr.MaxTokens < 0 || rr.Temperature != nil && (*rr.Temperature < 0 || *rr.Temperature > 2) {
		t.Fatalf("sampling out of range: max_tokens %d, temperature %v", rr.MaxTokens, rr.Temperature)
	}
}

// compactJSON lets cmp compare JSON text (tool parameters) by content.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// headerValue reports whether net/http would accept v as a header value.
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// scenarioBodies are the request bodies the scenario files post.
func scenarioBodies(f *testing.F) []string {
	files, _ := filepath.Glob(filepath.Join("testdata", "scenarios", "*.txtar"))
	var out []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if body, ok := strings.CutPrefix(sc.Text(), "post "); ok {
				out = append(out, body)
			}
		}
	}
	if len(out) == 0 {
		f.Fatal("no request bodies in testdata/scenarios")
	}
	return out
}
