package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"talon/protocol/client"
)

// The long-session tests drive one session far past a model's window
// through the real binary, against model servers that enforce the window
// with their own errors (windowllm_test.go).
const (
	longWindow = 32768 // the model's window, in tokens
	longTurns  = 300   // turns of one session
	longFact   = "FACT: the launch code is 4711"
)

// TestLongSessionNeverFails: a session of hundreds of 4 KB turns on a
// model with a 32k window, OpenAI- and Anthropic-speaking, never fails a
// turn; no request the gateway sends is over the window; a fact stated in
// the first turn still reaches the model at the last, through the
// summaries; and the stored history keeps every turn. In the "overflow"
// cases the config claims a window four times what the server enforces,
// so only the provider's context-length errors can tell Talon to compact:
// each must be recovered from within its turn.
func TestLongSessionNeverFails(t *testing.T) {
	for _, tc := range []struct {
		name, api string
		claimed   int // the window the config states
	}{
		{"openai", "openai", longWindow},
		{"anthropic", "anthropic", longWindow},
		{"openai-overflow", "openai", 4 * longWindow},
		{"anthropic-overflow", "anthropic", 4 * longWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm := newWindowLLM(t, tc.api, longWindow)
			s, token := startWithModel(t, llm, tc.claimed)
			key := "agent:main:openai-user:long"
			filler := strings.Repeat("The quarterly report lists revenue, costs and the plan for next year. ", 58) // ≈ 4 KB
			for i := 0; i < longTurns; i++ {
				msg := fmt.Sprintf("Turn %d. %s", i, filler)
				if i == 0 {
					msg = "Remember this. " + longFact + ". " + filler
				}
				status, body := chatOnce(t, s, token, key, msg)
				if status != 200 {
					maxTok, rejected, summaries, _ := llm.stats()
					t.Fatalf("turn %d: %d %s\n(largest request %d tokens, %d rejected, %d summaries)\n%s", i, status, body, maxTok, rejected, summaries, s.proc.Log)
				}
			}
			maxTok, rejected, summaries, last := llm.stats()
			t.Logf("%d turns: largest request %d tokens of %d, %d rejected for size, %d summaries", longTurns, maxTok, longWindow, rejected, summaries)
			if maxTok > longWindow {
				t.Errorf("a request of %d tokens reached the model, over its %d window", maxTok, longWindow)
			}
			if tc.claimed > longWindow && rejected == 0 {
				t.Error("no request was refused for size: the overflow recovery was not exercised")
			}
			if summaries == 0 {
				t.Error("the session was never compacted")
			}
			if !strings.Contains(last, longFact) {
				t.Errorf("the first turn's fact did not reach the model at the last turn (through %d summaries)", summaries)
			}
			users := historyUserTexts(t, s, token, key)
			if len(users) < longTurns {
				t.Errorf("chat.history has %d user messages, want all %d", len(users), longTurns)
			}
			if len(users) > 0 && !strings.Contains(users[0], longFact) {
				t.Errorf("chat.history does not start with the first turn: %.80q", users[0])
			}
		})
	}
}

// TestKillDuringCompaction: kill -9 while the summariser works leaves the
// session either before or after the compaction: after a restart every
// turn is in its history and the next turn works.
func TestKillDuringCompaction(t *testing.T) {
	llm := newWindowLLM(t, "openai", longWindow)
	arrived := make(chan struct{}, 1)
	var held atomic.Bool
	llm.onSummary = func(ctx context.Context) {
		if held.Swap(true) {
			return // only the first summary is held
		}
		arrived <- struct{}{}
		select {
		case <-ctx.Done(): // the kill closes the connection
		case <-time.After(30 * time.Second):
		}
	}
	s, token := startWithModel(t, llm, longWindow)
	key := "agent:main:openai-user:killed"
	filler := strings.Repeat("Notes about the migration of the billing system to the new cluster. ", 60)
	sent := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < longTurns; i++ {
			select {
			case <-arrived:
				return
			default:
			}
			if status, _ := chatOnce(t, s, token, key, fmt.Sprintf("Turn %d. %s", i, filler)); status != 200 {
				return
			}
			sent++
		}
	}()
	select {
	case <-arrived:
	case <-done:
		t.Fatalf("no compaction started in %d turns", sent)
	}
	s.kill()
	<-done
	t.Logf("killed during the summary after %d turns", sent)
	s = restartWithModel(t, s.dir)
	if n := len(historyUserTexts(t, s, token, key)); n < sent {
		t.Errorf("after kill -9 during a compaction the history has %d user messages; %d turns were answered", n, sent)
	}
	if status, body := chatOnce(t, s, token, key, "After the restart. "+filler); status != 200 {
		t.Errorf("the turn after the restart: %d %s", status, body)
	}
}

// startWithModel starts talon gateway on a fresh state dir whose model is
// llm, configured with the window claimed, and returns it with its token.
func startWithModel(t *testing.T, llm *windowLLM, claimed int) (*server, string) {
	t.Helper()
	dir := t.TempDir()
	api := "openai-completions"
	if llm.api == "anthropic" {
		api = "anthropic-messages"
	}
	base := llm.srv.URL + "/v1"
	if llm.api == "anthropic" {
		base = llm.srv.URL
	}
	writeJSONFile(t, filepath.Join(dir, "talon.json"), map[string]any{
		"gateway": map[string]any{"auth": map[string]any{"token": defaultToken}},
		"models": map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": base, "api": api, "apiKey": "k",
			"models": []any{map[string]any{"id": "m", "contextWindow": claimed, "maxTokens": 2048}},
		}}},
		"agents": map[string]any{"defaults": map[string]any{"model": "fake/m"}},
	})
	return restartWithModel(t, dir), defaultToken
}

func restartWithModel(t *testing.T, dir string) *server {
	t.Helper()
	s := startServerIn(t, dir)
	return s
}

// chatOnce sends one user message to the default agent on session key.
func chatOnce(t *testing.T, s *server, token, key, msg string) (int, string) {
	t.Helper()
	body := mustJSON(t, map[string]any{"model": "openclaw", "messages": []map[string]string{{"role": "user", "content": msg}}})
	req, _ := http.NewRequest("POST", s.base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenClaw-Session-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// historyUserTexts is the text of every user message chat.history gives.
func historyUserTexts(t *testing.T, s *server, token, key string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http"), client.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var h struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := c.Call(ctx, "chat.history", map[string]any{"sessionKey": key, "limit": 1000}, &h); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range h.Messages {
		if m.Role != "user" {
			continue
		}
		var parts []struct{ Text string }
		if json.Unmarshal(m.Content, &parts) == nil && len(parts) > 0 {
			out = append(out, parts[0].Text)
			continue
		}
		var s string
		_ = json.Unmarshal(m.Content, &s)
		out = append(out, s)
	}
	return out
}
