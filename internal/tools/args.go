package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Args are the arguments of one tool call, decoded from the JSON object the
// model produced. The accessors check type and presence and return errors
// written for the model: pass them back with ErrorResult. A JSON null counts
// as absent.
type Args struct {
	m map[string]json.RawMessage
}

// ParseArgs decodes raw, which must be a JSON object. Empty input and null
// give no arguments. A JSON string holding an object (arguments encoded
// twice, which some models do) is accepted too.
func ParseArgs(raw json.RawMessage) (Args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Args{m: map[string]json.RawMessage{}}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if inner := bytes.TrimSpace([]byte(s)); len(inner) > 0 && inner[0] == '{' {
				raw = inner
			}
		}
	}
	if raw[0] != '{' {
		return Args{}, fmt.Errorf("arguments must be a JSON object, got %s", jsonKind(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return Args{}, fmt.Errorf("arguments are not valid JSON (%s); send a single JSON object", jsonErrText(err))
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return Args{m: m}, nil
}

// ParseArgsFor is ParseArgs followed by Only with the property names of
// schema, so arguments the schema does not declare are an error.
func ParseArgsFor(raw, schema json.RawMessage) (Args, error) {
	a, err := ParseArgs(raw)
	if err != nil {
		return Args{}, err
	}
	return a, a.Only(PropertyNames(schema)...)
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
			return "a number"
		}
		return "something that is not JSON"
	}
}

func jsonErrText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}

// Only fails when an argument is not one of allowed, naming the unknown
// ones and listing the allowed ones so the model can correct its call.
func (a Args) Only(allowed ...string) error {
	var unknown []string
	for k := range a.m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	what := "unknown argument " + unknown[0]
	if len(unknown) > 1 {
		what = "unknown arguments " + strings.Join(unknown, ", ")
	}
	if len(allowed) == 0 {
		return fmt.Errorf("%s; this tool takes no arguments", what)
	}
	return fmt.Errorf("%s; allowed arguments: %s", what, strings.Join(allowed, ", "))
}

// Has reports whether the argument is present and not null.
func (a Args) Has(name string) bool {
	_, ok := a.get(name)
	return ok
}

func (a Args) get(name string) (json.RawMessage, bool) {
	v, ok := a.m[name]
	if !ok {
		return nil, false
	}
	v = bytes.TrimSpace(v)
	if string(v) == "null" {
		return nil, false
	}
	return v, true
}

func missing(name string) error {
	return fmt.Errorf("missing required argument %q", name)
}

// String returns a string argument, "" when it is absent and not required.
// An empty string counts as present.
func (a Args) String(name string, required bool) (string, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return "", missing(name)
		}
		return "", nil
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", fmt.Errorf("argument %q must be a string", name)
	}
	return s, nil
}

// Int returns an integer argument within [min, max], 0 when it is absent
// and not required. Integral numbers such as 10.0 and numeric strings such
// as "10" are accepted. Use math.MinInt or math.MaxInt for an open end.
func (a Args) Int(name string, required bool, min, max int) (int, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return 0, missing(name)
		}
		return 0, nil
	}
	bad := func() error { return fmt.Errorf("argument %q must be %s", name, intRange(min, max)) }
	text := string(v)
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, bad()
		}
		text = strings.TrimSpace(s)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(text, 64)
		if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, bad()
		}
		n = int64(f)
	}
	if n < int64(min) || n > int64(max) {
		return 0, bad()
	}
	return int(n), nil
}

// Number returns a finite number argument, 0 when it is absent and not
// required. Numeric strings such as "2.5" are accepted; the caller checks
// its range.
func (a Args) Number(name string, required bool) (float64, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return 0, missing(name)
		}
		return 0, nil
	}
	text := string(v)
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, fmt.Errorf("argument %q must be a number", name)
		}
		text = strings.TrimSpace(s)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("argument %q must be a number", name)
	}
	return f, nil
}

func intRange(min, max int) string {
	switch {
	case min == math.MinInt && max == math.MaxInt:
		return "an integer"
	case max == math.MaxInt:
		return fmt.Sprintf("an integer of at least %d", min)
	case min == math.MinInt:
		return fmt.Sprintf("an integer of at most %d", max)
	default:
		return fmt.Sprintf("an integer from %d to %d", min, max)
	}
}

// Bool returns a boolean argument, false when it is absent and not
// required. The strings "true" and "false" are accepted too.
func (a Args) Bool(name string, required bool) (bool, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return false, missing(name)
		}
		return false, nil
	}
	switch string(v) {
	case "true", `"true"`:
		return true, nil
	case "false", `"false"`:
		return false, nil
	}
	return false, fmt.Errorf("argument %q must be true or false", name)
}

// StringEnum returns a string argument that must be one of allowed, ""
// when it is absent and not required.
func (a Args) StringEnum(name string, required bool, allowed ...string) (string, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return "", missing(name)
		}
		return "", nil
	}
	var s string
	if v[0] != '"' || json.Unmarshal(v, &s) != nil || !slices.Contains(allowed, s) {
		return "", enumErr(name, allowed)
	}
	return s, nil
}

func enumErr(name string, allowed []string) error {
	q := make([]string, len(allowed))
	for i, s := range allowed {
		q[i] = strconv.Quote(s)
	}
	return fmt.Errorf("argument %q must be one of %s", name, strings.Join(q, ", "))
}

// StringList returns an array-of-strings argument, nil when it is absent
// and not required.
func (a Args) StringList(name string, required bool) ([]string, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return nil, missing(name)
		}
		return nil, nil
	}
	bad := fmt.Errorf("argument %q must be an array of strings", name)
	var items []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &items) != nil {
		return nil, bad
	}
	out := make([]string, len(items))
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &out[i]) != nil {
			return nil, bad
		}
	}
	return out, nil
}

// StringMap returns an object-of-strings argument (a TypeObject property),
// nil when it is absent and not required.
func (a Args) StringMap(name string, required bool) (map[string]string, error) {
	v, ok := a.get(name)
	if !ok {
		if required {
			return nil, missing(name)
		}
		return nil, nil
	}
	bad := fmt.Errorf("argument %q must be an object whose values are strings", name)
	var items map[string]json.RawMessage
	if v[0] != '{' || json.Unmarshal(v, &items) != nil {
		return nil, bad
	}
	out := make(map[string]string, len(items))
	for k, it := range items {
		var s string
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &s) != nil {
			return nil, fmt.Errorf("argument %q: the value of %q must be a string", name, k)
		}
		out[k] = s
	}
	return out, nil
}
