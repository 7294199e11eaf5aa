package format

import (
	"html"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// An element is markup open around the text being written: a style, a
// link or a code block. The writer keeps a stack of them in one canonical
// order (styles, then the link, then inline code; a code block alone), so
// whatever the source's nesting, the output nests properly, and a chunk
// can close everything at its end and open it again in the next.
type elemKind uint8

const (
	eStyle elemKind = iota
	eLink
	eBlock
)

type elem struct {
	kind        elemKind
	style       style
	idx         int32  // link or block, 1-based
	open, close string // rendered markup
}

const maxDepth = 8

// writer renders runs of one doc in one flavour into one chunk, keeping
// the chunk's size as the platform measures it (UTF-16 units) and its
// line count, both including the markup that would close it now.
type writer struct {
	f     Flavor
	d     *doc
	ticks []int // per block, the longest backtick run at a line start
	state
}

// state is everything a cut rolls back to.
type state struct {
	buf, plain []byte
	n16, lines int
	stack      [maxDepth]elem
	depth      int
	closeN16   int
	closeLines int
	lineStart  bool
}

func newWriter(f Flavor, d *doc) *writer {
	w := &writer{f: f, d: d}
	w.reset()
	return w
}

func (w *writer) reset() {
	w.buf, w.plain = w.buf[:0], w.plain[:0]
	w.n16, w.lines, w.depth, w.closeN16, w.closeLines = 0, 0, 0, 0, 0
	w.lineStart = true
}

// snapshot and restore keep the buffers: a snapshot is a prefix of them.
func (w *writer) snapshot() state { return w.state }

func (w *writer) restore(s state) {
	buf, plain := w.buf[:len(s.buf)], w.plain[:len(s.plain)]
	w.state = s
	w.buf, w.plain = buf, plain
}

// cost is the chunk's rendered size if it were closed now.
func (w *writer) cost() int { return w.n16 + w.closeN16 }

// lineCount is the chunk's number of lines if it were closed now.
func (w *writer) lineCount() int { return w.lines + w.closeLines + 1 }

// write adds text, a piece of run ri, to the chunk.
func (w *writer) write(ri int, text string) {
	r := &w.d.runs[ri]
	w.plain = append(w.plain, text...)
	if w.f == Plain {
		w.emit(text)
		return
	}
	if r.kind == kSuffix {
		return
	}
	w.transition(ri)
	w.emit(w.escape(r, text))
}

// finish closes everything open and returns the chunk.
func (w *writer) finish() Chunk {
	for w.depth > 0 {
		w.pop()
	}
	return Chunk{Text: string(w.buf), Plain: string(w.plain)}
}

func (w *writer) emit(s string) {
	if s == "" {
		return
	}
	w.buf = append(w.buf, s...)
	w.n16 += len16(s)
	w.lines += strings.Count(s, "\n")
	w.lineStart = s[len(s)-1] == '\n'
}

// len16 is the length of s in UTF-16 code units, as Telegram, Slack and
// Discord (JavaScript strings) count a message.
func len16(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			n = i
			for _, r := range s[i:] {
				n += utf16.RuneLen(r)
			}
			return n
		}
	}
	return n
}

// transition makes the open stack the one run ri needs: it closes what
// the run does not share with the stack's bottom and opens the rest.
func (w *writer) transition(ri int) {
	var want [maxDepth]elem
	n := w.elems(ri, &want)
	k := 0
	for k < n && k < w.depth && want[k].kind == w.stack[k].kind && want[k].style == w.stack[k].style && want[k].idx == w.stack[k].idx {
		k++
	}
	for w.depth > k {
		w.pop()
	}
	for ; k < n; k++ {
		w.push(ri, want[k])
	}
}

// push opens e, spelling it only now: spelling can cost a scan of the
// run (Discord's backtick count), which must not happen per piece.
func (w *writer) push(ri int, e elem) {
	switch e.kind {
	case eBlock:
		e.open, e.close = w.blockMarks(e.idx)
	case eLink:
		e.open, e.close = w.linkMarks(e.idx)
	default:
		if e.style == code {
			e.open, e.close = w.codeMarks(w.d.runs[ri].text)
		} else {
			e.open, e.close = w.styleMarks(e.style)
		}
	}
	w.emit(e.open)
	w.stack[w.depth] = e
	w.depth++
	w.closeN16 += len16(e.close)
	w.closeLines += strings.Count(e.close, "\n")
}

