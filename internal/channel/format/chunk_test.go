package format

import (
	"strings"
	"testing"
)

// TestConformanceVector11 is spec/channels.md §18 vector 11: a Telegram
// reply containing "<b>" as literal text and an unclosed "**" across a
// chunk boundary is delivered whole — every chunk HTML-escaped, with its
// spans and fences closed — and nothing is lost.
func TestConformanceVector11(t *testing.T) {
	words := strings.Repeat("lorem ipsum dolor sit amet ", 12)
	in := "Write <b>bold</b> as **bold** in Markdown. An unclosed **marker " + words +
		"and **a real bold span " + words + "that closes here** then a fence:\n\n```html\n" +
		strings.Repeat("<b>tag</b> & more\n", 30) + "```\nDone."
	o := Options{Flavor: Telegram, Limit: 300}
	chunks := Chunks(in, o)
	checkChunks(t, in, o, chunks)
	if len(chunks) < 4 {
		t.Fatalf("%d chunks: the reply is meant to cross several boundaries", len(chunks))
	}
	if !strings.Contains(chunks[0].Text, "Write &lt;b&gt;bold&lt;/b&gt; as <b>bold</b>") {
		t.Errorf("the literal <b> is not escaped, or the real bold is lost: %q", chunks[0].Text)
	}
	if !strings.Contains(chunks[0].Text, "An unclosed **marker") {
		t.Errorf("the unclosed ** is not kept as text: %q", chunks[0].Text)
	}
	spanCut, fenceCut := false, false
	for i := 1; i < len(chunks); i++ {
		prev, next := chunks[i-1].Text, chunks[i].Text
		if strings.HasSuffix(prev, "</b>") && strings.HasPrefix(next, "<b>") {
			spanCut = true
		}
		if strings.HasSuffix(prev, "</code></pre>") && strings.HasPrefix(next, `<pre><code class="language-html">`) {
			fenceCut = true
		}
	}
	if !spanCut || !fenceCut {
		t.Errorf("want a bold span and a code block each closed and reopened across a cut (span %v, fence %v):\n%s", spanCut, fenceCut, dump(chunks))
	}
	var plain strings.Builder
	for _, c := range chunks {
		plain.WriteString(c.Plain)
	}
	if strings.Count(plain.String(), "<b>tag</b>") != 30 || !strings.Contains(plain.String(), "Done.") {
		t.Errorf("the plain fallback lost text:\n%s", plain.String())
	}
}

