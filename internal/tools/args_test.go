package tools

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustArgs(t *testing.T, raw string) Args {
	t.Helper()
	a, err := ParseArgs(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("ParseArgs(%s): %v", raw, err)
	}
	return a
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		raw     string
		wantErr string
		wantLen int
	}{
		{``, "", 0},
		{`   `, "", 0},
		{`null`, "", 0},
		{`{}`, "", 0},
		{` {"path":"a","limit":3} `, "", 2},
		{`"{\"path\":\"a\"}"`, "", 1}, // encoded twice
		{`[]`, "arguments must be a JSON object, got an array", 0},
		{`"hello"`, "arguments must be a JSON object, got a string", 0},
		{`12`, "arguments must be a JSON object, got a number", 0},
		{`true`, "arguments must be a JSON object, got a boolean", 0},
		{`{"path":`, "arguments are not valid JSON (unexpected end of JSON input at byte 8); send a single JSON object", 0},
		{`{"path" "a"}`, "arguments are not valid JSON (invalid character '\"' after object key at byte 9); send a single JSON object", 0},
		{`{"a":1} {"b":2}`, "arguments are not valid JSON (invalid character '{' after top-level value at byte 9); send a single JSON object", 0},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			a, err := ParseArgs(json.RawMessage(tt.raw))
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if err == nil && len(a.m) != tt.wantLen {
				t.Errorf("got %d args, want %d", len(a.m), tt.wantLen)
			}
		})
	}
}

