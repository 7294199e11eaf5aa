package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// compact renders v for comparison, spelling Infinity/NaN as bare words so
// tests can show them.
func compact(t *testing.T, v *Value) string {
	t.Helper()
	if p, bad := nonFinite(v, ""); bad != "" {
		return "non-finite " + bad + " at " + showPath(p)
	}
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	return string(b)
}

func TestParseJSON5(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain JSON", `{"a": [1, "x", true, false, null], "b": {}}`, `{"a":[1,"x",true,false,null],"b":{}}`},
		{"line comment", "// head\n{a: 1, // tail\n}", `{"a":1}`},
		{"block comment", "/* a\n * b */{/**/a/* x */:/* y */1}/* end */", `{"a":1}`},
		{"comment at end without newline", "1 // end", `1`},
		{"trailing comma in array", `[1, 2,]`, `[1,2]`},
		{"trailing comma in object", `{a: 1, b: 2,}`, `{"a":1,"b":2}`},
		{"trailing comma nested", `{a: [1,], b: {c: 1,},}`, `{"a":[1],"b":{"c":1}}`},
		{"identifier keys", `{$: 1, _a1: 2, camelCase: 3, $_$: 4}`, `{"$":1,"_a1":2,"camelCase":3,"$_$":4}`},
		{"unicode identifier keys", `{ünïcödé: 1, 日本: 2, aé̃: 3}`, `{"ünïcödé":1,"日本":2,"aé̃":3}`},
		{"escaped identifier keys", `{\u0061b: 1, a\u0062c: 2}`, `{"ab":1,"abc":2}`},
		{"reserved words as keys", `{true: 1, null: 2, Infinity: 3, NaN: 4, if: 5}`, `{"true":1,"null":2,"Infinity":3,"NaN":4,"if":5}`},
		{"single-quoted strings", `{'a': 'it\'s "x"'}`, `{"a":"it's \"x\""}`},
		{"double quote in single", `'say "hi"'`, `"say \"hi\""`},
		{"simple escapes", `"\b\f\n\r\t\"\\\/"`, `"\b\f\n\r\t\"\\/"`},
		{"json5 escapes", `'\v\0\'\a\q\x41\xe9'`, `"\u000b\u0000'aqAé"`},
		{"unicode escape", `"\u00e9\u4E2D"`, `"é中"`},
		{"surrogate pair", `"\uD83D\uDE00"`, `"😀"`},
		{"lone surrogates become U+FFFD", `"\uD83D-\uDE00-\uD800\u0041"`, `"` + "\ufffd-\ufffd-\ufffdA" + `"`},
		{"line continuation LF", "'a\\\nb'", `"ab"`},
		{"line continuation CRLF", "'a\\\r\nb'", `"ab"`},
		{"line continuation CR", "'a\\\rb'", `"ab"`},
		{"line continuation LS PS", "'a\\\u2028b\\\u2029c'", `"abc"`},
		{"raw LS PS in string", "'a\u2028b\u2029c'", "\"a\u2028b\u2029c\""},
		{"raw tab in string", "'a\tb'", `"a\tb"`},
		{"hex", `[0x1F, 0XaB, -0xff, +0x10, 0x0]`, `[31,171,-255,16,0]`},
		{"big hex stays exact", `0x1234567890abcdef1234567890`, `1442304682740643783150283421840`},
		{"leading decimal point", `[.5, -.5, +.5e1]`, `[0.5,-0.5,0.5e1]`},
		{"trailing decimal point", `[5., -5., 5.e3, 5.E-3]`, `[5,-5,5e3,5E-3]`},
		{"leading plus", `[+1, +1.5, +0]`, `[1,1.5,0]`},
		{"number text kept", `[1.0, 1e5, 1E+05, -0, 12345678901234567890123]`, `[1.0,1e5,1E+05,-0,12345678901234567890123]`},
		{"extra whitespace", "\u00a0\v\f{\u2028a\u2029:\u3000 1\ufeff}\t", `{"a":1}`},
		{"BOM at start", "\ufeff{\"a\": 1}", `{"a":1}`},
		{"duplicate keys: last wins at first position", `{a: 1, b: 2, a: 3}`, `{"a":3,"b":2}`},
		{"top-level string", `'x'`, `"x"`},
		{"top-level number", ` 42 `, `42`},
		{"nested", `{a: {b: [{c: [[]]}]}}`, `{"a":{"b":[{"c":[[]]}]}}`},
		{"CRLF newlines", "{\r\n a: 1,\r\n}\r\n", `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseJSON5([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseJSON5(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, compact(t, v)); diff != "" {
				t.Errorf("ParseJSON5(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseJSON5NonFinite(t *testing.T) {
	v, err := ParseJSON5([]byte(`[Infinity, -Infinity, +Infinity, NaN, -NaN, +NaN]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range v.Items {
		got = append(got, it.Num)
	}
	want := []string{"Infinity", "-Infinity", "Infinity", "NaN", "NaN", "NaN"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseJSON5DuplicateKeysInBigObject(t *testing.T) {
	// Past 16 members the parser switches to a map; the rule must not change.
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "k%d: 1,", i)
	}
	b.WriteString("k1: 2, kZ: 3}")
	v, err := ParseJSON5([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Members) != 41 || v.Members[1].Key != "k1" || v.Get("k1").Num != "2" || v.Members[40].Key != "kZ" {
		t.Errorf("got %d members, k1=%v, second key %q", len(v.Members), v.Get("k1"), v.Members[1].Key)
	}
}

func TestParseJSON5Errors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, `line 1, column 1: expected a value, found end of input`},
		{"only comment", `// nothing`, `line 1, column 11: expected a value, found end of input`},
		{"double comma", `{a: 1,, b: 2}`, `line 1, column 7: expected a property name or '}', found ','`},
		{"missing comma", "{\n  a: 1\n  b: 2\n}", `line 3, column 3: expected ',' or '}' after the property value, found 'b'`},
		{"missing colon", `{a 1}`, `line 1, column 4: expected ':' after the property name, found '1'`},
		{"bad key", `{-a: 1}`, `line 1, column 2: expected a property name or '}', found '-'`},
		{"digit key", `{1: 1}`, `line 1, column 2: expected a property name or '}', found '1'`},
		{"unclosed array", `[1, 2`, `line 1, column 6: expected ',' or ']' after the array element, found end of input`},
		{"unclosed object", "{a: 1,\n", `line 2, column 1: expected a property name or '}', found end of input`},
		{"array double comma", `[1,,2]`, `line 1, column 4: expected a value, found ','`},
		{"unclosed string", `"abc`, `line 1, column 5: expected a closing " for the string that starts at line 1, column 1, found end of input`},
		{"newline in string", "'a\nb'", `line 1, column 3: expected a closing ' before the end of the line (use \n for a line break)`},
		{"unclosed block comment", "{}\n/* x", `line 2, column 5: expected '*/' to close the comment opened at line 2, column 1, found end of input`},
		{"lone slash", `{} /`, `line 1, column 5: expected '/' or '*' to start a comment, found end of input`},
		{"slash not comment", `[/x]`, `line 1, column 3: expected '/' or '*' to start a comment, found 'x'`},
		{"leading zero", `01`, `line 1, column 2: expected no digits after a leading 0 (leading zeros are not allowed)`},
		{"empty hex", `0x`, `line 1, column 3: expected a hex digit after 0x, found end of input`},
		{"number then letter", `1a`, `line 1, column 2: expected a separator after the value, found 'a'`},
		{"hex then letter", `0x1g`, `line 1, column 4: expected a separator after the value, found 'g'`},
		{"lone dot", `.`, `line 1, column 2: expected a digit after '.', found end of input`},
		{"sign only", `-`, `line 1, column 2: expected a number, found end of input`},
		{"bad exponent", `1e`, `line 1, column 3: expected a digit in the exponent, found end of input`},
		{"Infinity prefix", `Infinit`, `line 1, column 1: expected a number, found 'I'`},
		{"Infinity suffix", `Infinityx`, `line 1, column 9: expected a separator after the value, found 'x'`},
		{"bad literal", `tru`, `line 1, column 1: expected a value (true, false, null, a number, a string, an array or an object), found "tru"`},
		{"literal suffix", `nullé`, `line 1, column 5: expected a separator after the value, found 'é'`},
		{"short \\x", `'\x4'`, `line 1, column 5: expected 2 hex digits after \x, found '\''`},
		{"short \\u", `'\u12'`, `line 1, column 6: expected 4 hex digits after \u, found '\''`},
		{"octal escape", `'\1'`, `line 1, column 3: expected an escape sequence, found '1' (octal escapes are not allowed)`},
		{"\\0 then digit", `'\01'`, `line 1, column 3: expected no digit after \0 (octal escapes are not allowed)`},
		{"escape at end", `'\`, `line 1, column 3: expected an escape sequence after '\', found end of input`},
		{"bad identifier escape", `{\u0031a: 1}`, `line 1, column 2: expected an identifier character, found escaped '1'`},
		{"backslash in key", `{a\x: 1}`, `line 1, column 4: expected 'u' after '\' in a property name, found 'x'`},
		{"trailing garbage", `{} x`, `line 1, column 4: expected end of input after the value, found 'x'`},
		{"two values", `1 2`, `line 1, column 3: expected end of input after the value, found '2'`},
		{"columns count characters", `"é日" x`, `line 1, column 6: expected end of input after the value, found 'x'`},
		{"CRLF counts one line", "{\r\n\r\n-", `line 3, column 1: expected a property name or '}', found '-'`},
		{"invalid UTF-8", "{a: '\xff'}", `line 1, column 6: expected UTF-8 text, found byte 0xff`},
		{"too deep", strings.Repeat("[", MaxDepth+1), `line 1, column 513: expected at most 512 levels of nesting`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ParseJSON5([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseJSON5(%q) = %s, want error", tt.in, compact(t, v))
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("ParseJSON5(%q) error (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseJSON5Depth(t *testing.T) {
	in := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := ParseJSON5([]byte(in)); err != nil {
		t.Errorf("%d levels: %v", MaxDepth, err)
	}
	in = strings.Repeat("{a:", MaxDepth) + "1" + strings.Repeat("}", MaxDepth)
	if _, err := ParseJSON5([]byte(in)); err != nil {
		t.Errorf("%d object levels: %v", MaxDepth, err)
	}
}

func TestFromJSONIsStrict(t *testing.T) {
	ok := []string{`{"a":[1,-0.5e3,"x\u00e9\/"],"b":null}`, ` [] `, `"s"`}
	for _, in := range ok {
		if _, err := FromJSON([]byte(in)); err != nil {
			t.Errorf("FromJSON(%q): %v", in, err)
		}
	}
	bad := map[string]string{
		"comment":        `{"a":1 /* x */}`,
		"trailing comma": `[1,]`,
		"object comma":   `{"a":1,}`,
		"single quotes":  `'a'`,
		"unquoted key":   `{a:1}`,
		"hex":            `0x10`,
		"plus":           `+1`,
		"leading dot":    `.5`,
		"trailing dot":   `5.`,
		"Infinity":       `Infinity`,
		"NaN":            `NaN`,
		"control char":   "\"a\tb\"",
		"json5 escape":   `"\x41"`,
		"BOM":            "\ufeff{}",
		"nbsp":           "\u00a0{}",
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if v, err := FromJSON([]byte(in)); err == nil {
				t.Errorf("FromJSON(%q) = %s, want error", in, compact(t, v))
			}
		})
	}
}
