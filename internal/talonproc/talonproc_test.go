package talonproc

import (
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
