package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzMergePatch applies one JSON5 document as a config.patch to another.
// MergePatch must leave both inputs alone, put null deletions and scalar
// replacements where the patch says, and be idempotent (applying the same
// patch twice changes nothing the second time) unless the patch holds a
// null inside an array, the one place where null is data rather than a
// deletion, or an array repeating an id: taken whole the first time (the
// base had no id array there), its elements merge into one the second. Redact must keep the shape of what it hides, be idempotent, and
// be undone by Restore against the original, for the base, the patch and
// the result alike.
func FuzzMergePatch(f *testing.F) {
	pairs := [][2]string{
		{`{a: 1}`, `{a: 2}`},
		{`{nested: {a: 1, b: 2}}`, `{nested: {b: null}}`},
		{`{a: {b: 1}}`, `{a: {b: 1, c: null}}`},
		{`{agents: {list: [{id: "a", workspace: "/w"}, {id: "b"}]}}`, `{agents: {list: [{id: "a", tools: {deny: ["x"]}}, {id: "c"}]}}`},
		{`{list: [{id: "a"}]}`, `{list: [{id: "c", n: 1}, {id: "a", n: 2}, {id: "b", gone: null}]}`},
		{`{list: {id: "a"}}`, `{list: [{id: "a", x: null}]}`},
		{`{list: [{id: "x"}, {id: "x"}]}`, `{list: [{id: "x", n: 1}]}`},
		{`{a: 1}`, `{__proto__: {p: 1}, a: {constructor: 1, prototype: 2}, l: [{__proto__: 1}]}`},
		{`[1, 2]`, `{a: 1, b: null}`},
		{`{a: 1}`, `null`},
		{`{a: 1}`, `[1, {b: null}]`},
		{`{gateway: {auth: {token: "s3cret", password: "pw"}}, env: {OPENAI_API_KEY: "sk-1", nested: {x: ["a", ""]}}}`,
			`{gateway: {auth: {token: "__OPENCLAW_REDACTED__"}}, env: {NEW: "v"}}`},
		{`{env: {list: [{id: "a", key: "k"}, {id: "b"}]}}`, `{env: {list: [{id: "a"}]}}`},
		{`{models: {providers: {p: {apiKey: "k", headers: {Authorization: "Bearer t"}}}}}`, `{models: {providers: {p: {apiKey: null}}}}`},
		{`{tokens: {maxTokens: 5, tokenFile: "t"}, keys: ["a", "b"]}`, `{keys: ["c"]}`},
	}
	for _, p := range pairs {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	for _, name := range []string{
		filepath.Join("testdata", "roundtrip", "openclaw-base.json5"),
		filepath.Join("..", "..", "examples", "clawdbot.json"),
	} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data, []byte(`{agents: {list: [{id: "main", tools: {allow: ["read"]}}]}, env: null}`))
		}
	}
	f.Fuzz(func(t *testing.T, baseText, patchText []byte) {
		base, err := ParseJSON5(baseText)
		if err != nil {
			return
		}
		patch, err := ParseJSON5(patchText)
		if err != nil {
			return
		}
		base0, patch0 := base.Clone(), patch.Clone()
		got := MergePatch(base, patch)
		if !Equal(base, base0) || !Equal(patch, patch0) {
			t.Fatal("MergePatch modified its inputs")
		}
		if got == nil && !patch.IsNull() {
			t.Fatal("MergePatch returned nil for a non-null patch")
		}
		if patch.Kind == Object {
			if got.Kind != Object {
				t.Fatalf("an object patch gave a %v", got.Kind)
			}
			for _, m := range patch.Members {
				v := got.Get(m.Key)
				switch {
				case blockedKey(m.Key):
					if v != nil && !Equal(v, base.Get(m.Key)) {
						t.Fatalf("blocked patch key %q changed the result", m.Key)
					}
				case m.Value.IsNull():
					if v != nil {
						t.Fatalf("null patch member %q is still there", m.Key)
					}
				case m.Value.Kind != Object && m.Value.Kind != Array:
					if !Equal(v, m.Value) {
						t.Fatalf("member %q = %s, want the patch's %s", m.Key, v.Indented(), m.Value.Indented())
					}
				}
			}
		}
		if !nullInArray(patch, false) && !repeatsID(patch) {
			if again := MergePatch(got, patch); !Equal(again, got) {
				t.Fatalf("applying the patch twice differs:\nonce:  %s\ntwice: %s", got.Indented(), again.Indented())
			}
		}
		for _, v := range []*Value{base, patch, got} {
			red := Redact(v)
			if !sameShape(red, v) {
				t.Fatalf("Redact changed the shape:\n%s\n%s", v.Indented(), red.Indented())
			}
			if !Equal(Redact(red), red) {
				t.Fatalf("Redact is not idempotent on %s", v.Indented())
			}
			back, err := Restore(red, v)
			if err != nil {
				t.Fatalf("Restore(Redact(x), x): %v\nx = %s", err, v.Indented())
			}
			if !Equal(back, v) {
				t.Fatalf("Restore(Redact(x), x) = %s, want %s", back.Indented(), v.Indented())
			}
		}
	})
}

// nullInArray reports whether a null lies anywhere inside an array of v.
func nullInArray(v *Value, inArray bool) bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case Null:
		return inArray
	case Array:
		for _, it := range v.Items {
			if nullInArray(it, true) {
				return true
			}
		}
	case Object:
		for _, m := range v.Members {
			if nullInArray(m.Value, inArray) {
				return true
			}
		}
	}
	return false
}

// repeatsID reports whether an array anywhere in v has two elements with
// the same id.
func repeatsID(v *Value) bool {
	if v == nil {
		return false
	}
	seen := map[string]bool{}
	for _, it := range v.Items {
		if id := idOf(it); id != "" {
			if seen[id] {
				return true
			}
			seen[id] = true
		}
		if repeatsID(it) {
			return true
		}
	}
	for _, m := range v.Members {
		if repeatsID(m.Value) {
			return true
		}
	}
	return false
}

// sameShape reports whether a and b have the same kinds, keys and lengths
// everywhere, whatever their strings say.
func sameShape(a, b *Value) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Kind != b.Kind || len(a.Items) != len(b.Items) || len(a.Members) != len(b.Members) {
		return false
	}
	if a.Kind == Number && a.Num != b.Num || a.Kind == Bool && a.Bool != b.Bool {
		return false
	}
	for i := range a.Items {
		if !sameShape(a.Items[i], b.Items[i]) {
			return false
		}
	}
	for i := range a.Members {
		if a.Members[i].Key != b.Members[i].Key || !sameShape(a.Members[i].Value, b.Members[i].Value) {
			return false
		}
	}
	return true
}
