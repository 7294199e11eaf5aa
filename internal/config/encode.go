package config

import (
	"fmt"
	"unicode/utf8"
)

// MarshalJSON writes v as compact JSON. It fails, naming the path, when the
// tree holds Infinity or NaN, which JSON cannot express.
func (v *Value) MarshalJSON() ([]byte, error) {
	if p, bad := nonFinite(v, ""); bad != "" {
		return nil, fmt.Errorf("encoding config value: %s: %s cannot be written as JSON", showPath(p), bad)
	}
	return v.appendJSON(nil, "", ""), nil
}

// Indented writes v as JSON.stringify(v, null, 2) does, plus a trailing
// newline. Like JSON.stringify it writes Infinity and NaN as null; use
// MarshalJSON (or Save, which refuses them) where that would lose data.
func (v *Value) Indented() []byte {
	return append(v.appendJSON(nil, "\n", "  "), '\n')
}

// nonFinite returns the path and text of the first Infinity/NaN in v.
func nonFinite(v *Value, path string) (string, string) {
	if v == nil {
		return "", ""
	}
	switch v.Kind {
	case Number:
		if !isJSONNumber(v.Num) {
			return path, v.Num
		}
	case Array:
		for i, it := range v.Items {
			if p, bad := nonFinite(it, joinIndex(path, i)); bad != "" {
				return p, bad
			}
		}
	case Object:
		for _, m := range v.Members {
			if p, bad := nonFinite(m.Value, joinKey(path, m.Key)); bad != "" {
				return p, bad
			}
		}
	}
	return "", ""
}

// isJSONNumber tells the finite numbers (always valid JSON text when they
// come from the parser) from Infinity, -Infinity and NaN.
func isJSONNumber(num string) bool {
	switch num {
	case "Infinity", "-Infinity", "NaN", "":
		return false
	}
	return true
}

// appendJSON writes v; nl is "" for compact output, and indent is added
// per level after each newline.
func (v *Value) appendJSON(b []byte, nl, indent string) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	switch v.Kind {
	case Bool:
		if v.Bool {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Number:
		if !isJSONNumber(v.Num) {
			return append(b, "null"...)
		}
		return append(b, v.Num...)
	case String:
		return appendString(b, v.Str)
	case Array:
		if len(v.Items) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		inner := nl + indent
		for i, it := range v.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, inner...)
			b = it.appendJSON(b, inner, indent)
		}
		b = append(b, nl...)
		return append(b, ']')
	case Object:
		if len(v.Members) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		inner := nl + indent
		for i, m := range v.Members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, inner...)
			b = appendString(b, m.Key)
			b = append(b, ':')
			if nl != "" {
				b = append(b, ' ')
			}
			b = m.Value.appendJSON(b, inner, indent)
		}
		b = append(b, nl...)
		return append(b, '}')
	}
	return append(b, "null"...)
}

const hexDigits = "0123456789abcdef"

// appendString quotes s the way JSON.stringify does: only '"', '\\' and
// control characters are escaped; everything else, U+2028 included, is
// written as UTF-8. Invalid UTF-8 becomes U+FFFD so the output stays valid.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
