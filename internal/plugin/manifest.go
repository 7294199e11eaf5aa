package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// ManifestFile names a plugin directory's manifest.
const ManifestFile = "openclaw.plugin.json"

// maxManifest bounds a manifest file: it is metadata, not data.
const maxManifest = 256 << 10

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Manifest is the part of openclaw.plugin.json Talon reads; other keys
// (uiHints, channels, providers, ...) are allowed and ignored.
type Manifest struct {
	ID           string          `json:"id"`
	Kind         string          `json:"kind,omitempty"`
	Name         string          `json:"name,omitempty"`
	Description  string          `json:"description,omitempty"`
	Version      string          `json:"version,omitempty"`
	ConfigSchema json.RawMessage `json:"configSchema"`

	schema *jsonschema.Resolved
}

// ParseManifest decodes and checks a manifest: an id, a string kind when
// present, and a configSchema that is a JSON Schema object.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifest {
		return nil, fmt.Errorf("manifest is %d bytes, more than %d", len(data), maxManifest)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding manifest: %w", err)
	}
	switch {
	case m.ID == "":
		return nil, errors.New(`manifest has no "id"`)
	case !idRE.MatchString(m.ID):
		return nil, fmt.Errorf("manifest id %q: use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)", m.ID)
	case len(bytes.TrimSpace(m.ConfigSchema)) == 0 || string(bytes.TrimSpace(m.ConfigSchema)) == "null":
		return nil, fmt.Errorf(`manifest of %q has no "configSchema" (use {} for a plugin without config)`, m.ID)
	}
	schema, err := compileSchema(m.ConfigSchema)
	if err != nil {
		return nil, fmt.Errorf("configSchema of %q: %w", m.ID, err)
	}
	m.schema = schema
	return &m, nil
}

// compileSchema resolves a JSON Schema object; references must stay inside
// it (no remote loading).
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema object: %w", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// CheckConfig validates plugins.entries.<id>.config against the manifest's
// configSchema; a missing config is validated as {}.
func (m *Manifest) CheckConfig(raw json.RawMessage) error {
	var v any = map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("plugins.entries.%s.config: %w", m.ID, err)
		}
	}
	if err := m.schema.Validate(v); err != nil {
		return fmt.Errorf("plugins.entries.%s.config does not match the plugin's configSchema: %s", m.ID, strings.TrimSpace(err.Error()))
	}
	return nil
}
