package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"talon/internal/llm"
)

// MaxNameLen is the longest tool name providers accept (OpenAI allows 64).
const MaxNameLen = 64

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ValidName reports whether name is a valid tool name: lower case letters,
// digits and underscores, starting with a letter, at most MaxNameLen long.
func ValidName(name string) bool {
	return len(name) <= MaxNameLen && nameRE.MatchString(name)
}

// Registry holds a fixed set of tools by name. It is immutable after
// NewRegistry, so all methods are safe for concurrent use.
type Registry struct {
	tools  []Tool
	specs  []llm.ToolSpec
	byName map[string]int
}

// NewRegistry checks and indexes ts. It fails on a nil tool, an invalid or
// duplicate name, or a schema that is not a JSON object.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{
		tools:  make([]Tool, 0, len(ts)),
		specs:  make([]llm.ToolSpec, 0, len(ts)),
		byName: make(map[string]int, len(ts)),
	}
	for i, t := range ts {
		if t == nil {
			return nil, fmt.Errorf("registering tool %d: tool is nil", i)
		}
		name := t.Name()
		if !ValidName(name) {
			return nil, fmt.Errorf("registering tool %d: invalid name %q: names must match %s and be at most %d characters", i, name, nameRE, MaxNameLen)
		}
		if _, dup := r.byName[name]; dup {
			return nil, fmt.Errorf("registering tool %d: duplicate name %q", i, name)
		}
		schema := t.Schema()
		if !isJSONObject(schema) {
			return nil, fmt.Errorf("registering tool %q: schema is not a JSON object", name)
		}
		r.byName[name] = len(r.tools)
		r.tools = append(r.tools, t)
		r.specs = append(r.specs, llm.ToolSpec{
			Name:        name,
			Description: t.Description(),
			Parameters:  schema,
		})
	}
	return r, nil
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	i, ok := r.byName[name]
	if !ok {
		return nil, false
	}
	return r.tools[i], true
}

// All returns every tool in registration order. The slice is a copy.
func (r *Registry) All() []Tool {
	return append([]Tool(nil), r.tools...)
}

// Names returns every tool name in registration order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.tools))
	for i, t := range r.tools {
		out[i] = t.Name()
	}
	return out
}

// Specs returns the definitions of the named tools, in the order given, as
// sent to a model. Names the registry does not hold are skipped, and a name
// given twice yields one spec. The Parameters bytes are shared; callers
// must not modify them.
func (r *Registry) Specs(names []string) []llm.ToolSpec {
	out := make([]llm.ToolSpec, 0, len(names))
	seen := make(map[int]bool, len(names))
	for _, n := range names {
		i, ok := r.byName[n]
		if !ok || seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, r.specs[i])
	}
	return out
}

// Spec returns the definition of t as sent to a model.
func Spec(t Tool) llm.ToolSpec {
	return llm.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()}
}
