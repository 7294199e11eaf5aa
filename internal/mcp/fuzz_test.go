package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"talon/internal/tools"
)

// FuzzToolName: a mapped name is always valid, mapping is idempotent, and
// a name that is valid already maps to itself.
func FuzzToolName(f *testing.F) {
	for _, s := range []string{"echo", "get-sum", "Greet.User", "1x", "_x", "héllo", "", strings.Repeat("a", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := ToolName(name)
		if err != nil {
			return
		}
		if !tools.ValidName(got) {
			t.Fatalf("ToolName(%q) = %q, not a valid name", name, got)
		}
		if again, err := ToolName(got); err != nil || again != got {
			t.Fatalf("ToolName(%q) = %q, %v; not idempotent", got, again, err)
		}
		if tools.ValidName(name) && got != name {
			t.Fatalf("valid name %q mapped to %q", name, got)
		}
	})
}

// FuzzAcceptSchema: any bytes from a server are accepted or rejected
// without a panic; an accepted schema is an object schema, and validating
// arguments against it never panics either.
func FuzzAcceptSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}},"required":["a"]}`, `{"a":"xy"}`)
	f.Add(`{"type":"object","$defs":{"n":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/n"}}}`, `{"n":0}`)
	f.Add(`{"type":"object","additionalProperties":{"type":"array","items":{"type":"number"}}}`, `{"k":[1,"2"]}`)
	f.Add(`{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`, `{"a":1}`)
	f.Add(`{"type":"string"}`, `"x"`)
	f.Add(`[]`, `null`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		rs, err := AcceptSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		var top struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(schema), &top) != nil || top.Type != "object" {
			t.Fatalf("accepted a schema that is not an object schema: %s", schema)
		}
		tl := &tool{name: "fuzz", rs: rs}
		if _, err := tl.checkArgs(json.RawMessage(args)); err != nil && !strings.HasPrefix(err.Error(), "invalid arguments for fuzz: ") {
			t.Fatalf("checkArgs error %q does not say whose arguments", err)
		}
	})
}
