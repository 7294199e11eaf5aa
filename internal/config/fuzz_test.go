package config

import (
	"os"
	"path/filepath"
	"testing"
)

func addSeeds(f *testing.F) {
	f.Helper()
	seeds := []string{
		``, `{}`, `[]`, `null`, `{a: 1,}`, `[1, 2,]`, `'x\'y'`, `"\uD83D\uDE00"`, `"\uD800"`,
		`0x1F`, `.5`, `5.`, `+1`, `-Infinity`, `NaN`, `/* c */ {} // d`, "\ufeff{}",
		`{\u0061: 1}`, `{a: 1, a: 2}`, "'a\\\r\nb'", `{agents: {list: [{id: 'a', tools: {allow: ['x', 1]}}]}}`,
		`{gateway: {port: 99999}, session: {scope: 'x'}, __proto__: {}}`,
		`{channels: {t: {groups: {g: {tools: {deny: []}, x: 1}}}}}`,
		`{a: 'https://u:p@h/x?token=t#k=v', m: {args: ['--token', 'x', 'K_TOKEN=y', '--key=z'], headers: {Cookie: 'c'}}, webhookUrl: 'https://hooks.slack.com/x'}`,
		`{a: 'https://u:__OPENCLAW_REDACTED__@h', args: ['__OPENCLAW_REDACTED__', 'x'], env: {args: ['--token', 't']}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	matches, _ := filepath.Glob(filepath.Join("testdata", "roundtrip", "*.json5"))
	for _, m := range matches {
		if data, err := os.ReadFile(m); err == nil {
			f.Add(data)
		}
	}
}

// FuzzParseJSON5 checks that the parser never panics and that what it
// accepts survives being written as JSON and read back.
func FuzzParseJSON5(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseJSON5(data)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error %T is not a *SyntaxError: %v", err, err)
			}
			return
		}
		if _, bad := nonFinite(v, ""); bad != "" {
			if _, err := v.MarshalJSON(); err == nil {
				t.Fatal("MarshalJSON accepted a non-finite number")
			}
			return
		}
		out := v.Indented()
		back, err := ParseJSON5(out)
		if err != nil {
			t.Fatalf("Indented output does not re-parse: %v\n%s", err, out)
		}
		if !Equal(v, back) {
			t.Fatalf("round trip changed the tree:\n%s\n%s", out, back.Indented())
		}
		// It is plain JSON, too.
		strict, err := FromJSON(out)
		if err != nil {
			t.Fatalf("Indented output is not strict JSON: %v\n%s", err, out)
		}
		if !Equal(v, strict) {
			t.Fatal("strict parse differs")
		}
	})
}

// FuzzLoad checks that parsing and decoding any input never panics, and
// that the tree operations on whatever loads keep their promises.
func FuzzLoad(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.json", data)
		if file == nil {
			if err == nil {
				t.Fatal("nil file without an error")
			}
			return
		}
		tree := file.Tree
		if got, err := Restore(Redact(tree), tree); err != nil || !Equal(got, tree) {
			t.Fatalf("Restore(Redact(x), x) = %v, %v", got, err)
		}
		if merged := MergePatch(NewObject(), tree); merged == nil || merged.Kind != Object {
			t.Fatal("MergePatch lost the object")
		}
		if !Equal(MergePatch(tree, NewObject()), tree) {
			t.Fatal("an empty patch changed the tree")
		}
	})
}
