package web

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxTitleChars bounds the title: it is a label, not content.
const maxTitleChars = 500

// extractHTML parses src (UTF-8) and renders its readable text, markdown
// or plain, at most maxChars characters. base is the URL the page came
// from, against which links are resolved.
func extractHTML(src string, base *url.URL, markdown bool, maxChars int) page {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		// The parser refuses pages nesting deeper than 512 elements; their
		// words are still worth having.
		text, cut := flatText(src, 4*maxChars+1024)
		text, short := cutText(text, maxChars)
		return page{Text: text, Truncated: cut || short,
			Warning: "the page could not be parsed as HTML (" + err.Error() + "); its text was extracted without structure"}
	}
	title, _ := cutText(collapse(textOf(find(doc, atom.Title))), maxTitleChars)
	if b := find(doc, atom.Base); b != nil {
		if u, err := base.Parse(strings.TrimSpace(attr(b, "href"))); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			base = u
		}
	}
	roots, inContent := contentRoots(doc)
	r := newRenderer(markdown, base, inContent, 4*maxChars+1024)
	for _, n := range roots {
		r.flush()
		r.element(n)
	}
	text, short := cutText(trimLines(r.finish()), maxChars)
	return page{Title: title, Text: text, Truncated: r.cut || short}
}

// contentRoots are the elements whose text is the page's content: the
// first <main>, else every outermost <article>, else <body>. inContent
// says the roots are main or articles, whose own header and footer belong
// to the content.
func contentRoots(doc *html.Node) (roots []*html.Node, inContent bool) {
	if m := find(doc, atom.Main); m != nil {
		return []*html.Node{m}, true
	}
	var articles []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type != html.ElementNode || dropped(c, false):
			case c.DataAtom == atom.Article && c.Namespace == "":
				articles = append(articles, c)
			default:
				walk(c)
			}
		}
	}
	walk(doc)
	if len(articles) > 0 {
		return articles, true
	}
	if b := find(doc, atom.Body); b != nil {
		return []*html.Node{b}, false
	}
	return []*html.Node{doc}, false
}

// find is the first HTML element a in n, outside dropped subtrees.
func find(n *html.Node, a atom.Atom) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.DataAtom == a && c.Namespace == "" {
			return c
		}
		if a != atom.Title && a != atom.Base && dropped(c, false) {
			continue
		}
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

// droppedAtoms are elements whose content is not the page's text: code,
// media, chrome and navigation.
var droppedAtoms = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Canvas: true,
	atom.Audio: true, atom.Video: true, atom.Nav: true, atom.Aside: true, atom.Form: true,
	atom.Button: true, atom.Select: true, atom.Head: true, atom.Header: true, atom.Footer: true,
}

// dropped says whether n's subtree is left out. Header and footer are
// kept inside main or an article (keepHeaders). A form is kept when it
// wraps the page's content, as ASP.NET pages do.
func dropped(n *html.Node, keepHeaders bool) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if n.Namespace != "" {
		return n.Namespace == "svg" || n.Namespace == "math"
	}
	switch {
	case hasAttr(n, "hidden") || strings.EqualFold(attr(n, "aria-hidden"), "true"):
		return true
	case keepHeaders && (n.DataAtom == atom.Header || n.DataAtom == atom.Footer):
		return false
	case n.DataAtom == atom.Form:
		return !wrapsContent(n)
	}
	return droppedAtoms[n.DataAtom]
}

// wrapsContent says whether n holds a main, an article or an h1.
func wrapsContent(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Namespace == "" &&
			(c.DataAtom == atom.Main || c.DataAtom == atom.Article || c.DataAtom == atom.H1 || wrapsContent(c)) {
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

// textOf is the raw text under n (nil: ""), <br> as a newline.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(c.Data)
			case c.Type == html.ElementNode && c.DataAtom == atom.Br:
				b.WriteByte('\n')
			case c.Type == html.ElementNode && !dropped(c, true):
				walk(c)
			}
		}
	}
	if n != nil {
		walk(n)
	}
	return b.String()
}

// collapse turns every run of white space in s into one space, drops
// control characters and trims the ends.
func collapse(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case isSpace(r):
			space = b.Len() > 0
		case r < 0x20 || r == 0x7f:
		default:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isSpace is HTML's ASCII white space plus the no-break space, which pages
// use for layout.
func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\u00a0'
}

// trimLines trims trailing spaces from the lines of s and blank lines
// from its ends; code blocks keep their blank lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// tidy is trimLines keeping at most one blank line in a row.
func tidy(s string) string {
	var out []string
	for l := range strings.SplitSeq(trimLines(s), "\n") {
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// flatText is the text of src read token by token, for pages the parser
// refuses: words outside dropped elements, block elements as line breaks,
// at most budget bytes (cut says more was left).
func flatText(src string, budget int) (text string, cut bool) {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	skip := 0
	for b.Len() < budget {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			return tidy(b.String()), false
		case html.TextToken:
			if skip == 0 {
				if t := collapse(string(z.Text())); t != "" {
					b.WriteString(t)
					b.WriteByte(' ')
				}
			}
		case html.StartTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			// Only elements whose content the tokenizer reads as raw text
			// can be skipped reliably without a tree.
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Textarea, atom.Title:
				if tt == html.StartTagToken {
					skip++
				} else if skip > 0 {
					skip--
				}
			}
			if blockAtoms[a] {
				b.WriteByte('\n')
			}
		}
	}
	return tidy(b.String()), true
}
