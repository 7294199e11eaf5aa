package config

import (
	"errors"
	"fmt"
	"strings"
)

// The offline model: InspectModel is its id, InspectProvider the provider
// it is listed under; "inspect" and "talon/inspect" both name it.
const (
	InspectProvider = "talon"
	InspectModel    = "inspect"
)

// InspectRef is the offline model's reference.
var InspectRef = ModelRef{Provider: InspectProvider, Model: InspectModel}

// ModelRef is a model reference: a provider (a built-in one or a key of
// models.providers) and the id that provider knows the model by.
type ModelRef struct{ Provider, Model string }

// String is the reference as written: provider/model, or the model alone
// when it has no provider.
func (m ModelRef) String() string {
	if m.Provider == "" {
		return m.Model
	}
	return m.Provider + "/" + m.Model
}

// IsInspect reports whether m is the offline model.
func (m ModelRef) IsInspect() bool { return m == InspectRef }

// The errors of ParseModelRef.
var (
	ErrNoModel   = errors.New("no model given")
	ErrEmptyPart = errors.New("empty provider or model")
)

// ParseModelRef reads one model reference, trimmed:
//
//   - "inspect" and "talon/inspect", in any case, are InspectRef. OpenClaw
//     matches its own keyword references case-insensitively (its
//     "openrouter:auto") and lower-cases provider ids, so "Inspect" is the
//     offline model wherever a reference is read, not only in one place.
//   - "provider/model" splits at the first slash, so the model id keeps
//     its own ("openrouter/google/gemini-3-flash" is provider openrouter,
//     model google/gemini-3-flash). Both parts are kept as written: a
//     provider is looked up by its exact key.
//   - A bare model id (no slash) has no provider: Provider is "" and the
//     caller decides (the provider resolver refuses it; sessions.patch
//     gives it the agent's provider).
//
// It fails with ErrNoModel for an empty reference and ErrEmptyPart for
// "/model" or "provider/".
func ParseModelRef(s string) (ModelRef, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return ModelRef{}, ErrNoModel
	}
	if strings.EqualFold(s, InspectModel) || strings.EqualFold(s, InspectProvider+"/"+InspectModel) {
		return InspectRef, nil
	}
	p, m, ok := strings.Cut(s, "/")
	if !ok {
		return ModelRef{Model: s}, nil
	}
	if p == "" || m == "" {
		return ModelRef{}, fmt.Errorf("model reference %q: %w", s, ErrEmptyPart)
	}
	return ModelRef{Provider: p, Model: m}, nil
}

// ModelPrimary is the primary reference of a model setting, trimmed: the
// string, or the object's "primary"; "" when the setting names none. It
// is lenient where ModelRefs is strict, as OpenClaw's
// resolvePrimaryStringValue is: a run needs its primary only, and a
// malformed fallbacks list does not take it away.
func ModelPrimary(raw *Raw) string {
	if raw == nil || raw.Value == nil {
		return ""
	}
	v := raw.Value
	if v.Kind == Object {
		v = v.Get("primary")
	}
	if v == nil || v.Kind != String {
		return ""
	}
	return strings.TrimSpace(v.Str)
}

// ModelRefs reads a model setting in OpenClaw's two shapes: a model
// reference ("openai/gpt-4o"), or {primary, fallbacks} with fallbacks a
// list of references, tried in order after the primary. Absent (nil or
// null) gives no references; any other shape is an error, so a typo is
// reported rather than silently ignored.
func ModelRefs(raw *Raw) ([]string, error) {
	if raw == nil || raw.Value == nil || raw.Kind == Null {
		return nil, nil
	}
	primary := ModelPrimary(raw)
	switch raw.Kind {
	case String:
		if primary == "" {
			return nil, errors.New("expected a model reference, got an empty string")
		}
		return []string{primary}, nil
	case Object:
		if primary == "" {
			return nil, errors.New(`expected "primary" to be a model reference`)
		}
		refs := []string{primary}
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

// ModelFallbacks reads the fallbacks of a model setting: set says the
// setting is an object with a "fallbacks" list, an empty one included
// (which turns fallbacks off: OpenClaw's strict `fallbacks: []`). A
// string, an object without the key, and absent settings have none and
// are not set. It does not need a primary: an agent's `model:
// {fallbacks}` keeps the shared primary and replaces its fallbacks.
func ModelFallbacks(raw *Raw) (refs []string, set bool, err error) {
	if raw == nil || raw.Value == nil || raw.Kind != Object {
		return nil, false, nil
	}
	f := raw.Get("fallbacks")
	if f == nil || f.Kind == Null {
		return nil, false, nil
	}
	if f.Kind != Array {
		return nil, false, fmt.Errorf(`expected "fallbacks" to be a list of model references (got %s)`, f.Kind)
	}
	refs = make([]string, 0, len(f.Items))
	for i, item := range f.Items {
		if item.Kind != String || strings.TrimSpace(item.Str) == "" {
			return nil, false, fmt.Errorf(`expected fallbacks[%d] to be a model reference`, i)
		}
		ref := strings.TrimSpace(item.Str)
		if _, err := ParseModelRef(ref); err != nil {
			return nil, false, fmt.Errorf("fallbacks[%d]: %w", i, err)
		}
		refs = append(refs, ref)
	}
	return refs, true, nil
}
