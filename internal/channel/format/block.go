package format

import (
	"strings"
	"unicode/utf8"
)

// parse reads a reply's Markdown into runs. The block grammar is the part
// of CommonMark a chat reply uses: paragraphs, ATX headings, fenced code
// (an unclosed fence runs to the end), block quotes, list items, thematic
// breaks and GFM pipe tables. Blocks are separated by one newline, or by a
// blank line where the source had one.
func parse(src, tables string) *doc {
	src = strings.ToValidUTF8(strings.ReplaceAll(src, "\r\n", "\n"), "\uFFFD")
	bp := &blockParser{b: &builder{d: &doc{}}, lines: strings.Split(src, "\n"), tables: tables}
	bp.run()
	bp.b.flush()
	return bp.b.d
}

type blockParser struct {
	b      *builder
	lines  []string
	tables string
	blank  bool // a blank line since the last block
	any    bool // a block has been written
}

func (p *blockParser) run() {
	for i := 0; i < len(p.lines); {
		line := p.lines[i]
		if strings.TrimSpace(line) == "" {
			p.blank = p.any
			i++
			continue
		}
		p.separate()
		i = p.block(i)
	}
}

// separate writes what stands between the previous block and the next.
func (p *blockParser) separate() {
	if p.any {
		if p.blank {
			p.b.text("\n\n")
		} else {
			p.b.text("\n")
		}
	}
	p.any, p.blank = true, false
}

// block writes the block starting at line i and returns the line after it.
func (p *blockParser) block(i int) int {
	line := p.lines[i]
	if fc, n, info, ok := fenceOpen(line); ok {
		return p.fence(i, fc, n, info)
	}
	if lvl, text, ok := heading(line); ok && lvl > 0 {
		p.b.inline(text, bold, 0)
		return i + 1
	}
	if isBreak(line) {
		p.b.add(run{text: "———"})
		return i + 1
	}
	if rest, ok := quote(line); ok {
		p.b.add(run{text: "> ", kind: kMark})
		for {
			r, ok := quote(rest)
			if !ok {
				break
			}
			p.b.add(run{text: "> ", kind: kMark})
			rest = r
		}
		p.b.inline(rest, 0, 0)
		return i + 1
	}
	if indent, marker, rest, ok := listItem(line); ok {
		p.b.text(indent + marker)
		p.b.inline(rest, 0, 0)
		return i + 1
	}
	if p.tables != "off" {
		if end, ok := p.table(i); ok {
			return end
		}
	}
	j := i + 1
	for j < len(p.lines) && !p.startsBlock(j) {
		j++
	}
	para := make([]string, 0, j-i)
	for _, l := range p.lines[i:j] {
		para = append(para, strings.TrimSpace(l))
	}
	p.b.inline(strings.Join(para, "\n"), 0, 0)
	return j
}

// startsBlock reports whether line j ends the paragraph before it.
func (p *blockParser) startsBlock(j int) bool {
	line := p.lines[j]
	if strings.TrimSpace(line) == "" || isBreak(line) {
		return true
	}
	if _, _, _, ok := fenceOpen(line); ok {
		return true
	}
	if lvl, _, ok := heading(line); ok && lvl > 0 {
		return true
	}
	if _, ok := quote(line); ok {
		return true
	}
	if _, _, _, ok := listItem(line); ok {
		return true
	}
	return p.tables != "off" && j+1 < len(p.lines) && strings.Contains(line, "|") && isDelimRow(p.lines[j+1], len(cells(line)))
}

// indentOf counts the leading spaces of line, up to max+1.
func indentOf(line string, max int) int {
	n := 0
	for n < len(line) && n <= max && line[n] == ' ' {
		n++
	}
	return n
}

