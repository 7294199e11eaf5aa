// Package safeyaml decodes YAML that comes from outside — a tenant's
// API tools, skills and employee templates — with goccy/go-yaml, turning
// a panic of the decoder on hostile input into an error: no input may
// crash the gateway. Safe for concurrent use.
package safeyaml

import (
	"fmt"

	"github.com/goccy/go-yaml"
)

// Unmarshal is yaml.UnmarshalWithOptions that returns an error where the
// decoder would panic (fuzzing found `allowed_hosts: !00 `, an empty
// tagged value decoded into a slice, to crash go-yaml v1.19.2).
func Unmarshal(data []byte, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the YAML decoder failed on this input (%v)", p)
		}
	}()
	return yaml.UnmarshalWithOptions(data, v, opts...)
}
