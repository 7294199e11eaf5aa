package config

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest. Real configs use fewer
// than ten levels; the limit keeps hostile input from exhausting the stack.
const MaxDepth = 512

// SyntaxError is a parse failure at a 1-based line and column (columns count
// characters, not bytes).
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// ParseJSON5 parses a JSON5 document (https://spec.json5.org, 1.0.0). The top
// level may be any value. A leading byte order mark is skipped. Errors are
// *SyntaxError.
func ParseJSON5(data []byte) (*Value, error) {
	return parse(data, true)
}

// parse is shared by the JSON5 and the strict JSON front ends so the two
// agree on everything JSON5 does not change.
func parse(data []byte, json5 bool) (*Value, error) {
	p := &parser{data: data, json5: json5}
	if !utf8.Valid(data) {
		for p.pos < len(data) {
			r, size := utf8.DecodeRune(data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, p.errorf("expected UTF-8 text, found byte 0x%02x", data[p.pos])
			}
			p.pos += size
		}
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.pos < len(p.data) {
		return nil, p.errorf("expected end of input after the value, found %s", p.found())
	}
	return v, nil
}

type parser struct {
	data  []byte
	pos   int
	json5 bool
	depth int
}

// errorf reports an error at the current position.
func (p *parser) errorf(format string, args ...any) error {
	return p.errorAt(p.pos, format, args...)
}

func (p *parser) errorAt(pos int, format string, args ...any) error {
	line, col := 1, 1
	for i := 0; i < pos && i < len(p.data); {
		r, size := utf8.DecodeRune(p.data[i:])
		switch r {
		case '\r':
			if i+1 < len(p.data) && p.data[i+1] == '\n' {
				size++
			}
			fallthrough
		case '\n', '\u2028', '\u2029':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// found describes what is at the current position, for error messages.
func (p *parser) found() string {
	if p.pos >= len(p.data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return strconv.QuoteRune(r)
}

func (p *parser) peek() rune {
	if p.pos >= len(p.data) {
		return -1
	}
	if c := p.data[p.pos]; c < utf8.RuneSelf {
		return rune(c)
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return r
}

func (p *parser) isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	if !p.json5 {
		return false
	}
	switch r {
	case '\v', '\f', '\u00a0', '\u2028', '\u2029', '\ufeff':
		return true
	}
	return r > 0x7f && unicode.Is(unicode.Zs, r)
}

func isLineTerminator(r rune) bool {
	return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'
}

// skipSpace skips whitespace and, in JSON5, comments.
func (p *parser) skipSpace() error {
	for p.pos < len(p.data) {
		r, size := utf8.DecodeRune(p.data[p.pos:])
		if p.isSpace(r) {
			p.pos += size
			continue
		}
		if r != '/' || !p.json5 {
			return nil
		}
		start := p.pos
		if p.pos+1 >= len(p.data) {
			return p.errorAt(p.pos+1, "expected '/' or '*' to start a comment, found end of input")
		}
		switch p.data[p.pos+1] {
		case '/':
			p.pos += 2
			for p.pos < len(p.data) {
				r, size := utf8.DecodeRune(p.data[p.pos:])
				if isLineTerminator(r) {
					break
				}
				p.pos += size
			}
		case '*':
			end := bytes.Index(p.data[p.pos+2:], []byte("*/"))
			if end < 0 {
				p.pos = len(p.data)
				return p.errorf("expected '*/' to close the comment opened at %s, found end of input", p.where(start))
			}
			p.pos += 2 + end + 2
		default:
			p.pos++
			return p.errorf("expected '/' or '*' to start a comment, found %s", p.found())
		}
	}
	return nil
}

// where names a position as "line L, column C" for messages about an earlier spot.
func (p *parser) where(pos int) string {
	e := p.errorAt(pos, "").(*SyntaxError)
	return fmt.Sprintf("line %d, column %d", e.Line, e.Column)
}

func (p *parser) value() (*Value, error) {
	switch r := p.peek(); {
	case r == '{':
		return p.object()
	case r == '[':
		return p.array()
	case r == '"' || r == '\'' && p.json5:
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &Value{Kind: String, Str: s}, nil
	case r == '-' || r >= '0' && r <= '9' || p.json5 && (r == '+' || r == '.' || r == 'I' || r == 'N'):
		return p.number()
	case r == 't' || r == 'f' || r == 'n':
		return p.literal()
	}
	return nil, p.errorf("expected a value, found %s", p.found())
}

func (p *parser) literal() (*Value, error) {
	start := p.pos
	end := p.pos
	for end < len(p.data) && isASCIIWordByte(p.data[end]) {
		end++
	}
	word := string(p.data[start:end])
	var v *Value
	switch word {
	case "true":
		v = &Value{Kind: Bool, Bool: true}
	case "false":
		v = &Value{Kind: Bool}
	case "null":
		v = &Value{Kind: Null}
	default:
		return nil, p.errorf("expected a value (true, false, null, a number, a string, an array or an object), found %q", word)
	}
	p.pos = end
	if err := p.checkAfterWord(); err != nil {
		return nil, err
	}
	return v, nil
}

func isASCIIWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}

// checkAfterWord rejects a literal or number that runs straight into an
// identifier character (as in "truex" or "1a"), which JSON5 forbids.
func (p *parser) checkAfterWord() error {
	if !p.json5 || p.pos >= len(p.data) {
		return nil
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	if r == '\\' || isIDPart(r) {
		return p.errorf("expected a separator after the value, found %s", p.found())
	}
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.errorf("expected at most %d levels of nesting", MaxDepth)
	}
	return nil
}

func (p *parser) object() (*Value, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '{'
	v := &Value{Kind: Object, Members: []Member{}}
	var index map[string]int // built once the object is big enough for scans to hurt
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.peek() == '}' {
		p.pos++
		return v, nil
	}
	for {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.peek() != ':' {
			return nil, p.errorf("expected ':' after the property name, found %s", p.found())
		}
		p.pos++
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		index = addMember(v, index, key, val)
		if done, err := p.next('}', "property value", "a property name"); done || err != nil {
			return v, err
		}
	}
}

func (p *parser) array() (*Value, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '['
	v := &Value{Kind: Array, Items: []*Value{}}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.peek() == ']' {
		p.pos++
		return v, nil
	}
	for {
		item, err := p.value()
		if err != nil {
			return nil, err
		}
		v.Items = append(v.Items, item)
		if done, err := p.next(']', "array element", "a value"); done || err != nil {
			return v, err
		}
	}
}

// next consumes what follows a member or element: a comma (in JSON5 perhaps
// trailing) or the closing bracket. It reports whether the container ended.
func (p *parser) next(closer rune, after, expected string) (bool, error) {
	if err := p.skipSpace(); err != nil {
		return false, err
	}
	switch p.peek() {
	case ',':
		p.pos++
		if err := p.skipSpace(); err != nil {
			return false, err
		}
		if p.peek() != closer {
			return false, nil
		}
		if !p.json5 {
			return false, p.errorf("expected %s, found '%c' (JSON does not allow a trailing comma)", expected, closer)
		}
		p.pos++
		return true, nil
	case closer:
		p.pos++
		return true, nil
	}
	return false, p.errorf("expected ',' or '%c' after the %s, found %s", closer, after, p.found())
}

// addMember adds or replaces key; the last duplicate wins but keeps the first
// position, as in JSON.parse.
func addMember(v *Value, index map[string]int, key string, val *Value) map[string]int {
	if index == nil && len(v.Members) >= 16 {
		index = make(map[string]int, 2*len(v.Members))
		for i, m := range v.Members {
			index[m.Key] = i
		}
	}
	if index != nil {
		if i, ok := index[key]; ok {
			v.Members[i].Value = val
			return index
		}
		index[key] = len(v.Members)
	} else {
		for i := range v.Members {
			if v.Members[i].Key == key {
				v.Members[i].Value = val
				return index
			}
		}
	}
	v.Members = append(v.Members, Member{Key: key, Value: val})
	return index
}

func (p *parser) key() (string, error) {
	r := p.peek()
	if r == '"' || r == '\'' && p.json5 {
		return p.string()
	}
	if !p.json5 {
		return "", p.errorf("expected a string property name, found %s", p.found())
	}
	if r == '\\' || isIDStart(r) {
		return p.identifier()
	}
	return "", p.errorf("expected a property name or '}', found %s", p.found())
}

// identifier reads an ECMAScript 5.1 IdentifierName, with \uXXXX escapes.
func (p *parser) identifier() (string, error) {
	var b strings.Builder
	first := true
	for p.pos < len(p.data) {
		start := p.pos
		r, size := utf8.DecodeRune(p.data[p.pos:])
		if r == '\\' {
			if p.pos+1 >= len(p.data) || p.data[p.pos+1] != 'u' {
				p.pos++
				return "", p.errorf("expected 'u' after '\\' in a property name, found %s", p.found())
			}
			p.pos += 2
			u, err := p.hex(4, `\u`)
			if err != nil {
				return "", err
			}
			r = rune(u)
			if first && !isIDStart(r) || !first && !isIDPart(r) {
				return "", p.errorAt(start, "expected an identifier character, found escaped %s", strconv.QuoteRune(r))
			}
		} else {
			if first && !isIDStart(r) || !first && !isIDPart(r) {
				break
			}
			p.pos += size
		}
		b.WriteRune(r)
		first = false
	}
	return b.String(), nil
}

func isIDStart(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '$'
	}
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo, unicode.Nl)
}

func isIDPart(r rune) bool {
	if r < utf8.RuneSelf {
		return isIDStart(r) || r >= '0' && r <= '9'
	}
	return isIDStart(r) || r == '\u200c' || r == '\u200d' ||
		unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc)
}

// hex reads n hex digits as a number; what names the escape for messages.
func (p *parser) hex(n int, what string) (int, error) {
	v := 0
	for i := 0; i < n; i++ {
		if p.pos >= len(p.data) {
			return 0, p.errorf("expected %d hex digits after %s, found end of input", n, what)
		}
		c := p.data[p.pos]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.errorf("expected %d hex digits after %s, found %s", n, what, p.found())
		}
		v = v<<4 | int(d)
		p.pos++
	}
	return v, nil
}

