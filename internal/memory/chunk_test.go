package memory

import (
	"fmt"
	"strings"
	"testing"
)

func TestChunkText(t *testing.T) {
	para := func(words int, tag string) string { // one line of roughly 6*words bytes
		return strings.TrimSpace(strings.Repeat(tag+"xxxx ", words))
	}
	for _, tc := range []struct {
		name string
		text string
		want []string // "start-end" of each chunk
	}{
		{"empty", "", nil},
		{"blank lines only", "\n\n  \n", nil},
		{"one line", "hello", []string{"1-1"}},
		{"small sections packed", "# A\n\nshort\n\n# B\n\nshort too\n", []string{"1-7"}},
		{"heading closes a full chunk",
			"# A\n\n" + para(80, "a") + "\n\n# B\n\nb text\n",
			[]string{"1-3", "5-7"}},
		{"paragraphs split at the size limit",
			para(120, "a") + "\n\n" + para(120, "b") + "\n\n" + para(120, "c"),
			[]string{"1-1", "3-3", "5-5"}},
		{"long paragraph split at line ends",
			strings.Repeat(para(60, "l")+"\n", 10),
			[]string{"1-3", "4-6", "7-9", "10-10"}},
		{"long line split", strings.Repeat("y", 3000), []string{"1-1", "1-1", "1-1"}},
		{"fence keeps blank lines", "```\ncode\n\nmore\n```\nafter\n", []string{"1-6"}},
		{"heading inside fence is code", "```\n# not a heading\n```", []string{"1-3"}},
		{"crlf", "# A\r\n\r\ntext\r\n", []string{"1-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := chunkText(tc.text)
			var spans []string
			for _, c := range got {
				spans = append(spans, fmt.Sprintf("%d-%d", c.start, c.end))
				if len(c.text) > maxChunk {
					t.Errorf("chunk %d-%d is %d bytes", c.start, c.end, len(c.text))
				}
			}
			if strings.Join(spans, " ") != strings.Join(tc.want, " ") {
				t.Errorf("spans %v, want %v", spans, tc.want)
			}
		})
	}
}

// TestChunkSizes checks the size bounds and that chunks cover every
// non-blank line, in order, on a longer mixed document.
func TestChunkSizes(t *testing.T) {
	var b strings.Builder
	for i := range 60 {
		if i%7 == 0 {
			fmt.Fprintf(&b, "## Section %d\n\n", i)
		}
		fmt.Fprintf(&b, "%s\n\n", strings.Repeat(fmt.Sprintf("word%d ", i), 5+i*2)) // lines under maxChunk: TestChunkText covers longer ones
	}
	text := b.String()
	chunks := chunkText(text)
	lines := strings.Split(text, "\n")
	next := 1
	for i, c := range chunks {
		if len(c.text) > maxChunk {
			t.Errorf("chunk %d is %d bytes", i, len(c.text))
		}
		if i < len(chunks)-1 && len(c.text) < minChunk/2 {
			t.Errorf("chunk %d (%d-%d) is only %d bytes", i, c.start, c.end, len(c.text))
		}
		for n := next; n < c.start; n++ {
			if strings.TrimSpace(lines[n-1]) != "" {
				t.Errorf("line %d is in no chunk", n)
			}
		}
		if c.start < next || c.end < c.start {
			t.Errorf("chunk %d spans %d-%d after line %d", i, c.start, c.end, next-1)
		}
		if !strings.Contains(c.text, strings.TrimSpace(lines[c.start-1])) || !strings.Contains(c.text, strings.TrimSpace(lines[c.end-1])) {
			t.Errorf("chunk %d does not hold its first and last line", i)
		}
		next = c.end + 1
	}
}
