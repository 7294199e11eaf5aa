package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

type kind int

const (
	kindUnsupported kind = iota
	kindHTML
	kindJSON
	kindText
)

// kindOf says how a media type is read: HTML is extracted, JSON and text
// are returned as they are, everything else (images, PDFs, archives,
// octet-stream) is refused.
func kindOf(mt string) kind {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return kindJSON
	case strings.HasPrefix(mt, "text/"),
		mt == "application/xml" || strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript" || mt == "application/ecmascript",
		mt == "application/yaml" || mt == "application/x-yaml" || mt == "application/toml":
		return kindText
	}
	return kindUnsupported
}

// prettyJSONMax is the largest JSON body that is re-indented; larger ones
// are returned as sent, since indenting costs characters of maxChars.
const prettyJSONMax = 32 << 10

// page is what a fetch yields for the model.
type page struct {
	Title     string
	Text      string // at most maxChars characters
	Truncated bool
	Warning   string
}

// supportedCharsets is said when a declared charset is unknown.
const supportedCharsets = "UTF-8, UTF-16 and the encodings of the WHATWG Encoding Standard " +
	"(ISO-8859-x, windows-125x, KOI8-R/U, macintosh, Shift_JIS, EUC-JP, ISO-2022-JP, GBK, gb18030, Big5, EUC-KR)"

// render decodes and extracts the text of a response.
func render(f fetched, req request) (page, error) {
	var p page
	switch kindOf(f.mediaType) {
	case kindHTML:
		src := decodeHTML(f.body, f.contentType)
		p = extractHTML(src, f.finalURL, req.markdown, req.maxChars)
	case kindJSON, kindText:
		src, err := decodeText(f.body, f.contentType)
		if err != nil {
			return page{}, err
		}
		if kindOf(f.mediaType) == kindJSON && len(src) <= prettyJSONMax && !f.capped {
			var b bytes.Buffer
			if json.Indent(&b, []byte(src), "", "  ") == nil {
				src = b.String()
			}
		}
		p.Text, p.Truncated = cutText(strings.TrimSpace(src), req.maxChars)
	default:
		return page{}, fmt.Errorf("unsupported content type %s; web_fetch reads HTML, text and JSON", f.mediaType)
	}
	if f.capped {
		p.Truncated = true
		p.Warning = joinWarn(p.Warning, fmt.Sprintf("the body is longer than %d MiB; only its first %d MiB were read", MaxBodyBytes>>20, MaxBodyBytes>>20))
	}
	return p, nil
}

func joinWarn(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// decodeHTML converts an HTML body to UTF-8: by its BOM, the charset of
// the Content-Type, a <meta> charset in its first 1024 bytes, else UTF-8
// when the bytes are valid UTF-8 and windows-1252 when not (as browsers
// guess).
func decodeHTML(body []byte, contentType string) string {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	// DetermineEncoding looks at 1024 bytes only; a page whose head is
	// ASCII and whose text is UTF-8 is still UTF-8.
	if !certain && name == "windows-1252" && utf8.Valid(body) {
		enc = encoding.Nop
	}
	return decodeWith(enc, body)
}

// decodeText converts a text or JSON body to UTF-8 by its declared
// charset, UTF-8 when none is declared.
func decodeText(body []byte, contentType string) (string, error) {
	_, params, _ := mime.ParseMediaType(contentType)
	cs := strings.TrimSpace(params["charset"])
	if cs == "" {
		return strings.ToValidUTF8(string(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))), "\uFFFD"), nil
	}
	enc, _ := charset.Lookup(cs)
	if enc == nil {
		return "", fmt.Errorf("unsupported charset %q; web_fetch decodes %s", cs, supportedCharsets)
	}
	return decodeWith(enc, body), nil
}

func decodeWith(enc encoding.Encoding, body []byte) string {
	if enc != encoding.Nop {
		if out, err := enc.NewDecoder().Bytes(body); err == nil {
			body = out
		}
	}
	return strings.ToValidUTF8(string(bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))), "\uFFFD")
}

// cutText cuts s to at most n characters, reporting whether it did.
func cutText(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	return cutRunes(s, n), true
}

// cutRunes is the first n characters of s.
func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
