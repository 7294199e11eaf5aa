package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Property types a Prop may have.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeArray   = "array"
	// TypeObject is a map: an object whose keys are free and whose values
	// all have one scalar type (Items, string by default), such as a set
	// of environment variables. Objects with declared properties would
	// make the schema nested; there are none.
	TypeObject = "object"
)

// Prop is one property of a tool's argument object.
type Prop struct {
	Name        string
	Type        string // TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray or TypeObject
	Description string
	Required    bool
	Enum        []string // allowed values; only for TypeString
	Items       string   // element type of a TypeArray, value type of a TypeObject: TypeString (the default), TypeInteger or TypeBoolean
}

// Object builds the JSON Schema of a flat argument object: the properties
// in the order given, each with its type and description, the required
// ones listed, and additionalProperties false. It panics on a property
// without a name or description, with an unknown type, a duplicate name,
// an enum on a non-string or items on a non-array: schemas are built once
// from literals, so these are programming errors, like a bad regexp.
func Object(props ...Prop) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	seen := map[string]bool{}
	for i, p := range props {
		if p.Name == "" || seen[p.Name] {
			panic(fmt.Sprintf("tools.Object: property %d: empty or duplicate name %q", i, p.Name))
		}
		seen[p.Name] = true
		if p.Description == "" {
			panic(fmt.Sprintf("tools.Object: property %q has no description", p.Name))
		}
		switch p.Type {
		case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray, TypeObject:
		default:
			panic(fmt.Sprintf("tools.Object: property %q has unknown type %q", p.Name, p.Type))
		}
		if len(p.Enum) > 0 && p.Type != TypeString {
			panic(fmt.Sprintf("tools.Object: property %q: enum needs type string", p.Name))
		}
		if p.Items != "" && p.Type != TypeArray && p.Type != TypeObject {
			panic(fmt.Sprintf("tools.Object: property %q: items needs type array or object", p.Name))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, p.Name)
		b.WriteString(`:{"type":`)
		writeJSON(&b, p.Type)
		if p.Type == TypeArray || p.Type == TypeObject {
			items := p.Items
			if items == "" {
				items = TypeString
			}
			switch items {
			case TypeString, TypeInteger, TypeBoolean:
			default:
				panic(fmt.Sprintf("tools.Object: property %q has unknown items type %q", p.Name, items))
			}
			if p.Type == TypeArray {
				b.WriteString(`,"items":{"type":`)
			} else {
				b.WriteString(`,"additionalProperties":{"type":`)
			}
			writeJSON(&b, items)
			b.WriteByte('}')
		}
		if len(p.Enum) > 0 {
			b.WriteString(`,"enum":`)
			writeJSON(&b, p.Enum)
		}
		b.WriteString(`,"description":`)
		writeJSON(&b, p.Description)
		b.WriteByte('}')
		if p.Required {
			required = append(required, p.Name)
		}
	}
	b.WriteByte('}')
	if len(required) > 0 {
		b.WriteString(`,"required":`)
		writeJSON(&b, required)
	}
	b.WriteString(`,"additionalProperties":false}`)
	return json.RawMessage(b.Bytes())
}

func writeJSON(b *bytes.Buffer, v any) {
	enc, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and string slices always encode
	}
	b.Write(enc)
}

// PropertyNames returns the names of the top-level properties of a JSON
// Schema object in document order, or nil if it has none.
func PropertyNames(schema json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil {
		return nil
	}
	props, ok := top["properties"]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return names
		}
		name, _ := tok.(string)
		names = append(names, name)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return names
		}
	}
	return names
}

