package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/netguard"
)

func TestRender(t *testing.T) {
	nodes := []axNode{
		{ID: "1", Role: "RootWebArea", Name: "Shop", Children: []string{"2", "9"}, Backend: 1},
		{ID: "2", Role: "generic", Children: []string{"3", "5", "7"}, Backend: 2},
		{ID: "3", Role: "heading", Name: "Cart", States: []string{" [level=1]"}, Children: []string{"4"}, Backend: 3},
		{ID: "4", Role: "StaticText", Name: "Cart", Backend: 4},
		{ID: "5", Role: "textbox", Name: "Coupon", Value: "SAVE<10>", Backend: 5},
		{ID: "7", Role: "button", Name: "Pay", States: []string{" [disabled]"}, Backend: 7, Children: []string{"8"}},
		{ID: "8", Role: "StaticText", Name: "Pay"},
		{ID: "9", Ignored: true, Role: "none", Children: []string{"10"}},
		{ID: "10", Role: "StaticText", Name: "Total: 12 €"},
	}
	cases := []struct {
		name string
		o    snapOptions
		want string
		refs int
	}{
		{"full", snapOptions{depth: -1}, `- document "Shop"
  - heading "Cart" [ref=e1] [level=1]
  - textbox "Coupon" [ref=e2] value="SAVE<10>"
  - button "Pay" [ref=e3] [disabled]
  - text "Total: 12 €"`, 3},
		{"interactive", snapOptions{interactive: true, depth: -1}, `- textbox "Coupon" [ref=e1] value="SAVE<10>"
- button "Pay" [ref=e2] [disabled]`, 2},
		{"depth", snapOptions{depth: 0}, `- document "Shop"`, 0},
		{"query", snapOptions{depth: -1, query: "PAY disabled"}, `  - button "Pay" [ref=e3] [disabled]`, 3},
		{"cap", snapOptions{depth: -1, maxChars: 60}, `- document "Shop"
  - heading "Cart" [ref=e1] [level=1]
` + truncMarker, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := render(nodes, c.o)
			if diff := cmp.Diff(c.want, s.text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if len(s.refs) != c.refs {
				t.Errorf("refs = %v, want %d", s.refs, c.refs)
			}
		})
	}
	if s := render(nodes, snapOptions{depth: -1}); s.refs["e2"] != 5 {
		t.Errorf("e2 maps to %d, want the textbox's backend node 5", s.refs["e2"])
	}
}

func TestParseKey(t *testing.T) {
	cases := []struct {
		in   string
		key  string
		mods int
		err  string
	}{
		{"Enter", "\r", 0, ""}, {"esc", "\u001b", 0, ""}, {"Control+Shift+T", "T", 2, ""},
		{"Ctrl++", "+", 1, ""}, {"a", "a", 0, ""}, {"Hyper+x", "", 0, "not a modifier"}, {"F5", "", 0, "function keys"},
		{"Launch", "", 0, "not a key name"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			k, mods, err := parseKey(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || k != c.key || len(mods) != c.mods {
				t.Errorf("= %q %v %v, want %q with %d modifiers", k, mods, err, c.key, c.mods)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{"https://example.com/a", "https://example.com/a", ""},
		{"example.com/x", "https://example.com/x", ""},
		{"file:///etc/passwd", "", `scheme "file"`},
		{"view-source:http://example.com", "", `scheme "view-source"`},
		{"http://169.254.169.254/latest", "", "refusing"},
		{"http://[::1]:8080/", "", "refusing"},
		{"http://user:pw@example.com/", "", "credentials"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := checkURL(c.in, netguard.Options{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("= %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// BenchmarkColdStartSnapshot is a browser's start, a page and its first
// snapshot: what a model's first call waits for.
func BenchmarkColdStartSnapshot(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>t</title><h1>Hello</h1><a href="/x">x</a>`)
	}))
	b.Cleanup(srv.Close)
	for b.Loop() {
		bt := New(Options{})
		env := benchEnv(b)
		mustRun(b, bt, env, `{"action":"open","targetUrl":"`+srv.URL+`/"}`)
		mustRun(b, bt, env, `{"action":"snapshot"}`)
		bt.Close()
	}
}

// BenchmarkSnapshot1MB is the snapshot of a ~1 MB page (a table of 5000
// rows with links) in a running browser, capped at the most characters.
func BenchmarkSnapshot1MB(b *testing.B) {
	var page strings.Builder
	page.WriteString(`<!doctype html><title>big</title><table>`)
	for i := 0; page.Len() < 1<<20; i++ {
		fmt.Fprintf(&page, `<tr><td>Row %d of the big table, with some prose to read</td><td><a href="/r/%d">open row %d</a></td><td><input aria-label="qty %d" value="%d"></td></tr>`, i, i, i, i, i)
	}
	page.WriteString(`</table>`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, page.String()) }))
	b.Cleanup(srv.Close)
	bt := New(Options{})
	b.Cleanup(func() { bt.Close() })
	env := benchEnv(b)
	mustRun(b, bt, env, `{"action":"open","targetUrl":"`+srv.URL+`/"}`)
	b.SetBytes(int64(page.Len()))
	for b.Loop() {
		mustRun(b, bt, env, fmt.Sprintf(`{"action":"snapshot","maxChars":%d}`, MaxChars))
	}
}

func benchEnv(b *testing.B) *envT {
	root, err := openRoot(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	return &envT{AgentID: "main", StateDir: b.TempDir(), Workspace: root, AllowLoopback: true}
}

func mustRun(b *testing.B, bt *Tool, env *envT, args string) {
	res, err := bt.Run(context.Background(), env, json.RawMessage(args))
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %s", args, err, res.Text)
	}
}
