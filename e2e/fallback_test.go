package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/fakellm"
)

// TestModelFallback: talon serve with a dead primary (a loopback server
// answering 500) and the fake LLM as its fallback. The turn succeeds,
// answered by the fallback, and the response names it; the next turn
// skips the dead primary while it cools down (the X-OpenClaw-Model
// response header names the model that answered); with the fallback gone too
// the client is told each attempt. A primary that times out
// (timeoutSeconds) falls back as well.
func TestModelFallback(t *testing.T) {
	var deadCalls, slowCalls atomic.Int64
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"primary is down","type":"server_error"}}`)
	}))
	defer dead.Close()
	quit := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowCalls.Add(1)
		io.Copy(io.Discard, r.Body) // so the server sees the client leave
		select {
		case <-r.Context().Done():
		case <-quit:
		}
	}))
	defer slow.Close()
	defer close(quit)
	llm, err := fakellm.Start(fakellm.Options{Reply: "the fallback answered"})
	if err != nil {
		t.Fatal(err)
	}
	defer llm.Close()

	type obj = map[string]any
	dir := t.TempDir()
	cfg, err := json.MarshalIndent(obj{
		"gateway": obj{"auth": obj{"token": defaultToken}},
		"models": obj{"providers": obj{
			"dead":  obj{"baseUrl": dead.URL + "/v1"},
			"slow":  obj{"baseUrl": slow.URL + "/v1", "timeoutSeconds": 0.3},
			"spare": obj{"baseUrl": llm.BaseURL()},
		}},
		"agents": obj{
			"defaults": obj{"model": obj{"primary": "dead/m", "fallbacks": []string{"spare/" + fakellm.Model}}},
			"list": []obj{{"id": "main", "default": true},
				{"id": "timer", "model": obj{"primary": "slow/m", "fallbacks": []string{"spare/" + fakellm.Model}}}},
		},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "talon.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startTalon(t, dir)
	defer func() {
		if err := p.Stop(shutdownTimeout); err != nil {
			t.Errorf("%v; its log:\n%s", err, p.Log)
		}
	}()

	c := &http.Client{Timeout: 30 * time.Second}
	post := func(model, text string) (int, string, string) {
		t.Helper()
		body, _ := json.Marshal(obj{"model": model, "user": "fallback-e2e",
			"messages": []obj{{"role": "user", "content": text}}})
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+defaultToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out struct {
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		_ = json.Unmarshal(data, &out)
		if out.Model != model && len(out.Choices) == 1 {
			t.Errorf("the body's model %q does not echo the request's %q", out.Model, model)
		}
		answered := resp.Header.Get("X-OpenClaw-Model")
		if len(out.Choices) == 1 {
			return resp.StatusCode, answered, out.Choices[0].Message.Content
		}
		return resp.StatusCode, answered, string(data)
	}

	want := "spare/" + fakellm.Model
	if status, model, text := post("openclaw", "hello"); status != 200 || model != want || text != "the fallback answered" {
		t.Fatalf("first turn: %d, model %q, %q; want the fallback's answer naming %s", status, model, text, want)
	}
	if deadCalls.Load() == 0 {
		t.Fatal("the dead primary was never called")
	}
	before := deadCalls.Load()
	if status, model, _ := post("openclaw", "again"); status != 200 || model != want || deadCalls.Load() != before {
		t.Errorf("second turn: %d, model %q, %d more calls to the dead primary; want it skipped", status, model, deadCalls.Load()-before)
	}

	if status, model, text := post("openclaw/timer", "are you there?"); status != 200 || model != want || slowCalls.Load() == 0 {
		t.Errorf("a timing-out primary: %d, model %q, %q, %d calls to it; want the fallback's answer", status, model, text, slowCalls.Load())
	}

	llm.Close()
	status, _, text := post("openclaw", "anyone?")
	for _, w := range []string{"no model answered", "dead/m: skipped, cooling down after server_error", "spare/" + fakellm.Model + ": network"} {
		if status != http.StatusBadGateway || !strings.Contains(text, w) {
			t.Errorf("all failing: %d %s; want 502 saying %q", status, text, w)
		}
	}
	if n := strings.Count(text, ";"); n < 1 {
		t.Errorf("all failing: %s; want each attempt listed", text)
	}
}
