package agent

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/tools/browser"
)

// TestBrowserTool runs the browser tool through the agent loop with the
// inspect model (/call browser): unsandboxed, it opens a loopback page
// that JavaScript builds (tools.network.allowLoopback) and its snapshot
// shows the built text, with the profile under the state directory and
// not in the workspace; in a bwrap-sandboxed session the tool is not
// offered, and the call is refused before any browser starts.
func TestBrowserTool(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Agent page</title><main id="m"></main>
<script>document.getElementById("m").innerHTML = "<h2>Rendered for the agent</h2><button>Go</button>";</script>`)
	}))
	t.Cleanup(site.Close)
	base := `tools: {network: {allowLoopback: true}}`
	cases := []struct {
		name    string
		sandbox string
	}{
		{name: "host"},
		{name: "bwrap", sandbox: `{mode: "all", backend: "bwrap", workspaceAccess: "rw"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.sandbox != "" {
				if err := requireBwrap(t); err != nil {
					t.Skip(err)
				}
			}
			cfg := `{` + base + `}`
			if c.sandbox != "" {
				cfg = `{agents: {defaults: {sandbox: ` + c.sandbox + `}}, tools: {network: {allowLoopback: true}, sandbox: {tools: {allow: ["browser", "read"], deny: []}}}}`
			}
			a := newApprovalsRig(t, cfg, 0)
			if bt, ok := a.runner.Tools.Get("browser"); ok {
				t.Cleanup(func() { bt.(*browser.Tool).Close() })
			}
			open := a.turn(`/call browser {"action":"open","targetUrl":"` + site.URL + `/"}`)
			if c.sandbox != "" {
				if !strings.Contains(open, `tool "browser" is not available to this agent: removed by construction (agents.defaults.sandbox.mode)`) {
					t.Fatalf("sandboxed open: %q, want a refusal", open)
				}
				if _, err := os.Stat(filepath.Join(a.state, "browser")); err == nil {
					t.Error("a browser profile was made for a sandboxed session")
				}
				return
			}
			if !strings.Contains(open, `"title":"Agent page"`) {
				t.Fatalf("open: %q", open)
			}
			snap := a.turn(`/call browser {"action":"snapshot","interactive":false}`)
			if !strings.Contains(snap, `heading \"Rendered for the agent\"`) || !strings.Contains(snap, `button \"Go\" [ref=e`) {
				t.Fatalf("snapshot: %q", snap)
			}
			if fi, err := os.Stat(filepath.Join(a.state, "browser", "main")); err != nil || !fi.IsDir() {
				t.Errorf("profile under the state directory: %v", err)
			}
		})
	}
}
