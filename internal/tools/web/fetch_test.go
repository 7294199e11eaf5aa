package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"talon/internal/tools"
)

// hosts is a resolver for test names: the outside edge (DNS) faked, the
// network guard itself real.
type hosts map[string]string

func (h hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := h[host]
	if !ok {
		return nil, fmt.Errorf("no such host %q", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// site is a loopback server with the pages the tests fetch; hits counts
// the requests it received.
type site struct {
	*httptest.Server
	hits atomic.Int64
	port string
}

func newSite(t *testing.T) *site {
	t.Helper()
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc("/blog/post.html", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != userAgent || !strings.HasPrefix(r.Header.Get("Accept"), "text/html") {
			http.Error(w, "bad headers: "+r.Header.Get("User-Agent")+" / "+r.Header.Get("Accept"), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(article)
	})
	for i := 1; i <= 3; i++ {
		next := fmt.Sprintf("/r%d", i+1)
		if i == 3 {
			next = "http://pages.test:PORT/blog/post.html" // by name, through the resolver
		}
		mux.HandleFunc(fmt.Sprintf("/r%d", i), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, strings.Replace(next, "PORT", s.port, 1), http.StatusFound)
		})
	}
	redirect := func(path, to string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, strings.Replace(to, "PORT", s.port, 1), http.StatusMovedPermanently)
		})
	}
	redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
	redirect("/to-intranet", "http://intranet.test:PORT/blog/post.html")
	redirect("/to-localhost", "http://localhost:PORT/blog/post.html")
	redirect("/to-ftp", "ftp://127.0.0.1:PORT/x")
	redirect("/loop", "/loop")
	typed := func(path, ct string, body []byte) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.Write(body)
		})
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	typed("/logo.png", "image/png", png)
	typed("/sniffed", "", png)
	typed("/doc.pdf", "application/pdf", []byte("%PDF-1.7"))
	typed("/blob", "application/octet-stream", []byte{0, 1, 2})
	typed("/notes.txt", "text/plain; charset=utf-8", []byte("  line one\n\n\n  line two  \n"))
	typed("/latin1.txt", "text/plain; charset=ISO-8859-1", []byte("caf\xe9"))
	typed("/klingon.txt", "text/plain; charset=x-klingon", []byte("x"))
	typed("/data.json", "application/json", []byte(`{"a":[1,2],"b":"<&>"}`))
	typed("/big.json", "application/json", []byte(`{"k":"`+strings.Repeat("v", prettyJSONMax)+`"}`))
	typed("/huge.txt", "text/plain", []byte(strings.Repeat("0123456789abcdef", (3<<20)/16)))
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<title>Not here</title><h1>No such page</h1><p>Try the index.</p>")
	})
	mux.HandleFunc("/missing.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.WriteHeader(http.StatusGone)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // until the client gives up
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	s.port = u.Port()
	return s
}

var testHosts = hosts{"pages.test": "127.0.0.1", "intranet.test": "10.0.0.7"}

// call runs the tool once.
func call(t *testing.T, tool *fetchTool, loopback bool, args string) tools.Result {
	t.Helper()
	res, err := tool.Run(context.Background(), &tools.Env{AllowLoopback: loopback}, json.RawMessage(args))
	if err != nil {
		t.Fatalf("web_fetch %s: Talon error %v", args, err)
	}
	return res
}

