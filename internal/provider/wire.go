package provider

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"talon/internal/llm"
)

// Most of a request body repeats from call to call: the system prompt and
// the tool definitions are the same kilobytes on every turn of an agent,
// and escaping them (and compacting each schema, which encoding/json does
// for every json.RawMessage) was the largest cost of encoding a request.
// A client therefore keeps the JSON of those parts in a fragCache and
// assembles the body around them with a jsonObject.

// Bounds of a fragCache: past either it starts over, so a stream of
// never-repeating client tools cannot grow it without limit.
const (
	maxFragEntries = 512
	maxFragBytes   = 4 << 20
)

// fragCache keeps the JSON of system prompts and tool definitions. It is
// safe for concurrent use. Lookups do not allocate: keys are the values'
// own strings.
type fragCache struct {
	mu    sync.Mutex
	texts map[string][]byte
	tools map[toolKey]toolFrag
	size  int
}

type toolKey struct{ name, desc string }

type toolFrag struct {
	params json.RawMessage // what enc was built from
	enc    []byte
}

// keep makes room for n more bytes, starting over when the cache is full.
// c.mu must be held.
func (c *fragCache) keep(n int) {
	if c.texts == nil || len(c.texts)+len(c.tools) >= maxFragEntries || c.size+n > maxFragBytes {
		c.texts, c.tools, c.size = map[string][]byte{}, map[toolKey]toolFrag{}, 0
	}
	c.size += n
}

// text returns enc(s), computed once per distinct s. The returned slice
// must not be modified.
func (c *fragCache) text(s string, enc func(string) ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	b, ok := c.texts[s]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := enc(s)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.keep(len(s) + len(b))
	c.texts[s] = b
	c.mu.Unlock()
	return b, nil
}

// tool returns a tool definition's JSON as wrap builds it from the tool's
// name, description and parameter schema (emptySchema when it has none),
// computed once per distinct definition.
func (c *fragCache) tool(t llm.ToolSpec, wrap func(name, desc string, params json.RawMessage) any) ([]byte, error) {
	params := t.Parameters
	if len(bytes.TrimSpace(params)) == 0 || string(params) == "null" {
		params = emptySchema
	}
	k := toolKey{t.Name, t.Description}
	c.mu.Lock()
	f, ok := c.tools[k]
	c.mu.Unlock()
	if ok && bytes.Equal(f.params, params) {
		return f.enc, nil
	}
	b, err := json.Marshal(wrap(t.Name, t.Description, params))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.keep(len(k.name) + len(k.desc) + len(params) + len(b))
	c.tools[k] = toolFrag{params: bytes.Clone(params), enc: b}
	c.mu.Unlock()
	return b, nil
}

// jsonObject writes a JSON object member by member. Keys are written as
// given: callers pass constants that need no escaping.
type jsonObject struct {
	buf []byte
}

func newJSONObject(size int) *jsonObject {
	return &jsonObject{buf: append(make([]byte, 0, size), '{')}
}

func (o *jsonObject) key(k string) {
	if len(o.buf) > 1 {
		o.buf = append(o.buf, ',')
	}
	o.buf = append(o.buf, '"')
	o.buf = append(o.buf, k...)
	o.buf = append(o.buf, '"', ':')
}

// raw adds a member whose value is already JSON.
func (o *jsonObject) raw(k string, v []byte) {
	o.key(k)
	o.buf = append(o.buf, v...)
}

// value adds a member encoded with encoding/json.
func (o *jsonObject) value(k string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.raw(k, b)
	return nil
}

func (o *jsonObject) int(k string, n int) {
	o.key(k)
	o.buf = strconv.AppendInt(o.buf, int64(n), 10)
}

// array adds a member whose value is an array of the given parts, each
// one or more elements already in JSON, comma-separated; empty parts are
// skipped.
func (o *jsonObject) array(k string, parts ...[]byte) {
	o.key(k)
	o.buf = append(o.buf, '[')
	n := 0
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if n > 0 {
			o.buf = append(o.buf, ',')
		}
		o.buf = append(o.buf, p...)
		n++
	}
	o.buf = append(o.buf, ']')
}

// elements is what is inside an encoded JSON array: its elements,
// comma-separated, or nothing.
func elements(arr []byte) []byte {
	arr = bytes.TrimSpace(arr)
	if len(arr) < 2 {
		return nil
	}
	return bytes.TrimSpace(arr[1 : len(arr)-1])
}

func (o *jsonObject) bytes() []byte { return append(o.buf, '}') }
