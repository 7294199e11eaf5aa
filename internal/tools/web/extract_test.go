package web

import (
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var pageURL, _ = url.Parse("http://127.0.0.1:8080/blog/post.html")

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// TestArticleGolden: the sample page without its header, nav, aside,
// footer, scripts, styles and form, in both modes.
func TestArticleGolden(t *testing.T) {
	src, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		markdown bool
		golden   string
	}{{true, "article.md"}, {false, "article.txt"}} {
		p := extractHTML(decodeHTML(src, "text/html"), pageURL, tc.markdown, DefaultMaxChars)
		if p.Title != "Test & Page" || p.Truncated || p.Warning != "" {
			t.Errorf("%s: title %q, truncated %v, warning %q", tc.golden, p.Title, p.Truncated, p.Warning)
		}
		golden(t, tc.golden, p.Text)
	}
}

func TestExtract(t *testing.T) {
	cases := []struct {
		name, html string
		markdown   bool
		want       string
	}{
		{"main wins over body and articles", `<p>outside</p><article><p>art</p></article><main><p>inside</p></main>`, true, "inside"},
		{"all outermost articles", `<p>x</p><article><p>one</p><article><p>nested</p></article></article><div><article>two</article></div>`, true, "one\n\nnested\n\ntwo"},
		{"body without chrome", `<header>H</header><nav>N</nav><div>Body <b>bold</b> text</div><aside>A</aside><footer>F</footer>`, true, "Body bold text"},
		{"article keeps its own header and footer", `<header>site</header><article><header><h2>T</h2></header><p>x</p><footer>by me</footer></article>`, true, "## T\n\nx\n\nby me"},
		{"a form wrapping the page is kept", `<form action=/x><h1>Title</h1><p>words</p><form><input></form></form>`, true, "# Title\n\nwords"},
		{"a search form is dropped", `<p>a</p><form><label>Search</label><input></form><p>b</p>`, true, "a\n\nb"},
		{"hidden and aria-hidden", `<p hidden>h</p><p aria-hidden="true">ah</p><p>shown</p>`, true, "shown"},
		{"template noscript svg iframe", `<template><p>t</p></template><noscript>ns</noscript><svg><text>s</text><title>st</title></svg><iframe>if</iframe><p>ok</p>`, true, "ok"},
		{"entities and white space", "<p>  a&amp;b \n\t &quot;c&quot; &#x263A; &nbsp; d  </p>", false, `a&b "c" ☺ d`},
		{"headings levels", `<h3>three</h3><h6>six <i>it</i></h6>`, true, "### three\n\n###### six it"},
		{"headings in text mode", `<h3>three</h3><p>p</p>`, false, "three\n\np"},
		{"card link wrapping blocks is text", `<a href="/c"><div>Card</div><p>desc</p></a>`, true, "Card\n\ndesc"},
		{"image link uses alt", `<p><a href="/i"><img src=x.png alt="Logo"></a></p>`, true, "[Logo](http://127.0.0.1:8080/i)"},
		{"empty link dropped", `<p>a <a href="/e"></a> b</p>`, true, "a b"},
		{"mailto kept, data dropped", `<p><a href="mailto:x@example.com">mail</a> <a href="data:text/html,x">d</a></p>`, true, "[mail](mailto:x@example.com) d"},
		{"parens in urls escaped", `<p><a href="/w/A_(b)">w</a></p>`, true, "[w](http://127.0.0.1:8080/w/A_%28b%29)"},
		{"base href", `<head><base href="https://cdn.example.org/root/"></head><p><a href="p">p</a></p>`, true, "[p](https://cdn.example.org/root/p)"},
		{"protocol-relative link", `<p><a href="//other.example/x">o</a></p>`, true, "[o](http://other.example/x)"},
		{"code with a backtick", "<p><code>a`b</code></p>", true, "`` a`b ``"},
		{"fence longer than the code's", "<pre>x\n```\ny</pre>", true, "````\nx\n```\ny\n````"},
		{"pre keeps white space in text mode", "<pre>  a\n\n    b</pre>", false, "  a\n\n    b"},
		{"ordered list start", `<ol start="9"><li>a</li><li>b</li></ol>`, true, "9. a\n10. b"},
		{"list item paragraphs", `<ul><li><p>a</p><p>more</p></li><li>b</li></ul>`, true, "- a\n\n  more\n\n- b"},
		{"table without header", `<table><caption>Cap</caption><tr><td>a</td><td><p>b</p><p>c</p></td></tr><tr><td></td></tr></table>`, true, "Cap\n\n| a | b c |"},
		{"table in text mode", `<table><thead><tr><th>h</th></tr></thead><tbody><tr><td>v</td></tr></tbody></table>`, false, "h\nv"},
		{"nested table", `<table><tr><td><table><tr><td>in</td><td>ner</td></tr></table></td><td>x</td></tr></table>`, true, "| \\| in \\| ner \\| | x |"},
		{"blockquote", `<blockquote>q<p>r</p></blockquote>`, true, "> q\n\n> r"},
		{"hr", `<p>a</p><hr><p>b</p>`, true, "a\n\n---\n\nb"},
		{"br", `<p>a<br>b<br><br>c</p>`, true, "a\nb\nc"},
		{"control characters", "<p>a\x01b\x7fc</p>", true, "abc"},
		{"no body at all", ``, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := extractHTML(tc.html, pageURL, tc.markdown, DefaultMaxChars)
			if p.Text != tc.want || p.Truncated {
				t.Errorf("text = %q (truncated %v), want %q", p.Text, p.Truncated, tc.want)
			}
		})
	}
}

