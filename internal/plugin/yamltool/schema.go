package yamltool

import "encoding/json"

// schemaProp is one property of the argument schema; field order is the
// order the model sees.
type schemaProp struct {
	Type        string   `json:"type"`
	Enum        []string `json:"enum,omitempty"`
	Default     any      `json:"default,omitempty"`
	Description string   `json:"description"`
}

// Schema returns the JSON Schema of the tool's argument object, in the
// shape of internal/tools.Object (flat properties in file order, each
// with its type and description, enums for strings, the required list,
// additionalProperties false) plus each default. tools.Object has no
// "number" type, which YAML tools have, so the object is built here.
func (t *Tool) Schema() json.RawMessage {
	props := []byte{'{'}
	var required []string
	for i, p := range t.params {
		if i > 0 {
			props = append(props, ',')
		}
		props = append(props, mustJSON(p.Name)...)
		props = append(props, ':')
		enc, err := json.Marshal(schemaProp{p.Type, p.Enum, p.Default, p.Description})
		if err != nil {
			panic(err) // strings, string slices and canonical defaults always encode
		}
		props = append(props, enc...)
		if p.Required {
			required = append(required, p.Name)
		}
	}
	props = append(props, '}')
	enc, err := json.Marshal(struct {
		Type                 string          `json:"type"`
		Properties           json.RawMessage `json:"properties"`
		Required             []string        `json:"required,omitempty"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}{"object", props, required, false})
	if err != nil {
		panic(err) // props is valid JSON built above
	}
	return enc
}
