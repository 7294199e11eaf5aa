package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/talonproc"
	"talon/internal/testtier"
)

// The secrets and names of the test configs (see writeConfigs).
const (
	defaultToken = "e2e-token"
	tenantID     = "acme"
	tenantToken  = "acme-e2e-token"
)

const (
	readyTimeout    = 10 * time.Second // from start to a 200 on /readyz
	shutdownTimeout = 10 * time.Second // from SIGTERM to exit 0
)

// installHint is what every "missing client" message ends with.
const installHint = "./scripts/test.sh installs it (as root: apt-get install -y curl nodejs npm chromium, then npm ci in e2e/node and in e2e/openclaw-cli)"

var (
	repoRoot string // the module root, found from this file
	talonBin string // built once by TestMain
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		fmt.Fprintln(os.Stderr, "e2e: cannot find the test file's path")
		return 1
	}
	repoRoot = filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(repoRoot, "go.mod")); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %s is not the module root: %v\n", repoRoot, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "talon-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if talonBin, err = talonproc.Build(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// missing fails the test under CI and skips it elsewhere.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	testtier.Unavailable(t, "e2e: %s; %s", fmt.Sprintf(format, args...), installHint)
}

// needCommands checks that each program is on PATH.
func needCommands(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			missing(t, "%s is not on PATH", n)
		}
	}
}

// nodeDir is the folder of the Node client and its package.json.
func nodeDir() string { return filepath.Join(repoRoot, "e2e", "node") }

// needNodeModules checks that npm ci has installed the pinned openai
// package in e2e/node/node_modules.
func needNodeModules(t *testing.T) { needNodePackage(t, nodeDir(), "openai") }

// needNodePackage checks that npm ci has installed the version of package
// name that dir/package.json pins in dir/node_modules.
func needNodePackage(t *testing.T, dir, name string) {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pkg)
	rel, _ := filepath.Rel(repoRoot, dir)
	want := pkg.Dependencies[name]
	if want == "" {
		t.Fatalf("%s/package.json does not depend on %s", rel, name)
	}
	var got struct {
		Version string `json:"version"`
	}
	path := filepath.Join(dir, "node_modules", name, "package.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		missing(t, "%s/node_modules has no %s package (run `npm ci` in %s)", rel, name, rel)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got.Version != want {
		missing(t, "%s/node_modules has %s %s, package.json pins %s (run `npm ci` in %s)", rel, name, got.Version, want, rel)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// nodeCase is one case of a Node client script's report: what it
// returned, or what it threw (and, for a stream, what came before).
type nodeCase struct {
	OK      bool            `json:"ok"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	Stack   string          `json:"stack"`
	Partial json.RawMessage `json:"partial"`
}

// decodeCase decodes case name of cases into v, failing the test when the
// case is missing or threw.
func decodeCase(t *testing.T, cases map[string]nodeCase, name string, v any) {
	t.Helper()
	c, ok := cases[name]
	if !ok {
		t.Fatalf("the script ran no case %q", name)
	}
	if !c.OK {
		t.Fatalf("case %s threw: %s (partial: %s)\n%s", name, c.Error, c.Partial, c.Stack)
	}
	if err := json.Unmarshal(c.Result, v); err != nil {
		t.Fatalf("case %s: %v\n%s", name, err, c.Result)
	}
}

// runNode runs `node e2e/node/SCRIPT ARGS…` with env, within timeout, and
// decodes the JSON report it prints into out, failing the test when it
// does not exit 0 or prints no JSON.
func runNode(t *testing.T, timeout time.Duration, env []string, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(nodeDir(), script)}, args...)...)
	cmd.Dir = nodeDir()
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstderr:\n%s\nstdout:\n%s", script, err, stderr.String(), stdout.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s printed no JSON report: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
}

// writeConfigs writes the default tenant's config (token, agents main and
// somi) and tenant acme's (its own token, agent somi). No model is
// configured, so every agent runs the offline inspect model.
func writeConfigs(t *testing.T, stateDir string) {
	t.Helper()
	write := func(rel string, v any) {
		path := filepath.Join(stateDir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type obj = map[string]any
	write("talon.json", obj{
		"gateway": obj{"auth": obj{"token": defaultToken}},
		"agents":  obj{"list": []obj{{"id": "main", "default": true}, {"id": "somi"}}},
	})
	write(filepath.Join("tenants", tenantID, "clawdbot.json"), obj{
		"gateway": obj{
			"auth": obj{"token": tenantToken},
			"http": obj{"endpoints": obj{"chatCompletions": obj{"enabled": true}}},
		},
		"agents": obj{"list": []obj{{"id": "somi"}}},
	})
}

// server is one `talon serve` process.
type server struct {
	dir  string // its state dir
	base string // http://127.0.0.1:PORT
	proc *talonproc.Proc
	// killed is set by kill: the process is gone on purpose, and its
	// cleanup does not report it.
	killed bool
}

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (s *server) kill() {
	s.killed = true
	_ = s.proc.Cmd.Process.Kill()
	for exited, _ := s.proc.Exited(); !exited; exited, _ = s.proc.Exited() {
		time.Sleep(10 * time.Millisecond)
	}
}

// startServer starts `talon serve` on a free loopback port with a fresh
// state dir holding the test configs, waits for /readyz, and registers a
// cleanup that stops it with SIGTERM and checks that it exits 0 and
// closes its port.
func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	writeConfigs(t, dir)
	return startServerIn(t, dir)
}

// startServerIn is startServer on a state dir that already holds the
// configs.
func startServerIn(t *testing.T, dir string) *server {
	t.Helper()
	p, err := talonproc.Start(talonproc.Options{
		Bin: talonBin, StateDir: dir, ReadyTimeout: readyTimeout,
		Env: cleanEnv("TALON_GATEWAY_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"),
	})
	if err != nil {
		t.Fatalf("starting talon serve: %v", err)
	}
	s := &server{dir: dir, base: p.URL, proc: p}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) stop(t *testing.T) {
	if s.killed {
		return
	}
	if err := s.proc.Stop(shutdownTimeout); err != nil {
		t.Errorf("%v; its log:\n%s", err, s.proc.Log)
		return
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.proc.Port)), time.Second); err == nil {
		c.Close()
		t.Errorf("port %d still accepts connections after talon serve exited", s.proc.Port)
	}
}

// cleanEnv is the environment without the named variables, so that a
// developer's shell cannot change what the tests see.
func cleanEnv(drop ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			if strings.EqualFold(name, d) || strings.HasSuffix(d, "*") && strings.HasPrefix(strings.ToUpper(name), strings.TrimSuffix(d, "*")) {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
