package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustJSON5(t *testing.T, s string) *Value {
	t.Helper()
	v, err := ParseJSON5([]byte(s))
	if err != nil {
		t.Fatalf("ParseJSON5(%q): %v", s, err)
	}
	return v
}

func TestValueAccess(t *testing.T) {
	v := mustJSON5(t, `{a: {b: {c: 'deep'}}, x: 1}`)
	if got := v.Lookup("a", "b", "c"); got == nil || got.Str != "deep" {
		t.Errorf("Lookup(a,b,c) = %v", got)
	}
	if got := v.Lookup("a", "missing", "c"); got != nil {
		t.Errorf("Lookup through a missing key = %v, want nil", got)
	}
	if got := v.Lookup("x", "y"); got != nil {
		t.Errorf("Lookup through a number = %v, want nil", got)
	}
	var nilValue *Value
	if nilValue.Get("a") != nil || nilValue.Lookup("a") != nil || nilValue.Delete("a") || !nilValue.IsNull() {
		t.Error("nil receiver should act as an absent value")
	}

	v.Set("x", NewString("replaced"))
	v.Set("new", NewBool(true))
	if !v.Delete("a") || v.Delete("a") {
		t.Error("Delete should report presence once")
	}
	if diff := cmp.Diff(`{"x":"replaced","new":true}`, compact(t, v)); diff != "" {
		t.Errorf("after Set/Delete (-want +got):\n%s", diff)
	}

	var zero Value
	zero.Set("k", NewInt(-3))
	if diff := cmp.Diff(`{"k":-3}`, compact(t, &zero)); diff != "" {
		t.Errorf("Set on a zero Value (-want +got):\n%s", diff)
	}
}

func TestConstructors(t *testing.T) {
	v := NewObject(
		Member{"null", NewNull()},
		Member{"s", NewStrings("a", "b")},
		Member{"empty", NewStrings()},
		Member{"arr", NewArray()},
		Member{"n", NewNumber("1.50")},
		Member{"s", NewStrings("c")},
	)
	if diff := cmp.Diff(`{"null":null,"s":["c"],"empty":[],"arr":[],"n":1.50}`, compact(t, v)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestClone(t *testing.T) {
	v := mustJSON5(t, `{a: [1, {b: 'x'}], c: {}}`)
	c := v.Clone()
	if !Equal(v, c) {
		t.Fatal("clone differs")
	}
	c.Get("a").Items[1].Set("b", NewString("changed"))
	c.Set("c", NewNull())
	if diff := cmp.Diff(`{"a":[1,{"b":"x"}],"c":{}}`, compact(t, v)); diff != "" {
		t.Errorf("original changed through clone (-want +got):\n%s", diff)
	}
}

func TestMarshalJSONRejectsNonFinite(t *testing.T) {
	v := mustJSON5(t, `{agents: {list: [{id: 'a', n: -Infinity}]}}`)
	_, err := v.MarshalJSON()
	want := "encoding config value: agents.list[0].n: -Infinity cannot be written as JSON"
	if err == nil || err.Error() != want {
		t.Errorf("MarshalJSON error = %v, want %q", err, want)
	}
	// Indented follows JSON.stringify, which writes null.
	if got := string(v.Indented()); !strings.Contains(got, `"n": null`) {
		t.Errorf("Indented = %s, want n: null", got)
	}
}

func TestIndented(t *testing.T) {
	v := mustJSON5(t, `{a: 1, b: [], c: {}, d: [1, {e: 'x'}], 'q"': "<&>\u2028\u0001é"}`)
	want := `{
  "a": 1,
  "b": [],
  "c": {},
  "d": [
    1,
    {
      "e": "x"
    }
  ],
  "q\"": "<&>` + "\u2028" + `\u0001é"
}
`
	if diff := cmp.Diff(want, string(v.Indented())); diff != "" {
		t.Errorf("Indented (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("[]\n", string(NewArray().Indented())); diff != "" {
		t.Errorf("empty array (-want +got):\n%s", diff)
	}
}

func TestFromGo(t *testing.T) {
	v, err := FromGo(map[string]any{
		"zeta":  1,
		"alpha": []string{"x"},
		"mid": struct {
			A int `json:"a"`
		}{2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"alpha":["x"],"mid":{"a":2},"zeta":1}`, compact(t, v)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := FromGo(func() {}); err == nil {
		t.Error("FromGo(func) should fail")
	}
}
