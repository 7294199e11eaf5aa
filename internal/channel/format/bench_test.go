package format

import (
	"os"
	"strings"
	"testing"
)

// reply builds a realistic reply of about n bytes from the sample
// replies: prose, lists, links, a table and code blocks, repeated.
func reply(tb testing.TB, n int) string {
	var b strings.Builder
	for _, f := range []string{"mixed", "long-code", "table"} {
		src, err := os.ReadFile("testdata/replies/" + f + ".md")
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(src)
		b.WriteString("\n")
	}
	unit := b.String()
	out := strings.Repeat(unit, n/len(unit)+1)
	return out[:n]
}

// BenchmarkChunks measures the whole pipeline — parse, render, cut — for
// a 4 KB and a 100 KB reply, as each platform gets it:
//
//	go test -run '^$' -bench Chunks -benchmem ./internal/channel/format/
func BenchmarkChunks(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"4KB", 4 << 10}, {"100KB", 100 << 10}} {
		in := reply(b, size.n)
		for _, ch := range []string{"telegram", "slack", "discord"} {
			o := Defaults(ch)
			b.Run(size.name+"/"+ch, func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				for b.Loop() {
					Chunks(in, o)
				}
			})
		}
	}
}
