package format

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The inline grammar is CommonMark's where a chat reply needs it —
// emphasis by delimiter runs with the flanking rules, code spans, links,
// autolinks, backslash escapes — plus GFM's ~~strike~~, Discord's
// ||spoiler||, bare URLs and platform mentions. Raw HTML is never markup:
// "<b>" is text. Every search that could rescan the rest of the input is
// either cached (so each byte is looked at a bounded number of times) or
// capped, which keeps a 1 MB reply linear.

type tokKind uint8

const (
	tText tokKind = iota
	tDelim
	tCode
	tLink
	tMention
	tURL
)

// nStyles are the styles emphasis delimiters can open, in the order of
// their index in itok.opens and itok.closes.
const nStyles = 4

var styleAt = [nStyles]style{bold, italic, strike, spoiler}

type itok struct {
	kind     tokKind
	text     string // text, code content, delimiter characters, URL or link label
	href     string // a link's target
	ch       byte   // delimiter character
	n        int    // delimiter characters still unmatched
	canOpen  bool
	canClose bool
	opens    [nStyles]int32
	closes   [nStyles]int32
}

// autolinkMax caps how far "<" looks for its ">" so that a reply full of
// "<" stays linear; a longer autolink is left as text.
const autolinkMax = 2048

type inlineParser struct {
	s       string
	toks    []itok
	noLinks bool // inside a link label: no nested links
	// caches of the next "]" and the next end of a link target, valid for
	// any later start before them (see link).
	rb, rbFrom       int
	paren, parenFrom int
	// positions of backtick runs by length, and a cursor into each
	ticks  map[int][]int
	tickAt map[int]int
}

// inline parses s and adds its runs to b, each with base's styles and
// the given link.
func (b *builder) inline(s string, base style, link int32) {
	p := &inlineParser{s: s, noLinks: link != 0, rb: -1, paren: -1, toks: make([]itok, 0, len(s)/32+1)}
	p.scan()
	p.emphasis()
	p.emit(b, base, link)
}

