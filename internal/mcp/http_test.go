package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"talon/internal/config"
	"talon/internal/netguard"
	"talon/internal/tools"
)

// TestEverythingHTTP runs the reference server with its streamable HTTP
// transport on a loopback port and uses it through a URL config.
func TestEverythingHTTP(t *testing.T) {
	bin := everythingBin(t)
	port := freePort(t)
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(cmd.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// The server says on stderr when it listens.
	sc := bufio.NewScanner(stderr)
	for !strings.Contains(sc.Text(), "listening on port") {
		if !sc.Scan() {
			t.Fatalf("server-everything streamableHttp ended before listening: %v", sc.Err())
		}
	}
	go func() { // keep draining, or the server blocks on a full pipe
		for sc.Scan() {
		}
	}()

	m := testManager(t)
	m.Configure(map[string]config.MCPServer{"web": {URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}})
	list, err := m.Tools(t.Context(), "web")
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	if res := run(t, toolByName(t, list, "get_sum"), `{"a":1,"b":2}`); res.IsError || res.Text != "The sum of 1 and 2 is 3." {
		t.Fatalf("get_sum over HTTP: %+v", res)
	}
	if res := run(t, toolByName(t, list, "echo"), `{"message":7}`); !res.IsError || !strings.Contains(res.Text, "invalid arguments for echo") {
		t.Fatalf("echo with a number: %+v", res)
	}
	if st := status(t, m, "web"); st.State != StateRunning || st.Transport != "http" || st.PID != 0 {
		t.Fatalf("status: %+v", st)
	}
	m.Close()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// goSDKServer is a streamable HTTP server built with the go-sdk's own
// server side; it records the X-Api-Key header of every request.
type goSDKServer struct {
	srv  *sdk.Server
	url  string
	mu   sync.Mutex
	keys []string
}

func newGoSDKServer(t *testing.T) *goSDKServer {
	g := &goSDKServer{srv: sdk.NewServer(&sdk.Implementation{Name: "go-sdk-test"}, nil)}
	type greetIn struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	greet := func(_ context.Context, _ *sdk.CallToolRequest, in greetIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + in.Name}}}, nil, nil
	}
	sdk.AddTool(g.srv, &sdk.Tool{Name: "Greet.User", Description: "Greets a user"}, greet)
	// Maps to greet_user too: skipped, with a warning.
	sdk.AddTool(g.srv, &sdk.Tool{Name: "greet-user", Description: "Collides after mapping"}, greet)
	sdk.AddTool(g.srv, &sdk.Tool{Name: "fail", Description: "Always fails"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the tool failed on purpose")
		})
	g.srv.AddTool(&sdk.Tool{Name: "protocol_error", Description: "Answers with a JSON-RPC error", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, errors.New("no such thing")
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.keys = append(g.keys, r.Header.Get("X-Api-Key"))
		g.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	g.url = ts.URL
	return g
}

// TestGoSDKHTTP uses a go-sdk streamable HTTP server: headers on every
// request, tool name mapping and collisions, error results, and a tool list
// refreshed on notifications/tools/list_changed.
func TestGoSDKHTTP(t *testing.T) {
	g := newGoSDKServer(t)
	m := testManager(t)
	m.Configure(map[string]config.MCPServer{"gosdk": {URL: g.url, Headers: map[string]string{"X-Api-Key": "secret-1"}}})
	list, err := m.Tools(t.Context(), "gosdk")
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	if got, want := names(list), []string{"fail", "greet_user", "protocol_error"}; !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	calls := []struct {
		tool, args string
		isError    bool
		want       string
	}{
		{"greet_user", `{"name":"Ann"}`, false, "Hello, Ann"},
		{"greet_user", `{"name":["Ann"]}`, true, "invalid arguments for greet_user"},
		{"fail", `{}`, true, "the tool failed on purpose"},
		{"protocol_error", `{}`, true, `MCP server "gosdk" refused the call to "protocol_error"`},
	}
	for _, c := range calls {
		res := run(t, toolByName(t, list, c.tool), c.args)
		if res.IsError != c.isError || !strings.Contains(res.Text, c.want) {
			t.Errorf("%s(%s) = %+v, want IsError %v and %q", c.tool, c.args, res, c.isError, c.want)
		}
	}

	sdk.AddTool(g.srv, &sdk.Tool{Name: "farewell", Description: "Says goodbye"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Bye"}}}, nil, nil
		})
	waitFor(t, "farewell after tools/list_changed", func() bool {
		list, err = m.Tools(t.Context(), "gosdk")
		return err == nil && slices.Contains(names(list), "farewell")
	})
	if res := run(t, toolByName(t, list, "farewell"), `{}`); res.IsError || res.Text != "Bye" {
		t.Fatalf("farewell: %+v", res)
	}

	m.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, k := range g.keys {
		if k != "secret-1" {
			t.Fatalf("request %d had X-Api-Key %q", i, k)
		}
	}
}

func names(list []tools.Tool) []string {
	var out []string
	for _, t := range list {
		out = append(out, t.Name())
	}
	slices.Sort(out)
	return out
}

// A tenant's manager reaches url servers through netguard: a loopback
// server is refused at connect time, unless the operator let its exact
// address and port through.
func TestGuardedManager(t *testing.T) {
	g := newGoSDKServer(t)
	ap := netip.MustParseAddrPort(strings.TrimPrefix(g.url, "http://"))
	for _, tc := range []struct {
		name  string
		allow []netip.AddrPort
		want  string // "" when the tools list
	}{
		{"loopback refused", nil, "loopback address"},
		{"another port opened", []netip.AddrPort{netip.AddrPortFrom(ap.Addr(), ap.Port()+1)}, "loopback address"},
		{"this address opened", []netip.AddrPort{ap}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewGuardedManager(slog.New(slog.NewTextHandler(testWriter{t}, nil)), netguard.Options{Allow: tc.allow})
			t.Cleanup(m.Close)
			m.Configure(map[string]config.MCPServer{"gosdk": {URL: g.url}})
			_, err := m.Tools(t.Context(), "gosdk")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Tools: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Tools = %v; want an error saying %q", err, tc.want)
			}
		})
	}
}
