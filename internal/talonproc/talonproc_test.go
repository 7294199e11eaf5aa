package talonproc

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBuildShared: a second Build of unchanged sources links nothing and
// hands out the same binary; a build whose inputs changed (here the
// linker's flags) replaces the cached binary without touching the one
// handed out before, which still runs.
func TestBuildShared(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	cached := filepath.Join(cache, "talon")
	first, err := build(root, cache, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before := stat(t, cached)
	second, err := build(root, cache, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, stat(t, cached)) || !os.SameFile(stat(t, first), stat(t, second)) {
		t.Fatal("a second build of unchanged sources did not hand out the binary of the first")
	}

	t.Setenv("GOFLAGS", "-ldflags=-X=main.talonprocProbe=changed")
	third, err := build(root, cache, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(stat(t, first), stat(t, third)) || !os.SameFile(stat(t, third), stat(t, cached)) {
		t.Fatal("a build with other flags did not replace the cached binary")
	}
	a, b := read(t, first), read(t, third)
	if bytes.Equal(a, b) {
		t.Fatal("the binary handed out before the rebuild changed with it")
	}
	if out, err := exec.Command(first, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "talon ") {
		t.Fatalf("the first binary after the rebuild: %v\n%s", err, out)
	}
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestStartFailsLoudly: a binary that exits at once is reported as such
// (not as a readiness timeout), and a missing binary is an error. The real
// binary is exercised by the e2e tests and the benchmarks.
func TestStartFailsLoudly(t *testing.T) {
	_, err := Start(Options{Bin: "/bin/false", StateDir: t.TempDir(), ReadyTimeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Fatalf("Start = %v, want an early-exit error", err)
	}
	if _, err := Start(Options{Bin: "/nonexistent/talon", StateDir: t.TempDir()}); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

func TestBuffer(t *testing.T) {
	var b Buffer
	b.Write([]byte("a"))
	b.Write([]byte("b"))
	if b.String() != "ab" {
		t.Errorf("String = %q", b.String())
	}
}

// TestArgs: another command line runs in place of `talon serve`, and
// errors name that binary.
func TestArgs(t *testing.T) {
	var got int
	_, err := Start(Options{Bin: "/bin/sh", ReadyTimeout: time.Minute, Args: func(port int) []string {
		got = port
		return []string{"-c", `echo "asked for port $0"`, strconv.Itoa(port)}
	}})
	if err == nil || !strings.Contains(err.Error(), "sh exited before it was ready") ||
		!strings.Contains(err.Error(), "asked for port "+strconv.Itoa(got)) {
		t.Fatalf("Start = %v, want sh's early exit with its log", err)
	}
}

// TestGoroutines: the count comes from /debug/runtime with the token, and
// an answer without one is an error naming the status.
func TestGoroutines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/debug/runtime" || r.Header.Get("Authorization") != "Bearer tok" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"goroutines":7}`))
	}))
	defer srv.Close()
	p := &Proc{URL: srv.URL, name: "talon serve"}
	if n, err := p.Goroutines(context.Background(), "tok"); n != 7 || err != nil {
		t.Errorf("Goroutines = %d, %v; want 7", n, err)
	}
	if _, err := p.Goroutines(context.Background(), "wrong"); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("Goroutines with a wrong token = %v, want a 404 error", err)
	}
}