func (p *parser) string() (string, error) {
	quote := p.data[p.pos]
	start := p.pos
	p.pos++
	// Fast path: no escapes, so the text is the value.
	for i := p.pos; i < len(p.data); i++ {
		c := p.data[i]
		if c == quote {
			s := string(p.data[p.pos:i])
			p.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	var b []byte
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("expected a closing %c for the string that starts at %s, found end of input", quote, p.where(start))
		}
		c := p.data[p.pos]
		switch {
		case c == quote:
			p.pos++
			return string(b), nil
		case c == '\\':
			var err error
			if b, err = p.escape(b); err != nil {
				return "", err
			}
		case c == '\n' || c == '\r':
			return "", p.errorf("expected a closing %c before the end of the line (use \\n for a line break)", quote)
		case c < 0x20 && !p.json5:
			return "", p.errorf("expected an escape sequence instead of the control character %s", p.found())
		default:
			b = append(b, c)
			p.pos++
		}
	}
}

// escape appends the character(s) of the escape sequence at p.pos.
func (p *parser) escape(b []byte) ([]byte, error) {
	p.pos++ // '\\'
	if p.pos >= len(p.data) {
		return nil, p.errorf("expected an escape sequence after '\\', found end of input")
	}
	r, size := utf8.DecodeRune(p.data[p.pos:])
	if c, ok := simpleEscape(r); ok {
		p.pos++
		return append(b, c), nil
	}
	if r == 'u' {
		p.pos++
		return p.unicodeEscape(b)
	}
	if !p.json5 {
		return nil, p.errorf("expected an escape sequence (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u), found %s", p.found())
	}
	switch {
	case r == '\'':
		b = append(b, '\'')
	case r == 'v':
		b = append(b, '\v')
	case r == '0':
		if p.pos+1 < len(p.data) && p.data[p.pos+1] >= '0' && p.data[p.pos+1] <= '9' {
			return nil, p.errorf("expected no digit after \\0 (octal escapes are not allowed)")
		}
		b = append(b, 0)
	case r >= '1' && r <= '9':
		return nil, p.errorf("expected an escape sequence, found %s (octal escapes are not allowed)", p.found())
	case r == 'x':
		p.pos++
		x, err := p.hex(2, `\x`)
		if err != nil {
			return nil, err
		}
		return utf8.AppendRune(b, rune(x)), nil
	case r == '\r':
		// A line continuation: the escaped line break is not part of the string.
		if p.pos+1 < len(p.data) && p.data[p.pos+1] == '\n' {
			p.pos++
		}
	case r == '\n' || r == '\u2028' || r == '\u2029':
		// Line continuation.
	default:
		b = append(b, p.data[p.pos:p.pos+size]...)
	}
	p.pos += size
	return b, nil
}

