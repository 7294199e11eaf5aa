package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestScenarios runs every testdata/scenarios/*.txtar file: a config, the
// workspace files, and a script of model answers, requests and checks,
// against a real gateway, real SQLite and a scripted model on loopback.
//
// Script commands, one per line (# starts a comment):
//
//	llm {json}            queue a model answer: {"content":…,"tool_calls":[{"name":…,"arguments":{…}}]}
//	header Name: value    send this header from now on (empty value: stop sending it)
//	post {json}           POST /v1/chat/completions (streams when the body says so)
//	status N              the last response's HTTP status
//	content TEXT          the last answer's text, exactly ("…" for escapes)
//	contains TEXT         the last raw response body contains TEXT
//	finish REASON         the last answer's finish_reason
//	toolcall NAME ARGS    the last answer asked the client to call NAME with ARGS
//	llmcount N            the model has been called N times in all
//	llmsaw N TEXT         the model's Nth request body contains TEXT
//	llmlacks N TEXT       … does not contain TEXT
//	llmtools N a,b,c      the tools offered in the Nth request, in order
//	file PATH TEXT        PATH (under the state dir) holds exactly TEXT
//	nofile PATH           PATH does not exist
//	restart               stop the gateway and start a new one on the same state dir
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) { runScenario(t, f) })
	}
}

func runScenario(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sections := parseTxtar(string(data))
	llm := newScriptedLLM(t)
	dir := t.TempDir()
	script := ""
	for name, body := range sections {
		switch {
		case name == "script":
			script = body
		case name == "talon.json":
			writeFile(t, filepath.Join(dir, name), []byte(strings.ReplaceAll(body, "$LLM", llm.srv.URL+"/v1")))
		default:
			writeFile(t, filepath.Join(dir, name), []byte(body))
		}
	}
	ts := startServer(t, dir, nil)
	headers := map[string]string{"Content-Type": "application/json"}
	var last reply
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, arg, _ := strings.Cut(line, " ")
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%s:%d: %s: %s", filepath.Base(path), n+1, line, strings.TrimSpace(fmt.Sprintf(format, args...)))
		}
		nth := func() (int, string) {
			num, rest, _ := strings.Cut(arg, " ")
			i, err := strconv.Atoi(num)
			if err != nil {
				fail("want a request number")
			}
			return i, unquote(t, rest)
		}
		switch cmd {
		case "llm":
			var s scripted
			if err := json.Unmarshal([]byte(arg), &s); err != nil {
				fail("bad answer: %v", err)
			}
			llm.push(s)
		case "header":
			k, v, _ := strings.Cut(arg, ":")
			if v = strings.TrimSpace(v); v == "" {
				delete(headers, k)
			} else {
				headers[k] = v
			}
		case "post":
			last = ts.post(headers, arg)
		case "status":
			if want, _ := strconv.Atoi(arg); last.status != want {
				fail("status %d; body %s", last.status, last.body)
			}
		case "content":
			if want := unquote(t, arg); last.content != want {
				fail("content %q", last.content)
			}
		case "contains":
			if !strings.Contains(last.body, unquote(t, arg)) {
				fail("body %s", last.body)
			}
		case "finish":
			if last.finish != arg {
				fail("finish %q", last.finish)
			}
		case "toolcall":
			if !slices.Contains(last.toolCalls, arg) {
				fail("tool calls %q", last.toolCalls)
			}
		case "llmcount":
			if want, _ := strconv.Atoi(arg); llm.count() != want {
				fail("the model was called %d times", llm.count())
			}
		case "llmsaw", "llmlacks":
			i, text := nth()
			body := string(llm.request(i))
			if body == "" {
				fail("no request %d", i)
			}
			if strings.Contains(body, text) != (cmd == "llmsaw") {
				fail("request %d: %s", i, body)
			}
		case "llmtools":
			i, list := nth()
			var req struct {
				Tools []struct {
					Function struct{ Name string } `json:"function"`
				} `json:"tools"`
			}
			json.Unmarshal(llm.request(i), &req)
			var got []string
			for _, tl := range req.Tools {
				got = append(got, tl.Function.Name)
			}
			if strings.Join(got, ",") != list {
				fail("tools %s", strings.Join(got, ","))
			}
		case "file":
			p, text, _ := strings.Cut(arg, " ")
			got, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil || string(got) != unquote(t, text) {
				fail("file holds %q (%v)", got, err)
			}
		case "nofile":
			if _, err := os.Stat(filepath.Join(dir, arg)); !os.IsNotExist(err) {
				fail("%s exists (%v)", arg, err)
			}
		case "restart":
			ts.stop()
			ts = startServer(t, dir, nil)
		default:
			fail("unknown command %q", cmd)
		}
	}
}

// parseTxtar splits a txtar archive into its files; the comment before the
// first file is dropped.
func parseTxtar(s string) map[string]string {
	out := map[string]string{}
	name := ""
	var b strings.Builder
	flush := func() {
		if name != "" {
			out[name] = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			name = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			continue
		}
		b.WriteString(line)
	}
	flush()
	return out
}
