package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Messages shared by the decoder and the tests (and MsgUnused).
const (
	msgUnknownKey = "unknown key (kept, not used by Talon)"
	msgIgnoredKey = "ignored key"
)

var (
	rawType  = reflect.TypeFor[Raw]()
	listType = reflect.TypeFor[List]()
)

// blockedKey reports the keys that mean prototype pollution to the
// JavaScript side and are never decoded or merged.
func blockedKey(k string) bool {
	return k == "__proto__" || k == "constructor" || k == "prototype"
}

// Decode fills out (a non-nil pointer, usually *Config) from tree following
// the json tags of the types in types.go. It reports every type error at once
// as a *ValidationError and returns warnings (unknown keys, the OpenClaw
// keys of unusedKeys, ignored keys) in file order either way. When out is a *Config it
// also runs Validate. JSON null counts as absent. Raw fields hold the tree's
// own nodes, so out shares memory with tree.
func Decode(tree *Value, out any) (warnings []Issue, err error) {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("decoding config: need a non-nil pointer, got %T", out)
	}
	d := &decoder{order: issueOrder{}}
	d.order.visit(rootPath)
	d.decode("", tree, rv.Elem(), keyNodes{unusedTree})
	if c, ok := out.(*Config); ok {
		errs, warns := check(c)
		d.errs = append(d.errs, errs...)
		d.warns = append(d.warns, warns...)
	}
	d.order.sort(d.errs)
	d.order.sort(d.warns)
	if len(d.errs) > 0 {
		return d.warns, &ValidationError{Issues: d.errs}
	}
	return d.warns, nil
}

type decoder struct {
	errs, warns []Issue
	order       issueOrder
}

func (d *decoder) fail(path, msg string) {
	d.errs = append(d.errs, Issue{Path: showPath(path), Message: msg})
}

func (d *decoder) warn(path, msg string) {
	d.warns = append(d.warns, Issue{Path: showPath(path), Message: msg})
}

// decode stores v into rv and reports whether v had the right JSON type
// (nested problems are recorded but do not make it false). at is where
// path is in unusedTree.
func (d *decoder) decode(path string, v *Value, rv reflect.Value, at keyNodes) bool {
	if v.IsNull() {
		return true
	}
	t := rv.Type()
	switch t {
	case rawType:
		d.scanKept(path, v, at)
		rv.Set(reflect.ValueOf(Raw{v}))
		return true
	case listType:
		return d.decodeList(path, v, rv)
	case secretType:
		return d.decodeSecret(path, v, rv)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem() == rawType {
			d.scanKept(path, v, at)
			rv.Set(reflect.ValueOf(&Raw{v}))
			return true
		}
		p := reflect.New(t.Elem())
		if !d.decode(path, v, p.Elem(), at) {
			return false
		}
		rv.Set(p)
		return true
	case reflect.String:
		if v.Kind != String {
			d.fail(path, "expected string")
			return false
		}
		rv.SetString(v.Str)
	case reflect.Bool:
		if v.Kind != Bool {
			d.fail(path, "expected boolean")
			return false
		}
		rv.SetBool(v.Bool)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := intValue(v)
		if !ok || rv.OverflowInt(n) {
			d.fail(path, "expected integer")
			return false
		}
		rv.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, ok := floatValue(v)
		if !ok || rv.OverflowFloat(f) {
			d.fail(path, "expected number")
			return false
		}
		rv.SetFloat(f)
	case reflect.Slice:
		if v.Kind != Array {
			d.fail(path, "expected array")
			return false
		}
		s := reflect.MakeSlice(t, len(v.Items), len(v.Items))
		items := at.item()
		for i, it := range v.Items {
			p := joinIndex(path, i)
			d.order.visit(p)
			if it.IsNull() {
				// An array element cannot be absent, unlike a member.
				d.fail(p, "expected "+describe(t.Elem()))
				continue
			}
			d.decode(p, it, s.Index(i), items)
		}
		rv.Set(s)
	case reflect.Map:
		return d.decodeMap(path, v, rv, at)
	case reflect.Struct:
		return d.decodeStruct(path, v, rv, at)
	default:
		d.fail(path, fmt.Sprintf("cannot decode into Go type %s", t))
		return false
	}
	return true
}

// describe names the JSON type a Go type expects, for messages.
func describe(t reflect.Type) string {
	switch {
	case t == listType:
		return "array of strings"
	case t.Kind() == reflect.Pointer:
		return describe(t.Elem())
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	}
	return "object"
}

func (d *decoder) decodeList(path string, v *Value, rv reflect.Value) bool {
	if v.Kind != Array {
		d.fail(path, "expected array of strings")
		return false
	}
	l := make(List, 0, len(v.Items))
	for _, it := range v.Items {
		if it == nil || it.Kind != String {
			d.fail(path, "expected array of strings")
			return false
		}
		l = append(l, it.Str)
	}
	rv.Set(reflect.ValueOf(l))
	return true
}