func (w *writer) pop() {
	w.depth--
	e := w.stack[w.depth]
	w.closeN16 -= len16(e.close)
	w.closeLines -= strings.Count(e.close, "\n")
	w.emit(e.close)
}

// elems lists, in canonical order, the markup run ri is written inside.
// Inline code is keyed by its run, since its spelling depends on it.
func (w *writer) elems(ri int, out *[maxDepth]elem) int {
	r := &w.d.runs[ri]
	if r.block != 0 {
		out[0] = elem{kind: eBlock, idx: r.block}
		return 1
	}
	// Telegram's styles may neither contain nor be part of code, and a
	// link may not contain code: there code stands alone, or yields.
	tgCode := w.f == Telegram && r.style&code != 0
	if tgCode && r.link == 0 {
		out[0] = elem{kind: eStyle, style: code, idx: int32(ri) + 1}
		return 1
	}
	n := 0
	for _, st := range [...]style{bold, italic, strike, spoiler} {
		if r.style&st != 0 && (w.f != Slack || st != spoiler) {
			out[n] = elem{kind: eStyle, style: st}
			n++
		}
	}
	if r.link != 0 {
		out[n] = elem{kind: eLink, idx: r.link}
		n++
	}
	// Slack does not render code inside a link either.
	if r.style&code != 0 && (r.link == 0 || w.f == Discord) && (w.f != Discord || discordCode(r.text)) {
		out[n] = elem{kind: eStyle, style: code, idx: int32(ri) + 1}
		n++
	}
	return n
}

func (w *writer) styleMarks(st style) (string, string) {
	switch w.f {
	case Telegram:
		switch st {
		case bold:
			return "<b>", "</b>"
		case italic:
			return "<i>", "</i>"
		case strike:
			return "<s>", "</s>"
		case spoiler:
			return "<tg-spoiler>", "</tg-spoiler>"
		}
	case Slack:
		switch st {
		case bold:
			return "*", "*"
		case italic:
			return "_", "_"
		case strike:
			return "~", "~"
		}
	case Discord:
		switch st {
		case bold:
			return "**", "**"
		case italic:
			// "_", not "*": "*a***b**" (italic then bold) would be
			// ambiguous, "_a_**b**" is not.
			return "_", "_"
		case strike:
			return "~~", "~~"
		case spoiler:
			return "||", "||"
		}
	}
	return "", ""
}

// discordCode says Discord can show text as inline code: its delimiter
// must be a backtick run longer than any inside, and three or more
// backticks open a code block there. Code with a run of two or more is
// written as text, its backticks escaped (fuzzing found "“0```0“").
func discordCode(text string) bool { return longestRun(text, '`', false) < 2 }

// codeMarks are the marks of an inline code span holding text. Discord
// needs a backtick run longer than any inside the text.
func (w *writer) codeMarks(text string) (string, string) {
	switch w.f {
	case Telegram:
		return "<code>", "</code>"
	case Discord:
		ticks := strings.Repeat("`", longestRun(text, '`', false)+1)
		// Code holding a backtick is padded with a space inside the
		// marks (which Discord strips): a chunk may start or end the
		// span at any of its backticks, or its spaces may be cut away,
		// and a backtick must never meet the marks (fuzzing found
		// "```` `0````" written as "```0``").
		if strings.IndexByte(text, '`') >= 0 {
			return ticks + " ", " " + ticks
		}
		return ticks, ticks
	}
	return "`", "`"
}

// markupCost is the length of the markup run ri is written inside,
// opened and closed.
func (w *writer) markupCost(ri int) int {
	var es [maxDepth]elem
	n, cost := w.elems(ri, &es), 0
	for _, e := range es[:n] {
		var open, close string
		switch {
		case e.kind == eBlock:
			open, close = w.blockMarks(e.idx)
		case e.kind == eLink:
			open, close = w.linkMarks(e.idx)
		case e.style == code:
			open, close = w.codeMarks(w.d.runs[ri].text)
		default:
			open, close = w.styleMarks(e.style)
		}
		cost += len16(open) + len16(close)
	}
	return cost
}