// fenceOpen matches an opening code fence: three or more "`" or "~" and
// an info string (no "`" in it for a "`" fence). Any indentation is
// taken, not only CommonMark's three spaces: models indent fences under
// list items, and an indented code block is not parsed anyway.
func fenceOpen(line string) (c byte, n int, info string, ok bool) {
	ind := indentOf(line, len(line))
	if ind >= len(line) || line[ind] != '`' && line[ind] != '~' {
		return 0, 0, "", false
	}
	c = line[ind]
	j := ind
	for j < len(line) && line[j] == c {
		j++
	}
	if j-ind < 3 {
		return 0, 0, "", false
	}
	info = strings.TrimSpace(line[j:])
	if c == '`' && strings.IndexByte(info, '`') >= 0 {
		return 0, 0, "", false
	}
	return c, j - ind, info, true
}

// fence writes a fenced code block and returns the line after its
// closing fence (or the end of the reply when it is never closed).
func (p *blockParser) fence(i int, c byte, n int, info string) int {
	ind := indentOf(p.lines[i], len(p.lines[i]))
	p.b.d.blocks = append(p.b.d.blocks, language(info))
	blk := int32(len(p.b.d.blocks))
	var body []string
	j, closed := i+1, false
	for ; j < len(p.lines); j++ {
		line := p.lines[j]
		if fenceClose(line, c, n) {
			j, closed = j+1, true
			break
		}
		k := indentOf(line, ind-1)
		body = append(body, line[min(k, ind):])
	}
	if !closed && len(body) > 0 && body[len(body)-1] == "" {
		body = body[:len(body)-1] // the reply's final newline
	}
	p.b.add(run{text: strings.Join(body, "\n"), block: blk})
	return j
}

// language is an info string's first word if it looks like a language
// name; anything else could break out of the markup that carries it.
func language(info string) string {
	lang, _, _ := strings.Cut(info, " ")
	if len(lang) > 32 {
		return ""
	}
	for i := 0; i < len(lang); i++ {
		c := lang[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+#.-", c) >= 0) {
			return ""
		}
	}
	return lang
}

func fenceClose(line string, c byte, n int) bool {
	ind := indentOf(line, len(line))
	j := ind
	for j < len(line) && line[j] == c {
		j++
	}
	return j-ind >= n && strings.TrimSpace(line[j:]) == ""
}

// heading matches an ATX heading; its text loses the closing "#"s.
func heading(line string) (level int, text string, ok bool) {
	ind := indentOf(line, 3)
	if ind > 3 {
		return 0, "", false
	}
	j := ind
	for j < len(line) && line[j] == '#' {
		j++
	}
	level = j - ind
	if level < 1 || level > 6 || j < len(line) && line[j] != ' ' && line[j] != '\t' {
		return 0, "", false
	}
	text = strings.TrimSpace(line[j:])
	if t := strings.TrimRight(text, "#"); t != text && (t == "" || strings.HasSuffix(t, " ")) {
		text = strings.TrimSpace(t)
	}
	return level, text, true
}

