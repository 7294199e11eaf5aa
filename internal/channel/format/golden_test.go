package format

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenOptions render each reply in testdata/replies with limits small
// enough that every file is cut into several chunks.
var goldenOptions = []struct {
	name string
	o    Options
}{
	{"telegram", Options{Flavor: Telegram, Limit: 400}},
	{"slack", Options{Flavor: Slack, Limit: 400}},
	{"discord", Options{Flavor: Discord, Limit: 400, MaxLines: 17}},
	{"plain", Options{Flavor: Plain, Limit: 400}},
	{"telegram-newline-bullets", Options{Flavor: Telegram, Limit: 400, Newline: true, Tables: "bullets"}},
}

// TestGolden renders the sample replies and compares them with the
// golden files; go test -run TestGolden -update rewrites them after a
// deliberate change (read the diff).
func TestGolden(t *testing.T) {
	replies, err := filepath.Glob("testdata/replies/*.md")
	if err != nil || len(replies) == 0 {
		t.Fatalf("no replies under testdata/replies: %v", err)
	}
	for _, path := range replies {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".md")
		for _, g := range goldenOptions {
			t.Run(name+"/"+g.name, func(t *testing.T) {
				chunks := Chunks(string(src), g.o)
				checkChunks(t, string(src), g.o, chunks)
				if len(chunks) < 2 && name != "table" {
					t.Errorf("%d chunk(s): the sample is meant to be cut", len(chunks))
				}
				got := dump(chunks)
				file := filepath.Join("testdata", "golden", name+"."+g.name+".txt")
				if *update {
					if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the rendering:\n%s", file, got)
				}
			})
		}
	}
}

// dump shows chunks as a golden file holds them.
func dump(chunks []Chunk) string {
	var b strings.Builder
	for i, c := range chunks {
		fmt.Fprintf(&b, "===== chunk %d: %d units, %d lines\n%s\n----- plain\n%s\n", i+1, len16(c.Text), strings.Count(c.Text, "\n")+1, c.Text, c.Plain)
	}
	return b.String()
}
