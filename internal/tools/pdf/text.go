package pdf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	lpdf "github.com/ledongthuc/pdf"
)

// maxStreams bounds the content streams of one page.
const maxStreams = 1000

// pageText interprets a page's content streams and returns its text in the
// order the page draws it: a new line where the text moves to another
// line, a space where it jumps along one. The streams are measured first
// (decompressed, at most maxContent bytes together), so that the
// interpretation that follows reads a bounded amount; ctx is checked
// between operators.
func pageText(ctx context.Context, page lpdf.Value, maxContent int64) (string, error) {
	t := &textState{ctx: ctx, fonts: map[string]*font{}, limit: maxContent}
	err := guard(func() {
		t.res = inherited(page, "Resources")
		contents := page.Key("Contents")
		if err := measure(contents, maxContent); err != nil {
			panic(err)
		}
		if contents.Kind() != lpdf.Null {
			lpdf.Interpret(contents, t.op)
		}
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	return strings.TrimSpace(t.String()), err
}

// errFull stops a page whose text reached the limit; what was read is
// kept.
var errFull = errors.New("page text limit reached")

// measure checks that the decompressed streams of contents (one stream
// or an array of them) add up to at most limit bytes, reading no more.
func measure(contents lpdf.Value, limit int64) error {
	var streams []lpdf.Value
	switch contents.Kind() {
	case lpdf.Null:
		return nil
	case lpdf.Stream:
		streams = []lpdf.Value{contents}
	case lpdf.Array:
		if contents.Len() > maxStreams {
			return fmt.Errorf("the page has %d content streams; the limit is %d", contents.Len(), maxStreams)
		}
		for i := range contents.Len() {
			streams = append(streams, contents.Index(i))
		}
	default:
		return fmt.Errorf("the page's content is a %v, not a stream", contents.Kind())
	}
	var total int64
	for _, s := range streams {
		if s.Kind() != lpdf.Stream {
			return fmt.Errorf("the page's content holds a %v, not a stream", s.Kind())
		}
		n, err := io.Copy(io.Discard, io.LimitReader(s.Reader(), limit-total+1))
		if err != nil {
			return fmt.Errorf("decompressing the page's content: %w", err)
		}
		if total += n; total > limit {
			return fmt.Errorf("the page's content is more than %d bytes decompressed", limit)
		}
	}
	return nil
}

// inherited is key of page or of its nearest ancestor that has it.
func inherited(page lpdf.Value, key string) lpdf.Value {
	v := page
	for range maxDepth {
		if v.IsNull() {
			break
		}
		if r := v.Key(key); !r.IsNull() {
			return r
		}
		v = v.Key("Parent")
	}
	return lpdf.Value{}
}

// textState is the interpretation of one page: the current font, the
// position of the last text shown, and the text so far.
type textState struct {
	strings.Builder
	ctx   context.Context
	ops   int
	res   lpdf.Value
	fonts map[string]*font
	limit int64 // of the text, and of each font's ToUnicode map
	cur   *font
	size  float64 // font size, for the line threshold
	// tm is the text line matrix (a b c d e f); lastY and shown say where
	// text was last shown, and whether any was.
	tm    [6]float64
	lastY float64
	shown bool
	// pending is a break to write before the next text: 0, ' ' or '\n'.
	pending byte
}

func (t *textState) op(stk *lpdf.Stack, op string) {
	if t.ops++; t.ops%1024 == 0 && t.ctx.Err() != nil {
		panic(errCancelled)
	}
	args := make([]lpdf.Value, stk.Len())
	for i := len(args) - 1; i >= 0; i-- {
		args[i] = stk.Pop()
	}
	num := func(i int) float64 {
		if i < len(args) {
			return args[i].Float64()
		}
		return 0
	}
	switch op {
	case "BT":
		t.tm = [6]float64{1, 0, 0, 1, 0, 0}
	case "Tf":
		if len(args) == 2 {
			t.cur, t.size = t.font(args[0].Name()), math.Abs(num(1))
		}
	case "Td", "TD":
		t.move(num(0), num(1))
	case "Tm":
		if len(args) == 6 {
			t.tm = [6]float64{num(0), num(1), num(2), num(3), num(4), num(5)}
			t.moved()
		}
	case "T*":
		t.newline()
	case "'", "\"":
		t.newline()
		if len(args) > 0 {
			t.show(args[len(args)-1].RawString())
		}
	case "Tj":
		if len(args) == 1 {
			t.show(args[0].RawString())
		}
	case "TJ":
		if len(args) == 1 && args[0].Kind() == lpdf.Array {
			arr := args[0]
			for i := range arr.Len() {
				switch x := arr.Index(i); x.Kind() {
				case lpdf.String:
					t.show(x.RawString())
				case lpdf.Integer, lpdf.Real:
					// A kerning of a fifth of an em or more is a word gap.
					if x.Float64() <= -200 && t.pending == 0 {
						t.pending = ' '
					}
				}
			}
		}
	}
}

// move is Td: the line matrix moves by (tx, ty) in text space.
func (t *textState) move(tx, ty float64) {
	m := &t.tm
	m[4] += tx*m[0] + ty*m[2]
	m[5] += tx*m[1] + ty*m[3]
	t.moved()
}

// moved sets the break before the next text from where the line matrix
// now is: a new line when it left the last text's line, else a space.
func (t *textState) moved() {
	if !t.shown {
		return
	}
	if math.Abs(t.tm[5]-t.lastY) > max(t.size*0.5, 1) {
		t.pending = '\n'
	} else if t.pending == 0 {
		t.pending = ' '
	}
}

func (t *textState) newline() {
	if t.shown {
		t.pending = '\n'
	}
}

// show writes the text of one string operand in the current font.
func (t *textState) show(raw string) {
	s := t.cur.decode(raw)
	if strings.TrimSpace(s) == "" {
		if s != "" && t.pending == 0 && t.shown {
			t.pending = ' '
		}
		return
	}
	if int64(t.Len()+len(s)+1) > t.limit {
		panic(errFull)
	}
	if t.pending != 0 && t.shown {
		t.WriteByte(t.pending)
	}
	t.pending = 0
	t.WriteString(s)
	t.shown, t.lastY = true, t.tm[5]
}

// font is the decoder of the page font named n, read once.
func (t *textState) font(n string) *font {
	if f, ok := t.fonts[n]; ok {
		return f
	}
	f := newFont(t.res.Key("Font").Key(n), t.limit)
	t.fonts[n] = f
	return f
}