// isBreak matches a thematic break: three or more "-", "*" or "_" alone.
func isBreak(line string) bool {
	t := strings.TrimSpace(line)
	if len(t) < 3 || indentOf(line, 3) > 3 {
		return false
	}
	c := t[0]
	if c != '-' && c != '*' && c != '_' {
		return false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case c:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

func quote(line string) (string, bool) {
	ind := indentOf(line, 3)
	if ind > 3 || ind >= len(line) || line[ind] != '>' {
		return "", false
	}
	rest := line[ind+1:]
	rest = strings.TrimPrefix(rest, " ")
	return rest, true
}

// listItem matches "- x", "* x", "+ x" (shown with a bullet) and "1. x",
// "1) x" (kept); the indentation shows the nesting.
func listItem(line string) (indent, marker, rest string, ok bool) {
	ind := 0
	for ind < len(line) && (line[ind] == ' ' || line[ind] == '\t') {
		ind++
	}
	t := line[ind:]
	indent = strings.Repeat("  ", min(ind/2, 8))
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && (t[1] == ' ' || t[1] == '\t') {
		return indent, "• ", strings.TrimSpace(t[2:]), true
	}
	d := 0
	for d < len(t) && d < 9 && t[d] >= '0' && t[d] <= '9' {
		d++
	}
	if d > 0 && d+1 < len(t) && (t[d] == '.' || t[d] == ')') && (t[d+1] == ' ' || t[d+1] == '\t') {
		return indent, t[:d+1] + " ", strings.TrimSpace(t[d+2:]), true
	}
	return "", "", "", false
}

// cells splits a table row on "|" that is not escaped, without the
// outer pipes.
func cells(line string) []string {
	t := strings.TrimSpace(line)
	t = strings.TrimPrefix(t, "|")
	if strings.HasSuffix(t, "|") && !strings.HasSuffix(t, "\\|") {
		t = t[:len(t)-1]
	}
	var out []string
	start := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '|':
			out = append(out, strings.TrimSpace(strings.ReplaceAll(t[start:i], "\\|", "|")))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(strings.ReplaceAll(t[start:], "\\|", "|")))
}

// isDelimRow matches a table's second line (|---|:--:|) with n columns.
func isDelimRow(line string, n int) bool {
	if !strings.Contains(line, "-") {
		return false
	}
	cs := cells(line)
	if len(cs) != n {
		return false
	}
	for _, c := range cs {
		c = strings.TrimSuffix(strings.TrimPrefix(c, ":"), ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// table writes a GFM table as markdown.tables asks: "code", an aligned
// text table in a code block, or "bullets", one bullet per cell under a
// bold row label.
func (p *blockParser) table(i int) (int, bool) {
	if i+1 >= len(p.lines) || !strings.Contains(p.lines[i], "|") {
		return i, false
	}
	head := cells(p.lines[i])
	if !isDelimRow(p.lines[i+1], len(head)) {
		return i, false
	}
	var rows [][]string
	j := i + 2
	for ; j < len(p.lines) && strings.TrimSpace(p.lines[j]) != "" && strings.Contains(p.lines[j], "|"); j++ {
		rows = append(rows, cells(p.lines[j]))
	}
	if p.tables == "bullets" {
		p.bullets(head, rows)
	} else {
		p.codeTable(head, rows)
	}
	return j, true
}

func (p *blockParser) codeTable(head []string, rows [][]string) {
	all := append([][]string{head}, rows...)
	var widths []int
	for r, row := range all {
		for c, cell := range row {
			all[r][c] = plainInline(cell)
			if c >= len(widths) {
				widths = append(widths, 3)
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(all[r][c]))
		}
	}
	var sb strings.Builder
	line := func(row []string) {
		sb.WriteString("|")
		for c, w := range widths {
			cell := ""
			if c < len(row) {
				cell = row[c]
			}
			sb.WriteString(" " + cell + strings.Repeat(" ", w-utf8.RuneCountInString(cell)) + " |")
		}
	}
	for r, row := range all {
		if r > 0 {
			sb.WriteString("\n")
		}
		line(row)
		if r == 0 {
			div := make([]string, len(widths))
			for c, w := range widths {
				div[c] = strings.Repeat("-", w)
			}
			sb.WriteString("\n")
			line(div)
		}
	}
	p.b.d.blocks = append(p.b.d.blocks, "")
	p.b.add(run{text: sb.String(), block: int32(len(p.b.d.blocks))})
}

func (p *blockParser) bullets(head []string, rows [][]string) {
	labeled := len(head) > 1
	for r, row := range rows {
		if r > 0 {
			p.b.text("\n\n")
		}
		first := true
		nl := func() {
			if !first {
				p.b.text("\n")
			}
			first = false
		}
		if labeled && len(row) > 0 && row[0] != "" {
			nl()
			p.b.inline(row[0], bold, 0)
		}
		for c := range row {
			if labeled && c == 0 || row[c] == "" {
				continue
			}
			nl()
			p.b.text("• ")
			if c < len(head) && head[c] != "" {
				p.b.inline(head[c], 0, 0)
				p.b.text(": ")
			}
			p.b.inline(row[c], 0, 0)
		}
	}
}

// plainInline is a cell's text without its markup, for an aligned table.
func plainInline(s string) string {
	b := &builder{d: &doc{}}
	b.inline(s, 0, 0)
	b.flush()
	return b.d.plain()
}
