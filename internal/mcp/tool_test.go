package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"talon/internal/tools"
)

func TestToolName(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"echo", "echo", true},
		{"get-sum", "get_sum", true},
		{"Greet.User", "greet_user", true},
		{"read file", "read_file", true},
		{"a/b:c", "a_b_c", true},
		{"héllo", "h_llo", true},
		{"x" + strings.Repeat("y", 63), "x" + strings.Repeat("y", 63), true},
		{"x" + strings.Repeat("y", 64), "", false}, // 65 characters
		{"1password", "", false},
		{"_private", "", false},
		{"-dash", "", false},
		{"", "", false},
		{"ünicode", "", false},
	}
	for _, c := range cases {
		got, err := ToolName(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ToolName(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestAcceptSchema(t *testing.T) {
	cases := []struct {
		name, schema, err string
	}{
		{"flat object", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, ""},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number"}},"additionalProperties":false}`, ""},
		{"nested with local ref", `{"type":"object","$defs":{"p":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/p"}}}`, ""},
		{"not an object", `["type","object"]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"no type", `{"properties":{}}`, `type must be "object" (got none)`},
		{"string type", `{"type":"string"}`, `type must be "object" (got "string")`},
		{"type list", `{"type":["object","null"]}`, `type must be "object"`},
		{"bad pattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, "compiling input schema"},
		{"bad keyword value", `{"type":"object","properties":{"a":{"minimum":"x"}}}`, "checking input schema"},
		{"unknown type", `{"type":"object","properties":{"a":{"type":"nonsense"}}}`, `input schema.Properties.a: unknown type "nonsense"`},
		{"unknown type deep", `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"type":"strin"}]}}}}`, `unknown type "strin"`},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "not a local JSON pointer"},
		{"anchor ref", `{"type":"object","properties":{"a":{"$ref":"#node"}}}`, "not a local JSON pointer"},
		{"dangling ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`, `no member "$defs"`},
		{"self ref", `{"type":"object","properties":{"a":{"$ref":"#/properties/a"}}}`, "part of a cycle"},
		{"self ref spelled in another case", `{"type":"object","properties":{"a":{"$rEf":"#/properties/a"}}}`, "part of a cycle"},
		{"dynamic ref in another case", `{"type":"object","properties":{"a":{"$DYNAMICREF":"#x"}}}`, "is not supported"},
		{"root ref in allOf", `{"type":"object","allOf":[{"$ref":"#"}]}`, "part of a cycle"},
		{"mutual refs", `{"type":"object","$defs":{"x":{"$ref":"#/$defs/y"},"y":{"anyOf":[{"$ref":"#/$defs/x"}]}},"properties":{"p":{"$ref":"#/$defs/x"}}}`, "part of a cycle"},
		{"escaped pointer", `{"type":"object","$defs":{"a/b":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/a~1b"}}}`, ""},
		{"nested $id", `{"type":"object","properties":{"a":{"$id":"http://x/y","type":"string"}}}`, "$id below the root"},
		{"ref fan-out", fanOut(20), "more than 10000 subschemas"},
		{"too big", `{"type":"object","description":"` + strings.Repeat("x", maxSchemaBytes) + `"}`, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := AcceptSchema(json.RawMessage(c.schema))
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
		})
	}
}

// fanOut is a schema of n definitions each referring twice to the next:
// small, but 2^n subschemas when expanded.
func fanOut(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"p":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, n)
	return b.String()
}