func decode(t *testing.T, res tools.Result) result {
	t.Helper()
	if res.IsError {
		t.Fatalf("error result: %s", res.Text)
	}
	var r result
	dec := json.NewDecoder(strings.NewReader(res.Text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("result %s: %v", res.Text, err)
	}
	if r.Length != utf8.RuneCountInString(r.Text) {
		t.Errorf("length %d, text has %d characters", r.Length, utf8.RuneCountInString(r.Text))
	}
	return r
}

func TestFetchPage(t *testing.T) {
	s := newSite(t)
	tool := newTool(testHosts, Timeout)
	for _, mode := range []struct{ arg, name, golden string }{
		{"", "markdown", "article.md"}, {`,"extractMode":"markdown"`, "markdown", "article.md"}, {`,"extractMode":"text"`, "text", "article.txt"},
	} {
		page := s.URL + "/blog/post.html"
		r := decode(t, call(t, tool, true, `{"url":"`+page+`#frag"`+mode.arg+`}`))
		want, err := os.ReadFile("testdata/" + mode.golden)
		if err != nil {
			t.Fatal(err)
		}
		wantText := strings.ReplaceAll(string(want), "http://127.0.0.1:8080", s.URL)
		if r.URL != page || r.FinalURL != page || r.Status != 200 || r.ContentType != "text/html; charset=utf-8" ||
			r.Title != "Test & Page" || r.ExtractMode != mode.name || r.Truncated || r.Text != wantText || r.Warning != "" {
			t.Errorf("mode %q: %+v\nwant text:\n%s", mode.arg, r, wantText)
		}
	}
	r := decode(t, call(t, tool, true, `{"url":"`+s.URL+`/blog/post.html","maxChars":100}`))
	if !r.Truncated || r.Length != 100 {
		t.Errorf("maxChars 100: truncated %v, length %d", r.Truncated, r.Length)
	}
	res := call(t, tool, true, `{"url":"`+s.URL+`/blog/post.html"}`)
	if strings.Contains(res.Text, `\u0026`) || !strings.Contains(res.Text, "?x=1&y=2") {
		t.Errorf("result escapes URLs: %s", res.Text)
	}
}

func TestFetchContentTypes(t *testing.T) {
	s := newSite(t)
	tool := newTool(testHosts, Timeout)
	cases := []struct {
		path, wantText, wantErr string
	}{
		{"/notes.txt", "line one\n\n\n  line two", ""},
		{"/latin1.txt", "café", ""},
		{"/data.json", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": \"<&>\"\n}", ""},
		{"/big.json", `{"k":"` + strings.Repeat("v", prettyJSONMax) + `"}`, ""},
		{"/logo.png", "", "unsupported content type image/png"},
		{"/sniffed", "", "unsupported content type image/png"},
		{"/doc.pdf", "", "unsupported content type application/pdf"},
		{"/blob", "", "unsupported content type application/octet-stream"},
		{"/klingon.txt", "", `unsupported charset "x-klingon"`},
		{"/missing", "", "/missing: HTTP 404 Not Found; the response says: # No such page\n\nTry the index."},
		{"/missing.png", "", "/missing.png: HTTP 410 Gone"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			res := call(t, tool, true, `{"url":"`+s.URL+tc.path+`"}`)
			if tc.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Text, tc.wantErr) {
					t.Errorf("got %+v, want an error with %q", res, tc.wantErr)
				}
				return
			}
			if r := decode(t, res); r.Text != tc.wantText || r.Truncated || r.Title != "" {
				t.Errorf("got %+v, want text %q", r, tc.wantText)
			}
		})
	}
}

