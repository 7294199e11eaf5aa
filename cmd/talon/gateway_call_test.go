package main

import (
	"encoding/json"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/talonproc"
)

const (
	callToken   = "call-test-token"
	tenantToken = "acme-token"
)

// callConfig is the gateway's config: its port (so that gateway call finds
// it from the state dir alone), a token, two agents, and sandboxes on a
// docker socket that does not exist, so sandbox explain reads the same on
// every machine.
const callConfig = `{
  gateway: {port: %d, auth: {token: %q}},
  tools: {profile: "coding"},
  agents: {
    defaults: {sandbox: {mode: "non-main", backend: "docker", docker: {socket: "/nonexistent/docker.sock"}}},
    list: [{id: "main", default: true}, {id: "work", tools: {deny: ["exec"]}}],
  },
}`

// startGatewayAlias runs this test binary as `talon gateway --state-dir D`
// (the serve alias that also holds the call subcommand) and returns the
// state dir and the ws:// URL. The config, written once the port is known,
// names that port, as an operator's would.
func startGatewayAlias(t *testing.T) (string, string) {
	t.Helper()
	return startGatewayConfig(t, callConfig)
}

// startGatewayConfig is startGatewayAlias with the config cfg, a format
// taking the port (%d) and the token (%q), as callConfig does.
func startGatewayConfig(t *testing.T, cfg string) (string, string) {
	t.Helper()
	state := t.TempDir()
	tenantDir := filepath.Join(state, "tenants", "acme")
	if err := os.MkdirAll(tenantDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tenantDir, "talon.json"), []byte(`{gateway: {auth: {token: "`+tenantToken+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var writeErr error
	p, err := talonproc.Start(talonproc.Options{
		Bin: os.Args[0],
		Env: append(os.Environ(), "TALON_TEST_MAIN=1", envToken+"=", envPassword+"="),
		Args: func(port int) []string {
			writeErr = os.WriteFile(filepath.Join(state, "talon.json"), fmt.Appendf(nil, cfg, port, callToken), 0o600)
			return []string{"gateway", "--state-dir", state, "--log-level", "warn"}
		},
	})
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("stopping talon gateway: %v\n%s", err, p.Log)
		}
	})
	return state, "ws://127.0.0.1:" + strconv.Itoa(p.Port)
}