// TestAdapt checks which listed tools become Talon tools.
func TestAdapt(t *testing.T) {
	obj := map[string]any{"type": "object"}
	list := []*sdk.Tool{
		{Name: "Read-File", Description: "reads", InputSchema: obj},
		{Name: "read_file", Description: "collides", InputSchema: obj},
		{Name: "9lives", InputSchema: obj},
		{Name: "bad_schema", InputSchema: map[string]any{"type": "array"}},
		{Name: "untitled", InputSchema: obj},
		{Name: "titled", Title: "A title", InputSchema: obj},
		{Name: "wordy", Description: strings.Repeat("é", maxDescription), InputSchema: obj},
		nil,
	}
	got := NewManager(nil).adapt("srv", list)
	want := map[string]string{
		"read_file": "reads",
		"untitled":  `Tool "untitled" of MCP server "srv" (the server gives no description).`,
		"titled":    "A title",
		"wordy":     strings.Repeat("é", maxDescription/2) + " […]",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d tools (%v), want %v", len(got), names(got), want)
	}
	for _, tl := range got {
		if want[tl.Name()] != tl.Description() {
			t.Errorf("%s: description %q, want %q", tl.Name(), tl.Description(), want[tl.Name()])
		}
	}
}

func TestRender(t *testing.T) {
	size := int64(5)
	cases := []struct {
		name string
		res  *sdk.CallToolResult
		want tools.Result
	}{
		{"texts joined", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, tools.Result{Text: "a\nb"}},
		{"image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)}}}, tools.Result{Text: "[image image/png, 1234 bytes]"}},
		{"audio without type", &sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{Data: []byte{1, 2}}}}, tools.Result{Text: "[audio of unknown type, 2 bytes]"}},
		{"link", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///x", MIMEType: "text/plain", Size: &size}}}, tools.Result{Text: "[resource link file:///x (text/plain)]"}},
		{"embedded text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://a", Text: "body"}}}}, tools.Result{Text: "[resource mem://a]\nbody"}},
		{"embedded blob", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://b", MIMEType: "application/zip", Blob: []byte("zip")}}}}, tools.Result{Text: "[resource mem://b (application/zip), 3 bytes]"}},
		{"structured only", &sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}, tools.Result{Text: `{"n":1}`}},
		{"error", &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "boom"}}}, tools.Result{Text: "boom", IsError: true}},
		{"error without text", &sdk.CallToolResult{IsError: true}, tools.Result{Text: "the tool reported an error without a message", IsError: true}},
	}
	for _, c := range cases {
		if got := render(c.res); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	big := render(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", maxResultBytes+10)}}})
	if !strings.HasSuffix(big.Text, "[output truncated: 524298 bytes, shown 524288]") {
		t.Errorf("big result not truncated: ...%s", big.Text[len(big.Text)-60:])
	}
}

func TestBackoff(t *testing.T) {
	want := map[int]time.Duration{0: 0, 1: 0, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 8: 2 * time.Minute, 1000: 2 * time.Minute}
	for n, d := range want {
		if got := backoff(n); got != d {
			t.Errorf("backoff(%d) = %s, want %s", n, got, d)
		}
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("ANTHROPIC_API_KEY", "secret")
	env, err := childEnv(map[string]string{"TOKEN": "for-the-server", "PATH": "/opt/bin"})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "ANTHROPIC") || !strings.Contains(joined, "PATH=/opt/bin") || !strings.Contains(joined, "TOKEN=for-the-server") {
		t.Fatalf("env %q", env)
	}
	for _, bad := range []map[string]string{{"A=B": "x"}, {"": "x"}, {"A": "x\x00y"}} {
		if _, err := childEnv(bad); err == nil {
			t.Errorf("childEnv(%q) accepted", bad)
		}
	}
}

func TestStderrBounded(t *testing.T) {
	s := newStderrLog(NewManager(nil).log, "srv")
	for i := range maxStderrLines + 50 {
		if _, err := s.Write([]byte("line " + strings.Repeat("x", i%3) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	s.Write([]byte(strings.Repeat("y", 3*maxStderrLine) + "\nlast"))
	s.flush()
	if s.logged != maxStderrLines || s.dropped != 50+3+1 {
		t.Fatalf("logged %d, dropped %d", s.logged, s.dropped)
	}
	if tail := s.tailText(); !strings.HasSuffix(tail, " | last") || strings.Count(tail, " | ") != stderrTail-1 {
		t.Fatalf("tail %q", tail)
	}
}