// TestFetchBodyCap: of a 3 MiB body only 2 MiB are read, and the result
// says so.
func TestFetchBodyCap(t *testing.T) {
	s := newSite(t)
	r := decode(t, call(t, newTool(testHosts, Timeout), true, `{"url":"`+s.URL+`/huge.txt","maxChars":200000}`))
	if !r.Truncated || r.Length != 200000 || !strings.Contains(r.Warning, "longer than 2 MiB") {
		t.Errorf("truncated %v, length %d, warning %q", r.Truncated, r.Length, r.Warning)
	}
	f, err := newTool(testHosts, Timeout).get(context.Background(), newTool(testHosts, Timeout).loopback, mustURL(t, s.URL+"/huge.txt"))
	if err != nil || len(f.body) != MaxBodyBytes || !f.capped {
		t.Errorf("read %d bytes, capped %v, %v", len(f.body), f.capped, err)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestFetchRedirects: a chain of redirects, one of them by name, is
// followed; a redirect to a refused address, a non-web scheme or past
// the limit is an error naming the reason.
func TestFetchRedirects(t *testing.T) {
	s := newSite(t)
	tool := newTool(testHosts, Timeout)
	r := decode(t, call(t, tool, true, `{"url":"`+s.URL+`/r1"}`))
	if want := "http://pages.test:" + s.port + "/blog/post.html"; r.FinalURL != want || r.URL != s.URL+"/r1" || r.Title != "Test & Page" {
		t.Errorf("final URL %q, want %q (%+v)", r.FinalURL, want, r)
	}
	for _, tc := range []struct{ path, want string }{
		{"/to-metadata", "(cloud metadata endpoint)"},
		{"/to-intranet", "refusing 10.0.0.7 (private address, RFC 1918)"},
		{"/to-localhost", `refusing host "localhost" (localhost)`},
		{"/to-ftp", `refusing redirect to scheme "ftp"`},
		{"/loop", "limit is 5 redirects"},
	} {
		before := s.hits.Load()
		res := call(t, tool, true, `{"url":"`+s.URL+tc.path+`"}`)
		if !res.IsError || !strings.Contains(res.Text, tc.want) || !strings.Contains(res.Text, "following a redirect to") {
			t.Errorf("%s: %+v, want an error with %q", tc.path, res, tc.want)
		}
		if hits, want := s.hits.Load()-before, map[bool]int64{true: 6, false: 1}[tc.path == "/loop"]; hits != want {
			t.Errorf("%s: %d requests reached the server, want %d", tc.path, hits, want)
		}
	}
}

// TestFetchRefused: without allowLoopback, loopback in every spelling,
// local names and metadata addresses are refused before any connection.
func TestFetchRefused(t *testing.T) {
	s := newSite(t)
	tool := newTool(testHosts, Timeout)
	for _, host := range []string{
		"127.0.0.1:" + s.port, "localhost:" + s.port, "localhost.:" + s.port, "169.254.169.254", "0x7f.1:" + s.port,
		"017700000001:" + s.port, "2130706433:" + s.port, "[::ffff:127.0.0.1]:" + s.port, "[::1]:" + s.port,
		"pages.test:" + s.port, "intranet.test", "printer.local", "metadata.google.internal", "10.1.2.3", "192.168.0.1",
	} {
		res := call(t, tool, false, `{"url":"http://`+host+`/blog/post.html"}`)
		if !res.IsError || !strings.Contains(res.Text, "netguard: refusing") {
			t.Errorf("%s: %+v, want a refusal", host, res)
		}
	}
	if n := s.hits.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
	// The same server is reachable when the run allows loopback.
	if r := decode(t, call(t, tool, true, `{"url":"`+s.URL+`/notes.txt"}`)); r.Status != 200 || s.hits.Load() != 1 {
		t.Errorf("with allowLoopback: %+v, %d hits", r, s.hits.Load())
	}
}

// TestFetchTimeout: a server that never answers is reported as a
// timeout, not waited for.
func TestFetchTimeout(t *testing.T) {
	s := newSite(t)
	res := call(t, newTool(testHosts, 200*time.Millisecond), true, `{"url":"`+s.URL+`/slow"}`)
	if !res.IsError || !strings.Contains(res.Text, "timed out after 200ms") {
		t.Errorf("got %+v", res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := New().Run(ctx, &tools.Env{AllowLoopback: true}, json.RawMessage(`{"url":"`+s.URL+`/slow"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Text, "cancelled") {
		t.Errorf("cancelled: %+v, %v", res, err)
	}
}

func TestArguments(t *testing.T) {
	cases := []struct{ args, want string }{
		{`{}`, `missing required argument "url"`},
		{`{"url":""}`, `argument "url" must not be empty`},
		{`{"url":42}`, `argument "url" must be a string`},
		{`{"url":"ftp://example.com/x"}`, `not scheme "ftp"`},
		{`{"url":"javascript:alert(1)"}`, `not scheme "javascript"`},
		{`{"url":"file:///etc/passwd"}`, `not scheme "file"`},
		{`{"url":"example.com/page"}`, `must be an absolute http or https URL`},
		{`{"url":"http://"}`, `has no host`},
		{`{"url":"http://user:pw@example.com/"}`, `must not contain credentials`},
		{`{"url":"http://exa mple.com/"}`, `not a valid URL`},
		{`{"url":"https://example.com/` + strings.Repeat("a", 4097) + `"}`, `is 4117 characters; the limit is 4096`},
		{`{"url":"https://example.com","extractMode":"html"}`, `argument "extractMode" must be one of "markdown", "text"`},
		{`{"url":"https://example.com","maxChars":99}`, `argument "maxChars" must be an integer from 100 to 200000`},
		{`{"url":"https://example.com","maxChars":200001}`, `argument "maxChars" must be an integer from 100 to 200000`},
		{`{"url":"https://example.com","maxChars":1.5}`, `argument "maxChars" must be an integer`},
		{`{"url":"https://example.com","selector":"main"}`, `unknown argument "selector"; allowed arguments: url, extractMode, maxChars`},
		{`[1]`, `arguments must be a JSON object`},
	}
	tool := New()
	for _, tc := range cases {
		res, err := tool.Run(context.Background(), &tools.Env{}, json.RawMessage(tc.args))
		if err != nil || !res.IsError || !strings.Contains(res.Text, tc.want) {
			t.Errorf("%s: %+v, %v; want an error with %q", tc.args, res, err, tc.want)
		}
	}
	req, err := parseRequest(json.RawMessage(`{"url":" https://example.com/a#b ","maxChars":"150","extractMode":"text"}`))
	if err != nil || req.url.String() != "https://example.com/a" || req.markdown || req.maxChars != 150 {
		t.Errorf("parsed %+v, %v", req, err)
	}
	if req, err := parseRequest(json.RawMessage(`{"url":"HTTPS://example.com"}`)); err != nil || !req.markdown || req.maxChars != DefaultMaxChars {
		t.Errorf("defaults: %+v, %v", req, err)
	}
}

func TestSchema(t *testing.T) {
	tool := New()
	if err := tools.LintSchema(tool.Schema()); err != nil {
		t.Error(err)
	}
	if tool.Name() != "web_fetch" || tool.Description() == "" {
		t.Errorf("name %q", tool.Name())
	}
}
