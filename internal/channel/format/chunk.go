package format

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// An atom is the smallest piece the chunker moves: a word, a stretch of
// whitespace, or, in a code block, a word, a stretch of spaces or one
// newline. Cuts fall between atoms (or, when one word is longer than a
// chunk, inside it).
type atom struct {
	run        int
	start, end int // bytes of the run's text
	class      atomClass
}

type atomClass uint8

const (
	aWord atomClass = iota
	aSpace
	aNewline
	aPara
	aCodeWord
	aCodeSpace
	aCodeNL
)

func (c atomClass) prose() bool { return c == aSpace || c == aNewline || c == aPara }

func (c atomClass) word() bool { return c == aWord || c == aCodeWord }

// Cut priorities, worst first: the chunker cuts where the priority is
// highest (see choose).
const (
	pSuffix    = iota // before a link's " (url)", last resort
	pHard             // between two words with no space
	pCodeSpace        // inside a code block, at a space
	pCodeNL           // inside a code block, at a line end
	pInSpan           // at a space inside a style or link
	pSpace
	pNewline
	pPara
	nPrio
)

func atomize(d *doc) []atom {
	size := 0
	for _, r := range d.runs {
		size += len(r.text)
	}
	as := make([]atom, 0, size/4+len(d.runs)) // about two atoms per word
	for ri := range d.runs {
		r := &d.runs[ri]
		s := r.text
		for i := 0; i < len(s); {
			j := i
			var c atomClass
			switch {
			case r.block != 0 && s[i] == '\n':
				j, c = i+1, aCodeNL
			case r.block != 0 && (s[i] == ' ' || s[i] == '\t'):
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
					j++
				}
				c = aCodeSpace
			case r.block != 0:
				for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' {
					j++
				}
				c = aCodeWord
			case isSpace(s[i]):
				nl := 0
				for j < len(s) && isSpace(s[j]) {
					if s[j] == '\n' {
						nl++
					}
					j++
				}
				c = [...]atomClass{aSpace, aNewline, aPara}[min(nl, 2)]
			default:
				for j < len(s) && !isSpace(s[j]) {
					j++
				}
				c = aWord
			}
			as = append(as, atom{run: ri, start: i, end: j, class: c})
			i = j
		}
	}
	return as
}

// isSpace is ASCII whitespace, as strings.TrimSpace reads it: a cut may
// fall on it and a chunk of it alone is dropped, so the two must agree
// (a run of form feeds cut mid-word was once dropped as "empty").
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// priority is how good a cut before atom k is, or -1 when the cut would
// only move whitespace (the previous atom is whitespace, or this one is a
// word after whitespace: the cut belongs before the whitespace).
func priority(d *doc, as []atom, k int) int {
	a, prev := as[k], as[k-1]
	r := &d.runs[a.run]
	if r.kind == kSuffix {
		return pSuffix
	}
	switch a.class {
	case aCodeNL:
		return pCodeNL
	case aCodeSpace:
		return pCodeSpace
	case aCodeWord:
		return pHard
	case aWord:
		if prev.class.word() {
			return pHard
		}
		return -1
	}
	if prev.class.prose() {
		return -1
	}
	if r.style != 0 || r.link != 0 {
		return pInSpan
	}
	return [...]int{aSpace: pSpace, aNewline: pNewline, aPara: pPara}[a.class]
}

type candidate struct {
	k  int // the cut is before atom k
	s  state
	ok bool
}

// cut is the chunker: it fills a chunk atom by atom, remembering the
// latest cut of each priority, and on overflow rolls back to the best.
// Atoms after that cut are written again in the next chunk, at most one
// chunk's worth, so the whole is linear in the reply.
func cut(d *doc, o Options) []Chunk {
	as := atomize(d)
	w := newWriter(o.Flavor, d)
	var out []Chunk
	i := skipProse(as, 0)
	for i < len(as) {
		w.reset()
		var best [nPrio]candidate
		over := false
		j := i
		for ; j < len(as); j++ {
			if j > i {
				if p := priority(d, as, j); p >= 0 {
					best[p] = candidate{k: j, s: w.snapshot(), ok: true}
				}
			}
			a := as[j]
			// A UTF-16 unit takes at most three bytes: an atom longer than
			// that cannot fit, and is not rendered only to find it out.
			if a.end-a.start > 3*o.Limit {
				over = true
				break
			}
			w.write(a.run, d.runs[a.run].text[a.start:a.end])
			if w.cost() > o.Limit || o.MaxLines > 0 && w.lineCount() > o.MaxLines {
				over = true
				break
			}
		}
		if !over {
			out = append(out, w.finish())
			break
		}
		if c, ok := choose(&best, o); ok {
			w.restore(c.s)
			out = append(out, w.finish())
			i = after(as, c.k)
			continue
		}
		// A link whose markup leaves no room for a character of its label
		// cannot be sent as a link: its label and target become text,
		// which can be cut.
		if l := d.runs[as[i].run].link; l != 0 && o.Flavor != Plain && w.markupCost(as[i].run) >= o.Limit {
			d.unlink(l)
			continue
		}
		// The chunk's first atom alone is too big: cut inside it.
		w.reset()
		n := w.fit(as[i].run, d.runs[as[i].run].text[as[i].start:as[i].end], o.Limit)
		out = append(out, w.finish())
		as[i].start += n
		if as[i].start == as[i].end {
			i++
		}
	}
	return settle(out, o.Flavor, d.plain())
}

