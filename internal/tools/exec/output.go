package exec

import (
	"fmt"
	"strings"
	"sync"
)

// outBuf keeps a command's output (stdout and stderr together, as a
// terminal shows them) within bounds: the first headCap bytes, the last
// tailCap bytes in a ring, and the count of everything written. Writes
// never block and never fail, so a flood cannot stall the command or
// Talon; what does not fit is counted and dropped. Safe for concurrent
// use.
type outBuf struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte
	ring    []byte // up to tailCap bytes; once full, the oldest is at end
	end     int    // next write position in a full ring
	total   int64
	changed chan struct{} // closed by the next Write
}

func newOutBuf(headCap, tailCap int) *outBuf {
	return &outBuf{headCap: headCap, tailCap: tailCap, changed: make(chan struct{})}
}

func (b *outBuf) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(n)
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.writeRing(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, nil
}

func (b *outBuf) writeRing(p []byte) {
	if len(p) == 0 || b.tailCap == 0 {
		return
	}
	if len(p) >= b.tailCap {
		b.ring = append(b.ring[:0], p[len(p)-b.tailCap:]...)
		b.end = 0
		return
	}
	if len(b.ring) < b.tailCap {
		k := min(b.tailCap-len(b.ring), len(p))
		b.ring = append(b.ring, p[:k]...)
		p = p[k:]
		b.end = len(b.ring) % b.tailCap
	}
	for len(p) > 0 {
		k := copy(b.ring[b.end:], p)
		p = p[k:]
		b.end = (b.end + k) % b.tailCap
	}
}

// Total is the number of bytes written so far.
func (b *outBuf) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Changed returns a channel closed by the next Write.
func (b *outBuf) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// span is a range of output offsets, [start, end).
type span struct{ start, end int64 }

func (s span) clip(o span) span {
	s.start, s.end = max(s.start, o.start), min(s.end, o.end)
	if s.end < s.start {
		s.end = s.start
	}
	return s
}

// Render returns the output from offset from to the end, at most its
// first maxHead and last maxTail bytes; every part left out, because it
// did not fit here or was not kept, is a line "[... N bytes truncated
// ...]". It also returns the offset it rendered up to. Invalid UTF-8 is
// replaced.
func (b *outBuf) Render(from int64, maxHead, maxTail int) (string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	end := b.total
	from = min(max(from, 0), end)
	var want []span
	if end-from <= int64(maxHead+maxTail) {
		want = []span{{from, end}}
	} else {
		want = []span{{from, from + int64(maxHead)}, {end - int64(maxTail), end}}
	}
	headSpan := span{0, int64(len(b.head))}
	tailSpan := span{end - int64(len(b.ring)), end}
	var sb strings.Builder
	pos := from
	for _, w := range want {
		for i, kept := range []span{headSpan, tailSpan} {
			s := w.clip(kept)
			if s.start == s.end {
				continue
			}
			if s.start > pos {
				truncMark(&sb, s.start-pos)
			}
			if i == 0 {
				sb.Write(b.head[s.start:s.end])
			} else {
				b.writeTail(&sb, s.start-tailSpan.start, s.end-tailSpan.start)
			}
			pos = s.end
		}
	}
	if pos < end {
		truncMark(&sb, end-pos)
	}
	return strings.ToValidUTF8(sb.String(), "\uFFFD"), end
}

// writeTail writes the ring's bytes [i, j), counted from its oldest.
func (b *outBuf) writeTail(sb *strings.Builder, i, j int64) {
	n := int64(len(b.ring))
	start := int64(0)
	if n == int64(b.tailCap) {
		start = int64(b.end)
	}
	for k := i; k < j; {
		at := (start + k) % n
		stop := min(n, at+(j-k))
		sb.Write(b.ring[at:stop])
		k += stop - at
	}
}

func truncMark(sb *strings.Builder, n int64) {
	if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
		sb.WriteByte('\n')
	}
	fmt.Fprintf(sb, "[... %d bytes truncated ...]\n", n)
}
