package format

import "strings"

// style is a set of inline styles a run carries.
type style uint8

const (
	bold style = 1 << iota
	italic
	strike
	spoiler
	code // inline code
)

// kind says how a run's text is treated beyond its styles.
type kind uint8

const (
	kText    kind = iota
	kMention      // <@id>, <#id>, <@&id>: verbatim on Slack and Discord
	kURL          // a bare URL: never markdown-escaped on Discord
	kMark         // a line marker ("> ") the platform reads as markup
	kSuffix       // " (url)" after a link label: only in the plain rendering
)

// run is a piece of text with everything that decides its rendering. A
// run never spans two code blocks, two links or a change of style.
type run struct {
	text  string
	style style
	kind  kind
	link  int32 // 1 + index into doc.links, 0 for none
	block int32 // 1 + index into doc.blocks when inside a code block
}

// doc is the parsed reply: its runs in order and what they point to.
type doc struct {
	runs   []run
	links  []string
	blocks []string // each code block's language ("" for none)
}

// plain is the reply without any markup: what Chunk.Plain concatenates to.
func (d *doc) plain() string {
	var b strings.Builder
	for _, r := range d.runs {
		b.WriteString(r.text)
	}
	return b.String()
}

// builder collects runs while parsing, merging neighbours that render the
// same way so the chunker sees few, long runs. Merging goes through a
// strings.Builder so a reply of many tiny pieces stays linear.
type builder struct {
	d    *doc
	cur  run
	sb   strings.Builder
	open bool
}

func (b *builder) add(r run) {
	if r.text == "" {
		return
	}
	if b.open && r.kind == kText && b.cur.kind == kText && r.style == b.cur.style && r.link == b.cur.link && r.block == b.cur.block {
		b.sb.WriteString(r.text)
		return
	}
	b.flush()
	b.cur, b.open = r, true
	b.sb.WriteString(r.text)
}

// flush ends the run being merged; done calls it last.
func (b *builder) flush() {
	if !b.open {
		return
	}
	b.cur.text = b.sb.String()
	b.d.runs = append(b.d.runs, b.cur)
	b.sb.Reset()
	b.open = false
}

func (b *builder) text(s string) { b.add(run{text: s}) }

// unlink writes link idx as text: its runs lose the link, and the
// " (url)" after its label, until now only in the plain rendering, is
// shown.
func (d *doc) unlink(idx int32) {
	last := -1
	for i := range d.runs {
		if d.runs[i].link == idx {
			d.runs[i].link, last = 0, i
		}
	}
	if last >= 0 && last+1 < len(d.runs) && d.runs[last+1].kind == kSuffix {
		d.runs[last+1].kind = kText
	}
}

func (b *builder) link(href string) int32 {
	b.d.links = append(b.d.links, href)
	return int32(len(b.d.links))
}
