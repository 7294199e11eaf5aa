package pdf

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	lpdf "github.com/ledongthuc/pdf"
	"golang.org/x/text/encoding/charmap"
)

// The bounds of a ToUnicode map: entries kept, and characters a code may
// map to (a ligature is a few).
const (
	maxCMapEntries = 20_000
	maxMapped      = 16
)

// font turns the codes of a font's strings into text: through its
// ToUnicode map when it has a readable one, else through the byte
// encoding of a simple font. A composite font without a map gives no
// text: its codes are glyph ids, which say nothing of the characters.
type font struct {
	cmap      *cmap
	table     *[256]rune
	composite bool
}

// newFont reads the font dictionary d. Its ToUnicode stream is read only
// when its decompressed size is at most limit.
func newFont(d lpdf.Value, limit int64) *font {
	f := &font{composite: d.Key("Subtype").Name() == "Type0"}
	if tu := d.Key("ToUnicode"); tu.Kind() == lpdf.Stream && measure(tu, limit) == nil {
		if m := readCMap(tu, d); m != nil && len(m.single)+len(m.ranges) > 0 {
			f.cmap = m
			return f
		}
	}
	if !f.composite {
		f.table = simpleTable(d.Key("Encoding"))
	}
	return f
}

func (f *font) decode(raw string) string {
	switch {
	case f == nil:
		return latin1(raw)
	case f.cmap != nil:
		return f.cmap.decode(raw)
	case f.table != nil:
		var b strings.Builder
		for i := 0; i < len(raw); i++ {
			if r := f.table[raw[i]]; r != 0 {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	return ""
}

func latin1(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		b.WriteRune(rune(raw[i]))
	}
	return b.String()
}

// simpleTable is a simple font's code-to-character table: its base
// encoding (WinAnsi, MacRoman, else Latin-1 for Standard and the font's
// built-in one), with the Differences applied.
func simpleTable(enc lpdf.Value) *[256]rune {
	var t [256]rune
	base := enc
	if enc.Kind() == lpdf.Dict {
		base = enc.Key("BaseEncoding")
	}
	for i := range t {
		switch base.Name() {
		case "WinAnsiEncoding":
			t[i] = charmap.Windows1252.DecodeByte(byte(i))
		case "MacRomanEncoding":
			t[i] = charmap.Macintosh.DecodeByte(byte(i))
		default:
			t[i] = rune(i)
		}
		if i < 0x20 && i != '\t' {
			t[i] = 0
		}
	}
	if enc.Kind() != lpdf.Dict {
		return &t
	}
	diffs := enc.Key("Differences")
	code := -1
	for i := 0; i < diffs.Len() && i < 512; i++ {
		switch x := diffs.Index(i); x.Kind() {
		case lpdf.Integer:
			code = int(x.Int64())
		case lpdf.Name:
			if code >= 0 && code < 256 {
				t[code] = glyphRune(x.Name())
			}
			code++
		}
	}
	return &t
}

// glyphRune is the character of a glyph name: uniXXXX, uXXXX[XX], a
// single character, or one of the common names of the Adobe Glyph List.
// An unknown name gives 0: the code is dropped rather than guessed.
func glyphRune(n string) rune {
	if r, ok := glyphs[n]; ok {
		return r
	}
	if utf := []rune(n); len(utf) == 1 {
		return utf[0]
	}
	for _, p := range []string{"uni", "u"} {
		if h, ok := strings.CutPrefix(n, p); ok && len(h) >= 4 && len(h) <= 6 {
			if v, err := strconv.ParseUint(h, 16, 32); err == nil && v <= 0x10FFFF {
				return rune(v)
			}
		}
	}
	return 0
}

var glyphs = map[string]rune{
	"space": ' ', "exclam": '!', "quotedbl": '"', "numbersign": '#', "dollar": '$', "percent": '%',
	"ampersand": '&', "quotesingle": '\'', "quoteright": '’', "quoteleft": '‘', "parenleft": '(',
	"parenright": ')', "asterisk": '*', "plus": '+', "comma": ',', "hyphen": '-', "minus": '−',
	"period": '.', "slash": '/', "zero": '0', "one": '1', "two": '2', "three": '3', "four": '4',
	"five": '5', "six": '6', "seven": '7', "eight": '8', "nine": '9', "colon": ':', "semicolon": ';',
	"less": '<', "equal": '=', "greater": '>', "question": '?', "at": '@', "bracketleft": '[',
	"backslash": '\\', "bracketright": ']', "asciicircum": '^', "underscore": '_', "grave": '`',
	"braceleft": '{', "bar": '|', "braceright": '}', "asciitilde": '~', "bullet": '•',
	"endash": '–', "emdash": '—', "quotedblleft": '“', "quotedblright": '”', "ellipsis": '…',
	"fi": 'ﬁ', "fl": 'ﬂ', "ff": 'ﬀ', "ffi": 'ﬃ', "ffl": 'ﬄ', "copyright": '©', "registered": '®',
	"trademark": '™', "degree": '°', "section": '§', "paragraph": '¶', "dagger": '†', "Euro": '€',
	"adieresis": 'ä', "odieresis": 'ö', "udieresis": 'ü', "Adieresis": 'Ä', "Odieresis": 'Ö',
	"Udieresis": 'Ü', "germandbls": 'ß', "eacute": 'é', "egrave": 'è', "aacute": 'á', "agrave": 'à',
	"ccedilla": 'ç', "ntilde": 'ñ', "nbspace": '\u00a0', "periodcentered": '·', "sterling": '£',
}

// cmap is a ToUnicode map: codes of 1 to 4 bytes to text.
type cmap struct {
	single map[string]string
	ranges []cmapRange // sorted by lo
	widths []int       // code lengths in use, shortest first
}

// cmapRange maps the codes lo..hi of one length: to dst with its last
// character advanced by the code's offset, or to the offset's item of
// list.
type cmapRange struct {
	n      int
	lo, hi uint32
	dst    []rune
	list   []string
}

// readCMap parses a ToUnicode stream, or gives nil. The stream's
// PostScript needs a dictionary where it asks for a resource: d is the
// font dictionary, resolved afresh for each font, so what the program
// defines in it touches nothing else.
func readCMap(stream, d lpdf.Value) *cmap {
	m := &cmap{single: map[string]string{}}
	mark := -1
	entries := 0
	err := guard(func() {
		lpdf.Interpret(stream, func(stk *lpdf.Stack, op string) {
			switch op {
			case "findresource":
				stk.Pop()
				stk.Pop()
				stk.Push(d)
			case "begincodespacerange", "beginbfchar", "beginbfrange":
				stk.Pop() // the count, which the operands say better
				mark = stk.Len()
			case "endbfchar", "endbfrange", "endcodespacerange":
				var ops []lpdf.Value
				for stk.Len() > max(mark, 0) {
					ops = append(ops, stk.Pop())
				}
				slices.Reverse(ops)
				mark = -1
				if op == "endbfchar" {
					entries += m.addChars(ops, maxCMapEntries-entries)
				} else if op == "endbfrange" {
					entries += m.addRanges(ops, maxCMapEntries-entries)
				}
			}
		})
	})
	if err != nil {
		return nil
	}
	slices.SortFunc(m.ranges, func(a, b cmapRange) int {
		if a.n != b.n {
			return a.n - b.n
		}
		return int(int64(a.lo) - int64(b.lo))
	})
	for k := range m.single {
		m.addWidth(len(k))
	}
	for _, r := range m.ranges {
		m.addWidth(r.n)
	}
	slices.Sort(m.widths)
	return m
}

func (m *cmap) addWidth(n int) {
	if !slices.Contains(m.widths, n) {
		m.widths = append(m.widths, n)
	}
}

// addChars adds bfchar pairs (code, text), at most room of them.
func (m *cmap) addChars(ops []lpdf.Value, room int) int {
	added := 0
	for i := 0; i+1 < len(ops) && added < room; i += 2 {
		code := ops[i].RawString()
		if len(code) < 1 || len(code) > 4 {
			continue
		}
		m.single[code] = utf16Text(ops[i+1].RawString())
		added++
	}
	return added
}

// addRanges adds bfrange triples (lo, hi, text or list), at most room.
func (m *cmap) addRanges(ops []lpdf.Value, room int) int {
	added := 0
	for i := 0; i+2 < len(ops) && added < room; i += 3 {
		lo, hi := ops[i].RawString(), ops[i+1].RawString()
		if len(lo) < 1 || len(lo) > 4 || len(lo) != len(hi) || codeOf(hi) < codeOf(lo) {
			continue
		}
		r := cmapRange{n: len(lo), lo: codeOf(lo), hi: codeOf(hi)}
		switch d := ops[i+2]; d.Kind() {
		case lpdf.String:
			r.dst = []rune(utf16Text(d.RawString()))
			if len(r.dst) == 0 {
				continue
			}
		case lpdf.Array:
			for j := 0; j < d.Len() && j < 256; j++ {
				r.list = append(r.list, utf16Text(d.Index(j).RawString()))
			}
		default:
			continue
		}
		m.ranges = append(m.ranges, r)
		added++
	}
	return added
}

func codeOf(s string) uint32 {
	var v uint32
	for i := 0; i < len(s); i++ {
		v = v<<8 | uint32(s[i])
	}
	return v
}

// utf16Text decodes a map's UTF-16BE text, at most maxMapped characters.
func utf16Text(s string) string {
	u := make([]uint16, 0, len(s)/2)
	for i := 0; i+1 < len(s) && len(u) < maxMapped*2; i += 2 {
		u = append(u, uint16(s[i])<<8|uint16(s[i+1]))
	}
	r := utf16.Decode(u)
	return string(r[:min(len(r), maxMapped)])
}

// decode reads raw code by code, each the shortest code the map knows; a
// byte no code starts with is skipped.
func (m *cmap) decode(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); {
		n := m.lookup(raw[i:], &b)
		i += max(n, 1)
	}
	return b.String()
}

func (m *cmap) lookup(s string, b *strings.Builder) int {
	for _, n := range m.widths {
		if n > len(s) {
			break
		}
		if t, ok := m.single[s[:n]]; ok {
			b.WriteString(t)
			return n
		}
		c := codeOf(s[:n])
		i, _ := slices.BinarySearchFunc(m.ranges, cmapRange{n: n, lo: c}, func(a, t cmapRange) int {
			if a.n != t.n {
				return a.n - t.n
			}
			return int(int64(a.lo) - int64(t.lo))
		})
		// The range holding c, if any, starts at or before c.
		for _, j := range []int{i, i - 1} {
			if j < 0 || j >= len(m.ranges) {
				continue
			}
			r := m.ranges[j]
			if r.n != n || c < r.lo || c > r.hi {
				continue
			}
			off := c - r.lo
			if r.list != nil {
				if int(off) < len(r.list) {
					b.WriteString(r.list[off])
				}
				return n
			}
			dst := slices.Clone(r.dst)
			dst[len(dst)-1] += rune(off)
			b.WriteString(string(dst))
			return n
		}
	}
	return 1
}
