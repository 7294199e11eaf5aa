package yamltool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxSummary bounds what Summarize returns to the model.
const maxSummary = 4 << 10

// none is what a response tag renders as when the response has no such
// field (or is not JSON): visible to the model, unlike an empty string.
const none = "(none)"

// Summarize renders the result the model sees: the summary template for a
// 2xx status, the error template otherwise, with {{response.PATH}} looked
// up in the JSON body (object keys and array indexes, such as
// response.data.items.0.name). Without a template it is "HTTP <status>:
// <body>". The result is at most 4 KiB.
func (t *Tool) Summarize(status int, body []byte) string {
	tm := t.errTmpl
	if status >= 200 && status <= 299 {
		tm = t.summary
	}
	if len(tm) == 0 {
		return clip(fmt.Sprintf("HTTP %d: %s", status, strings.ToValidUTF8(string(body), "\uFFFD")))
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		doc = nil
	}
	s, _ := tm.render(func(p piece) (string, error) { return lookup(doc, p.path), nil }, nil)
	return clip(s)
}

// lookup walks path through a decoded JSON document.
func lookup(doc any, path []string) string {
	cur := doc
	for _, seg := range path {
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return none
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return none
			}
			cur = x[i]
		default:
			return none
		}
	}
	switch x := cur.(type) {
	case nil:
		if doc == nil {
			return none
		}
		return "null"
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return none
	}
	return string(b)
}

func clip(s string) string {
	if len(s) <= maxSummary {
		return s
	}
	s = s[:maxSummary]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
