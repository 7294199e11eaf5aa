package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"syscall"
	"testing"
	"time"

	"talon/internal/config"
	"talon/internal/mcp/mcptest"
	"talon/internal/tools"
)

// everythingBin finds mcp-server-everything (see mcptest).
func everythingBin(t *testing.T) string {
	t.Helper()
	return mcptest.EverythingBin(t)
}

func testManager(t *testing.T) *Manager {
	t.Helper()
	m := NewManager(slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	t.Cleanup(m.Close)
	return m
}

// testWriter sends the Manager's log to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func stdioConfig(bin string, env map[string]string) config.MCPServer {
	return config.MCPServer{Command: bin, Args: config.List{"stdio"}, Env: env}
}

func toolByName(t *testing.T, list []tools.Tool, name string) tools.Tool {
	t.Helper()
	for _, tl := range list {
		if tl.Name() == name {
			return tl
		}
	}
	var names []string
	for _, tl := range list {
		names = append(names, tl.Name())
	}
	t.Fatalf("tool %q not listed; got %v", name, names)
	return nil
}

func run(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	res, err := tl.Run(t.Context(), &tools.Env{}, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", tl.Name(), args, err)
	}
	return res
}

func status(t *testing.T, m *Manager, name string) ServerStatus {
	t.Helper()
	i := slices.IndexFunc(m.Servers(), func(s ServerStatus) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("server %q not in Servers()", name)
	}
	return m.Servers()[i]
}

// alive reports whether pid names a process, a zombie included: a zombie
// is a process we failed to reap.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// waitFor polls cond until it holds or the test's deadline passes; it
// asserts an eventual state, never a duration.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := t.Context()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
		defer cancel()
	}
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