// LintSchema checks a tool schema against Talon's conventions: a flat
// object whose every property has a single scalar type (or is an array of
// scalars, or a map of scalars: an object with only additionalProperties
// of one scalar type), a description, string-only enums, no unions (anyOf, oneOf,
// allOf, not, type lists) or references, required names that exist, and
// additionalProperties false. Schemas built with Object pass; the check is
// for tests of hand-written and generated schemas.
func LintSchema(schema json.RawMessage) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil {
		return fmt.Errorf("schema is not a JSON object: %w", err)
	}
	if err := noUnions("", top); err != nil {
		return err
	}
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil || typ != "object" {
		return errors.New(`schema type must be "object"`)
	}
	if string(bytes.TrimSpace(top["additionalProperties"])) != "false" {
		return errors.New("schema must set additionalProperties to false")
	}
	var props map[string]map[string]json.RawMessage
	if raw, ok := top["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return fmt.Errorf("schema properties must be an object of objects: %w", err)
		}
	}
	for _, name := range PropertyNames(schema) {
		p := props[name]
		var desc string
		if json.Unmarshal(p["description"], &desc) != nil || desc == "" {
			return fmt.Errorf("property %q has no description", name)
		}
		var pt string
		if json.Unmarshal(p["type"], &pt) != nil {
			return fmt.Errorf("property %q must have a single type", name)
		}
		switch pt {
		case "string", "integer", "number", "boolean":
		case "array":
			var items map[string]json.RawMessage
			if json.Unmarshal(p["items"], &items) != nil {
				return fmt.Errorf("property %q: array needs an items schema", name)
			}
			var it string
			if json.Unmarshal(items["type"], &it) != nil || !slices.Contains([]string{"string", "integer", "number", "boolean"}, it) {
				return fmt.Errorf("property %q: array items must have one scalar type", name)
			}
		case "object":
			// Only a map: no declared properties, values of one scalar type.
			var values map[string]json.RawMessage
			var vt string
			_, props := p["properties"]
			_, pattern := p["patternProperties"]
			if props || pattern || json.Unmarshal(p["additionalProperties"], &values) != nil ||
				json.Unmarshal(values["type"], &vt) != nil || !slices.Contains([]string{"string", "integer", "number", "boolean"}, vt) {
				return fmt.Errorf("property %q: an object property must be a map: no properties, additionalProperties of one scalar type", name)
			}
		default:
			return fmt.Errorf("property %q has type %q; schemas are flat (string, integer, number, boolean, or an array or map of those)", name, pt)
		}
		if raw, ok := p["enum"]; ok {
			var vals []string
			if json.Unmarshal(raw, &vals) != nil || len(vals) == 0 {
				return fmt.Errorf("property %q: enum must be a non-empty list of strings", name)
			}
			if pt != "string" {
				return fmt.Errorf("property %q: enum needs type string", name)
			}
		}
	}
	if raw, ok := top["required"]; ok {
		var req []string
		if err := json.Unmarshal(raw, &req); err != nil {
			return fmt.Errorf("schema required must be a list of names: %w", err)
		}
		for _, r := range req {
			if _, ok := props[r]; !ok {
				return fmt.Errorf("required property %q is not declared", r)
			}
		}
	}
	return nil
}

// noUnions checks one decoded schema, and the schemas nested in it, for
// union and reference keywords.
func noUnions(at string, obj map[string]json.RawMessage) error {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raw := obj[k]
		switch k {
		case "anyOf", "oneOf", "allOf", "not", "$ref", "if", "then", "else":
			return fmt.Errorf("schema%s uses %q; use a flat object with string enums instead", at, k)
		case "type":
			if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
				return fmt.Errorf("schema%s has a list of types; use one type", at)
			}
		case "items", "additionalProperties":
			var child map[string]json.RawMessage
			if json.Unmarshal(raw, &child) == nil {
				if err := noUnions(at+"."+k, child); err != nil {
					return err
				}
			}
		case "properties", "$defs", "definitions":
			var children map[string]map[string]json.RawMessage
			if json.Unmarshal(raw, &children) == nil {
				names := make([]string, 0, len(children))
				for n := range children {
					names = append(names, n)
				}
				slices.Sort(names)
				for _, n := range names {
					if err := noUnions(at+"."+k+"."+n, children[n]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
