package config

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON types. Null is the zero Kind so that a zero Value is JSON null.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one node of an ordered JSON tree. Objects keep their members in
// file order so that a load/save round trip does not reshuffle a hand-edited
// file, and numbers keep their written text so that no digit is lost.
type Value struct {
	Kind Kind
	Bool bool
	// Num is the number as JSON text. JSON5-only spellings are normalised
	// when parsing (0x1F → 31, .5 → 0.5, +1 → 1); Infinity, -Infinity and
	// NaN are kept as those words and cannot be marshalled as JSON.
	Num   string
	Str   string
	Items []*Value
	// Members are in file order. A duplicate key replaces the earlier value
	// but keeps the earlier position, as JSON.parse does.
	Members []Member
}

// Member is one key/value pair of an object.
type Member struct {
	Key   string
	Value *Value
}

// NewNull returns a JSON null.
func NewNull() *Value { return &Value{Kind: Null} }

// NewBool returns a JSON boolean.
func NewBool(b bool) *Value { return &Value{Kind: Bool, Bool: b} }

// NewInt returns a JSON number holding n.
func NewInt(n int64) *Value { return &Value{Kind: Number, Num: strconv.FormatInt(n, 10)} }

// NewNumber returns a JSON number from its JSON text, which the caller
// vouches for (it is written out verbatim).
func NewNumber(text string) *Value { return &Value{Kind: Number, Num: text} }

// NewString returns a JSON string.
func NewString(s string) *Value { return &Value{Kind: String, Str: s} }

// NewStrings returns a JSON array of strings; with no arguments, an empty array.
func NewStrings(ss ...string) *Value {
	v := &Value{Kind: Array, Items: make([]*Value, 0, len(ss))}
	for _, s := range ss {
		v.Items = append(v.Items, NewString(s))
	}
	return v
}

// NewArray returns a JSON array of the given items (never a nil slice, so
// that it marshals as [] rather than null).
func NewArray(items ...*Value) *Value {
	if items == nil {
		items = []*Value{}
	}
	return &Value{Kind: Array, Items: items}
}

// NewObject returns a JSON object with the given members; later duplicates
// replace earlier ones as Set does.
func NewObject(members ...Member) *Value {
	v := &Value{Kind: Object}
	for _, m := range members {
		v.Set(m.Key, m.Value)
	}
	return v
}

// IsNull reports whether v is absent or JSON null.
func (v *Value) IsNull() bool { return v == nil || v.Kind == Null }

// Get returns the member key of an object, or nil when v is nil, not an
// object, or has no such member.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for i := range v.Members {
		if v.Members[i].Key == key {
			return v.Members[i].Value
		}
	}
	return nil
}

// Lookup follows a path of object keys, returning nil if any step is missing.
func (v *Value) Lookup(path ...string) *Value {
	for _, k := range path {
		v = v.Get(k)
	}
	return v
}

// Set replaces the member key in place or appends it. A v that is not an
// object becomes an empty object first, so a zero Value can be built up.
func (v *Value) Set(key string, x *Value) {
	if v.Kind != Object {
		*v = Value{Kind: Object}
	}
	for i := range v.Members {
		if v.Members[i].Key == key {
			v.Members[i].Value = x
			return
		}
	}
	v.Members = append(v.Members, Member{Key: key, Value: x})
}

// Delete removes the member key and reports whether it was there.
func (v *Value) Delete(key string) bool {
	if v == nil || v.Kind != Object {
		return false
	}
	for i := range v.Members {
		if v.Members[i].Key == key {
			v.Members = append(v.Members[:i:i], v.Members[i+1:]...)
			return true
		}
	}
	return false
}

// Clone returns a deep copy of v (nil for nil).
func (v *Value) Clone() *Value {
	if v == nil {
		return nil
	}
	c := &Value{Kind: v.Kind, Bool: v.Bool, Num: v.Num, Str: v.Str}
	if v.Items != nil {
		c.Items = make([]*Value, len(v.Items))
		for i, it := range v.Items {
			c.Items[i] = it.Clone()
		}
	}
	if v.Members != nil {
		c.Members = make([]Member, len(v.Members))
		for i, m := range v.Members {
			c.Members[i] = Member{Key: m.Key, Value: m.Value.Clone()}
		}
	}
	return c
}

// Equal reports whether a and b are the same JSON value with members in the
// same order. Numbers compare by text.
func Equal(a, b *Value) bool {
	if a == nil || b == nil {
		return a.IsNull() && b.IsNull()
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Bool:
		return a.Bool == b.Bool
	case Number:
		return a.Num == b.Num
	case String:
		return a.Str == b.Str
	case Array:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !Equal(a.Items[i], b.Items[i]) {
				return false
			}
		}
	case Object:
		if len(a.Members) != len(b.Members) {
			return false
		}
		for i := range a.Members {
			if a.Members[i].Key != b.Members[i].Key || !Equal(a.Members[i].Value, b.Members[i].Value) {
				return false
			}
		}
	}
	return true
}

// FromJSON parses strict JSON (RFC 8259), as used for wire payloads.
func FromJSON(data []byte) (*Value, error) {
	return parse(data, false)
}

// FromGo converts x to a Value through encoding/json, so struct tags apply
// and map keys come out sorted.
func FromGo(x any) (*Value, error) {
	data, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("converting %T to a config value: %w", x, err)
	}
	return FromJSON(data)
}
