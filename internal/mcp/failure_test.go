package mcp

import (
	"strings"
	"testing"

	"talon/internal/config"
)

// TestFailingServers uses real processes that are not MCP servers: one
// that exits at once, one that never answers.
func TestFailingServers(t *testing.T) {
	ms := 300
	m := testManager(t)
	m.Configure(map[string]config.MCPServer{
		"exits":   {Command: "/bin/sh", Args: config.List{"-c", "echo 'cannot start: no config' >&2; exit 3"}},
		"silent":  {Command: "/bin/sh", Args: config.List{"-c", "while read -r line; do :; done"}, StartupTimeoutMs: &ms},
		"missing": {Command: "talon-no-such-mcp-server"},
	})

	// The first failures are retried at once; then the backoff holds
	// further starts and the error says until when.
	var errs []string
	for range 10 {
		_, err := m.Tools(t.Context(), "exits")
		if err == nil {
			t.Fatal("a server that exits at once gave tools")
		}
		errs = append(errs, err.Error())
		if strings.Contains(err.Error(), "will be retried after") {
			break
		}
	}
	first, last := errs[0], errs[len(errs)-1]
	if !strings.Contains(first, `starting MCP server "exits"`) || !strings.Contains(first, "cannot start: no config") {
		t.Errorf("first error %q: want the server named and its stderr quoted", first)
	}
	if !strings.Contains(last, "will be retried after") || !strings.Contains(last, "failed to start") {
		t.Errorf("errors %q: never held back by the backoff", errs)
	}
	st := status(t, m, "exits")
	if st.State != StateFailed || st.RetryAt.IsZero() || !strings.Contains(st.LastError, "exit status 3") {
		t.Errorf("status %+v", st)
	}

	_, err := m.Tools(t.Context(), "silent")
	if err == nil || !strings.Contains(err.Error(), "startup timeout of 300ms") {
		t.Errorf("silent server: %v", err)
	}
	_, err = m.Tools(t.Context(), "missing")
	if err == nil || !strings.Contains(err.Error(), "finding command") {
		t.Errorf("missing command: %v", err)
	}
	if _, err := m.Tools(t.Context(), "nope"); err == nil || !strings.Contains(err.Error(), `MCP server "nope" is not configured`) {
		t.Errorf("unknown server: %v", err)
	}
}