func (w *writer) linkMarks(idx int32) (string, string) {
	href := w.d.links[idx-1]
	switch w.f {
	case Telegram:
		return `<a href="` + html.EscapeString(href) + `">`, "</a>"
	case Slack:
		// Slack reads entities in a link too: & is &amp;, not %26.
		return "<" + strings.ReplaceAll(escapeHref(href, "|<>"), "&", "&amp;") + "|", ">"
	}
	return "[", "](<" + escapeHref(href, "<>() ") + ">)"
}

// escapeHref percent-encodes the characters that would end the link's
// markup early.
func escapeHref(href, bad string) string {
	var b strings.Builder
	for i := 0; i < len(href); i++ {
		if strings.IndexByte(bad, href[i]) >= 0 {
			b.WriteString("%" + strings.ToUpper(hex2(href[i])))
			continue
		}
		b.WriteByte(href[i])
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// blockMarks open and close code block idx. A fence must start a line.
func (w *writer) blockMarks(idx int32) (string, string) {
	lang := w.d.blocks[idx-1]
	if w.f == Telegram {
		if lang == "" {
			return "<pre>", "</pre>"
		}
		return `<pre><code class="language-` + html.EscapeString(lang) + `">`, "</code></pre>"
	}
	f := strings.Repeat("`", max(3, w.blockTicks(idx)+1))
	if w.f == Slack {
		lang = "" // Slack would show an info string as code
	}
	open := f + lang + "\n"
	if !w.lineStart {
		open = "\n" + open
	}
	return open, "\n" + f
}

// blockTicks is the longest backtick run at the start of a line of block
// idx, which the fence must outgrow.
func (w *writer) blockTicks(idx int32) int {
	if w.ticks == nil {
		w.ticks = make([]int, len(w.d.blocks)+1)
		for _, r := range w.d.runs {
			if r.block != 0 {
				w.ticks[r.block] = max(w.ticks[r.block], longestRun(r.text, '`', true))
			}
		}
	}
	return w.ticks[idx]
}

// longestRun is the longest run of c in s (at a line's start only, after
// spaces, if lineStart).
func longestRun(s string, c byte, lineStart bool) int {
	best := 0
	for i := 0; i < len(s); {
		if s[i] != c {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == c {
			j++
		}
		if !lineStart || atLineStart(s, i) {
			best = max(best, j-i)
		}
		i = j
	}
	return best
}

func atLineStart(s string, i int) bool {
	for i > 0 && s[i-1] == ' ' {
		i--
	}
	return i == 0 || s[i-1] == '\n'
}

// escape makes text literal in the flavour: HTML entities for Telegram,
// Slack's three entities, Discord's backslashes. Mentions and quote
// markers stay markup on Slack and Discord; code is never backslashed.
func (w *writer) escape(r *run, text string) string {
	switch w.f {
	case Telegram:
		return escapeHTML(text)
	case Slack:
		if r.kind == kMention || r.kind == kMark {
			return text
		}
		return escapeHTML(text)
	case Discord:
		if r.kind != kText || r.block != 0 || r.style&code != 0 && discordCode(r.text) {
			return text
		}
		return escapeDiscord(text, w.lineStart)
	}
	return text
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escapeHTML(s string) string {
	if strings.IndexAny(s, "&<>") < 0 {
		return s
	}
	return htmlEscaper.Replace(s)
}

// escapeDiscord backslashes what Discord's markdown would read as markup:
// the emphasis, code, spoiler and link characters anywhere, and at a
// line's start the quote, heading and list markers.
func escapeDiscord(s string, lineStart bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '*', '_', '~', '`', '|', '[', ']':
			b.WriteByte('\\')
		case '>', '#', '-', '+':
			if lineStart {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
		lineStart = c == '\n'
	}
	return b.String()
}