// simpleEscape maps the one-letter escapes JSON and JSON5 share.
func simpleEscape(r rune) (byte, bool) {
	switch r {
	case '"', '\\', '/':
		return byte(r), true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// unicodeEscape handles the digits after \u, pairing surrogates. A lone
// surrogate cannot be held in a Go string and becomes U+FFFD.
func (p *parser) unicodeEscape(b []byte) ([]byte, error) {
	u, err := p.hex(4, `\u`)
	if err != nil {
		return nil, err
	}
	r := rune(u)
	if utf16.IsSurrogate(r) && r < 0xdc00 && p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		save := p.pos
		p.pos += 2
		lo, err := p.hex(4, `\u`)
		if err != nil {
			return nil, err
		}
		if pair := utf16.DecodeRune(r, rune(lo)); pair != utf8.RuneError {
			return utf8.AppendRune(b, pair), nil
		}
		p.pos = save // not a pair: the second escape stands alone
	}
	return utf8.AppendRune(b, r), nil // AppendRune writes U+FFFD for a surrogate
}

func (p *parser) number() (*Value, error) {
	start := p.pos
	neg := false
	if c := p.data[p.pos]; c == '-' || c == '+' {
		if c == '+' && !p.json5 {
			return nil, p.errorf("expected a value, found '+'")
		}
		neg = c == '-'
		p.pos++
	}
	rest := p.data[p.pos:]
	if p.json5 {
		for _, word := range []string{"Infinity", "NaN"} {
			if bytes.HasPrefix(rest, []byte(word)) {
				p.pos += len(word)
				if err := p.checkAfterWord(); err != nil {
					return nil, err
				}
				num := word
				if neg && word == "Infinity" {
					num = "-Infinity"
				}
				return &Value{Kind: Number, Num: num}, nil
			}
		}
		if len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
			return p.hexNumber(neg)
		}
	}
	intStart := p.pos
	p.digits()
	intDigits := string(p.data[intStart:p.pos])
	if len(intDigits) > 1 && intDigits[0] == '0' {
		return nil, p.errorAt(intStart+1, "expected no digits after a leading 0 (leading zeros are not allowed)")
	}
	var frac string
	hasDot := p.pos < len(p.data) && p.data[p.pos] == '.'
	if hasDot {
		if !p.json5 && intDigits == "" {
			return nil, p.errorf("expected a digit, found '.'")
		}
		p.pos++
		fracStart := p.pos
		p.digits()
		frac = string(p.data[fracStart:p.pos])
		if frac == "" && (!p.json5 || intDigits == "") {
			return nil, p.errorf("expected a digit after '.', found %s", p.found())
		}
	}
	if intDigits == "" && !hasDot {
		return nil, p.errorf("expected a number, found %s", p.found())
	}
	var exp string
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		expStart := p.pos
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		digitsStart := p.pos
		p.digits()
		if p.pos == digitsStart {
			return nil, p.errorf("expected a digit in the exponent, found %s", p.found())
		}
		exp = string(p.data[expStart:p.pos])
	}
	if err := p.checkAfterWord(); err != nil {
		return nil, err
	}
	if !p.json5 {
		return &Value{Kind: Number, Num: string(p.data[start:p.pos])}, nil
	}
	// Rewrite JSON5 spellings (+1, .5, 5.) as JSON text.
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if intDigits == "" {
		intDigits = "0"
	}
	b.WriteString(intDigits)
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	b.WriteString(exp)
	return &Value{Kind: Number, Num: b.String()}, nil
}

func (p *parser) digits() {
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
}

// hexNumber reads 0x... and writes it in decimal, exactly, however long.
func (p *parser) hexNumber(neg bool) (*Value, error) {
	p.pos += 2
	start := p.pos
	for p.pos < len(p.data) && isHexByte(p.data[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return nil, p.errorf("expected a hex digit after 0x, found %s", p.found())
	}
	if err := p.checkAfterWord(); err != nil {
		return nil, err
	}
	var n big.Int
	n.SetString(string(p.data[start:p.pos]), 16)
	num := n.String()
	if neg {
		num = "-" + num
	}
	return &Value{Kind: Number, Num: num}, nil
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
