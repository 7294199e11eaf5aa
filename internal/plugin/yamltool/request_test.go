package yamltool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func linkedinYAML(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("testdata/publish_linkedin.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

var linkedinEnv = map[string]string{"LINKEDIN_ACCESS_TOKEN": "tok-123", "LINKEDIN_PERSON_URN": "abc"}

// sent is what a request carries, for comparison.
type sent struct {
	Method, URL string
	Header      http.Header
	Body        string
}

func capture(t *testing.T, req *http.Request) sent {
	t.Helper()
	b, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return sent{req.Method, req.URL.String(), req.Header, string(b)}
}

func TestLinkedInExample(t *testing.T) {
	tool, err := Parse("publish_linkedin.yaml", []byte(linkedinYAML(t)))
	if err != nil {
		t.Fatal(err)
	}
	if tool.Timeout.Milliseconds() != 15000 || tool.Description != "Publish a text post to LinkedIn" {
		t.Errorf("timeout %v description %q", tool.Timeout, tool.Description)
	}
	tests := []struct {
		name string
		args map[string]any
		want string // body
	}{
		{"default visibility", map[string]any{"text": "Hello"},
			`{"author":"urn:li:person:abc","commentary":"Hello","visibility":"PUBLIC"}`},
		{"explicit visibility", map[string]any{"text": "Hi \"there\" <b> & \n", "visibility": "CONNECTIONS"},
			`{"author":"urn:li:person:abc","commentary":"Hi \"there\" <b> & \n","visibility":"CONNECTIONS"}`},
		{"injection stays literal", map[string]any{"text": "{{env.LINKEDIN_ACCESS_TOKEN}}"},
			`{"author":"urn:li:person:abc","commentary":"{{env.LINKEDIN_ACCESS_TOKEN}}","visibility":"PUBLIC"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call, err := tool.Request(tc.args, envOf(linkedinEnv))
			if err != nil {
				t.Fatal(err)
			}
			want := sent{"POST", "https://api.linkedin.com/rest/posts", http.Header{
				"Authorization": {"Bearer tok-123"},
				"Content-Type":  {"application/json"},
			}, tc.want}
			if diff := cmp.Diff(want, capture(t, call.Req)); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
	got := tool.Summarize(201, []byte(`{"id":"urn:li:share:7"}`))
	if got != "Post published. ID: urn:li:share:7" {
		t.Errorf("summary %q", got)
	}
	got = tool.Summarize(401, []byte(`{"status":401,"message":"Invalid access token"}`))
	if got != "LinkedIn error (401): Invalid access token" {
		t.Errorf("error summary %q", got)
	}
}

// TestLinkedInLoopback sends the built request, with only its origin
// moved to a loopback stand-in, and checks what the server received.
func TestLinkedInLoopback(t *testing.T) {
	type received struct {
		Method, Path, Auth, ContentType, Body string
	}
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"urn:li:share:42"}`)
	}))
	defer srv.Close()
	tool, err := Parse("publish_linkedin.yaml", []byte(linkedinYAML(t)))
	if err != nil {
		t.Fatal(err)
	}
	call, err := tool.Request(map[string]any{"text": "Hello"}, envOf(linkedinEnv))
	if err != nil {
		t.Fatal(err)
	}
	req := call.Req
	// The package sends nothing; this test stands in for the guarded
	// client and redirects the request to loopback itself.
	req.URL.Scheme, req.URL.Host, req.Host = "http", strings.TrimPrefix(srv.URL, "http://"), ""
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := received{"POST", "/rest/posts", "Bearer tok-123", "application/json",
		`{"author":"urn:li:person:abc","commentary":"Hello","visibility":"PUBLIC"}`}
	if diff := cmp.Diff(want, <-got); diff != "" {
		t.Errorf("server received (-want +got):\n%s", diff)
	}
	if s := tool.Summarize(resp.StatusCode, body); s != "Post published. ID: urn:li:share:42" {
		t.Errorf("summary %q", s)
	}
}

const shapes = `name: shapes
description: Exercise every body and url form
parameters:
  q: {type: string, description: query}
  n: {type: integer, description: a count, default: 5}
  x: {type: number, description: a ratio}
  on: {type: boolean, description: a flag}
  mode: {type: string, description: a mode, enum: [a, b]}
request:
  method: %s
  url: "https://api.example.com/v1/{{params.q}}/items?q={{params.q}}&n={{params.n}}&k=lit"
  headers:
    X-Query: "q={{params.q}}"
    Authorization: "Token {{env.TOKEN}}"
%s
requires_env: [TOKEN]
allowed_hosts: ["*.example.com"]
`

