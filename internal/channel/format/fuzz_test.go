package format

import (
	"strings"
	"testing"
)

// seeds are the fuzz target's starting corpus: each construct of the
// grammar, the pathological inputs the spec names and the ways they meet
// a chunk boundary.
var seeds = []string{
	"",
	"plain words only",
	"**bold** *it* _it_ ~~s~~ ||sp|| `code` [l](https://x.y) <https://a.b> <@1> https://u.v/w_x",
	"<b>literal</b> and **unclosed across " + strings.Repeat("word ", 30),
	"```go\n" + strings.Repeat("fmt.Println(\"<x>\")\n", 20) + "```\nafter",
	"```\nunclosed fence\n" + strings.Repeat("line\n", 30),
	strings.Repeat("x", 300),
	strings.Repeat("&<>", 100),
	strings.Repeat("**a ", 50) + strings.Repeat("*b* ", 50),
	"| a | b |\n|---|---|\n| 1 | 2 |\n| **3** | `4` |",
	"> q1\n> q2 **b**\n\n- a\n  - b\n1. c",
	"[[[[[[[[](((((((]]]]]",
	"``` ``` `` ` ````",
	"e\u0301\u0301\u0301 👩\u200d👩\u200d👧 🇫🇷 👍🏽",
	"a\r\nb\r\n\r\nc",
	"\xff\xfe invalid utf8",
	"[x](https://" + strings.Repeat("a", 2000) + ")",
	strings.Repeat("para one line\n", 25) + "\n" + strings.Repeat("para two\n", 25),
}

// FuzzChunks checks, for any reply, flavour and limit, that Chunks does
// not panic and keeps its invariants (checkChunks): nothing lost, chunks
// within their limits, Telegram HTML well-formed, fences balanced.
func FuzzChunks(f *testing.F) {
	for i, s := range seeds {
		f.Add(s, uint16(64+i*37), uint8(i))
	}
	f.Fuzz(func(t *testing.T, in string, limit uint16, mode uint8) {
		o := Options{
			Flavor:   []Flavor{Telegram, Slack, Discord, Plain}[mode%4],
			Limit:    int(limit % 5000),
			Newline:  mode&4 != 0,
			Tables:   []string{"code", "bullets", "off"}[(mode>>3)%3],
			MaxLines: int(mode>>5) * 2, // 0 to 14, below the floor of 3 too
		}
		checkChunks(t, in, o, Chunks(in, o))
	})
}
