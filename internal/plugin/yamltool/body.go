package yamltool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/goccy/go-yaml"
)

// jnode is one node of a JSON body template. Exactly one of the fields
// is set: obj (an object, keys in file order), arr, tmpl (a string with
// tags) or lit (a literal value, already JSON-encoded).
type jnode struct {
	obj  []jfield
	arr  []jnode
	tmpl template
	lit  []byte
	kind byte // 'o', 'a', 't' or 'l'
}

type jfield struct {
	key   string
	value jnode
}

func (t *Tool) parseBody(b *bodyFile) error {
	t.bodyType = b.Type
	switch b.Type {
	case BodyJSON:
		nodes := 0
		n, err := t.parseJSON(b.Content, 0, &nodes)
		if err != nil {
			return fmt.Errorf("content: %w", err)
		}
		t.body = n
	case BodyForm:
		m, ok := b.Content.(yaml.MapSlice)
		if !ok {
			return fmt.Errorf("content: a form body is a mapping of field names to values, got %s", kind(b.Content))
		}
		if len(m) > maxBodyNodes {
			return fmt.Errorf("content: %d fields, more than %d", len(m), maxBodyNodes)
		}
		for _, item := range m {
			key, ok := item.Key.(string)
			if !ok || key == "" {
				return fmt.Errorf("content: field name %v is not a non-empty string", item.Key)
			}
			s, err := scalarText(item.Value)
			if err != nil {
				return fmt.Errorf("content.%s: %w", key, err)
			}
			tm, err := t.requestTemplate(s)
			if err != nil {
				return fmt.Errorf("content.%s: %w", key, err)
			}
			t.form = append(t.form, formKV{key: key, value: tm})
		}
	case BodyText:
		s, ok := b.Content.(string)
		if !ok {
			return fmt.Errorf("content: a text body is a string, got %s", kind(b.Content))
		}
		tm, err := t.requestTemplate(s)
		if err != nil {
			return fmt.Errorf("content: %w", err)
		}
		t.text = tm
	case "":
		return errors.New("type is missing (json, form or text)")
	default:
		return fmt.Errorf("type %q is not json, form or text", b.Type)
	}
	return nil
}

// scalarText is the text of a form value from the file or of a
// canonical argument: strings as written, numbers in decimal without an
// exponent, booleans as true or false.
func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("want a string, number or boolean, got %s", kind(v))
}

func (t *Tool) parseJSON(v any, depth int, nodes *int) (jnode, error) {
	*nodes++
	if *nodes > maxBodyNodes {
		return jnode{}, fmt.Errorf("more than %d values", maxBodyNodes)
	}
	if depth > maxBodyDepth {
		return jnode{}, fmt.Errorf("nested more than %d deep", maxBodyDepth)
	}
	switch x := v.(type) {
	case yaml.MapSlice:
		n := jnode{kind: 'o'}
		for _, item := range x {
			key, ok := item.Key.(string)
			if !ok {
				return jnode{}, fmt.Errorf("key %v is not a string", item.Key)
			}
			c, err := t.parseJSON(item.Value, depth+1, nodes)
			if err != nil {
				return jnode{}, fmt.Errorf("%s: %w", key, err)
			}
			n.obj = append(n.obj, jfield{key: key, value: c})
		}
		return n, nil
	case []any:
		n := jnode{kind: 'a', arr: []jnode{}}
		for i, e := range x {
			c, err := t.parseJSON(e, depth+1, nodes)
			if err != nil {
				return jnode{}, fmt.Errorf("%d: %w", i, err)
			}
			n.arr = append(n.arr, c)
		}
		return n, nil
	case string:
		tm, err := t.requestTemplate(x)
		if err != nil {
			return jnode{}, err
		}
		if !tm.hasTags() {
			return jnode{kind: 'l', lit: mustJSON(x)}, nil
		}
		return jnode{kind: 't', tmpl: tm}, nil
	case nil, bool, uint64, int64, float64:
		b, err := json.Marshal(x)
		if err != nil {
			return jnode{}, fmt.Errorf("value %v: %v", x, err)
		}
		return jnode{kind: 'l', lit: b}, nil
	}
	return jnode{}, fmt.Errorf("unsupported value %s", kind(v))
}

// mustJSON encodes a string, bool or finite number, leaving <, > and &
// as they are: the body goes to an API, not into HTML.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only called with strings, bools and finite numbers
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// values resolves tags for one request.
type values struct {
	tool string
	args map[string]any // canonical values; an absent key is an absent optional param
	env  func(string) (string, bool)
}

func (v values) text(p piece) (string, error) {
	switch p.ns {
	case nsEnv:
		s, ok := v.env(p.path[0])
		if !ok {
			return "", &EnvUnsetError{Tool: v.tool, Name: p.path[0]}
		}
		return s, nil
	case nsParams:
		a, ok := v.args[p.path[0]]
		if !ok {
			return "", nil
		}
		return scalarText(a)
	}
	return "", fmt.Errorf("api tool %q: %s cannot be resolved in a request", v.tool, p)
}

// writeJSON renders n; it reports false when n is a lone tag of an absent
// optional param, so the enclosing object drops the key.
func (v values) writeJSON(b *bytes.Buffer, n jnode) (bool, error) {
	switch n.kind {
	case 'l':
		b.Write(n.lit)
	case 'o':
		b.WriteByte('{')
		first := true
		for _, f := range n.obj {
			mark := b.Len()
			if !first {
				b.WriteByte(',')
			}
			b.Write(mustJSON(f.key))
			b.WriteByte(':')
			ok, err := v.writeJSON(b, f.value)
			if err != nil {
				return false, err
			}
			if !ok {
				b.Truncate(mark)
				continue
			}
			first = false
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			ok, err := v.writeJSON(b, e)
			if err != nil {
				return false, err
			}
			if !ok {
				b.WriteString("null")
			}
		}
		b.WriteByte(']')
	case 't':
		if p, ok := n.tmpl.single(); ok && p.ns == nsParams {
			a, ok := v.args[p.path[0]]
			if !ok {
				return false, nil
			}
			b.Write(mustJSON(a)) // typed: a number stays a number
			return true, nil
		}
		s, err := n.tmpl.render(v.text, nil)
		if err != nil {
			return false, err
		}
		b.Write(mustJSON(s))
	}
	return true, nil
}

func (v values) form(fields []formKV) (string, error) {
	var b bytes.Buffer
	for _, f := range fields {
		if p, ok := f.value.single(); ok && p.ns == nsParams {
			if _, ok := v.args[p.path[0]]; !ok {
				continue
			}
		}
		s, err := f.value.render(v.text, nil)
		if err != nil {
			return "", err
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(f.key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(s))
	}
	return b.String(), nil
}
