// Package talonproc builds the talon binary and runs `talon serve` (or
// another gateway with a /readyz, such as OpenClaw's) as a child process on
// a free loopback port, for end-to-end tests and benchmarks that must
// measure the real binary; the test packages of one run share one build of
// it. A Proc is used by one goroutine; its Log is safe to read while the
// process writes it.
package talonproc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"talon/internal/procfs"
)

// Build returns dir/talon: ./cmd/talon of the module that contains the
// working directory, built as the release is (static, CGO_ENABLED=0).
//
// The test packages of one `go test ./...` share one link. Build runs `go
// build` into a cache directory of the module under a file lock, so that
// parallel packages wait for the first; go build relinks only when the
// binary's build ID changed — a hash of the sources, the toolchain and the
// build settings — so a stale binary is never used. dir/talon is a hard
// link to the result (a copy across file systems). go build replaces the
// cached file rather than writing into it (it must, to rebuild a binary
// that is running), so a later build for changed sources leaves the binary
// of a package still running as it was.
func Build(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("building talon: %w", err)
	}
	return build(root, cacheDir(root), dir)
}

// moduleRoot is the directory of the talon module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the talon module (go env GOMOD = %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}

// cacheDir is where the binary of the module at root is built: one
// directory per checkout, so that two worktrees do not relink each other's.
func cacheDir(root string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "talon-test", hex.EncodeToString(sum[:8]))
}

func build(root, cache, dir string) (string, error) {
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", fmt.Errorf("building talon: %w", err)
	}
	unlock, err := lock(filepath.Join(cache, "lock"))
	if err != nil {
		return "", fmt.Errorf("building talon: %w", err)
	}
	defer unlock()
	built := filepath.Join(cache, "talon")
	cmd := exec.Command("go", "build", "-o", built, "./cmd/talon")
	cmd.Dir = root
	// The release build (README, "Building"): static, so that what the
	// tests and benchmarks run is what ships.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building talon: go build ./cmd/talon: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "talon")
	if err := linkOrCopy(built, bin); err != nil {
		return "", fmt.Errorf("building talon: %w", err)
	}
	return bin, nil
}

// lock takes an exclusive flock on path, waiting for its holder; the lock
// goes with the process, so a killed test package leaves none behind.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// linkOrCopy makes dst a hard link to src, or a copy where src is on
// another file system. A dst already there is removed first: writing
// into it could write into the cached file it links to.
func linkOrCopy(src, dst string) error {
	if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	return out.Close()
}

// Options say how to start `talon serve`.
type Options struct {
	Bin      string   // the talon binary
	StateDir string   // --state-dir; the config must already be there
	Env      []string // the child's environment; nil means os.Environ()
	// ReadyTimeout bounds exec → /readyz 200; 0 means 10 s.
	ReadyTimeout time.Duration
	// PollEvery is the /readyz polling interval; 0 means 50 ms.
	PollEvery time.Duration
	// Args, when set, is the command line after Bin for a port, in place
	// of `serve --state-dir StateDir --port PORT`.
	Args func(port int) []string
}

// Proc is a running `talon serve`.
type Proc struct {
	Cmd  *exec.Cmd
	Port int
	URL  string // http://127.0.0.1:PORT
	Log  *Buffer
	// ReadyAfter is the time from just before exec to the first /readyz 200.
	ReadyAfter time.Duration

	name   string // for errors: "talon serve", or the binary's name
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// Start execs `talon serve` on a free loopback port and waits until
// /readyz answers 200. It retries when another process took the port
// between choosing and binding it.
func Start(o Options) (*Proc, error) {
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Second
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 50 * time.Millisecond
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var p *Proc
		if p, err = start(o); err == nil {
			return p, nil
		}
		if p == nil || !strings.Contains(p.Log.String(), "address already in use") {
			break
		}
	}
	return nil, err
}

func start(o Options) (*Proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("finding a free port: %w", err)
	}
	p := &Proc{Port: port, URL: "http://127.0.0.1:" + strconv.Itoa(port), Log: &Buffer{}, name: what(o), exited: make(chan struct{})}
	args := []string{"serve", "--state-dir", o.StateDir, "--port", strconv.Itoa(port)}
	if o.Args != nil {
		args = o.Args(port)
	}
	p.Cmd = exec.Command(o.Bin, args...)
	p.Cmd.Env = o.Env
	p.Cmd.Stdout, p.Cmd.Stderr = p.Log, p.Log
	poll := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	begin := time.Now()
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Bin, err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.exited) }()
	deadline := begin.Add(o.ReadyTimeout)
	for {
		resp, err := poll.Get(p.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.ReadyAfter = time.Since(begin)
				return p, nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-p.exited:
			return p, fmt.Errorf("%s exited before it was ready (%v); its log:\n%s", p.name, p.err, p.Log)
		default:
		}
		if time.Now().After(deadline) {
			_ = p.Cmd.Process.Kill()
			<-p.exited
			return p, fmt.Errorf("%s: /readyz not 200 within %v (last: %v); its log:\n%s", p.name, o.ReadyTimeout, err, p.Log)
		}
		time.Sleep(o.PollEvery)
	}
}

// what names the process in errors.
func what(o Options) string {
	if o.Args != nil {
		return filepath.Base(o.Bin)
	}
	return "talon serve"
}

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM and waits up to timeout for the process to exit,
// killing it after that. It reports an exit before Stop, a kill, or an
// exit status other than 0 as an error: a graceful shutdown is part of
// what talon promises.
func (p *Proc) Stop(timeout time.Duration) error {
	if done, err := p.Exited(); done {
		return fmt.Errorf("%s exited before it was stopped (%v)", p.name, err)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", p.name, timeout)
	}
	if p.err != nil {
		return fmt.Errorf("%s after SIGTERM: %v, want exit status 0", p.name, p.err)
	}
	return nil
}

// Goroutines asks a running talon serve for its goroutine count (GET
// /debug/runtime, which answers loopback callers carrying the default
// tenant's token). It opens a connection of its own and closes it, so that
// measuring leaves no connection behind to be counted next time.
func (p *Proc) Goroutines(ctx context.Context, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/debug/runtime", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("asking %s for its goroutines: %w", p.name, err)
	}
	defer resp.Body.Close()
	var v struct {
		Goroutines *int `json:"goroutines"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK || v.Goroutines == nil {
		return 0, fmt.Errorf("asking %s for its goroutines: GET /debug/runtime: status %d (%v)", p.name, resp.StatusCode, err)
	}
	return *v.Goroutines, nil
}

// RSSMB is the process's VmRSS from /proc/PID/status, in MB (10^6 bytes).
func (p *Proc) RSSMB() (float64, error) { return procfs.RSSMB(p.Cmd.Process.Pid) }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Buffer is a bytes.Buffer safe for a process's writes and a test's reads.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
