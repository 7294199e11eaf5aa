package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestObject(t *testing.T) {
	got := Object(
		Prop{Name: "path", Type: TypeString, Description: "File path.", Required: true},
		Prop{Name: "mode", Type: TypeString, Description: "How.", Enum: []string{"a", "b"}},
		Prop{Name: "limit", Type: TypeInteger, Description: "Max lines."},
		Prop{Name: "all", Type: TypeBoolean, Description: "Every one."},
		Prop{Name: "tags", Type: TypeArray, Description: "Labels."},
		Prop{Name: "ids", Type: TypeArray, Items: TypeInteger, Description: "Numbers.", Required: true},
		Prop{Name: "env", Type: TypeObject, Description: "Variables."},
	)
	want := `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"File path."},` +
		`"mode":{"type":"string","enum":["a","b"],"description":"How."},` +
		`"limit":{"type":"integer","description":"Max lines."},` +
		`"all":{"type":"boolean","description":"Every one."},` +
		`"tags":{"type":"array","items":{"type":"string"},"description":"Labels."},` +
		`"ids":{"type":"array","items":{"type":"integer"},"description":"Numbers."},` +
		`"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Variables."}},` +
		`"required":["path","ids"],"additionalProperties":false}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Object (-want +got):\n%s", diff)
	}
	if !json.Valid(got) {
		t.Error("Object produced invalid JSON")
	}
	if diff := cmp.Diff([]string{"path", "mode", "limit", "all", "tags", "ids", "env"}, PropertyNames(got)); diff != "" {
		t.Errorf("PropertyNames (-want +got):\n%s", diff)
	}
}

func TestObjectNoProps(t *testing.T) {
	got := string(Object())
	if want := `{"type":"object","properties":{},"additionalProperties":false}`; got != want {
		t.Errorf("Object() = %s, want %s", got, want)
	}
	if err := LintSchema(json.RawMessage(got)); err != nil {
		t.Errorf("LintSchema(Object()) = %v", err)
	}
}

func TestObjectPanics(t *testing.T) {
	tests := []struct {
		name  string
		props []Prop
	}{
		{"no description", []Prop{{Name: "a", Type: TypeString}}},
		{"no name", []Prop{{Type: TypeString, Description: "x"}}},
		{"duplicate", []Prop{{Name: "a", Type: TypeString, Description: "x"}, {Name: "a", Type: TypeString, Description: "y"}}},
		{"unknown type", []Prop{{Name: "a", Type: "float", Description: "x"}}},
		{"bad map values", []Prop{{Name: "a", Type: TypeObject, Description: "x", Items: TypeArray}}},
		{"enum on integer", []Prop{{Name: "a", Type: TypeInteger, Description: "x", Enum: []string{"1"}}}},
		{"items on string", []Prop{{Name: "a", Type: TypeString, Description: "x", Items: TypeString}}},
		{"bad items", []Prop{{Name: "a", Type: TypeArray, Description: "x", Items: "object"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Object did not panic")
				}
			}()
			Object(tt.props...)
		})
	}
}

// TestSchemaLint is the lint of the conventions: every schema Object builds
// describes every property and has no unions.
func TestSchemaLint(t *testing.T) {
	built := []json.RawMessage{
		Object(Prop{Name: "path", Type: TypeString, Description: "p", Required: true}),
		Object(
			Prop{Name: "action", Type: TypeString, Description: "What to do.", Enum: []string{"start", "stop"}, Required: true},
			Prop{Name: "n", Type: TypeInteger, Description: "How many."},
			Prop{Name: "dry", Type: TypeBoolean, Description: "Only show."},
			Prop{Name: "names", Type: TypeArray, Description: "Which.", Items: TypeBoolean},
			Prop{Name: "not", Type: TypeString, Description: "A property named like a keyword."},
			Prop{Name: "vars", Type: TypeObject, Description: "A map.", Items: TypeInteger},
		),
	}
	for i, s := range built {
		if err := LintSchema(s); err != nil {
			t.Errorf("built schema %d: %v", i, err)
		}
		assertEveryPropertyDescribed(t, s)
	}

	bad := []struct {
		name, schema, want string
	}{
		{"not an object", `[]`, "schema is not a JSON object"},
		{"not type object", `{"type":"string","additionalProperties":false}`, `schema type must be "object"`},
		{"open", `{"type":"object","properties":{}}`, "schema must set additionalProperties to false"},
		{"no description", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `property "a" has no description`},
		{"empty description", `{"type":"object","properties":{"a":{"type":"string","description":""}},"additionalProperties":false}`, `property "a" has no description`},
		{"anyOf", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}],"description":"x"}},"additionalProperties":false}`, `schema.properties.a uses "anyOf"`},
		{"top oneOf", `{"type":"object","oneOf":[],"additionalProperties":false}`, `schema uses "oneOf"`},
		{"type list", `{"type":"object","properties":{"a":{"type":["string","null"],"description":"x"}},"additionalProperties":false}`, `schema.properties.a has a list of types`},
		{"nested object", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string","description":"y"}},"additionalProperties":{"type":"string"},"description":"x"}},"additionalProperties":false}`, `property "a": an object property must be a map`},
		{"open object", `{"type":"object","properties":{"a":{"type":"object","description":"x"}},"additionalProperties":false}`, `property "a": an object property must be a map`},
		{"map of objects", `{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"type":"object"},"description":"x"}},"additionalProperties":false}`, `property "a": an object property must be a map`},
		{"union in map", `{"type":"object","properties":{"a":{"type":"object","additionalProperties":{"anyOf":[]},"description":"x"}},"additionalProperties":false}`, `schema.properties.a.additionalProperties uses "anyOf"`},
		{"array type", `{"type":"object","properties":{"a":{"type":"null","description":"x"}},"additionalProperties":false}`, `property "a" has type "null"`},
		{"ref", `{"type":"object","properties":{"a":{"$ref":"#/x","description":"x"}},"additionalProperties":false}`, `uses "$ref"`},
		{"union in items", `{"type":"object","properties":{"a":{"type":"array","items":{"oneOf":[]},"description":"x"}},"additionalProperties":false}`, `schema.properties.a.items uses "oneOf"`},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array","description":"x"}},"additionalProperties":false}`, `property "a": array needs an items schema`},
		{"numeric enum", `{"type":"object","properties":{"a":{"type":"string","enum":[1,2],"description":"x"}},"additionalProperties":false}`, `property "a": enum must be a non-empty list of strings`},
		{"required undeclared", `{"type":"object","properties":{},"required":["a"],"additionalProperties":false}`, `required property "a" is not declared`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			err := LintSchema(json.RawMessage(tt.schema))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LintSchema = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// assertEveryPropertyDescribed re-checks, independently of LintSchema, the
// two rules the seed insists on.
func assertEveryPropertyDescribed(t *testing.T, schema json.RawMessage) {
	t.Helper()
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	for name, p := range s.Properties {
		if d, _ := p["description"].(string); d == "" {
			t.Errorf("property %q has no description", name)
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			if _, ok := p[k]; ok {
				t.Errorf("property %q uses %s", name, k)
			}
		}
		if _, ok := p["type"].(string); !ok {
			t.Errorf("property %q has no single type", name)
		}
	}
}

func TestPropertyNames(t *testing.T) {
	tests := []struct {
		schema string
		want   []string
	}{
		{`{"properties":{"b":{},"a":{"properties":{"z":{}}}}}`, []string{"b", "a"}},
		{`{"type":"object"}`, nil},
		{`nope`, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, PropertyNames(json.RawMessage(tt.schema))); diff != "" {
			t.Errorf("PropertyNames(%s) (-want +got):\n%s", tt.schema, diff)
		}
	}
}
