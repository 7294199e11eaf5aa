package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// number returns the number argument name of raw, which tools.ParseArgsFor
// has already accepted, within [lo, hi], and whether it was given; 0 and
// false when it is absent or null.
// tools.Args has integers only; this follows its rules for them: a JSON
// string holding the object, and a numeric string, are accepted.
func number(raw json.RawMessage, name string, lo, hi float64) (float64, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = []byte(strings.TrimSpace(s))
		}
	}
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return 0, false, nil
	}
	v := bytes.TrimSpace(m[name])
	if len(v) == 0 || string(v) == "null" {
		return 0, false, nil
	}
	bad := fmt.Errorf("argument %q must be a number from %g to %g", name, lo, hi)
	text := string(v)
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, false, bad
		}
		text = strings.TrimSpace(s)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, false, bad
	}
	return f, true, nil
}
