package web

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// renderer writes a parsed page as blocks of text: paragraphs separated by
// a blank line, list items and table rows on lines of their own. Inline
// text collects in line, with white space collapsed, until a block
// boundary flushes it. Output stops after budget bytes (cut).
type renderer struct {
	md          bool
	base        *url.URL
	keepHeaders bool
	budget      int
	cut         bool

	out       strings.Builder
	lastTight bool // the last block was a list item or table

	line       []byte
	space      bool // a collapsed space is due before the next word
	linkStart  int  // len(line) just after a link's "[", -1 outside links
	heading    int
	prefix     []string // continuation prefixes of open list items and quotes
	marker     string   // the first-line prefix of a list item not yet written
	lists      []list   // open lists, innermost last
	tableDepth int
}

// blockAtoms end the line of text before them and after them.
var blockAtoms = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Body: true,
	atom.Caption: true, atom.Center: true, atom.Dd: true, atom.Details: true, atom.Dialog: true,
	atom.Dir: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.Form: true, atom.H1: true,
	atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true,
	atom.Hgroup: true, atom.Hr: true, atom.Html: true, atom.Legend: true, atom.Li: true,
	atom.Main: true, atom.Menu: true, atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true,
	atom.Section: true, atom.Summary: true, atom.Table: true, atom.Td: true, atom.Th: true,
	atom.Tr: true, atom.Ul: true,
}

var headingLevel = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}

func (r *renderer) children(n *html.Node) {
	for c := n.FirstChild; c != nil && !r.cut; c = c.NextSibling {
		switch c.Type {
		case html.TextNode:
			r.text(c.Data)
		case html.ElementNode:
			r.element(c)
		}
	}
}

func (r *renderer) element(n *html.Node) {
	if dropped(n, r.keepHeaders) {
		return
	}
	if n.Namespace != "" {
		r.children(n)
		return
	}
	a := n.DataAtom
	switch {
	case headingLevel[a] > 0:
		r.flush()
		r.heading = headingLevel[a]
		r.children(n)
		r.flush()
		r.heading = 0
	case a == atom.Br:
		r.line = append(r.line, '\n')
		r.space = false
	case a == atom.Ul || a == atom.Ol || a == atom.Menu || a == atom.Dir:
		r.list(n)
	case a == atom.Li:
		r.item(n)
	case a == atom.Pre:
		r.flush()
		r.pre(n)
	case a == atom.Table && r.tableDepth < 4:
		r.flush()
		r.table(n)
	case a == atom.Hr:
		r.flush()
		if r.md {
			r.emit([]string{"---"}, false)
		}
	case a == atom.Blockquote && r.md:
		r.flush()
		r.prefix = append(r.prefix, "> ")
		r.children(n)
		r.flush()
		r.prefix = r.prefix[:len(r.prefix)-1]
	case a == atom.A && r.md && r.linkStart < 0:
		r.link(n)
	case a == atom.Code && r.md:
		r.code(n)
	case a == atom.Img:
		if r.linkStart >= 0 {
			r.text(attr(n, "alt"))
		}
	case blockAtoms[a]:
		r.flush()
		r.children(n)
		r.flush()
	default:
		r.children(n)
	}
}

// text adds the words of s to the line.
func (r *renderer) text(s string) {
	for _, c := range s {
		switch {
		case isSpace(c):
			r.space = true
		case c < 0x20 || c == 0x7f:
		default:
			r.word()
			r.line = appendRune(r.line, c)
		}
	}
	if len(r.line) > r.budget {
		r.cut = true
	}
}

// word writes the space due before a word, unless the line or a link's
// text starts here.
func (r *renderer) word() {
	if r.space && len(r.line) > 0 && r.line[len(r.line)-1] != '\n' && len(r.line) != r.linkStart {
		r.line = append(r.line, ' ')
	}
	r.space = false
}

func appendRune(b []byte, c rune) []byte {
	return append(b, string(c)...)
}

// link writes an anchor as [text](absolute url). An anchor without text,
// with a fragment, script or other non-web target, or wrapping blocks (a
// card) is written as its text alone.
func (r *renderer) link(n *html.Node) {
	target := r.resolve(attr(n, "href"))
	if target == "" || holdsBlock(n) {
		r.children(n)
		return
	}
	start, space := len(r.line), r.space
	r.word()
	r.line = append(r.line, '[')
	open := len(r.line)
	r.linkStart = open
	r.children(n)
	r.linkStart = -1
	if len(r.line) == open {
		r.line, r.space = r.line[:start], space || r.space
		return
	}
	r.line = append(r.line, "]("+target+")"...)
}

