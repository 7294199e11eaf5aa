package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// seedBody is the body of the "Quick verification curl" of the operators'
// agent development guide, verbatim: a model id that is no agent target,
// which X-OpenClaw-Agent-ID overrides.
const seedBody = `{"model":"openrouter/google/gemini-3-flash-preview","messages":[{"role":"user","content":"List all your available tools. Just the tool names."}],"max_tokens":500}`

// statusFormat is appended to a curl command to read the status after the
// body.
const statusFormat = "\n%{http_code}"

// curlSeed runs the real curl binary with the guide's arguments, in its
// order; an empty tenant or agent leaves that header out, and extra
// arguments go last. It returns curl's stdout.
func curlSeed(t *testing.T, s *server, token, tenant, agent string, extra ...string) string {
	t.Helper()
	args := []string{"-s", s.base + "/v1/chat/completions",
		"-H", "Content-Type: application/json",
		"-H", "Authorization: Bearer " + token}
	if tenant != "" {
		args = append(args, "-H", "X-Tenant-ID: "+tenant)
	}
	if agent != "" {
		args = append(args, "-H", "X-OpenClaw-Agent-ID: "+agent)
	}
	args = append(args, "-d", seedBody)
	args = append(args, extra...)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", args...)
	// No proxy for loopback, and no ~/.curlrc adding options.
	home := t.TempDir()
	cmd.Env = append(cleanEnv("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "CURL_HOME", "XDG_CONFIG_HOME", "HOME"),
		"NO_PROXY=*", "CURL_HOME="+home, "XDG_CONFIG_HOME="+home, "HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("curl %q: %v\nstderr: %s\nstdout: %s", args, err, stderr.String(), stdout.String())
	}
	return stdout.String()
}

// curlStatus runs curlSeed with the status appended and splits it off.
func curlStatus(t *testing.T, s *server, token, tenant, agent string) (int, string) {
	t.Helper()
	out := curlSeed(t, s, token, tenant, agent, "-w", statusFormat)
	i := strings.LastIndexByte(out, '\n')
	code, err := strconv.Atoi(out[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("curl output does not end in a status: %q", out)
	}
	return code, out[:i]
}

var summaryRE = regexp.MustCompile(`^inspect: system prompt [1-9][0-9]* bytes, ([1-9][0-9]*) tools, 1 messages$`)

// TestCurlSeedVerification runs the guide's verification curl against a
// tenant, then the ways it must be refused.
func TestCurlSeedVerification(t *testing.T) {
	t.Parallel()
	needCommands(t, "curl")
	s := startServer(t)

	t.Run("verbatim", func(t *testing.T) {
		out := curlSeed(t, s, tenantToken, tenantID, "somi")
		var r struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Created int64  `json:"created"`
			Model   string `json:"model"`
			Choices []struct {
				Index   int `json:"index"`
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if r.Object != "chat.completion" || !strings.HasPrefix(r.ID, "chatcmpl") || r.Created <= 0 {
			t.Errorf("object %q id %q created %d; want a chat.completion", r.Object, r.ID, r.Created)
		}
		if r.Model != "openrouter/google/gemini-3-flash-preview" {
			t.Errorf("model %q, want the request's model echoed", r.Model)
		}
		if len(r.Choices) != 1 {
			t.Fatalf("%d choices, want 1: %s", len(r.Choices), out)
		}
		c := r.Choices[0]
		if c.Index != 0 || c.Message.Role != "assistant" || c.FinishReason != "stop" {
			t.Errorf("choice %+v, want index 0, role assistant, finish_reason stop", c)
		}
		// The inspect model answers a question with a summary of what it
		// was given: somi's tools are in it.
		if !summaryRE.MatchString(c.Message.Content) {
			t.Errorf("content %q, want the inspect model's summary with at least one tool", c.Message.Content)
		}
		if r.Usage == nil || r.Usage.TotalTokens <= 0 {
			t.Errorf("usage %+v, want counts", r.Usage)
		}
	})

	t.Run("status", func(t *testing.T) {
		code, body := curlStatus(t, s, tenantToken, tenantID, "somi")
		if code != 200 {
			t.Errorf("status %d, want 200: %s", code, body)
		}
	})

	// The default tenant has its own token and its own agent somi.
	t.Run("default tenant", func(t *testing.T) {
		code, body := curlStatus(t, s, defaultToken, "", "somi")
		if code != 200 || !strings.Contains(body, `"chat.completion"`) {
			t.Errorf("status %d, want 200 and a chat.completion: %s", code, body)
		}
	})

	refused := []struct {
		name, token, tenant string
	}{
		{"tenant token without X-Tenant-ID", tenantToken, ""},
		{"default token with X-Tenant-ID", defaultToken, tenantID},
		{"tenant id with a path", tenantToken, "../" + tenantID},
		{"unknown tenant", tenantToken, "nope"},
		{"wrong token", "wrong", tenantID},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			code, body := curlStatus(t, s, c.token, c.tenant, "somi")
			if code != 401 {
				t.Errorf("status %d, want 401: %s", code, body)
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Type != "unauthorized" || e.Error.Message != "Unauthorized" {
				t.Errorf("body %q, want {\"error\":{\"message\":\"Unauthorized\",\"type\":\"unauthorized\"}}", body)
			}
		})
	}
}
