package benchmarks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds exec → /readyz 200; past it a benchmark fails.
const readyTimeout = 10 * time.Second

// benchToken is the gateway.auth.token of every config written here.
const benchToken = "bench-token"

var binDir string // TestMain's temp dir for the built binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "talon-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var build struct {
	once sync.Once
	path string
	err  error
}

// talonBinary builds ./cmd/talon once per test binary (plain go build,
// as a user would) and returns its path; a failed build fails tb.
func talonBinary(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out, err := exec.Command(goTool, "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			build.err = fmt.Errorf("not inside the talon module (go env GOMOD = %q)", gomod)
			return
		}
		bin := filepath.Join(binDir, "talon")
		cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/talon")
		cmd.Dir = filepath.Dir(gomod)
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/talon: %v\n%s", err, out)
			return
		}
		build.path = bin
	})
	if build.err != nil {
		tb.Fatalf("building talon: %v", build.err)
	}
	return build.path
}

// writeConfig writes stateDir/talon.json: token auth, one provider "fake"
// at llmBaseURL (OpenClaw's models.providers shape), the default agent on
// fake/fake-model.
func writeConfig(tb testing.TB, stateDir, llmBaseURL string) {
	tb.Helper()
	cfg := map[string]any{
		"gateway": map[string]any{"auth": map[string]any{"mode": "token", "token": benchToken}},
		"models": map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": llmBaseURL, "api": "openai-completions", "apiKey": "sk-bench",
			"models": []any{map[string]any{"id": "fake-model"}},
		}}},
		"agents": map[string]any{"defaults": map[string]any{"model": "fake/fake-model"}},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "talon.json"), b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// freePort asks the kernel for an unused loopback port.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects the gateway's log for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gatewayProc is a running `talon serve`.
type gatewayProc struct {
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:PORT
	log    *syncBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// startGateway execs `talon serve --state-dir stateDir --port P` (the
// config must already be in stateDir) and waits for /readyz 200. It
// returns the time from just before exec to that 200. It fails tb when
// the process exits or is not ready within readyTimeout.
func startGateway(tb testing.TB, bin, stateDir string) (*gatewayProc, time.Duration) {
	tb.Helper()
	port := freePort(tb)
	g := &gatewayProc{url: "http://127.0.0.1:" + strconv.Itoa(port), log: &syncBuffer{}, exited: make(chan struct{})}
	g.cmd = exec.Command(bin, "serve", "--state-dir", stateDir, "--port", strconv.Itoa(port))
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	g.cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TALON_") || strings.HasPrefix(kv, "HOME=")
	}), "HOME="+stateDir)
	poll := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	start := time.Now()
	if err := g.cmd.Start(); err != nil {
		tb.Fatalf("starting talon serve: %v", err)
	}
	go func() { g.err = g.cmd.Wait(); close(g.exited) }()
	deadline := start.Add(readyTimeout)
	for {
		resp, err := poll.Get(g.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g, time.Since(start)
			}
		}
		select {
		case <-g.exited:
			tb.Fatalf("talon serve exited before /readyz answered 200: %v\n%s", g.err, g.log)
		default:
		}
		if time.Now().After(deadline) {
			g.stop()
			tb.Fatalf("talon serve not ready within %v (last: %v)\n%s", readyTimeout, err, g.log)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// stop sends SIGTERM and waits for the exit; SIGKILL after 10 s.
func (g *gatewayProc) stop() {
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// rssMB is the process's VmRSS from /proc/PID/status, in MB (10^6 bytes).
func rssMB(tb testing.TB, pid int) float64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatalf("reading RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				tb.Fatalf("parsing VmRSS %q: %v", v, err)
			}
			return kb * 1024 / 1e6
		}
	}
	tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
