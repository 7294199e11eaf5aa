package exec

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// want is what Render should give for the stream s: the bytes kept
// (first head, last tail) from from, shown within maxHead and maxTail,
// built the obvious way from the whole stream.
func want(s string, head, tail int, from, maxHead, maxTail int) string {
	keep := make([]bool, len(s))
	for i := range s {
		keep[i] = i < head || i >= len(s)-tail
	}
	show := make([]bool, len(s))
	for i := from; i < len(s); i++ {
		if len(s)-from <= maxHead+maxTail {
			show[i] = keep[i]
		} else {
			show[i] = keep[i] && (i < from+maxHead || i >= len(s)-maxTail)
		}
	}
	var b strings.Builder
	gap := 0
	flush := func() {
		if gap > 0 {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "[... %d bytes truncated ...]\n", gap)
			gap = 0
		}
	}
	for i := from; i < len(s); i++ {
		if show[i] {
			flush()
			b.WriteByte(s[i])
		} else {
			gap++
		}
	}
	flush()
	return b.String()
}

func TestOutBuf(t *testing.T) {
	stream := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()[:n]
	}
	cases := []struct {
		name             string
		n, head, tail    int
		chunk            int
		from             int
		maxHead, maxTail int
	}{
		{"empty", 0, 10, 10, 1, 0, 5, 5},
		{"all fits", 15, 10, 10, 3, 0, 100, 100},
		{"head only", 25, 30, 0, 4, 0, 100, 100},
		{"tail only", 25, 0, 7, 4, 0, 100, 100},
		{"dropped middle", 100, 10, 20, 7, 0, 100, 100},
		{"ring wraps many times", 1000, 10, 33, 5, 0, 1000, 1000},
		{"chunk larger than ring", 500, 10, 20, 64, 0, 1000, 1000},
		{"one write", 500, 10, 20, 500, 0, 1000, 1000},
		{"display cut", 100, 100, 100, 9, 0, 8, 12},
		{"display cut and dropped", 1000, 50, 100, 13, 0, 20, 30},
		{"from in head", 100, 10, 20, 7, 5, 100, 100},
		{"from in gap", 100, 10, 20, 7, 30, 100, 100},
		{"from in tail", 100, 10, 20, 7, 90, 100, 100},
		{"from at end", 100, 10, 20, 7, 100, 100, 100},
		{"from with display cut", 1000, 100, 500, 11, 200, 40, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := stream(c.n)
			b := newOutBuf(c.head, c.tail)
			for i := 0; i < len(s); i += c.chunk {
				n, err := b.Write([]byte(s[i:min(i+c.chunk, len(s))]))
				if err != nil || n != min(c.chunk, len(s)-i) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			got, end := b.Render(int64(c.from), c.maxHead, c.maxTail)
			if end != int64(c.n) || b.Total() != int64(c.n) {
				t.Errorf("end %d total %d, want %d", end, b.Total(), c.n)
			}
			if w := want(s, c.head, c.tail, c.from, c.maxHead, c.maxTail); got != w {
				t.Errorf("Render:\n got %q\nwant %q", got, w)
			}
		})
	}
}

func TestOutBufInvalidUTF8(t *testing.T) {
	b := newOutBuf(2, 2)
	b.Write([]byte("aé-éb")) // é is 2 bytes: both cuts split one
	got, _ := b.Render(0, 100, 100)
	if want := "a\uFFFD\n[... 3 bytes truncated ...]\n\uFFFDb"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOutBufConcurrent(t *testing.T) {
	b := newOutBuf(100, 1000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Write([]byte("0123456789"))
			}
		}()
	}
	changed := b.Changed()
	wg.Wait()
	if b.Total() != 80000 {
		t.Errorf("total %d", b.Total())
	}
	select {
	case <-changed:
	default:
		t.Error("Changed was not closed by the writes")
	}
	got, _ := b.Render(0, 1<<20, 1<<20)
	if !strings.Contains(got, "[... 78900 bytes truncated ...]") {
		t.Errorf("render: %q", got)
	}
}
