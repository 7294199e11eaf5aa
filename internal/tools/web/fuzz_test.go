package web

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExtract feeds any bytes through the path a fetched HTML body takes
// (charset decoding, parsing, rendering): it never panics, and the text
// and title are valid UTF-8 within their limits.
func FuzzExtract(f *testing.F) {
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(article), "", "<p>a<br>b</p>", "<table><tr><td><table><tr><td>x</td></tr></table></td></tr></table>",
		"<pre>```\n\x00</pre>", "<ol start=-5><li>a<ul><li>b</li></ul></li></ol>", "<a href=\"%zz\">x</a><a href=\"/\"><img alt=a></a>",
		strings.Repeat("<div>", 520), "<meta charset=shift_jis><p>\x93\xfa</p>", "\xff\xfe<\x00p\x00>\x00",
		"<blockquote><ul><li><pre>x</pre></li></ul></blockquote>", "<title>\xff</title><svg><title>s</title></svg>",
	} {
		f.Add([]byte(seed), true, uint16(100))
		f.Add([]byte(seed), false, uint16(5000))
	}
	f.Fuzz(func(t *testing.T, body []byte, markdown bool, limit uint16) {
		maxChars := minMaxChars + int(limit)
		p := extractHTML(decodeHTML(body, "text/html"), pageURL, markdown, maxChars)
		if !utf8.ValidString(p.Text) || !utf8.ValidString(p.Title) || !utf8.ValidString(p.Warning) {
			t.Fatalf("invalid UTF-8: %q / %q", p.Title, p.Text)
		}
		if n := utf8.RuneCountInString(p.Text); n > maxChars {
			t.Fatalf("text has %d characters, limit %d", n, maxChars)
		}
		if n := utf8.RuneCountInString(p.Title); n > maxTitleChars {
			t.Fatalf("title has %d characters", n)
		}
	})
}

// FuzzArguments: any arguments either fail with a message or give an
// http(s) URL with a host and a mode and limit in range.
func FuzzArguments(f *testing.F) {
	for _, seed := range []string{`{"url":"https://example.com"}`, `{"url":"http://[::1]:80/x?y#z","maxChars":100,"extractMode":"text"}`,
		`{"url":"javascript:x"}`, `"{\"url\":\"http://a\"}"`, `{"url":"http://a@b"}`, `{}`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := parseRequest(json.RawMessage(raw))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if (req.url.Scheme != "http" && req.url.Scheme != "https") || req.url.Hostname() == "" || req.url.User != nil ||
			req.maxChars < minMaxChars || req.maxChars > maxMaxChars {
			t.Fatalf("accepted %q as %+v", raw, req)
		}
	})
}