func (p *inlineParser) scan() {
	s := p.s
	start := 0
	flush := func(end int) {
		if end > start {
			p.toks = append(p.toks, itok{kind: tText, text: s[start:end]})
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		next, ok := i+1, false
		switch c {
		case '\\':
			if i+1 < len(s) && isASCIIPunct(s[i+1]) {
				flush(i)
				p.toks = append(p.toks, itok{kind: tText, text: s[i+1 : i+2]})
				next, ok = i+2, true
			}
		case '`':
			next, ok = p.codeSpan(i, flush)
		case '*', '_', '~', '|':
			next, ok = p.delim(i, flush)
		case '[':
			if !p.noLinks {
				next, ok = p.link(i, flush)
			}
		case '!':
			// An image is shown as a link to it; sending it as media
			// is the channel's business.
			if !p.noLinks && i+1 < len(s) && s[i+1] == '[' {
				next, ok = p.link(i+1, func(int) { flush(i) })
				if !ok {
					next = i + 1
				}
			}
		case '&':
			next, ok = p.entity(i, flush)
		case '<':
			next, ok = p.angle(i, flush)
		case 'h', 'H':
			if !p.noLinks {
				next, ok = p.bareURL(i, flush)
			}
		}
		if ok {
			start = next
		}
		i = next
	}
	flush(len(s))
}

// entity decodes an HTML character reference with its semicolon
// (&amp;, &#233;, &#x1F600;), as CommonMark does; the text it stands for
// is then escaped again for the platform like any other.
func (p *inlineParser) entity(i int, flush func(int)) (int, bool) {
	s := p.s
	j := i + 1
	for j < len(s) && j-i <= 32 && (isAlnum(s[j]) || s[j] == '#') {
		j++
	}
	if j >= len(s) || s[j] != ';' || j == i+1 {
		return i + 1, false
	}
	ref := s[i : j+1]
	text := html.UnescapeString(ref)
	if text == ref {
		return i + 1, false
	}
	flush(i)
	p.toks = append(p.toks, itok{kind: tText, text: text})
	return j + 1, true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// codeSpan matches a backtick run with the next run of the same length;
// an unmatched run is literal text. Runs are indexed once per paragraph.
func (p *inlineParser) codeSpan(i int, flush func(int)) (int, bool) {
	s := p.s
	j := i
	for j < len(s) && s[j] == '`' {
		j++
	}
	n := j - i
	if p.ticks == nil {
		p.indexTicks()
	}
	list := p.ticks[n]
	k := p.tickAt[n]
	for k < len(list) && list[k] <= i {
		k++
	}
	p.tickAt[n] = k
	if k == len(list) {
		return j, false // literal backticks, in the text around them
	}
	end := list[k]
	content := strings.ReplaceAll(s[j:end], "\n", " ")
	if len(content) >= 2 && content[0] == ' ' && content[len(content)-1] == ' ' && strings.TrimSpace(content) != "" {
		content = content[1 : len(content)-1]
	}
	flush(i)
	p.toks = append(p.toks, itok{kind: tCode, text: content})
	return end + n, true
}

func (p *inlineParser) indexTicks() {
	p.ticks, p.tickAt = map[int][]int{}, map[int]int{}
	s := p.s
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		p.ticks[j-i] = append(p.ticks[j-i], i)
		i = j
	}
}

// delim records a run of emphasis characters with what it can do.
// "~" and "|" count only in pairs (~~strike~~, ||spoiler||).
func (p *inlineParser) delim(i int, flush func(int)) (int, bool) {
	s := p.s
	c := s[i]
	j := i
	for j < len(s) && s[j] == c {
		j++
	}
	if (c == '~' || c == '|') && j-i != 2 {
		return j, false // stays in the text around it
	}
	flush(i)
	before, after := ' ', ' '
	if i > 0 {
		before, _ = utf8.DecodeLastRuneInString(s[:i])
	}
	if j < len(s) {
		after, _ = utf8.DecodeRuneInString(s[j:])
	}
	spaceB, spaceA := unicode.IsSpace(before), unicode.IsSpace(after)
	punctB, punctA := isPunct(before), isPunct(after)
	left := !spaceA && (!punctA || spaceB || punctB)
	right := !spaceB && (!punctB || spaceA || punctA)
	t := itok{kind: tDelim, text: s[i:j], ch: c, n: j - i, canOpen: left, canClose: right}
	if c == '_' {
		t.canOpen = left && (!right || punctB)
		t.canClose = right && (!left || punctA)
	}
	p.toks = append(p.toks, t)
	return j, true
}

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return isASCIIPunct(byte(r))
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// link matches [label](target). A label holds no brackets and a target
// no space, which is what models write and keeps the search linear: the
// next "]" and the next target end are cached for every later start
// before them.
func (p *inlineParser) link(i int, flush func(int)) (int, bool) {
	s := p.s
	if p.rb != len(s) && p.rb <= i {
		p.rb = len(s)
		if k := strings.IndexByte(s[i+1:], ']'); k >= 0 {
			p.rb = i + 1 + k
		}
	}
	q := p.rb
	if q >= len(s)-1 || s[q+1] != '(' || strings.IndexByte(s[i+1:q], '[') >= 0 {
		return i + 1, false
	}
	from := q + 2
	if p.paren != len(s) && p.paren < from {
		p.paren = len(s)
		if k := strings.IndexAny(s[from:], ") \t\n"); k >= 0 {
			p.paren = from + k
		}
	}
	r := p.paren
	if r >= len(s) || s[r] != ')' || r == from {
		return i + 1, false
	}
	flush(i)
	p.toks = append(p.toks, itok{kind: tLink, text: s[i+1 : q], href: s[from:r]})
	return r + 1, true
}

// angle matches an autolink <https://…> or a platform mention <@id>,
// <@!id>, <@&id>, <#id>; anything else starting with "<" is text.
func (p *inlineParser) angle(i int, flush func(int)) (int, bool) {
	s := p.s
	end := -1
	for k := i + 1; k < len(s) && k-i <= autolinkMax; k++ {
		c := s[k]
		if c == '>' {
			end = k
			break
		}
		if c == '<' || c == ' ' || c == '\n' || c == '\t' {
			break
		}
	}
	if end < 0 {
		return i + 1, false
	}
	inner := s[i+1 : end]
	switch {
	case isMention(inner):
		flush(i)
		p.toks = append(p.toks, itok{kind: tMention, text: s[i : end+1]})
		return end + 1, true
	case !p.noLinks && safeHref(inner) && strings.Contains(inner, ":"):
		flush(i)
		p.toks = append(p.toks, itok{kind: tLink, text: inner, href: inner})
		return end + 1, true
	}
	return i + 1, false
}

func isMention(inner string) bool {
	id, ok := strings.CutPrefix(inner, "@&")
	if !ok {
		if id, ok = strings.CutPrefix(inner, "@!"); !ok {
			if id, ok = strings.CutPrefix(inner, "@"); !ok {
				id, ok = strings.CutPrefix(inner, "#")
			}
		}
	}
	if !ok || id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isAlnum(id[i]) {
			return false
		}
	}
	return true
}

// maxHref is the longest link target kept as a link: a longer one would
// not fit a chunk's markup, so it is shown as text, where it can be cut.
const maxHref = 1024

// safeHref reports whether a link target may become a real link: web,
// mail and Telegram links only, never javascript: or a relative path.
func safeHref(h string) bool {
	if len(h) > maxHref {
		return false
	}
	l := strings.ToLower(h)
	for _, p := range []string{"https://", "http://", "mailto:", "tg://"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) {
			return true
		}
	}
	return false
}

