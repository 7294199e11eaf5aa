package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/talonproc"
)

// What the crash and soak tests share: a config whose models are fakes on
// loopback, a talon serve on a given state dir, and a client that tells an
// acknowledged turn from anything else.

// writeModelConfig writes STATE/talon.json with the default token, one
// provider per entry of providers (id → base URL) and the default agent's
// model def, and returns the file's bytes.
func writeModelConfig(t *testing.T, dir string, providers map[string]string, def string) []byte {
	t.Helper()
	type obj = map[string]any
	ps := obj{}
	for id, url := range providers {
		ps[id] = obj{"baseUrl": url, "api": "openai-completions"}
	}
	data, err := json.MarshalIndent(obj{
		"gateway": obj{"auth": obj{"token": defaultToken}},
		"models":  obj{"providers": ps},
		"agents":  obj{"defaults": obj{"model": def}},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "talon.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

// startTalon starts talon serve on dir, which holds its config already.
func startTalon(t *testing.T, dir string) *talonproc.Proc {
	t.Helper()
	p, err := talonproc.Start(talonproc.Options{
		Bin: talonBin, StateDir: dir, ReadyTimeout: readyTimeout,
		Env: cleanEnv("TALON_GATEWAY_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"),
	})
	if err != nil {
		t.Fatalf("starting talon serve on %s: %v", dir, err)
	}
	return p
}

// turn is one chat turn as a client sends it.
type turn struct {
	user   string // the OpenAI `user`, which names the session
	text   string // the user message
	stream bool
	model  string // X-OpenClaw-Model, "" for the agent's
}

// errNotAcknowledged wraps every answer that is not a complete reply.
var errNotAcknowledged = errors.New("turn not acknowledged")

// send posts a turn and returns the reply's text when the gateway
// acknowledged it: a 200 with a chat.completion, or a stream of chunks
// that ends with finish_reason "stop" and [DONE] and carries no error.
// Anything else is an error naming what came instead.
func send(ctx context.Context, c *http.Client, base string, tr turn) (string, error) {
	body, err := json.Marshal(map[string]any{"model": "openclaw", "user": tr.user, "stream": tr.stream,
		"messages": []any{map[string]string{"role": "user", "content": tr.text}}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+defaultToken)
	if tr.model != "" {
		req.Header.Set("X-OpenClaw-Model", tr.model)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: posting: %w", errNotAcknowledged, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return "", fmt.Errorf("%w: status %d: %s", errNotAcknowledged, resp.StatusCode, b)
	}
	if !tr.stream {
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return "", fmt.Errorf("%w: reading the completion: %w", errNotAcknowledged, err)
		}
		if len(out.Choices) != 1 || out.Choices[0].FinishReason != "stop" {
			return "", fmt.Errorf("%w: completion %+v", errNotAcknowledged, out)
		}
		return out.Choices[0].Message.Content, nil
	}
	var text strings.Builder
	finish, done := "", false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return "", fmt.Errorf("%w: bad chunk %q: %w", errNotAcknowledged, data, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%w: reading the stream: %w", errNotAcknowledged, err)
	}
	// A run that fails after the stream started ends with an "Error: …"
	// chunk, finish_reason stop and [DONE] (OpenClaw's shape).
	if !done || finish != "stop" || strings.Contains(text.String(), "Error: ") {
		return "", fmt.Errorf("%w: stream ended (done %v, finish %q) with %q", errNotAcknowledged, done, finish, text.String())
	}
	return text.String(), nil
}