func TestOnly(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		allowed []string
		want    string
	}{
		{"all known", `{"path":"a","limit":1}`, []string{"path", "offset", "limit"}, ""},
		{"one unknown", `{"path":"a","file":"b"}`, []string{"path", "offset", "limit"}, `unknown argument "file"; allowed arguments: path, offset, limit`},
		{"two unknown sorted", `{"z":1,"a":2}`, []string{"path"}, `unknown arguments "a", "z"; allowed arguments: path`},
		{"no arguments allowed", `{"x":1}`, nil, `unknown argument "x"; this tool takes no arguments`},
		{"unknown even when null", `{"x":null}`, []string{"path"}, `unknown argument "x"; allowed arguments: path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustArgs(t, tt.raw).Only(tt.allowed...)
			if diff := cmp.Diff(tt.want, errText(err)); diff != "" {
				t.Errorf("Only (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseArgsFor(t *testing.T) {
	schema := Object(
		Prop{Name: "path", Type: TypeString, Description: "File.", Required: true},
		Prop{Name: "offset", Type: TypeInteger, Description: "Line."},
		Prop{Name: "limit", Type: TypeInteger, Description: "Lines."},
	)
	_, err := ParseArgsFor(json.RawMessage(`{"path":"a","lines":3}`), schema)
	if diff := cmp.Diff(`unknown argument "lines"; allowed arguments: path, offset, limit`, errText(err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseArgsFor(json.RawMessage(`{"path":"a","limit":3}`), schema); err != nil {
		t.Errorf("valid args: %v", err)
	}
	if _, err := ParseArgsFor(json.RawMessage(`[1]`), schema); errText(err) != "arguments must be a JSON object, got an array" {
		t.Errorf("array args: %v", err)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		required bool
		want     string
		wantErr  string
	}{
		{"present", `{"path":"a/b.txt"}`, true, "a/b.txt", ""},
		{"empty counts as present", `{"path":""}`, true, "", ""},
		{"unicode escapes", `{"path":"caf\u00e9"}`, true, "café", ""},
		{"missing required", `{}`, true, "", `missing required argument "path"`},
		{"null required", `{"path":null}`, true, "", `missing required argument "path"`},
		{"missing optional", `{}`, false, "", ""},
		{"number", `{"path":12}`, true, "", `argument "path" must be a string`},
		{"object", `{"path":{"a":1}}`, false, "", `argument "path" must be a string`},
		{"array", `{"path":["a"]}`, false, "", `argument "path" must be a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustArgs(t, tt.raw).String("path", tt.required)
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		required bool
		min, max int
		want     int
		wantErr  string
	}{
		{"in range", `{"limit":5}`, true, 1, 2000, 5, ""},
		{"low bound", `{"limit":1}`, true, 1, 2000, 1, ""},
		{"high bound", `{"limit":2000}`, true, 1, 2000, 2000, ""},
		{"integral float", `{"limit":10.0}`, true, 1, 2000, 10, ""},
		{"exponent", `{"limit":1e3}`, true, 1, 2000, 1000, ""},
		{"numeric string", `{"limit":" 42 "}`, true, 1, 2000, 42, ""},
		{"missing optional", `{}`, false, 1, 2000, 0, ""},
		{"missing required", `{}`, true, 1, 2000, 0, `missing required argument "limit"`},
		{"too big", `{"limit":2001}`, true, 1, 2000, 0, `argument "limit" must be an integer from 1 to 2000`},
		{"zero", `{"limit":0}`, true, 1, 2000, 0, `argument "limit" must be an integer from 1 to 2000`},
		{"fraction", `{"limit":1.5}`, true, 1, 2000, 0, `argument "limit" must be an integer from 1 to 2000`},
		{"word", `{"limit":"ten"}`, true, 1, 2000, 0, `argument "limit" must be an integer from 1 to 2000`},
		{"bool", `{"limit":true}`, true, 1, 2000, 0, `argument "limit" must be an integer from 1 to 2000`},
		{"huge", `{"limit":1e300}`, true, 1, 2000, 0, `argument "limit" must be an integer from 1 to 2000`},
		{"open top", `{"limit":0}`, true, 1, math.MaxInt, 0, `argument "limit" must be an integer of at least 1`},
		{"open bottom", `{"limit":9}`, true, math.MinInt, 3, 0, `argument "limit" must be an integer of at most 3`},
		{"open both", `{"limit":"x"}`, true, math.MinInt, math.MaxInt, 0, `argument "limit" must be an integer`},
		{"negative ok", `{"limit":-7}`, true, math.MinInt, math.MaxInt, -7, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustArgs(t, tt.raw).Int("limit", tt.required, tt.min, tt.max)
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBool(t *testing.T) {
	tests := []struct {
		raw      string
		required bool
		want     bool
		wantErr  string
	}{
		{`{"replace_all":true}`, false, true, ""},
		{`{"replace_all":false}`, true, false, ""},
		{`{"replace_all":"true"}`, false, true, ""},
		{`{}`, false, false, ""},
		{`{"replace_all":null}`, false, false, ""},
		{`{}`, true, false, `missing required argument "replace_all"`},
		{`{"replace_all":1}`, false, false, `argument "replace_all" must be true or false`},
		{`{"replace_all":"yes"}`, false, false, `argument "replace_all" must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := mustArgs(t, tt.raw).Bool("replace_all", tt.required)
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStringEnum(t *testing.T) {
	tests := []struct {
		raw      string
		required bool
		want     string
		wantErr  string
	}{
		{`{"mode":"fast"}`, true, "fast", ""},
		{`{}`, false, "", ""},
		{`{}`, true, "", `missing required argument "mode"`},
		{`{"mode":"FAST"}`, true, "", `argument "mode" must be one of "fast", "slow"`},
		{`{"mode":""}`, false, "", `argument "mode" must be one of "fast", "slow"`},
		{`{"mode":1}`, false, "", `argument "mode" must be one of "fast", "slow"`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := mustArgs(t, tt.raw).StringEnum("mode", tt.required, "fast", "slow")
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStringList(t *testing.T) {
	tests := []struct {
		raw      string
		required bool
		want     []string
		wantErr  string
	}{
		{`{"paths":["a","b"]}`, true, []string{"a", "b"}, ""},
		{`{"paths":[]}`, true, []string{}, ""},
		{`{}`, false, nil, ""},
		{`{}`, true, nil, `missing required argument "paths"`},
		{`{"paths":"a"}`, false, nil, `argument "paths" must be an array of strings`},
		{`{"paths":["a",1]}`, false, nil, `argument "paths" must be an array of strings`},
		{`{"paths":["a",null]}`, false, nil, `argument "paths" must be an array of strings`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := mustArgs(t, tt.raw).StringList("paths", tt.required)
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStringMap(t *testing.T) {
	tests := []struct {
		raw      string
		required bool
		want     map[string]string
		wantErr  string
	}{
		{`{"env":{"A":"1","B":""}}`, true, map[string]string{"A": "1", "B": ""}, ""},
		{`{"env":{}}`, true, map[string]string{}, ""},
		{`{}`, false, nil, ""},
		{`{"env":null}`, false, nil, ""},
		{`{}`, true, nil, `missing required argument "env"`},
		{`{"env":"A=1"}`, false, nil, `argument "env" must be an object whose values are strings`},
		{`{"env":["A"]}`, false, nil, `argument "env" must be an object whose values are strings`},
		{`{"env":{"A":1}}`, false, nil, `argument "env": the value of "A" must be a string`},
		{`{"env":{"A":null}}`, false, nil, `argument "env": the value of "A" must be a string`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := mustArgs(t, tt.raw).StringMap("env", tt.required)
			if diff := cmp.Diff(tt.wantErr, errText(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHas(t *testing.T) {
	a := mustArgs(t, `{"a":1,"b":null}`)
	if !a.Has("a") || a.Has("b") || a.Has("c") {
		t.Errorf("Has: a=%v b=%v c=%v, want true false false", a.Has("a"), a.Has("b"), a.Has("c"))
	}
}

// TestNumber: finite numbers and numeric strings are read; anything else
// is an error naming the argument.
func TestNumber(t *testing.T) {
	cases := []struct {
		raw  string
		want float64
		err  bool
	}{
		{`{"n":2.5}`, 2.5, false}, {`{"n":"0.25"}`, 0.25, false}, {`{"n":null}`, 0, false}, {`{}`, 0, false},
		{`{"n":"x"}`, 0, true}, {`{"n":true}`, 0, true}, {`{"n":"NaN"}`, 0, true}, {`{"n":"Inf"}`, 0, true},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			a, err := ParseArgs(json.RawMessage(c.raw))
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Number("n", false)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("Number = %v, %v; want %v, error %v", got, err, c.want, c.err)
			}
			if err != nil && !strings.Contains(err.Error(), `"n"`) {
				t.Fatalf("error %v does not name the argument", err)
			}
		})
	}
}
