package web

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// pre writes preformatted text with its white space kept: in markdown a
// fenced block, with the language of a "language-x" class when there is
// one.
func (r *renderer) pre(n *html.Node) {
	text := strings.ReplaceAll(textOf(n), "\r", "")
	text = strings.TrimRight(strings.TrimPrefix(text, "\n"), " \t\n")
	if strings.TrimSpace(text) == "" {
		return
	}
	if len(text) > r.budget {
		text, r.cut = cutBytes(text, r.budget), true
	}
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		lines = append(lines, strings.Map(dropControl, strings.TrimRight(l, " \t")))
	}
	if r.md {
		fence := "```"
		for strings.Contains(text, fence) {
			fence += "`"
		}
		lang := language(n)
		if c := n.FirstChild; lang == "" && c != nil && c.Type == html.ElementNode && c.DataAtom == atom.Code {
			lang = language(c)
		}
		lines = append(append([]string{fence + lang}, lines...), fence)
	}
	cut := r.cut
	r.cut = false // what was read of the block is still written
	r.emit(lines, false)
	r.cut = r.cut || cut
}

// cutBytes is s cut to at most n bytes at a character boundary.
func cutBytes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// dropControl removes control characters other than tab.
func dropControl(c rune) rune {
	if (c < 0x20 && c != '\t') || c == 0x7f {
		return -1
	}
	return c
}

var langClass = regexp.MustCompile(`(?:^|\s)(?:language|lang)-([A-Za-z0-9_+#.-]{1,30})(?:\s|$)`)

func language(n *html.Node) string {
	if m := langClass.FindStringSubmatch(attr(n, "class")); m != nil {
		return m[1]
	}
	return ""
}

// table writes a table row by row: in markdown "| a | b |", with a
// separator under a first row of header cells; in text "a | b". Each
// cell's content is rendered on its own and joined into one line.
func (r *renderer) table(n *html.Node) {
	if c := childOf(n, atom.Caption); c != nil {
		r.children(c)
		r.flush()
	}
	var lines []string
	for i, row := range rows(n) {
		cells, header := make([]string, 0, len(row)), true
		empty := true
		for _, cell := range row {
			header = header && cell.DataAtom == atom.Th
			text := r.cell(cell)
			empty = empty && text == ""
			cells = append(cells, text)
		}
		if empty || r.cut {
			continue
		}
		if !r.md {
			lines = append(lines, strings.Join(cells, " | "))
			continue
		}
		lines = append(lines, "| "+strings.Join(cells, " | ")+" |")
		if i == 0 && header {
			lines = append(lines, "|"+strings.Repeat(" --- |", len(cells)))
		}
	}
	if len(lines) > 0 {
		r.emit(lines, true)
	}
}

// cell renders one cell's content as a single line.
func (r *renderer) cell(n *html.Node) string {
	sub := newRenderer(r.md, r.base, r.keepHeaders, r.budget-r.out.Len())
	sub.tableDepth = r.tableDepth + 1
	sub.children(n)
	text := strings.Join(strings.Fields(sub.finish()), " ")
	r.cut = r.cut || sub.cut
	if r.md {
		text = strings.ReplaceAll(text, "|", `\|`)
	}
	return text
}

// rows are the cells of the rows of table n, its own only: those of its
// head, bodies and foot, in document order.
func rows(n *html.Node) [][]*html.Node {
	var out [][]*html.Node
	addRow := func(tr *html.Node) {
		var cells []*html.Node
		for c := tr.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Td || c.DataAtom == atom.Th) {
				cells = append(cells, c)
			}
		}
		if len(cells) > 0 {
			out = append(out, cells)
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		switch c.DataAtom {
		case atom.Tr:
			addRow(c)
		case atom.Thead, atom.Tbody, atom.Tfoot:
			for tr := c.FirstChild; tr != nil; tr = tr.NextSibling {
				if tr.Type == html.ElementNode && tr.DataAtom == atom.Tr {
					addRow(tr)
				}
			}
		}
	}
	return out
}

func childOf(n *html.Node, a atom.Atom) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == a {
			return c
		}
	}
	return nil
}
