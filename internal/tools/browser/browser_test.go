package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"talon/internal/tools"
)

// pages are the loopback test site: a page built by JavaScript, a form
// that shows what was submitted, redirects to blocked addresses, and a
// page that logs to the console.
func pages() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/js", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>JS page</title><body><div id="app"></div>
<script>const h = document.createElement("h1"); h.textContent = "Built by script " + (6*7);
document.getElementById("app").append(h); console.log("hello from the page", 42);</script>`)
	})
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Form</title><form action="/done" method="get">
<label>Name <input name="name"></label><label>Color <select name="color"><option value="r">Red</option><option value="b">Blue</option></select></label>
<button type="submit">Send</button></form>`)
	})
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Done</title><p>Hello, %s (%s)</p>`, htmlEscape(r.URL.Query().Get("name")), htmlEscape(r.URL.Query().Get("color")))
	})
	mux.HandleFunc("/to/{where}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.PathValue("where")+"/latest/meta-data/", http.StatusFound)
	})
	return mux
}

func htmlEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;").Replace(s)
}

func newEnv(t *testing.T, state string) *tools.Env {
	t.Helper()
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &tools.Env{AgentID: "main", StateDir: state, Workspace: root, AllowLoopback: true}
}

// call runs one call and decodes its JSON result; a tool error is text.
func run(t *testing.T, bt *Tool, env *tools.Env, args string) (map[string]any, tools.Result) {
	t.Helper()
	res, err := bt.Run(context.Background(), env, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	var m map[string]any
	if !res.IsError {
		if err := json.Unmarshal([]byte(res.Text), &m); err != nil {
			t.Fatalf("%s: result %q: %v", args, res.Text, err)
		}
	}
	return m, res
}

// refOf finds the ref of the line with role and name in a snapshot.
func refOf(t *testing.T, snap, role, name string) string {
	t.Helper()
	m := regexp.MustCompile(`- ` + role + ` "` + regexp.QuoteMeta(name) + `"[^\n]*\[ref=(e\d+)\]`).FindStringSubmatch(snap)
	if m == nil {
		t.Fatalf("no %s %q with a ref in:\n%s", role, name, snap)
	}
	return m[1]
}

// TestBrowser drives one Chromium through the actions against loopback
// pages, with loopback allowed only through Env.AllowLoopback: a page
// built by JavaScript, a form filled by ref, redirects and URLs the
// rule refuses, files saved in the workspace, the console, a crash of
// Chromium and the recovery after it.
func TestBrowser(t *testing.T) {
	srv := httptest.NewServer(pages())
	t.Cleanup(srv.Close)
	bt := New(Options{})
	t.Cleanup(func() { bt.Close() })
	env := newEnv(t, t.TempDir())

	t.Run("javascript page", func(t *testing.T) {
		out, res := run(t, bt, env, `{"action":"open","targetUrl":"`+srv.URL+`/js"}`)
		if res.IsError || out["tabId"] != "t1" || out["title"] != "JS page" {
			t.Fatalf("open: %s", res.Text)
		}
		out, res = run(t, bt, env, `{"action":"snapshot"}`)
		if res.IsError || !strings.Contains(out["snapshot"].(string), `- heading "Built by script 42"`) {
			t.Fatalf("snapshot: %s", res.Text)
		}
		out, res = run(t, bt, env, `{"action":"console"}`)
		if res.IsError || !strings.Contains(res.Text, `"text":"hello from the page 42"`) {
			t.Errorf("console: %s", res.Text)
		}
	})

	t.Run("form filled by ref", func(t *testing.T) {
		out, res := run(t, bt, env, `{"action":"navigate","targetUrl":"`+srv.URL+`/form"}`)
		if res.IsError {
			t.Fatalf("navigate: %s", res.Text)
		}
		snap := out["snapshot"].(string)
		name, color, send := refOf(t, snap, "textbox", "Name"), refOf(t, snap, "combobox", "Color"), refOf(t, snap, "button", "Send")
		for _, a := range []string{
			`{"action":"act","kind":"type","ref":"` + name + `","text":"Ada <Lovelace>"}`,
			`{"action":"act","kind":"select","ref":"` + color + `","values":["Blue"]}`,
		} {
			if _, res := run(t, bt, env, a); res.IsError {
				t.Fatalf("%s: %s", a, res.Text)
			}
		}
		out, res = run(t, bt, env, `{"action":"act","kind":"click","ref":"`+send+`"}`)
		if res.IsError || out["navigated"] != true {
			t.Fatalf("click: %s", res.Text)
		}
		out, res = run(t, bt, env, `{"action":"snapshot"}`)
		if res.IsError || !strings.Contains(out["snapshot"].(string), `Hello, Ada <Lovelace> (b)`) {
			t.Fatalf("after submit: %s", res.Text)
		}
		if _, res = run(t, bt, env, `{"action":"act","kind":"click","ref":"`+send+`"}`); !res.IsError || !strings.Contains(res.Text, "take a snapshot") {
			t.Errorf("stale ref: %s", res.Text)
		}
	})

	t.Run("refused", func(t *testing.T) {
		cases := []struct{ name, args, want string }{
			{"redirect to a private address", `{"action":"navigate","targetUrl":"` + srv.URL + `/to/10.0.0.1"}`, "blocked by the network rule"},
			{"redirect to the metadata address", `{"action":"navigate","targetUrl":"` + srv.URL + `/to/169.254.169.254"}`, "blocked by the network rule"},
			{"private literal", `{"action":"navigate","targetUrl":"http://192.168.1.1/"}`, "refusing"},
			{"file scheme", `{"action":"navigate","targetUrl":"file:///etc/passwd"}`, `scheme "file" is refused`},
			{"data scheme", `{"action":"open","targetUrl":"data:text/html,<h1>x</h1>"}`, `scheme "data" is refused`},
			{"chrome scheme", `{"action":"navigate","targetUrl":"chrome://settings"}`, `scheme "chrome" is refused`},
			{"javascript scheme", `{"action":"navigate","targetUrl":"javascript:alert(1)"}`, `scheme "javascript" is refused`},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if _, res := run(t, bt, env, c.args); !res.IsError || !strings.Contains(res.Text, c.want) {
					t.Errorf("%s: %s, want an error with %q", c.args, res.Text, c.want)
				}
			})
		}
		// Without tools.network.allowLoopback the same browser may not
		// reach the loopback site.
		strict := *env
		strict.AllowLoopback = false
		if _, res := run(t, bt, &strict, `{"action":"navigate","targetUrl":"`+srv.URL+`/js"}`); !res.IsError || !strings.Contains(res.Text, "loopback") {
			t.Errorf("loopback without allowLoopback: %s", res.Text)
		}
	})

	t.Run("tabs, files", func(t *testing.T) {
		out, res := run(t, bt, env, `{"action":"open","url":"`+srv.URL+`/js"}`)
		if res.IsError || out["tabId"] != "t2" {
			t.Fatalf("second open: %s", res.Text)
		}
		out, res = run(t, bt, env, `{"action":"tabs"}`)
		if res.IsError || out["tabCount"].(float64) != 2 {
			t.Fatalf("tabs: %s", res.Text)
		}
		for _, c := range []struct{ args, magic string }{
			{`{"action":"screenshot","targetId":"t2"}`, "\x89PNG"},
			{`{"action":"screenshot","fullPage":true,"type":"jpeg"}`, "\xff\xd8\xff"},
			{`{"action":"pdf"}`, "%PDF-"},
		} {
			out, res := run(t, bt, env, c.args)
			if res.IsError {
				t.Fatalf("%s: %s", c.args, res.Text)
			}
			data, err := env.Workspace.ReadFile(out["path"].(string))
			if err != nil || !bytes.HasPrefix(data, []byte(c.magic)) || !strings.HasPrefix(out["path"].(string), "browser/") {
				t.Errorf("%s: %v, %q…", c.args, err, data[:min(len(data), 8)])
			}
		}
		if _, res := run(t, bt, env, `{"action":"close","targetId":"t2"}`); res.IsError {
			t.Fatalf("close: %s", res.Text)
		}
		if _, res := run(t, bt, env, `{"action":"focus","targetId":"t2"}`); !res.IsError {
			t.Errorf("focus of a closed tab: %s", res.Text)
		}
	})

	t.Run("crash", func(t *testing.T) {
		st, _ := run(t, bt, env, `{"action":"status"}`)
		pid, _ := st["pid"].(float64)
		if st["running"] != true || pid == 0 {
			t.Fatalf("status: %v", st)
		}
		if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, res := run(t, bt, env, `{"action":"snapshot"}`)
		if !res.IsError || !strings.Contains(res.Text, "next call starts a fresh browser") {
			t.Fatalf("call after the kill: %s", res.Text)
		}
		out, res := run(t, bt, env, `{"action":"open","targetUrl":"`+srv.URL+`/js"}`)
		if res.IsError || out["tabId"] != "t1" {
			t.Fatalf("open after the crash: %s", res.Text)
		}
		st, _ = run(t, bt, env, `{"action":"status"}`)
		if st["running"] != true || st["pid"] == pid {
			t.Errorf("status after recovery: %v", st)
		}
	})

	t.Run("stop, forget", func(t *testing.T) {
		if out, res := run(t, bt, env, `{"action":"stop"}`); res.IsError || out["running"] != false {
			t.Fatalf("stop: %s", res.Text)
		}
		if st, _ := run(t, bt, env, `{"action":"status"}`); st["running"] != false {
			t.Errorf("status after stop: %v", st)
		}
		if _, res := run(t, bt, env, `{"action":"start"}`); res.IsError {
			t.Fatalf("start: %s", res.Text)
		}
		bt.Forget(env.StateDir)
		if st, _ := run(t, bt, env, `{"action":"status"}`); st["running"] != false {
			t.Errorf("status after Forget: %v", st)
		}
	})
}

// TestRefusedBeforeLaunch covers the calls refused without a browser:
// a sandboxed session, browser.enabled false, bad arguments.
func TestRefusedBeforeLaunch(t *testing.T) {
	bt := New(Options{})
	t.Cleanup(func() { bt.Close() })
	cases := []struct {
		name, args, want string
		env              func(*tools.Env)
	}{
		{"sandboxed", `{"action":"start"}`, "not available in a sandboxed session", func(e *tools.Env) { e.Sandboxed = true }},
		{"no state dir", `{"action":"start"}`, "no state directory", func(e *tools.Env) { e.StateDir, e.AgentDir = "", "" }},
		{"unknown action", `{"action":"evaluate"}`, `"action"`, nil},
		{"sandbox target", `{"action":"status","target":"sandbox"}`, "gateway host only", nil},
		{"other profile", `{"action":"status","profile":"chrome"}`, `profile "chrome" does not exist`, nil},
		{"open without url", `{"action":"open"}`, "needs targetUrl", nil},
		{"act without kind", `{"action":"act","ref":"e1"}`, "needs kind", nil},
		{"click without ref", `{"action":"act","kind":"click"}`, "needs ref", nil},
		{"select without values", `{"action":"act","kind":"select","ref":"e2"}`, "needs values", nil},
		{"wait too long", `{"action":"act","kind":"wait","timeMs":600000}`, `"timeMs"`, nil},
		{"unknown argument", `{"action":"status","fn":"alert(1)"}`, "fn", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t, t.TempDir())
			if c.env != nil {
				c.env(env)
			}
			_, res := run(t, bt, env, c.args)
			if !res.IsError || !strings.Contains(res.Text, c.want) {
				t.Errorf("%s: %q, want an error with %q", c.args, res.Text, c.want)
			}
			if len(bt.browsers) != 0 {
				t.Errorf("a browser was started")
			}
		})
	}
}

type envT = tools.Env

var openRoot = os.OpenRoot