func TestGatewayCall(t *testing.T) {
	state, url := startGatewayAlias(t)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		code int
		// stdout: a JSON object holding these members; stderr: these
		// substrings (or exactly errExact when set).
		out      map[string]any
		errHas   []string
		errExact string
	}{
		{"health from the state dir", []string{"health", "--state-dir", state}, nil, 0, map[string]any{"ok": true, "defaultAgentId": "main"}, nil, ""},
		{"config flag", []string{"status", "--config", filepath.Join(state, "talon.json")}, nil, 0, map[string]any{"tenant": ""}, nil, ""},
		{"tenant's own token", []string{"status", "--state-dir", state, "--tenant", "acme"}, nil, 0, map[string]any{"tenant": "acme"}, nil, ""},
		{"url and token", []string{"status", "--url", url, "--token", callToken}, nil, 0, map[string]any{"tenant": ""}, nil, ""},
		{"password flag", []string{"health", "--url", url, "--password", callToken}, nil, 0, map[string]any{"ok": true}, nil, ""},
		{"token from the environment", []string{"health", "--url", url}, map[string]string{envToken: callToken}, 0, map[string]any{"ok": true}, nil, ""},
		{"env beats the config", []string{"health", "--state-dir", state}, map[string]string{envToken: "wrong"}, 1, nil, []string{"gateway token mismatch"}, ""},
		{"timeout in ms", []string{"health", "--state-dir", state, "--timeout", "15000"}, nil, 0, map[string]any{"ok": true}, nil, ""},
		{"params", []string{"models.list", "--state-dir", state, "--params", `{"view":"all"}`}, nil, 0, nil, nil, ""},
		{"the config's token is not sent to --url", []string{"health", "--url", url, "--state-dir", state}, nil, 1, nil,
			[]string{"connect refused: INVALID_REQUEST: unauthorized: gateway token missing", `details: {"canRetryWithDeviceToken":false,"code":"AUTH_TOKEN_MISSING"}`}, ""},
		{"wrong token", []string{"health", "--url", url, "--token", "nope"}, nil, 1, nil, []string{"gateway token mismatch", `"code":"AUTH_TOKEN_MISMATCH"`}, ""},
		{"unknown tenant", []string{"health", "--url", url, "--token", callToken, "--tenant", "nobody"}, nil, 1, nil, []string{"unauthorized"}, ""},
		{"unknown method", []string{"nope.nothing", "--state-dir", state}, nil, 1, nil, nil, "INVALID_REQUEST: unknown method: nope.nothing\n"},
		{"invalid params", []string{"tools.explain", "--state-dir", state, "--params", `{"agentId":"work","sessionKey":"x"}`}, nil, 1, nil, nil,
			"INVALID_REQUEST: invalid tools.explain params: pass exactly one of agentId or sessionKey\n"},
		{"json error", []string{"nope.nothing", "--state-dir", state, "--json"}, nil, 1, nil, nil,
			"{\n  \"code\": \"INVALID_REQUEST\",\n  \"message\": \"unknown method: nope.nothing\"\n}\n"},
		{"nothing listening", []string{"health", "--url", "ws://127.0.0.1:1", "--token", "x"}, nil, 1, nil, []string{"talon: gateway call: connecting to ws://127.0.0.1:1: dialing"}, ""},
		{"params not JSON", []string{"health", "--state-dir", state, "--params", "{"}, nil, 2, nil, []string{"--params: not JSON"}, ""},
		{"params an array", []string{"health", "--state-dir", state, "--params", "[1]"}, nil, 2, nil, []string{"--params: must be a JSON object"}, ""},
		{"params twice", []string{"health", "--state-dir", state, "--params", "{} {}"}, nil, 2, nil, []string{"--params: more than one JSON value"}, ""},
		{"zero timeout", []string{"health", "--state-dir", state, "--timeout", "0s"}, nil, 2, nil, []string{`--timeout "0s": want more than 0`}, ""},
		{"bad timeout", []string{"health", "--state-dir", state, "--timeout", "soon"}, nil, 2, nil, []string{"want a duration such as 30s"}, ""},
		{"http url", []string{"health", "--url", "http://127.0.0.1:1"}, nil, 2, nil, []string{"want ws://HOST:PORT"}, ""},
		{"bad tenant", []string{"health", "--state-dir", state, "--tenant", "../x"}, nil, 2, nil, []string{`--tenant "../x"`}, ""},
		{"bad method", []string{"sessions list", "--state-dir", state}, nil, 2, nil, []string{"want a name such as health"}, ""},
		{"missing config", []string{"health", "--config", filepath.Join(state, "nope.json")}, nil, 2, nil, []string{"does not exist"}, ""},
		{"no method", []string{"--state-dir", state}, nil, 2, nil, []string{"accepts 1 arg(s), received 0"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(envToken, c.env[envToken])
			t.Setenv(envPassword, c.env[envPassword])
			out, errOut, code := talon(t, "", append([]string{"gateway", "call"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, c.code, out, errOut)
			}
			if c.errExact != "" && errOut != c.errExact {
				t.Errorf("stderr %q, want %q", errOut, c.errExact)
			}
			for _, h := range c.errHas {
				if !strings.Contains(errOut, h) {
					t.Errorf("stderr %q lacks %q", errOut, h)
				}
			}
			if code != 0 {
				if out != "" {
					t.Errorf("stdout %q on failure", out)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil || !strings.HasPrefix(out, "{\n  \"") {
				t.Fatalf("stdout is not an indented JSON object (%v):\n%s", err, out)
			}
			for k, v := range c.out {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

// TestGatewayCallExplainMatchesCLI: the explain methods print, byte for
// byte, what the explain commands print with --json for the same config.
func TestGatewayCallExplainMatchesCLI(t *testing.T) {
	state, _ := startGatewayAlias(t)
	t.Setenv(envToken, "")
	t.Setenv(envPassword, "")
	cfg := filepath.Join(state, "talon.json")
	cases := []struct {
		name         string
		method, json string
		cli          []string
	}{
		{"tools agent", "tools.explain", `{"agentId":"work"}`, []string{"tools", "explain", "--json", "--config", cfg, "--agent", "work"}},
		{"tools session", "tools.explain", `{"sessionKey":"agent:main:whatsapp:group:g","provider":"openai","model":"gpt-5.2","sender":{"username":"alice"},"owner":true,"pluginTools":[{"name":"gen","pluginId":"img","optional":true}]}`,
			[]string{"tools", "explain", "--json", "--config", cfg, "--session-key", "agent:main:whatsapp:group:g", "--provider", "openai", "--model", "gpt-5.2",
				"--sender", "username:alice", "--owner", "--plugin-tool", "gen=img,optional"}},
		{"sandbox main", "sandbox.explain", `{"agentId":"main"}`, []string{"sandbox", "explain", "--json", "--config", cfg, "--state-dir", state, "--agent", "main"}},
		{"sandbox group", "sandbox.explain", `{"agentId":"work","sessionKey":"agent:work:whatsapp:group:1"}`,
			[]string{"sandbox", "explain", "--json", "--config", cfg, "--state-dir", state, "--agent", "work", "--session-key", "agent:work:whatsapp:group:1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, errOut, code := talon(t, "", "gateway", "call", c.method, "--state-dir", state, "--params", c.json)
			if code != 0 {
				t.Fatalf("gateway call: exit %d: %s", code, errOut)
			}
			want, errOut, code := talon(t, "", c.cli...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", c.cli, code, errOut)
			}
			// The gateway's tools.explain also lists the agent's plugins,
			// which an offline explanation of a config file cannot load.
			var g, w map[string]any
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatalf("gateway call printed %q: %v", got, err)
			}
			if err := json.Unmarshal([]byte(want), &w); err != nil {
				t.Fatalf("the CLI printed %q: %v", want, err)
			}
			if c.method == "tools.explain" {
				if _, ok := g["plugins"]; !ok {
					t.Errorf("gateway tools.explain has no plugins list")
				}
				delete(g, "plugins")
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("gateway call %s differs from the CLI (-cli +gateway):\n%s", c.method, diff)
			}
		})
	}
}
