package memory

import (
	"strings"
	"unicode/utf8"
)

// Chunk sizes in bytes: a chunk is closed at a heading once it holds
// minChunk, and before a block that would take it past maxChunk.
const (
	minChunk = 400
	maxChunk = 1200
)

// chunk is a piece of a file with its 1-based first and last line.
type chunk struct {
	start, end int
	text       string
}

// block is a run of lines that belong together: a heading, a paragraph,
// or a piece of either.
type block struct {
	start, end int // 1-based, inclusive
	text       string
	heading    bool
}

// chunkText splits markdown into chunks of roughly minChunk to maxChunk
// bytes along headings and paragraphs. Small sections are packed together
// so that a file of one-line notes does not become one chunk per line;
// a paragraph longer than maxChunk is split at line ends, and a line
// longer than maxChunk at rune boundaries.
func chunkText(text string) []chunk {
	var out []chunk
	var cur []block
	size := 0
	flush := func() {
		if len(cur) == 0 {
			return
		}
		parts := make([]string, len(cur))
		for i, b := range cur {
			parts[i] = b.text
		}
		out = append(out, chunk{start: cur[0].start, end: cur[len(cur)-1].end, text: strings.Join(parts, "\n\n")})
		cur, size = cur[:0], 0
	}
	for _, b := range blocks(text) {
		if (b.heading && size >= minChunk) || (size > 0 && size+len("\n\n")+len(b.text) > maxChunk) {
			flush()
		}
		if size > 0 {
			size += len("\n\n")
		}
		cur = append(cur, b)
		size += len(b.text)
	}
	flush()
	return out
}

// blocks splits text into headings and paragraphs, no larger than
// maxChunk each. Blank lines separate paragraphs, except inside fenced
// code, which stays in one piece as far as the size allows.
func blocks(text string) []block {
	var out []block
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var para []string
	first := 0
	fenced := false
	end := func() { // closes the paragraph
		if len(para) > 0 {
			out = append(out, splitBlock(first, para)...)
		}
		para = para[:0]
	}
	for i, line := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fenced = !fenced
		case fenced:
		case trimmed == "":
			end()
			continue
		case isHeading(trimmed):
			end()
			at := len(out)
			out = append(out, splitBlock(n, []string{line})...)
			out[at].heading = true
			continue
		}
		if len(para) == 0 {
			first = n
		}
		para = append(para, line)
	}
	end()
	return out
}

// isHeading reports whether a trimmed line is an ATX heading.
func isHeading(s string) bool {
	n := 0
	for n < len(s) && s[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (n == len(s) || s[n] == ' ' || s[n] == '\t')
}

// splitBlock makes blocks of at most maxChunk bytes from consecutive
// lines starting at line first.
func splitBlock(first int, lines []string) []block {
	var out []block
	var b strings.Builder
	start := first
	for i, line := range lines {
		n := first + i
		if b.Len() > 0 && b.Len()+1+len(line) > maxChunk {
			out = append(out, block{start: start, end: n - 1, text: b.String()})
			b.Reset()
		}
		if b.Len() == 0 {
			start = n
		}
		for len(line) > maxChunk {
			cut := maxChunk
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			if cut == 0 {
				cut = maxChunk // not UTF-8: any cut will do
			}
			out = append(out, block{start: n, end: n, text: line[:cut]})
			line = line[cut:]
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	if b.Len() > 0 {
		out = append(out, block{start: start, end: first + len(lines) - 1, text: b.String()})
	}
	return out
}
