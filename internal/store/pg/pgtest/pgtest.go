// Package pgtest starts throwaway PostgreSQL clusters for tests: initdb
// into a temporary directory, a server that listens only on a unix socket
// there (fsync off, small buffers: fast to start, nothing to keep), one
// fresh database per NewDB, and everything stopped and removed in the
// test's Cleanup. It finds the server in /usr/lib/postgresql/<ver>/bin
// (Debian's postgresql package) or on PATH; as root it runs initdb and the
// server as the postgres system user, since both refuse to run as root.
// The tests that start one are of the full tier (internal/testtier): they
// skip under a plain `go test ./...`. Without PostgreSQL a test is skipped,
// or fails under CI=true with how to install it.
//
// A Cluster is safe for concurrent use; NewDB may be called from parallel
// tests.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"talon/internal/testtier"
)

// Cluster is one running throwaway server.
type Cluster struct {
	dir  string // socket directory; data is dir/data
	log  *logBuffer
	proc *os.Process
	done chan struct{} // closed when the server exited
	n    atomic.Int64  // databases made
}

// Start starts a cluster for t and stops it in t.Cleanup.
func Start(t testing.TB) *Cluster {
	t.Helper()
	testtier.RequireFull(t, "PostgreSQL, a throwaway cluster per test")
	bin, err := binDir()
	if err != nil {
		testtier.Unavailable(t, "%v; install it (apt-get install -y postgresql) to run this test", err)
	}
	c, err := start(bin)
	if err != nil {
		t.Fatalf("starting a throwaway PostgreSQL from %s: %v", bin, err)
	}
	t.Cleanup(c.stop)
	return c
}

// NewDB creates an empty database and returns its connection string.
func (c *Cluster) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test%d", c.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dsn("postgres"))
	if err != nil {
		t.Fatalf("connecting to the throwaway PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return c.dsn(name)
}

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("host=%s user=talon dbname=%s", c.dir, db)
}

// binDir is the directory of the newest installed initdb and postgres.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
	}
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL is not installed (no initdb and postgres in /usr/lib/postgresql/*/bin or on PATH)")
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// runAs is the postgres system user's credential when we are root (initdb
// and postgres refuse root), else nil.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres system user (Debian's postgresql package creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func start(bin string) (_ *Cluster, err error) {
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "talon-pg-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "talon", "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	c := &Cluster{dir: dir, log: &logBuffer{}, done: make(chan struct{})}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "shared_buffers=16MB", "-c", "max_connections=60")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = c.log, c.log
	// The kernel stops the server if this test process dies first
	// (Pdeathsig is tied to the thread that started it, so that thread
	// is locked and waits for the server).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(c.done)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting postgres: %w", err)
	}
	c.proc = cmd.Process
	if err := c.waitReady(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// waitReady waits until the server accepts connections, or fails with its
// log when it exits or takes over a minute.
func (c *Cluster) waitReady() error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, c.dsn("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited before accepting connections:\n%s", c.log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not accepting connections after a minute (%v):\n%s", err, c.log)
		}
	}
}

// stop shuts the server down (SIGQUIT: immediate; the data is thrown
// away) and removes its directory.
func (c *Cluster) stop() {
	c.proc.Signal(syscall.SIGQUIT)
	<-c.done
	os.RemoveAll(c.dir)
}

// logBuffer collects the server's output for error messages.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
