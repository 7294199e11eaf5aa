package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"talon/internal/tools"
)

// maxSchemaBytes bounds an inputSchema: a tool definition goes into every
// model request, and a server sending megabytes of schema is broken.
const maxSchemaBytes = 64 << 10

// ToolName maps an MCP tool name to a Talon tool name: lower case, every
// character outside [a-z0-9_] replaced by '_'. It fails when the result is
// still not a valid tool name (it must start with a letter and be at most
// tools.MaxNameLen long).
func ToolName(name string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if !tools.ValidName(out) {
		return "", fmt.Errorf("mapping tool name %q: %q is not a valid tool name (must start with a letter, at most %d characters)", name, out, tools.MaxNameLen)
	}
	return out, nil
}

// AcceptSchema checks an MCP inputSchema: a JSON object whose type is
// "object", at most 64 KiB, with known type names, only local acyclic
// $refs (checkRefs), that compiles as a JSON Schema (draft 2020-12 or
// draft-07). It returns the compiled schema arguments are validated with.
func AcceptSchema(raw json.RawMessage) (rs *jsonschema.Resolved, err error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("checking input schema: %d bytes, more than %d", len(raw), maxSchemaBytes)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, errors.New("checking input schema: not a JSON object")
	}
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil || typ != "object" {
		return nil, fmt.Errorf("checking input schema: type must be \"object\" (got %s)", orNone(top["type"]))
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("checking input schema: %w", err)
	}
	if err := checkRefs(doc); err != nil {
		return nil, fmt.Errorf("checking input schema: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("checking input schema: %w", err)
	}
	if err := checkTypes(&s, "input schema"); err != nil {
		return nil, fmt.Errorf("checking input schema: %w", err)
	}
	// The schema comes from another program: a panic in the compiler on
	// some odd input must become an error, not take the gateway down.
	defer func() {
		if r := recover(); r != nil {
			rs, err = nil, fmt.Errorf("checking input schema: compiler panic: %v", r)
		}
	}()
	rs, err = s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("compiling input schema: %w", err)
	}
	return rs, nil
}

// jsonTypes are the values the type keyword may take.
var jsonTypes = map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}

// checkTypes rejects an unknown type name anywhere in the schema: the
// compiler accepts one, but a model provider may refuse the whole request
// that carries it. It walks every subschema field by reflection, so no
// keyword that holds schemas is missed.
func checkTypes(s *jsonschema.Schema, at string) error {
	if s == nil {
		return nil
	}
	for _, t := range append([]string{s.Type}, s.Types...) {
		if t != "" && !jsonTypes[t] {
			return fmt.Errorf("%s: unknown type %q", at, t)
		}
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if !v.Type().Field(i).IsExported() {
			continue
		}
		f, name := v.Field(i), v.Type().Field(i).Name
		switch sub := f.Interface().(type) {
		case *jsonschema.Schema:
			if err := checkTypes(sub, at+"."+name); err != nil {
				return err
			}
		case []*jsonschema.Schema:
			for j, x := range sub {
				if err := checkTypes(x, fmt.Sprintf("%s.%s[%d]", at, name, j)); err != nil {
					return err
				}
			}
		case map[string]*jsonschema.Schema:
			for k, x := range sub {
				if err := checkTypes(x, at+"."+name+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func orNone(v json.RawMessage) string {
	if len(v) == 0 {
		return "none"
	}
	return string(v)
}

// tool is one MCP tool as a Talon tool. Calls go through the Manager by
// server name, so a tool held across a config reload reaches the server as
// configured now, or says it is gone.
type tool struct {
	m       *Manager
	server  string
	mcpName string
	name    string
	desc    string
	schema  json.RawMessage
	rs      *jsonschema.Resolved
}

var _ tools.Tool = (*tool)(nil)

func (t *tool) Name() string            { return t.name }
func (t *tool) Description() string     { return t.desc }
func (t *tool) Schema() json.RawMessage { return t.schema }

// Run validates the model's arguments against the tool's schema, then calls
// the tool on its server.
func (t *tool) Run(ctx context.Context, _ *tools.Env, args json.RawMessage) (tools.Result, error) {
	v, err := t.checkArgs(args)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	return t.m.call(ctx, t.server, t.mcpName, v)
}

func (t *tool) checkArgs(args json.RawMessage) (v map[string]any, err error) {
	v = map[string]any{}
	if s := strings.TrimSpace(string(args)); s != "" && s != "null" {
		if err := json.Unmarshal(args, &v); err != nil || v == nil {
			return nil, fmt.Errorf("invalid arguments for %s: expected a JSON object", t.name)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("invalid arguments for %s: validator panic: %v", t.name, r)
		}
	}()
	if err := t.rs.Validate(v); err != nil {
		return nil, fmt.Errorf("invalid arguments for %s: %v", t.name, err)
	}
	return v, nil
}