// decodeMap decodes an object into a map. Its members have typed values,
// so none is reported as unused; keys below them may be.
func (d *decoder) decodeMap(path string, v *Value, rv reflect.Value, at keyNodes) bool {
	t := rv.Type()
	if v.Kind != Object {
		d.fail(path, "expected object")
		return false
	}
	if t.Key().Kind() != reflect.String {
		d.fail(path, fmt.Sprintf("cannot decode into Go type %s", t))
		return false
	}
	m := reflect.MakeMapWithSize(t, len(v.Members))
	for _, mem := range v.Members {
		p := joinKey(path, mem.Key)
		d.order.visit(showPath(p))
		if blockedKey(mem.Key) {
			d.warn(p, msgIgnoredKey)
			continue
		}
		if mem.Value.IsNull() {
			continue
		}
		e := reflect.New(t.Elem()).Elem()
		if d.decode(p, mem.Value, e, at.member(mem.Key)) {
			m.SetMapIndex(reflect.ValueOf(mem.Key).Convert(t.Key()), e)
		}
	}
	rv.Set(m)
	return true
}

// decodeStruct decodes an object into a struct. A member with a typed
// field is decoded, never reported as unused; any other is reported as
// unused (unusedKeys) or unknown, and kept in the struct's rest field if
// it has one.
func (d *decoder) decodeStruct(path string, v *Value, rv reflect.Value, at keyNodes) bool {
	if v.Kind != Object {
		d.fail(path, "expected object")
		return false
	}
	info := structInfoOf(rv.Type())
	var rest *Value
	for _, mem := range v.Members {
		p := joinKey(path, mem.Key)
		d.order.visit(showPath(p))
		if blockedKey(mem.Key) {
			d.warn(p, msgIgnoredKey)
			continue
		}
		next := at.member(mem.Key)
		f, ok := info.fields[mem.Key]
		if !ok {
			unused := next.end()
			if unused && !mem.Value.IsNull() {
				d.warn(p, MsgUnused)
			}
			d.scanKept(p, mem.Value, next)
			if info.rest != nil {
				if rest == nil {
					rest = &Value{Kind: Object}
				}
				// Keys are already unique within one parsed object.
				rest.Members = append(rest.Members, mem)
				continue
			}
			if !unused {
				d.warn(p, msgUnknownKey)
			}
			continue
		}
		d.decode(p, mem.Value, fieldAlloc(rv, f.index), next)
	}
	if rest != nil {
		fieldAlloc(rv, info.rest).Set(reflect.ValueOf(&Raw{rest}))
	}
	return true
}

// scanKept warns about the keys inside a value that is kept but not
// decoded (Raw, unknown and unused keys), so they are reported wherever
// they are: prototype keys, and the keys of unusedKeys (at is where path
// is in unusedTree) other than those inside one already reported.
func (d *decoder) scanKept(path string, v *Value, at keyNodes) {
	if v == nil {
		return
	}
	if at.end() {
		at = nil
	}
	switch v.Kind {
	case Array:
		items := at.item()
		for i, it := range v.Items {
			d.scanKept(joinIndex(path, i), it, items)
		}
	case Object:
		for _, m := range v.Members {
			p := joinKey(path, m.Key)
			if blockedKey(m.Key) {
				d.warn(p, msgIgnoredKey)
				continue
			}
			next := at.member(m.Key)
			if next.end() && !m.Value.IsNull() {
				d.warn(p, MsgUnused)
			}
			d.scanKept(p, m.Value, next)
		}
	}
}

// intValue accepts integral numbers however written (3, 3.0, 3e2).
func intValue(v *Value) (int64, bool) {
	if v.Kind != Number {
		return 0, false
	}
	if n, err := strconv.ParseInt(v.Num, 10, 64); err == nil {
		return n, true
	}
	f, ok := floatValue(v)
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// floatValue accepts finite numbers only: OpenClaw's schema rejects
// Infinity and NaN, and so would any JSON writer.
func floatValue(v *Value) (float64, bool) {
	if v.Kind != Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Num, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// fieldAlloc is rv.FieldByIndex, allocating nil embedded pointers on the way.
func fieldAlloc(rv reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				rv.Set(reflect.New(rv.Type().Elem()))
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv
}

type fieldInfo struct {
	index []int
	depth int
}

type structInfo struct {
	fields map[string]fieldInfo
	rest   []int // index of the talon:"rest" field, nil if none
}

var structCache sync.Map // reflect.Type → *structInfo

// structInfoOf maps JSON names to fields, flattening embedded structs the
// way encoding/json does: the shallowest field wins and a tie hides both.
func structInfoOf(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fields: map[string]fieldInfo{}}
	ambiguous := map[string]int{} // name → depth of the tie
	var walk func(t reflect.Type, prefix []int, depth int)
	walk = func(t reflect.Type, prefix []int, depth int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			index := append(append([]int(nil), prefix...), i)
			tag := sf.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" && tag == "-" {
				continue
			}
			if sf.Tag.Get("talon") == "rest" {
				if depth == 0 && sf.Type == reflect.PointerTo(rawType) {
					si.rest = index
				}
				continue
			}
			if sf.Anonymous && name == "" {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct && et != rawType {
					walk(et, index, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if old, ok := si.fields[name]; ok && old.depth < depth {
				continue
			} else if ok && old.depth == depth {
				ambiguous[name] = depth
				continue
			}
			if d, ok := ambiguous[name]; ok && d <= depth {
				continue
			}
			si.fields[name] = fieldInfo{index: index, depth: depth}
		}
	}
	walk(t, nil, 0)
	for name, depth := range ambiguous {
		if f, ok := si.fields[name]; ok && f.depth == depth {
			delete(si.fields, name)
		}
	}
	actual, _ := structCache.LoadOrStore(t, si)
	return actual.(*structInfo)
}
