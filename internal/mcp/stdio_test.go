package mcp

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"talon/internal/config"
)

// TestEverythingStdio drives the reference MCP server (npm
// @modelcontextprotocol/server-everything) over stdio through its whole
// lifecycle: first use, calls, a crash, reconfiguration, removal, Close.
func TestEverythingStdio(t *testing.T) {
	bin := everythingBin(t)
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	goroutines := runtime.NumGoroutine()
	m := testManager(t)
	cfg := stdioConfig(bin, map[string]string{"TALON_MCP_PROBE": "probe-value"})
	m.Configure(map[string]config.MCPServer{"everything": cfg})

	if st := status(t, m, "everything"); st.State != StateStopped || st.PID != 0 || st.Transport != "stdio" {
		t.Fatalf("before first use: %+v, want stopped stdio without pid", st)
	}
	list, err := m.Tools(t.Context(), "everything")
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	echo := toolByName(t, list, "echo")
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(echo.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["message"].Type != "string" || len(schema.Required) != 1 || schema.Required[0] != "message" {
		t.Fatalf("echo schema %s: want an object with a required string message", echo.Schema())
	}
	if echo.Description() == "" {
		t.Fatal("echo has no description")
	}

	calls := []struct {
		tool, args string
		isError    bool
		want       []string
		notWant    []string
	}{
		{tool: "echo", args: `{"message":"hello mcp"}`, want: []string{"Echo: hello mcp"}},
		{tool: "get_sum", args: `{"a":2,"b":40}`, want: []string{"The sum of 2 and 40 is 42."}},
		{tool: "get_tiny_image", args: `{}`, want: []string{"[image image/png, ", " bytes]"}},
		{tool: "get_resource_links", args: `{"count":2}`, want: []string{"[resource link demo://resource/"}},
		// The process gets the config's env, PATH and friends, and none of
		// the gateway's secrets.
		{tool: "get_env", args: ``, want: []string{"TALON_MCP_PROBE", "probe-value", `"PATH"`}, notWant: []string{"OPENAI_API_KEY", "sk-must-not-leak"}},
		// Refused before the call: the errors are ours, naming the problem.
		{tool: "echo", args: `{}`, isError: true, want: []string{"invalid arguments for echo", "message"}},
		{tool: "get_sum", args: `{"a":"two","b":40}`, isError: true, want: []string{"invalid arguments for get_sum", "a"}},
		{tool: "echo", args: `["hello"]`, isError: true, want: []string{"invalid arguments for echo: expected a JSON object"}},
	}
	for _, c := range calls {
		t.Run(c.tool+c.args, func(t *testing.T) {
			res := run(t, toolByName(t, list, c.tool), c.args)
			if res.IsError != c.isError {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, c.isError, res.Text)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q lacks %q", res.Text, w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(res.Text, w) {
					t.Errorf("result contains %q", w)
				}
			}
		})
	}

	st := status(t, m, "everything")
	if st.State != StateRunning || st.PID <= 0 || !slices.Contains(st.Tools, "echo") {
		t.Fatalf("after calls: %+v, want running with a pid and echo", st)
	}
	pid := st.PID

	// A crash: the next use starts the server again.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the crash to be noticed", func() bool { return status(t, m, "everything").State != StateRunning })
	st = status(t, m, "everything")
	if st.State != StateFailed || !strings.Contains(st.LastError, "crashed") || !strings.Contains(st.LastError, "killed") {
		t.Fatalf("after kill: %+v, want failed, crashed, killed", st)
	}
	if alive(pid) {
		t.Fatalf("killed server %d not reaped", pid)
	}
	if res := run(t, echo, `{"message":"again"}`); res.IsError || res.Text != "Echo: again" {
		t.Fatalf("echo after crash: %+v", res)
	}
	pid2 := status(t, m, "everything").PID
	if pid2 == pid || pid2 <= 0 {
		t.Fatalf("pid after restart %d (before %d)", pid2, pid)
	}

	// Unchanged config: the server keeps running.
	m.Configure(map[string]config.MCPServer{"everything": stdioConfig(bin, map[string]string{"TALON_MCP_PROBE": "probe-value"})})
	if got := status(t, m, "everything"); got.PID != pid2 || got.State != StateRunning {
		t.Fatalf("unchanged config restarted the server: %+v (pid was %d)", got, pid2)
	}
	// Changed config: stopped before Configure returns, started anew.
	m.Configure(map[string]config.MCPServer{"everything": stdioConfig(bin, map[string]string{"TALON_MCP_PROBE": "changed"})})
	if alive(pid2) {
		t.Fatalf("reconfigured server %d still exists", pid2)
	}
	if got := status(t, m, "everything"); got.State != StateStopped {
		t.Fatalf("after reconfigure: %+v, want stopped until used", got)
	}
	if res := run(t, toolByName(t, list, "get_env"), `{}`); res.IsError || !strings.Contains(res.Text, "changed") {
		t.Fatalf("get_env after reconfigure (an old tool reaches the new server): %+v", res)
	}
	pid3 := status(t, m, "everything").PID

	// Disabled: the server is gone, and so are its tools' calls.
	off := false
	cfg.Enabled = &off
	m.Configure(map[string]config.MCPServer{"everything": cfg})
	if alive(pid3) {
		t.Fatalf("disabled server %d still exists", pid3)
	}
	if len(m.Servers()) != 0 {
		t.Fatalf("Servers() = %+v, want none", m.Servers())
	}
	if _, err := m.Tools(t.Context(), "everything"); err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("Tools of a disabled server: %v", err)
	}
	if res := run(t, echo, `{"message":"x"}`); !res.IsError || !strings.Contains(res.Text, "not configured") {
		t.Fatalf("call on a disabled server: %+v", res)
	}

	// Close stops a running server and leaves no goroutine behind.
	m.Configure(map[string]config.MCPServer{"a": stdioConfig(bin, nil), "b": stdioConfig(bin, nil)})
	var pids []int
	for _, name := range []string{"a", "b"} {
		if _, err := m.Tools(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, status(t, m, name).PID)
	}
	m.Close()
	for _, p := range pids {
		if alive(p) {
			t.Errorf("server %d exists after Close", p)
		}
	}
	if _, err := m.Tools(t.Context(), "a"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Tools after Close: %v", err)
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
}