func shapesTool(t *testing.T, method, body string) *Tool {
	t.Helper()
	tool, err := Parse("shapes.yaml", []byte(fmt.Sprintf(shapes, method, body)))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestRequestShapes(t *testing.T) {
	env := envOf(map[string]string{"TOKEN": "s3cr3t"})
	tests := []struct {
		name, method, body string
		args               map[string]any
		want               sent
	}{
		{"get escapes path and query", "GET", "", map[string]any{"q": "a/b c&d=e?{{env.TOKEN}}"}, sent{
			"GET", "https://api.example.com/v1/a%2Fb%20c&d=e%3F%7B%7Benv.TOKEN%7D%7D/items?q=a%2Fb+c%26d%3De%3F%7B%7Benv.TOKEN%7D%7D&n=5&k=lit",
			http.Header{"X-Query": {"q=a/b c&d=e?{{env.TOKEN}}"}, "Authorization": {"Token s3cr3t"}}, ""}},
		{"json typed values", "POST", "  body:\n    type: json\n    content:\n      n: \"{{params.n}}\"\n      x: \"{{params.x}}\"\n      on: \"{{params.on}}\"\n      both: \"{{params.n}}/{{params.on}}\"\n      absent: \"{{params.mode}}\"\n      list: [\"{{params.mode}}\", 1, true, null, {k: \"{{params.q}}\"}]\n",
			map[string]any{"q": "{{params.n}}", "n": float64(7), "x": 0.5, "on": true}, sent{
				"POST", "https://api.example.com/v1/%7B%7Bparams.n%7D%7D/items?q=%7B%7Bparams.n%7D%7D&n=7&k=lit",
				http.Header{"X-Query": {"q={{params.n}}"}, "Authorization": {"Token s3cr3t"}, "Content-Type": {"application/json"}},
				`{"n":7,"x":0.5,"on":true,"both":"7/true","list":[null,1,true,null,{"k":"{{params.n}}"}]}`}},
		{"form encodes", "PUT", "  body:\n    type: form\n    content:\n      q: \"{{params.q}}\"\n      \"a b\": lit&\n      mode: \"{{params.mode}}\"\n      n: 3\n",
			map[string]any{"q": "x=1&y={{env.TOKEN}}"}, sent{
				"PUT", "https://api.example.com/v1/x=1&y=%7B%7Benv.TOKEN%7D%7D/items?q=x%3D1%26y%3D%7B%7Benv.TOKEN%7D%7D&n=5&k=lit",
				http.Header{"X-Query": {"q=x=1&y={{env.TOKEN}}"}, "Authorization": {"Token s3cr3t"}, "Content-Type": {"application/x-www-form-urlencoded"}},
				"q=x%3D1%26y%3D%7B%7Benv.TOKEN%7D%7D&a+b=lit%26&n=3"}},
		{"text raw", "PATCH", "  body:\n    type: text\n    content: \"mode={{params.mode}} q={{params.q}}\"\n",
			map[string]any{"q": "{{env.TOKEN}}", "mode": "b"}, sent{
				"PATCH", "https://api.example.com/v1/%7B%7Benv.TOKEN%7D%7D/items?q=%7B%7Benv.TOKEN%7D%7D&n=5&k=lit",
				http.Header{"X-Query": {"q={{env.TOKEN}}"}, "Authorization": {"Token s3cr3t"}, "Content-Type": {"text/plain; charset=utf-8"}},
				"mode=b q={{env.TOKEN}}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := shapesTool(t, tc.method, tc.body)
			call, err := tool.Request(tc.args, env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, capture(t, call.Req)); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	tool := shapesTool(t, "GET", "")
	env := envOf(map[string]string{"TOKEN": "t"})
	tests := []struct {
		name string
		args map[string]any
		env  func(string) (string, bool)
		want string
	}{
		{"unknown arg", map[string]any{"zz": 1}, env, `api tool "shapes": unknown argument "zz" (parameters: q, n, x, on, mode)`},
		{"wrong type", map[string]any{"q": 3.0}, env, `api tool "shapes": argument "q": want a string, got a number`},
		{"not integer", map[string]any{"n": 2.5}, env, `argument "n": 2.5 is not an integer`},
		{"number as string", map[string]any{"x": "1"}, env, `argument "x": want a number, got a string`},
		{"bool as string", map[string]any{"on": "true"}, env, `argument "on": want a boolean, got a string`},
		{"enum", map[string]any{"mode": "c"}, env, `argument "mode": "c" is not one of a, b`},
		{"object", map[string]any{"q": map[string]any{}}, env, `argument "q": want a string, got an object`},
		{"missing env", nil, envOf(nil), `api tool "shapes": env TOKEN is not set`},
		{"dot segment", map[string]any{"q": ".."}, env, `api tool "shapes": url path has a ".." segment`},
		{"dot", map[string]any{"q": "."}, env, `api tool "shapes": url path has a "." segment`},
		{"header injection", map[string]any{"q": "a\r\nX-Evil: 1"}, env, `api tool "shapes": header X-Query: value contains a line break or NUL`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Request(tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	linkedin, err := Parse("l.yaml", []byte(linkedinYAML(t)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = linkedin.Request(map[string]any{}, envOf(linkedinEnv))
	if err == nil || err.Error() != `api tool "publish_linkedin": argument "text" is required` {
		t.Errorf("missing required: %v", err)
	}
}

func TestSummarize(t *testing.T) {
	yaml := base + `response:
  summary: "first={{response.data.items.0.name}} second={{ response.data.items.1.name }} n={{response.n}} ok={{response.ok}} obj={{response.data.items.1}} nil={{response.z}} missing={{response.data.items.9.name}} deep={{response.n.x}} inj={{response.inj}}"
`
	tool, err := Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"nested", 200, `{"data":{"items":[{"name":"a"},{"name":"b"}]},"n":12345678901234567890,"ok":false,"z":null,"inj":"{{response.n}}"}`,
			`first=a second=b n=12345678901234567890 ok=false obj={"name":"b"} nil=null missing=(none) deep=(none) inj={{response.n}}`},
		{"not json", 200, `<html>`,
			`first=(none) second=(none) n=(none) ok=(none) obj=(none) nil=(none) missing=(none) deep=(none) inj=(none)`},
		{"error without template", 503, "busy", "HTTP 503: busy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tool.Summarize(tc.status, []byte(tc.body)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	long := tool.Summarize(500, []byte(strings.Repeat("é", maxSummary)))
	if len(long) > maxSummary+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("long summary is %d bytes", len(long))
	}
}

func TestSchema(t *testing.T) {
	tool, err := Parse("l.yaml", []byte(linkedinYAML(t)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"text":{"type":"string","description":"Post content"},"visibility":{"type":"string","enum":["PUBLIC","CONNECTIONS"],"default":"PUBLIC","description":"Post visibility"}},"required":["text"],"additionalProperties":false}`
	if got := string(tool.Schema()); got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if !json.Valid(shapesTool(t, "GET", "").Schema()) {
		t.Error("shapes schema is not valid JSON")
	}
}

func TestHostAllowed(t *testing.T) {
	tool := &Tool{AllowedHost: []string{"api.example.com", "*.example.org"}}
	tests := []struct {
		host string
		want bool
	}{
		{"api.example.com", true},
		{"API.Example.COM", true},
		{"api.example.com.", true},
		{"example.com", false},
		{"x.api.example.com", false},
		{"a.example.org", true},
		{"a.b.example.org", true},
		{"example.org", false},
		{"evilexample.org", false},
		{"example.org.evil.com", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := tool.hostAllowed(tc.host); got != tc.want {
			t.Errorf("hostAllowed(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// TestRedactCall: every form an env value takes in a request, or in a
// message quoting it, turns back into its tag; a value inside another
// value does not split it; a transport error shows the url as written.
func TestRedactCall(t *testing.T) {
	const yml = `name: two
description: Two secrets
request:
  method: GET
  url: "https://api.example.com/{{env.LONG}}?k={{env.SHORT}}"
requires_env: [SHORT, LONG]
allowed_hosts: [api.example.com]
`
	tool, err := Parse("two.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	const short, long = "ab/c d", "xx-ab/c d-é\"\\"
	call, err := tool.Request(nil, envOf(map[string]string{"SHORT": short, "LONG": long}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, in, want string }{
		{"raw", "got " + short + "!", "got {{env.SHORT}}!"},
		{"path escaped", "/" + url.PathEscape(short), "/{{env.SHORT}}"},
		{"query escaped", "k=" + url.QueryEscape(short), "k={{env.SHORT}}"},
		{"json escaped", `{"v":` + string(mustJSON(long)) + `}`, `{"v":"{{env.LONG}}"}`},
		{"go quoted", strconv.Quote(long), `"{{env.LONG}}"`},
		{"longest first", long + " " + short, "{{env.LONG}} {{env.SHORT}}"},
		{"rendered url", call.Req.URL.String(), "https://api.example.com/{{env.LONG}}?k={{env.SHORT}}"},
		{"untouched", "nothing here", "nothing here"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := call.Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	ue := &url.Error{Op: "Get", URL: call.Req.URL.String(), Err: fmt.Errorf("refusing %s", call.Req.URL.Query().Get("k"))}
	if got, want := call.Error(ue), "Get https://api.example.com/{{env.LONG}}?k={{env.SHORT}}: refusing {{env.SHORT}}"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
	if _, err := tool.Request(nil, envOf(map[string]string{"LONG": long})); err == nil ||
		err.Error() != `api tool "two": env SHORT is not set` {
		t.Errorf("missing env: %v", err)
	} else if _, ok := errors.AsType[*EnvUnsetError](err); !ok {
		t.Errorf("missing env: %T is not an *EnvUnsetError", err)
	}
}