// bareURL keeps a URL written as text in one piece, so that its "_" or
// "*" are never read as emphasis and Discord gets it unescaped.
func (p *inlineParser) bareURL(i int, flush func(int)) (int, bool) {
	s := p.s
	rest := s[i:]
	if !(hasPrefixFold(rest, "https://") || hasPrefixFold(rest, "http://")) {
		return i + 1, false
	}
	if i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); !unicode.IsSpace(r) && !strings.ContainsRune("([{\"'*_~|", r) {
			return i + 1, false
		}
	}
	j := i
	for j < len(s) && s[j] != ' ' && s[j] != '\n' && s[j] != '\t' && s[j] != '<' {
		j++
	}
	for j > i && strings.IndexByte(".,;:!?\"')]}*_~|", s[j-1]) >= 0 {
		j--
	}
	if strings.IndexByte(s[i:j], '/') < 0 || j-i <= len("https://") {
		return i + 1, false
	}
	flush(i)
	p.toks = append(p.toks, itok{kind: tURL, text: s[i:j]})
	return j, true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// emphasis pairs delimiter runs as CommonMark's "process emphasis" does,
// without the rule of three. Delimiters form a linked list; a closer that
// finds no opener raises the floor for its character, so each search
// covers new ground and the pass stays linear.
func (p *inlineParser) emphasis() {
	var ds []int
	for i, t := range p.toks {
		if t.kind == tDelim {
			ds = append(ds, i)
		}
	}
	if len(ds) < 2 {
		return
	}
	prev, next := make([]int, len(ds)), make([]int, len(ds))
	gone := make([]bool, len(ds))
	for k := range ds {
		prev[k], next[k] = k-1, k+1
	}
	remove := func(k int) {
		gone[k] = true
		if prev[k] >= 0 {
			next[prev[k]] = next[k]
		}
		if next[k] < len(ds) {
			prev[next[k]] = prev[k]
		}
	}
	floor := map[byte]int{}
	for c := 0; c < len(ds); c++ {
		cl := &p.toks[ds[c]]
		if !cl.canClose || gone[c] {
			continue
		}
		for cl.n > 0 {
			bottom, ok := floor[cl.ch]
			if !ok {
				bottom = -1
			}
			o := prev[c]
			for o > bottom && (p.toks[ds[o]].ch != cl.ch || !p.toks[ds[o]].canOpen) {
				o = prev[o]
			}
			if o <= bottom {
				floor[cl.ch] = prev[c]
				if !cl.canOpen {
					remove(c)
				}
				break
			}
			op := &p.toks[ds[o]]
			use, st := 1, 1 // italic
			switch {
			case cl.ch == '~':
				use, st = 2, 2
			case cl.ch == '|':
				use, st = 2, 3
			case op.n >= 2 && cl.n >= 2:
				use, st = 2, 0
			}
			op.opens[st]++
			cl.closes[st]++
			op.n -= use
			cl.n -= use
			for k := next[o]; k < c; k = next[k] {
				remove(k)
			}
			if op.n == 0 {
				remove(o)
			}
		}
		if cl.n == 0 && !gone[c] {
			remove(c)
		}
	}
}

// emit turns the tokens into runs, carrying the styles the paired
// delimiters open and close.
func (p *inlineParser) emit(b *builder, base style, link int32) {
	var depth [nStyles]int32
	cur := func() style {
		st := base
		for k, d := range depth {
			if d > 0 {
				st |= styleAt[k]
			}
		}
		return st
	}
	for _, t := range p.toks {
		switch t.kind {
		case tText:
			b.add(run{text: t.text, style: cur(), link: link})
		case tDelim:
			for k := range depth {
				depth[k] -= t.closes[k]
			}
			b.add(run{text: strings.Repeat(string(t.ch), t.n), style: cur(), link: link})
			for k := range depth {
				depth[k] += t.opens[k]
			}
		case tCode:
			b.add(run{text: t.text, style: cur() | code, link: link})
		case tMention:
			b.add(run{text: t.text, style: cur(), kind: kMention, link: link})
		case tURL:
			b.add(run{text: t.text, style: cur(), kind: kURL, link: link})
		case tLink:
			p.emitLink(b, t, cur())
		}
	}
}

// emitLink adds a link's label and, for the plain rendering, its target
// after it when the label does not already show it. A target that is not
// a safe link stays visible as text instead.
func (p *inlineParser) emitLink(b *builder, t itok, st style) {
	label := t.text
	if strings.TrimSpace(label) == "" {
		label = t.href
	}
	if !safeHref(t.href) {
		b.inline(label, st, 0)
		b.add(run{text: " (" + t.href + ")", style: st})
		return
	}
	idx := b.link(t.href)
	b.inline(label, st, idx)
	if label != t.href && strings.TrimPrefix(t.href, "mailto:") != label {
		b.add(run{text: " (" + t.href + ")", kind: kSuffix, style: st})
	}
}
