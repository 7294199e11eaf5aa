package config

import (
	"errors"
	"fmt"
	"strings"
)

// ModelRefs reads a model setting in OpenClaw's two shapes: a model
// reference ("openai/gpt-4o"), or {primary, fallbacks} with fallbacks a
// list of references, tried in order after the primary. Absent (nil or
// null) gives no references; any other shape is an error, so a typo is
// reported rather than silently ignored.
func ModelRefs(raw *Raw) ([]string, error) {
	if raw == nil || raw.Value == nil || raw.Kind == Null {
		return nil, nil
	}
	switch raw.Kind {
	case String:
		ref := strings.TrimSpace(raw.Str)
		if ref == "" {
			return nil, errors.New("expected a model reference, got an empty string")
		}
		return []string{ref}, nil
	case Object:
		p := raw.Get("primary")
		if p == nil || p.Kind != String || strings.TrimSpace(p.Str) == "" {
			return nil, errors.New(`expected "primary" to be a model reference`)
		}
		refs := []string{strings.TrimSpace(p.Str)}
		if f := raw.Get("fallbacks"); f != nil && f.Kind != Null {
			if f.Kind != Array {
				return nil, fmt.Errorf(`expected "fallbacks" to be a list of model references (got %s)`, f.Kind)
			}
			for i, item := range f.Items {
				if item.Kind != String || strings.TrimSpace(item.Str) == "" {
					return nil, fmt.Errorf(`expected fallbacks[%d] to be a model reference`, i)
				}
				refs = append(refs, strings.TrimSpace(item.Str))
			}
		}
		return refs, nil
	}
	return nil, fmt.Errorf("expected a model reference or {primary, fallbacks} (got %s)", raw.Kind)
}
