package tgtest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Telegram's HTML parse mode, as TDLib's parse_html reads it: the tags it
// accepts, its entity decoding and its error texts.

var htmlTags = map[string]bool{
	"a": true, "b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "span": true, "tg-spoiler": true, "tg-emoji": true,
	"code": true, "pre": true, "blockquote": true,
}

// parseHTML returns the text Telegram would show, or Telegram's reason
// for refusing it (what follows "Bad Request: can't parse entities: ").
func parseHTML(s string) (text, refusal string) {
	var out strings.Builder
	var open []string
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			r, n := htmlEntity(s[i:])
			if n == 0 {
				out.WriteByte('&')
				i++
				continue
			}
			out.WriteString(r)
			i += n
		case '<':
			if i+1 < len(s) && s[i+1] == '/' {
				name, n, err := endTag(s, i)
				if err != "" {
					return "", err
				}
				if len(open) == 0 {
					return "", fmt.Sprintf("Unexpected end tag at byte offset %d", i)
				}
				if top := open[len(open)-1]; top != name {
					return "", fmt.Sprintf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, top, name)
				}
				open = open[:len(open)-1]
				i += n
				continue
			}
			name, n, err := startTag(s, i)
			if err != "" {
				return "", err
			}
			open = append(open, name)
			i += n
		default:
			out.WriteByte(s[i])
			i++
		}
	}
	if len(open) > 0 {
		return "", fmt.Sprintf("Can't find end tag corresponding to start tag \"%s\"", open[len(open)-1])
	}
	return out.String(), ""
}

// htmlEntity decodes the entities Telegram knows; n is 0 for none.
func htmlEntity(s string) (string, int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 10 {
		return "", 0
	}
	name := s[1:end]
	switch name {
	case "lt":
		return "<", end + 1
	case "gt":
		return ">", end + 1
	case "amp":
		return "&", end + 1
	case "quot":
		return "\"", end + 1
	}
	if num, ok := strings.CutPrefix(name, "#"); ok {
		base := 10
		if h, ok := strings.CutPrefix(num, "x"); ok {
			num, base = h, 16
		}
		v, err := strconv.ParseUint(num, base, 32)
		if err != nil || v == 0 || v > 0x10FFFF {
			return "", 0
		}
		return string(rune(v)), end + 1
	}
	return "", 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// startTag reads "<name attr=value …>" at s[at]; n is its length.
func startTag(s string, at int) (string, int, string) {
	i := at + 1
	for i < len(s) && !isSpace(s[i]) && s[i] != '>' {
		i++
	}
	name := strings.ToLower(s[at+1 : i])
	if !htmlTags[name] {
		return "", 0, fmt.Sprintf("Unsupported start tag \"%s\" at byte offset %d", name, at)
	}
	attrs := map[string]string{}
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return "", 0, fmt.Sprintf("Unclosed start tag at byte offset %d", at)
		}
		if s[i] == '>' {
			break
		}
		b := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' && s[i] != '>' {
			i++
		}
		attr := strings.ToLower(s[b:i])
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return "", 0, fmt.Sprintf("Unclosed start tag at byte offset %d", at)
		}
		if s[i] != '=' {
			if attr == "expandable" && name == "blockquote" {
				continue
			}
			return "", 0, fmt.Sprintf("Expected equal sign in declaration of an attribute of the tag \"%s\" at byte offset %d", name, b)
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return "", 0, fmt.Sprintf("Unclosed start tag at byte offset %d", at)
		}
		v, n, ok := attrValue(s[i:])
		if !ok {
			return "", 0, fmt.Sprintf("Unclosed start tag at byte offset %d", at)
		}
		attrs[attr] = v
		i += n
	}
	if name == "span" && attrs["class"] != "tg-spoiler" {
		return "", 0, fmt.Sprintf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", at)
	}
	if name == "tg-emoji" && attrs["emoji-id"] == "" {
		return "", 0, fmt.Sprintf("Custom emoji entity must contain a valid custom emoji identifier at byte offset %d", at)
	}
	return name, i + 1 - at, ""
}

func attrValue(s string) (string, int, bool) {
	if q := s[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", 0, false
		}
		return s[1 : 1+end], end + 2, true
	}
	i := 0
	for i < len(s) && !isSpace(s[i]) && s[i] != '>' {
		i++
	}
	return s[:i], i, true
}

// endTag reads "</name>" at s[at].
func endTag(s string, at int) (string, int, string) {
	end := strings.IndexByte(s[at:], '>')
	if end < 0 {
		return "", 0, fmt.Sprintf("Unclosed end tag at byte offset %d", at)
	}
	return strings.ToLower(strings.TrimSpace(s[at+2 : at+end])), end + 1, ""
}

// utf16Len is the length Telegram's limits count.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
