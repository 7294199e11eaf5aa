package tools

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzArgs feeds any model output to ParseArgs and every accessor. An
// error says something; parsed arguments survive being encoded again (and
// encoded twice, as some models send them); every value an accessor
// accepts is in range and reads back the same once written as JSON.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, ` {"path":"a","limit":3} `, `"{\"path\":\"a\"}"`, `[]`, `"hello"`, `12`, `true`,
		`{"path":`, `{"a":1} {"b":2}`, `{"n":"10","f":10.0,"big":1e300,"neg":-3,"s":" 7 "}`,
		`{"b":"true","c":false,"d":"no","e":null}`, `{"l":["a","b"],"m":["a",1],"o":{}}`,
		`{"e":"\ud800","u":"\u00e9","esc":"a\"b\\c"}`, `{"x":9223372036854775807,"y":9223372036854775808,"z":-9.223372036854776e18}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseArgs(raw)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if a.m == nil {
			t.Fatal("parsed arguments without a map")
		}
		keys := make([]string, 0, len(a.m))
		for k := range a.m {
			keys = append(keys, k)
		}
		if err := a.Only(keys...); err != nil {
			t.Fatalf("Only(every key) = %v", err)
		}
		if err := a.Only(); (err == nil) != (len(keys) == 0) {
			t.Fatalf("Only() = %v with %d arguments", err, len(keys))
		}
		if _, err := a.String("\x00absent", true); err == nil || !strings.Contains(err.Error(), "missing required") {
			t.Fatalf("an absent required argument gives %v", err)
		}

		// Encoded again, and encoded as a JSON string, the same arguments.
		enc, err := json.Marshal(a.m)
		if err != nil {
			t.Fatalf("encoding parsed arguments: %v", err)
		}
		twice, _ := json.Marshal(string(enc))
		for _, form := range [][]byte{enc, twice} {
			b, err := ParseArgs(form)
			if err != nil {
				t.Fatalf("ParseArgs(%s): %v", form, err)
			}
			if !sameArgs(a, b) {
				t.Fatalf("arguments changed when encoded again as %s", form)
			}
		}

		for _, k := range keys {
			v := bytes.TrimSpace(a.m[k])
			if a.Has(k) != (string(v) != "null") {
				t.Fatalf("Has(%q) = %v for %s", k, a.Has(k), v)
			}
			if s, err := a.String(k, true); err == nil {
				checkReadBack(t, k, s, func(b Args) (any, error) { return b.String(k, true) })
			}
			if n, err := a.Int(k, true, -5, 5); err == nil && (n < -5 || n > 5) {
				t.Fatalf("Int(%q, -5, 5) = %d", k, n)
			}
			if n, err := a.Int(k, true, math.MinInt, math.MaxInt); err == nil {
				checkReadBack(t, k, n, func(b Args) (any, error) { return b.Int(k, true, math.MinInt, math.MaxInt) })
			}
			if x, err := a.Bool(k, true); err == nil {
				checkReadBack(t, k, x, func(b Args) (any, error) { return b.Bool(k, true) })
			}
			if l, err := a.StringList(k, true); err == nil {
				checkReadBack(t, k, l, func(b Args) (any, error) { return b.StringList(k, true) })
			}
			if e, err := a.StringEnum(k, false, "a", "b"); err == nil && e != "" && e != "a" && e != "b" {
				t.Fatalf("StringEnum(%q) = %q", k, e)
			}
		}
	})
}

// checkReadBack writes v as the argument k and checks that get reads the
// same value from it.
func checkReadBack(t *testing.T, k string, v any, get func(Args) (any, error)) {
	t.Helper()
	enc, err := json.Marshal(map[string]any{k: v})
	if err != nil {
		t.Fatalf("encoding %q: %v", k, err)
	}
	b, err := ParseArgs(enc)
	if err != nil {
		t.Fatalf("ParseArgs(%s): %v", enc, err)
	}
	got, err := get(b)
	if err != nil {
		t.Fatalf("reading back %s: %v", enc, err)
	}
	same := false
	switch w := v.(type) {
	case []string:
		same = slices.Equal(w, got.([]string))
	default:
		same = got == v
	}
	if !same {
		t.Fatalf("argument %q read %v, written %s, read back %v", k, v, enc, got)
	}
}

// sameArgs reports whether two argument sets hold the same names and the
// same JSON values (numbers compared by their text).
func sameArgs(a, b Args) bool {
	if len(a.m) != len(b.m) {
		return false
	}
	for k, v := range a.m {
		w, ok := b.m[k]
		if !ok {
			return false
		}
		x, errX := decodeNumbers(v)
		y, errY := decodeNumbers(w)
		if errX != nil || errY != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func decodeNumbers(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