// TestExtractLimits: maxChars cuts the text at a character boundary and
// says so; a page too deep for the parser still yields its words.
func TestExtractLimits(t *testing.T) {
	long := "<p>" + strings.Repeat("é", 300) + "</p>"
	p := extractHTML(long, pageURL, true, 100)
	if utf8.RuneCountInString(p.Text) != 100 || !p.Truncated || p.Text != strings.Repeat("é", 100) {
		t.Errorf("cut to %d characters, truncated %v", utf8.RuneCountInString(p.Text), p.Truncated)
	}
	links := "<p>" + strings.Repeat(`<a href="/a-long-path-that-resolves-to-a-longer-url">x</a> `, 20000) + "</p>"
	if p := extractHTML(links, pageURL, true, 1000); !p.Truncated || utf8.RuneCountInString(p.Text) != 1000 {
		t.Errorf("links page: %d characters, truncated %v", utf8.RuneCountInString(p.Text), p.Truncated)
	}
	deep := strings.Repeat("<div>", 600) + "deep <script>no()</script> words" + strings.Repeat("</div>", 600)
	p = extractHTML(deep, pageURL, true, 1000)
	if p.Text != "deep words" || !strings.Contains(p.Warning, "without structure") {
		t.Errorf("deep page: %q, warning %q", p.Text, p.Warning)
	}
	title := "<title>" + strings.Repeat("t", 2000) + "</title>"
	if p := extractHTML(title, pageURL, true, 1000); utf8.RuneCountInString(p.Title) != maxTitleChars {
		t.Errorf("title has %d characters", utf8.RuneCountInString(p.Title))
	}
}

// TestCharsets: declared non-UTF-8 charsets are decoded; an undeclared
// page is UTF-8 when it is valid UTF-8, even past the first 1024 bytes.
func TestCharsets(t *testing.T) {
	pad := strings.Repeat(" ", 2000)
	cases := []struct {
		name, contentType string
		body              []byte
		want              string
	}{
		{"header charset", "text/html; charset=ISO-8859-1", []byte("<p>caf\xe9</p>"), "café"},
		{"meta charset", "text/html", []byte(`<meta charset="windows-1251"><p>` + "\xcf\xf0\xe8\xe2\xe5\xf2</p>"), "Привет"},
		{"shift_jis", "text/html;charset=Shift_JIS", []byte("<p>\x93\xfa\x96\x7b</p>"), "日本"},
		{"utf-8 after an ascii head", "text/html", []byte("<head>" + pad + "</head><p>naïve</p>"), "naïve"},
		{"invalid bytes replaced", "text/html; charset=utf-8", []byte("<p>a\xffb</p>"), "a\uFFFDb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if p := extractHTML(decodeHTML(tc.body, tc.contentType), pageURL, false, 1000); p.Text != tc.want {
				t.Errorf("text = %q, want %q", p.Text, tc.want)
			}
		})
	}
	if s, err := decodeText([]byte("gr\xfc\xdf"), "text/plain; charset=latin1"); err != nil || s != "grüß" {
		t.Errorf("latin1 text = %q, %v", s, err)
	}
	if _, err := decodeText([]byte("x"), "text/plain; charset=x-klingon"); err == nil || !strings.Contains(err.Error(), `unsupported charset "x-klingon"`) || !strings.Contains(err.Error(), "Shift_JIS") {
		t.Errorf("unknown charset: %v", err)
	}
}
