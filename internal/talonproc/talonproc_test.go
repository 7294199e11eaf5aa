package talonproc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
