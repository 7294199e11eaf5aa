package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
const installHint = "./scripts/test.sh installs it (as root: apt-get install -y curl nodejs npm, then npm ci in e2e/node)"

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
	talonBin = filepath.Join(tmp, "talon")
	build := exec.Command("go", "build", "-o", talonBin, "./cmd/talon")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/talon: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// inCI reports whether missing clients must fail the tests (CI=true)
// rather than skip them.
func inCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// missing fails the test under CI and skips it elsewhere.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("e2e: %s; %s (CI=true: not skipping)", msg, installHint)
	}
	t.Skipf("e2e: %s; %s (skipping outside CI; CI=true fails instead)", msg, installHint)
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
func needNodeModules(t *testing.T) {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(nodeDir(), "package.json"), &pkg)
	want := pkg.Dependencies["openai"]
	if want == "" {
		t.Fatal("e2e/node/package.json does not depend on openai")
	}
	var got struct {
		Version string `json:"version"`
	}
	path := filepath.Join(nodeDir(), "node_modules", "openai", "package.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		missing(t, "e2e/node/node_modules has no openai package (run `npm ci` in e2e/node)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got.Version != want {
		missing(t, "e2e/node/node_modules has openai %s, package.json pins %s (run `npm ci` in e2e/node)", got.Version, want)
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
	port int

	cmd    *exec.Cmd
	log    *syncBuffer
	exited chan struct{} // closed when the process has exited; then waitErr is set
	wait   error
}

// startServer starts `talon serve` on a free loopback port with a fresh
// state dir holding the test configs, waits for /readyz, and registers a
// cleanup that stops it with SIGTERM and checks that it exits 0.
func startServer(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	writeConfigs(t, dir)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := launch(t, dir)
		if err == nil {
			t.Cleanup(func() { s.stop(t) })
			return s
		}
		lastErr = err
		if !strings.Contains(s.log.String(), "address already in use") {
			break // not a lost race for the port: do not retry
		}
	}
	t.Fatalf("starting talon serve: %v", lastErr)
	return nil
}

func launch(t *testing.T, dir string) (*server, error) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{dir: dir, port: port, base: fmt.Sprintf("http://127.0.0.1:%d", port), log: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(talonBin, "serve", "--state-dir", dir, "--port", strconv.Itoa(port))
	s.cmd.Env = cleanEnv("TALON_GATEWAY_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", talonBin, err)
	}
	go func() { s.wait = s.cmd.Wait(); close(s.exited) }()

	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-s.exited:
			return s, fmt.Errorf("exited before it was ready (%v); its log:\n%s", s.wait, s.log)
		default:
		}
		resp, err := client.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			<-s.exited
			return s, fmt.Errorf("/readyz not 200 within %v (last: %v); its log:\n%s", readyTimeout, describe(resp, err), s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// stop sends SIGTERM and checks a graceful exit: status 0 within
// shutdownTimeout, and the port closed afterwards.
func (s *server) stop(t *testing.T) {
	select {
	case <-s.exited:
		t.Errorf("talon serve exited before the test ended (%v); its log:\n%s", s.wait, s.log)
		return
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(shutdownTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("talon serve did not exit within %v of SIGTERM; killed. Its log:\n%s", shutdownTimeout, s.log)
		return
	}
	if s.wait != nil {
		t.Errorf("talon serve after SIGTERM: %v, want exit status 0; its log:\n%s", s.wait, s.log)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), time.Second); err == nil {
		c.Close()
		t.Errorf("port %d still accepts connections after talon serve exited", s.port)
	}
	if t.Failed() {
		t.Logf("talon serve log:\n%s", s.log)
	}
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before talon binds it; startServer retries then.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
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

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