func TestChunkCuts(t *testing.T) {
	para := func(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }
	tests := []struct {
		name   string
		in     string
		o      Options
		chunks []string // the plain text of each chunk
	}{
		{"fits", "short reply", Options{Flavor: Telegram}, []string{"short reply"}},
		{"a paragraph break in the second half wins", para(15) + "\n\n" + para(20),
			Options{Flavor: Plain, Limit: 120}, []string{para(15), para(20)}},
		{"length mode fills the chunk past an early break", para(5) + "\n\n" + para(30),
			Options{Flavor: Plain, Limit: 100}, []string{para(5) + "\n\n" + para(15), para(15)}},
		{"newline mode takes the early break", para(5) + "\n\n" + para(30),
			Options{Flavor: Plain, Limit: 100, Newline: true}, []string{para(5), para(20), para(10)}},
		{"a code block that fits moves whole", para(6) + "\n\n```\n" + strings.Repeat("x\n", 25) + "```",
			Options{Flavor: Plain, Limit: 64}, []string{para(6), strings.TrimSuffix(strings.Repeat("x\n", 25), "\n")}},
		{"discord lines", strings.Repeat("line\n", 20),
			Options{Flavor: Discord, Limit: 2000, MaxLines: 17}, []string{strings.TrimSuffix(strings.Repeat("line\n", 17), "\n"), "line\nline\nline"}},
		{"a word longer than a chunk", strings.Repeat("a", 150), Options{Flavor: Plain, Limit: 64},
			[]string{strings.Repeat("a", 64), strings.Repeat("a", 64), strings.Repeat("a", 22)}},
		{"escaping counts", strings.Repeat("&", 30), Options{Flavor: Telegram, Limit: 64},
			[]string{strings.Repeat("&", 12), strings.Repeat("&", 12), strings.Repeat("&", 6)}},
		{"no cut inside a cluster", strings.Repeat("a", 63) + "e\u0301\u0301", Options{Flavor: Plain, Limit: 64},
			[]string{strings.Repeat("a", 63), "e\u0301\u0301"}},
		{"utf-16 units", strings.Repeat("😀", 40), Options{Flavor: Plain, Limit: 64},
			[]string{strings.Repeat("😀", 32), strings.Repeat("😀", 8)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Chunks(tt.in, tt.o)
			checkChunks(t, tt.in, tt.o, chunks)
			var got []string
			for _, c := range chunks {
				got = append(got, c.Plain)
			}
			if strings.Join(got, "|") != strings.Join(tt.chunks, "|") {
				t.Errorf("got %q\nwant %q", got, tt.chunks)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		channel string
		want    Options
	}{
		{"telegram", Options{Flavor: Telegram, Limit: 4000, Tables: "code"}},
		{"Slack", Options{Flavor: Slack, Limit: 8000, Tables: "code"}},
		{"discord", Options{Flavor: Discord, Limit: 2000, MaxLines: 17, Tables: "code"}},
		{"whatsapp", Options{Flavor: Plain, Limit: 4000, Tables: "code"}},
	}
	for _, tt := range tests {
		t.Run(tt.channel, func(t *testing.T) {
			if got := Defaults(tt.channel); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	limits := []struct {
		o    Options
		want int
	}{
		{Options{Flavor: Slack, Limit: 100000}, 40000},
		{Options{Flavor: Telegram, Limit: 9000}, 4096},
		{Options{Flavor: Discord, Limit: 5000}, 2000},
		{Options{Flavor: Discord}, 2000},
		{Options{Flavor: Plain, Limit: 3}, minLimit},
		{Options{Flavor: "irc"}, 4000},
	}
	for _, l := range limits {
		if got := l.o.normalize().Limit; got != l.want {
			t.Errorf("%+v: limit %d, want %d", l.o, got, l.want)
		}
	}
	if got := (Options{Flavor: Discord, MaxLines: 1}).normalize().MaxLines; got != 3 {
		t.Errorf("a line limit of 1 became %d, want the floor 3", got)
	}
	if got := (Options{Flavor: Telegram, Tables: "block"}).normalize().Tables; got != "code" {
		t.Errorf("tables block became %q, want code", got)
	}
}

// TestPathological feeds 1 MB replies built to defeat a naive parser or
// chunker (a bench shows they stay linear: BenchmarkChunks).
func TestPathological(t *testing.T) {
	const mb = 1 << 20
	cases := map[string]string{
		"no spaces":          strings.Repeat("x", mb),
		"ampersands":         strings.Repeat("&", mb),
		"angle brackets":     strings.Repeat("<", mb),
		"stars":              strings.Repeat("*a", mb/2),
		"unclosed bold":      strings.Repeat("**a ", mb/4),
		"underscores":        strings.Repeat("_a", mb/2),
		"brackets":           strings.Repeat("[", mb),
		"half links":         strings.Repeat("[a](", mb/4),
		"backticks":          strings.Repeat("`` `", mb/4),
		"lines":              strings.Repeat("a\n", mb/2),
		"fences":             strings.Repeat("```\nx\n", mb/6),
		"pipes":              strings.Repeat("|a|\n", mb/4),
		"hashes":             strings.Repeat("#", mb),
		"urls":               strings.Repeat("http://a/b_c ", mb/13),
		"mixed":              strings.Repeat("**<b>x</b>** `c` [l](https://x) _i_ ~~s~~\n\n", mb/48),
		"one long code line": "```\n" + strings.Repeat("a", mb) + "\n```",
		"joiners":            strings.Repeat("👩\u200d👩\u200d👧", mb/18),
		"combining marks":    "e" + strings.Repeat("\u0301", mb/2),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			for _, o := range []Options{Defaults("telegram"), Defaults("discord"), Defaults("slack")} {
				checkChunks(t, in, o, Chunks(in, o))
			}
		})
	}
}
