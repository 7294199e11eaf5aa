package format

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// The invariants every call of Chunks keeps, whatever the input; the
// table tests, the golden tests and the fuzz target all check them.

// checkChunks fails t unless chunks are what Chunks(in, o) must return:
// nothing lost, every chunk within its limits and well-formed markup.
func checkChunks(t testing.TB, in string, o Options, chunks []Chunk) {
	t.Helper()
	if err := invariants(in, o, chunks); err != nil {
		shown := chunks
		if len(shown) > 4 {
			shown = shown[:4]
		}
		t.Fatalf("%v\ninput (%d bytes) %q\noptions %+v\n%d chunks, first %q", err, len(in), clip(in), o, len(chunks), shown)
	}
}

func invariants(in string, o Options, chunks []Chunk) error {
	n := o.normalize()
	if err := noLoss(PlainText(in, o), chunks); err != nil {
		return err
	}
	for i, c := range chunks {
		if strings.TrimSpace(c.Text) == "" || strings.TrimSpace(c.Plain) == "" {
			return fmt.Errorf("chunk %d has no visible text", i)
		}
		// Only markup open around one character can outgrow the limit.
		single := utf8.RuneCountInString(strings.TrimSpace(c.Plain)) <= 1
		if l := len16(c.Text); l > n.Limit && !single {
			return fmt.Errorf("chunk %d is %d long, over the limit %d", i, l, n.Limit)
		}
		if lines := strings.Count(c.Text, "\n") + 1; n.MaxLines > 0 && lines > n.MaxLines && !single {
			return fmt.Errorf("chunk %d has %d lines, over %d", i, lines, n.MaxLines)
		}
		if n.Flavor == Telegram {
			if err := telegramHTML(c.Text); err != nil {
				return fmt.Errorf("chunk %d: %v", i, err)
			}
		}
		if n.Flavor == Plain && c.Text != c.Plain {
			return fmt.Errorf("chunk %d: plain flavour text %q differs from its plain %q", i, c.Text, c.Plain)
		}
		// Slack has no escape for a literal "```", so only Discord's
		// fences can be counted.
		if n.Flavor == Discord && fenceOpenAtEnd(c.Text) {
			return fmt.Errorf("chunk %d: a code fence left open", i)
		}
	}
	return nil
}

// noLoss checks that the chunks' plain texts, in order, are the whole
// plain text, with only whitespace missing where a cut fell.
func noLoss(full string, chunks []Chunk) error {
	pos := 0
	for i, c := range chunks {
		for pos < len(full) && isSpace(full[pos]) {
			pos++
		}
		p := strings.TrimLeft(c.Plain, " \t\n\r\v\f") // isSpace's bytes
		if !strings.HasPrefix(full[pos:], p) {
			return fmt.Errorf("chunk %d's plain text %q is not next in the reply (at %d: %q)", i, p, pos, clip(full[pos:]))
		}
		pos += len(p)
	}
	if rest := strings.TrimSpace(full[pos:]); rest != "" {
		return fmt.Errorf("text lost after the last chunk: %q", clip(rest))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// telegramHTML checks a chunk as Telegram's HTML parser would: only its
// tags, properly nested and all closed, attributes quoted, every "&" an
// entity and no stray "<" or ">".
func telegramHTML(s string) error {
	allowed := map[string]bool{"b": true, "i": true, "s": true, "code": true, "pre": true, "a": true, "tg-spoiler": true}
	var stack []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '>':
			return fmt.Errorf("a stray > at %d", i)
		case '&':
			j := strings.IndexByte(s[i:], ';')
			if j < 0 || !map[string]bool{"&amp;": true, "&lt;": true, "&gt;": true, "&quot;": true, "&#34;": true, "&#39;": true}[s[i:i+j+1]] {
				return fmt.Errorf("a bare & at %d", i)
			}
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return fmt.Errorf("a stray < at %d", i)
			}
			tag := s[i+1 : i+j]
			if strings.ContainsAny(tag, "<") {
				return fmt.Errorf("a < inside tag %q", tag)
			}
			i += j
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("</%s> closes %v", name, stack)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name, attrs, _ := strings.Cut(tag, " ")
			if !allowed[name] {
				return fmt.Errorf("tag <%s> is not Telegram's", name)
			}
			if attrs != "" {
				v, ok := strings.CutPrefix(attrs, `href="`)
				if !ok {
					v, ok = strings.CutPrefix(attrs, `class="language-`)
				}
				if !ok || !strings.HasSuffix(v, `"`) || strings.Contains(strings.TrimSuffix(v, `"`), `"`) {
					return fmt.Errorf("attributes %q not quoted", attrs)
				}
			}
			if (name == "code" || name == "pre") && len(stack) > 0 && !(name == "code" && stack[len(stack)-1] == "pre") {
				return fmt.Errorf("<%s> inside %v: Telegram nests nothing with code", name, stack)
			}
			if len(stack) > 0 && (stack[len(stack)-1] == "code" || stack[len(stack)-1] == "pre" && name != "code") {
				return fmt.Errorf("<%s> inside %v: Telegram nests nothing in code", name, stack)
			}
			stack = append(stack, name)
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("tags left open: %v", stack)
	}
	return nil
}

// fenceOpenAtEnd reads text's lines as CommonMark reads fences: a run of
// three or more backticks at a line's start opens a block, which only a
// line of at least as many backticks alone closes.
func fenceOpenAtEnd(text string) bool {
	open := 0
	for line := range strings.SplitSeq(text, "\n") {
		n := len(line) - len(strings.TrimLeft(line, "`"))
		switch {
		case open == 0 && n >= 3:
			open = n
		case open > 0 && n >= open && strings.TrimSpace(line[n:]) == "":
			open = 0
		}
	}
	return open > 0
}