// resolve makes href absolute against the page, "" for targets that are
// not http, https or mailto and for links within the page.
func (r *renderer) resolve(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := r.base.Parse(href)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
		return ""
	}
	return urlEscaper.Replace(u.String())
}

// urlEscaper keeps a URL from ending a markdown link early.
var urlEscaper = strings.NewReplacer("(", "%28", ")", "%29", " ", "%20")

func holdsBlock(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && (blockAtoms[c.DataAtom] || holdsBlock(c)) {
			return true
		}
	}
	return false
}

// code writes inline code between backticks, more of them when the code
// holds one.
func (r *renderer) code(n *html.Node) {
	text := collapse(textOf(n))
	if text == "" {
		return
	}
	r.word()
	tick := "`"
	if strings.Contains(text, "`") {
		tick = "`` "
		r.line = append(r.line, (tick + text + " ``")...)
		return
	}
	r.line = append(r.line, (tick + text + tick)...)
}

// flush ends the current line of text as a block.
func (r *renderer) flush() {
	raw := string(r.line)
	r.line, r.space = r.line[:0], false
	var lines []string
	for l := range strings.SplitSeq(raw, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return
	}
	if r.heading > 0 && r.md {
		lines = []string{strings.Repeat("#", r.heading) + " " + strings.Join(lines, " ")}
	}
	r.emit(lines, false)
}

// emit writes a block: a blank line before it unless it and the block
// before are both tight (list items, table rows), the pending list marker
// or the prefixes before its first line, the prefixes before the others.
func (r *renderer) emit(lines []string, tight bool) {
	if r.out.Len() > r.budget {
		return
	}
	prefix := strings.Join(r.prefix, "")
	first := prefix
	if r.marker != "" {
		first, tight, r.marker = r.marker, true, ""
	}
	if r.out.Len() > 0 {
		if tight && r.lastTight {
			r.out.WriteByte('\n')
		} else {
			r.out.WriteString("\n\n")
		}
	}
	for i, l := range lines {
		if i > 0 {
			r.out.WriteByte('\n')
			first = prefix
		}
		r.out.WriteString(first + l)
	}
	r.lastTight = tight
	if r.out.Len() > r.budget {
		r.cut = true
	}
}

// list is an open <ul> or <ol> and, for <ol>, the next item's number.
type list struct {
	ordered bool
	next    int
}

// newRenderer starts a renderer with budget bytes of output.
func newRenderer(markdown bool, base *url.URL, keepHeaders bool, budget int) *renderer {
	return &renderer{md: markdown, base: base, keepHeaders: keepHeaders, budget: budget, linkStart: -1}
}

// list renders <ul> and <ol>: each item on its own line, "- " or "N. ",
// nested lists indented under their item.
func (r *renderer) list(n *html.Node) {
	r.flush()
	l := list{ordered: n.DataAtom == atom.Ol, next: 1}
	// The start attribute, within reason: a number, not a page of digits.
	if s, err := strconv.Atoi(strings.TrimSpace(attr(n, "start"))); err == nil && l.ordered && s > -1e9 && s < 1e9 {
		l.next = s
	}
	r.lists = append(r.lists, l)
	r.children(n)
	r.flush()
	r.lists = r.lists[:len(r.lists)-1]
}

func (r *renderer) item(n *html.Node) {
	r.flush()
	mark := "- "
	if k := len(r.lists) - 1; k >= 0 && r.lists[k].ordered {
		mark = fmt.Sprintf("%d. ", r.lists[k].next)
		r.lists[k].next++
	}
	r.marker = strings.Join(r.prefix, "") + mark
	r.prefix = append(r.prefix, strings.Repeat(" ", len(mark)))
	r.children(n)
	r.flush()
	r.prefix = r.prefix[:len(r.prefix)-1]
	r.marker = ""
}

// finish flushes what is left and returns the text.
func (r *renderer) finish() string {
	r.flush()
	return r.out.String()
}