// choose picks the cut. Outside code blocks it takes the best kind of
// break in the chunk's second half (in newline mode, anywhere), else the
// latest break of any kind; a code block is cut only when no break
// outside it exists, and a word only when nothing else does.
func choose(best *[nPrio]candidate, o Options) (candidate, bool) {
	late := func(c candidate) bool {
		return o.Newline || 2*c.s.n16 >= o.Limit || o.MaxLines > 0 && 2*c.s.lines >= o.MaxLines
	}
	for p := pPara; p >= pInSpan; p-- {
		if best[p].ok && late(best[p]) {
			return best[p], true
		}
	}
	var latest candidate
	for p := pInSpan; p <= pPara; p++ {
		if best[p].ok && (!latest.ok || best[p].k > latest.k) {
			latest = best[p]
		}
	}
	if latest.ok {
		return latest, true
	}
	for p := pCodeNL; p >= pSuffix; p-- {
		if best[p].ok {
			return best[p], true
		}
	}
	return candidate{}, false
}

// after is where the next chunk starts when this one was cut before atom
// k: past the whitespace the cut fell on (in a code block, one newline
// and not the indentation after it).
func after(as []atom, k int) int {
	if as[k].class == aCodeNL {
		return k + 1
	}
	return skipProse(as, k)
}

func skipProse(as []atom, k int) int {
	for k < len(as) && as[k].class.prose() {
		k++
	}
	return k
}

// fit writes as much of text (a piece of run ri) as fits in limit,
// always at least one character, never splitting a character from the
// marks and joiners that follow it; it returns the bytes written.
func (w *writer) fit(ri int, text string, limit int) int {
	r := &w.d.runs[ri]
	if w.f != Plain && r.kind != kSuffix {
		w.transition(ri)
	}
	room := limit - w.cost()
	n := 0
	for n < len(text) {
		c, size := utf8.DecodeRuneInString(text[n:])
		need := len16(string(c))
		if w.f != Plain && r.kind != kSuffix {
			need = len16(w.escape(r, string(c)))
		}
		if need > room && n > 0 {
			break
		}
		room -= need
		n += size
	}
	for m := n; m > 0 && m < len(text); {
		if !joined(text[:m], text[m:]) {
			n = m
			break
		}
		_, size := utf8.DecodeLastRuneInString(text[:m])
		m -= size
		if m == 0 {
			break // one cluster bigger than a chunk: cut it anyway
		}
	}
	w.write(ri, text[:n])
	return n
}

// joined reports whether a cut between before and after would split a
// character from a combining mark, a variation selector or a joiner.
func joined(before, after string) bool {
	next, _ := utf8.DecodeRuneInString(after)
	prev, _ := utf8.DecodeLastRuneInString(before)
	return prev == '\u200d' || next == '\u200d' || unicode.In(next, unicode.Mn, unicode.Me, unicode.Mc) ||
		next >= 0xfe00 && next <= 0xfe0f || next >= 0x1f3fb && next <= 0x1f3ff
}

// settle keeps every chunk sendable: a chunk of whitespace only (spaces
// in a code block) is dropped, and a chunk with no visible text (only a
// link's plain-text target, which the markup shows in the link) gives
// its plain text to the chunk before it, with the whitespace a cut
// between them skipped (found again in full, the reply's plain text:
// each chunk's plain text is the next piece of it).
func settle(out []Chunk, f Flavor, full string) []Chunk {
	kept := out[:0]
	pos, end := 0, 0 // where the next chunk is searched from; where the last kept one ends
	for _, c := range out {
		at := pos
		if i := strings.Index(full[pos:], c.Plain); i >= 0 {
			at = pos + i
			pos = at + len(c.Plain)
		}
		switch {
		case strings.TrimSpace(c.Plain) == "":
		case f != Plain && strings.TrimSpace(c.Text) == "" && len(kept) > 0:
			if gap := full[min(end, at):at]; strings.TrimSpace(gap) == "" {
				kept[len(kept)-1].Plain += gap
			}
			kept[len(kept)-1].Plain += c.Plain
			end = pos
		default:
			kept = append(kept, c)
			end = pos
		}
	}
	return kept
}
