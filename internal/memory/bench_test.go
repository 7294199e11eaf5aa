package memory

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSearchUnchanged is a search over 200 memory files of about
// 3 KB each when none changed since the last: the cost of the stat pass
// plus the query.
func BenchmarkSearchUnchanged(b *testing.B) {
	ix := open(b)
	dir := b.TempDir()
	for i := range 200 {
		var s strings.Builder
		fmt.Fprintf(&s, "# Day %d\n\n", i)
		for j := range 6 {
			fmt.Fprintf(&s, "Paragraph %d of day %d: the team talked about topic%d and topic%d, and the deploy went fine.\n%s\n\n",
				j, i, i%17, (i+j)%23, strings.Repeat("filler words for length ", 15))
		}
		write(b, dir, fmt.Sprintf("memory/%03d/day%d.md", i/20, i), s.String())
	}
	search(b, ix, "main", dir, q("topic5 deploy")) // index once
	b.ReportAllocs()
	for b.Loop() {
		if r := search(b, ix, "main", dir, q("topic5 deploy")); len(r.Results) == 0 || r.Indexed != 200 {
			b.Fatalf("got %d results of %d files", len(r.Results), r.Indexed)
		}
	}
}
