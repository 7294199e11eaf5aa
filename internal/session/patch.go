package session

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
)

// MaxLabelLen is the longest label, in UTF-16 code units as OpenClaw
// counts string length.
const MaxLabelLen = 512

// CallerFields are sessions.patch members ApplyPatch leaves to its caller,
// because validating them needs the model catalog: `model` (which sets
// providerOverride/modelOverride) and `thinkingLevel` (whose "xhigh" depends
// on the model). `key` names the session and is not a change.
var CallerFields = []string{"key", "model", "thinkingLevel"}

// Patch is a parsed sessions.patch request: its members by name, values as
// written. An absent member leaves the field untouched; a JSON null clears
// it.
type Patch map[string]json.RawMessage

// ParsePatch parses a sessions.patch object.
func ParsePatch(raw json.RawMessage) (Patch, error) {
	var p Patch
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return nil, invalid("invalid sessions.patch params: must be an object")
	}
	return p, nil
}

// Sets reports whether the patch names a field, with a value or null.
func (p Patch) Sets(field string) bool {
	_, ok := p[field]
	return ok
}

// ApplyPatch parses a sessions.patch object and applies it to the entry of
// the session key (ParsePatch, then Patch.Apply).
func ApplyPatch(key string, e Entry, patch json.RawMessage) (Entry, error) {
	p, err := ParsePatch(patch)
	if err != nil {
		return Entry{}, err
	}
	return p.Apply(key, e)
}

// enumField is a patch field that takes one of a few words.
type enumField struct {
	name  string
	field func(*Entry) *string
	// norm maps an accepted, lower-cased word to the value stored; "" clears.
	norm map[string]string
	msg  string
}

var (
	execHost = enumField{"execHost", func(e *Entry) *string { return &e.ExecHost },
		words("sandbox", "gateway", "node"), `invalid execHost (use "sandbox"|"gateway"|"node")`}
	execSecurity = enumField{"execSecurity", func(e *Entry) *string { return &e.ExecSecurity },
		words("deny", "allowlist", "full"), `invalid execSecurity (use "deny"|"allowlist"|"full")`}
	execAsk = enumField{"execAsk", func(e *Entry) *string { return &e.ExecAsk },
		words("off", "on-miss", "always"), `invalid execAsk (use "off"|"on-miss"|"always")`}
	verboseLevel = enumField{"verboseLevel", func(e *Entry) *string { return &e.VerboseLevel },
		words("on", "off", "full"), `invalid verboseLevel (use "on"|"off"|"full")`}
	reasoningLevel = enumField{"reasoningLevel", func(e *Entry) *string { return &e.ReasoningLevel },
		map[string]string{"on": "on", "stream": "stream", "off": ""}, `invalid reasoningLevel (use "on"|"off"|"stream")`}
	responseUsage = enumField{"responseUsage", func(e *Entry) *string { return &e.ResponseUsage },
		map[string]string{"tokens": "tokens", "full": "full", "on": "tokens", "off": ""}, `invalid responseUsage (use "off"|"tokens"|"full")`}
	elevatedLevel = enumField{"elevatedLevel", func(e *Entry) *string { return &e.ElevatedLevel },
		words("on", "off", "ask", "full"), `invalid elevatedLevel (use "on"|"off"|"ask"|"full")`}
	sendPolicy = enumField{"sendPolicy", func(e *Entry) *string { return &e.SendPolicy },
		words("allow", "deny"), `invalid sendPolicy (use "allow"|"deny")`}
	groupActivation = enumField{"groupActivation", func(e *Entry) *string { return &e.GroupActivation },
		words("mention", "always"), `invalid groupActivation (use "mention"|"always")`}
)

func words(ws ...string) map[string]string {
	m := make(map[string]string, len(ws))
	for _, w := range ws {
		m[w] = w
	}
	return m
}

// patchOrder is the order OpenClaw checks fields in, so that a patch with
// several bad fields reports the same one.
var patchOrder = []string{
	"spawnedBy", "spawnDepth", "label", "verboseLevel", "reasoningLevel",
	"responseUsage", "elevatedLevel", "execHost", "execSecurity", "execAsk",
	"execNode", "sendPolicy", "groupActivation",
}

var enumFields = map[string]enumField{}

func init() {
	for _, f := range []enumField{execHost, execSecurity, execAsk, verboseLevel,
		reasoningLevel, responseUsage, elevatedLevel, sendPolicy, groupActivation} {
		enumFields[f.name] = f
	}
}

// Apply validates the patch against the session key and returns the entry
// with the changes made (spec §5.3). It does not bump UpdatedAt, create
// the entry, or check label uniqueness: the store does those. The entry
// passed in is not modified.
//
// Enumerated values are trimmed and lower-cased; label, execNode and
// spawnedBy are trimmed and keep their case. spawnedBy and spawnDepth are
// accepted only for subagent keys and cannot change once set.
func (p Patch) Apply(key string, e Entry) (Entry, error) {
	for name := range p {
		if !isPatchField(name) {
			return Entry{}, invalid("invalid sessions.patch params: unexpected property %q", name)
		}
	}
	next := e.Clone()
	for _, name := range patchOrder {
		raw, ok := p[name]
		if !ok {
			continue
		}
		var err error
		switch name {
		case "spawnedBy":
			err = patchSpawnedBy(key, &next, raw)
		case "spawnDepth":
			err = patchSpawnDepth(key, &next, raw)
		case "label":
			err = patchLabel(&next, raw)
		case "execNode":
			err = patchExecNode(&next, raw)
		default:
			err = enumFields[name].apply(&next, raw)
		}
		if err != nil {
			return Entry{}, err
		}
	}
	return next, nil
}

func isPatchField(name string) bool {
	for _, f := range patchOrder {
		if f == name {
			return true
		}
	}
	for _, f := range CallerFields {
		if f == name {
			return true
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// stringValue decodes a JSON string; ok is false for any other value.
func stringValue(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func (f enumField) apply(e *Entry, raw json.RawMessage) error {
	dst := f.field(e)
	if isNull(raw) {
		*dst = ""
		return nil
	}
	s, ok := stringValue(raw)
	if !ok {
		return invalid("%s", f.msg)
	}
	v, ok := f.norm[strings.ToLower(strings.TrimSpace(s))]
	if !ok {
		return invalid("%s", f.msg)
	}
	*dst = v
	return nil
}

func patchLabel(e *Entry, raw json.RawMessage) error {
	if isNull(raw) {
		e.Label = ""
		return nil
	}
	s, ok := stringValue(raw)
	if !ok {
		return invalid("invalid label: must be a string")
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return invalid("invalid label: empty")
	}
	if len(utf16.Encode([]rune(s))) > MaxLabelLen {
		return invalid("invalid label: too long (max %d)", MaxLabelLen)
	}
	e.Label = s
	return nil
}

func patchExecNode(e *Entry, raw json.RawMessage) error {
	if isNull(raw) {
		e.ExecNode = ""
		return nil
	}
	s, ok := stringValue(raw)
	if !ok {
		return invalid("invalid execNode: must be a string")
	}
	if s = strings.TrimSpace(s); s == "" {
		return invalid("invalid execNode: empty")
	}
	e.ExecNode = s
	return nil
}

func patchSpawnedBy(key string, e *Entry, raw json.RawMessage) error {
	if isNull(raw) {
		if e.SpawnedBy != "" {
			return invalid("spawnedBy cannot be cleared once set")
		}
		return nil
	}
	s, ok := stringValue(raw)
	if !ok {
		return invalid("invalid spawnedBy: must be a string")
	}
	if s = strings.TrimSpace(s); s == "" {
		return invalid("invalid spawnedBy: empty")
	}
	if !IsSubagent(key) {
		return invalid("spawnedBy is only supported for subagent:* sessions")
	}
	if e.SpawnedBy != "" && e.SpawnedBy != s {
		return invalid("spawnedBy cannot be changed once set")
	}
	e.SpawnedBy = s
	return nil
}

func patchSpawnDepth(key string, e *Entry, raw json.RawMessage) error {
	if isNull(raw) {
		if e.SpawnDepth != nil {
			return invalid("spawnDepth cannot be cleared once set")
		}
		return nil
	}
	if !IsSubagent(key) {
		return invalid("spawnDepth is only supported for subagent:* sessions")
	}
	d, ok := depthValue(raw)
	if !ok {
		return invalid("invalid spawnDepth (use an integer >= 0)")
	}
	if e.SpawnDepth != nil && *e.SpawnDepth != d {
		return invalid("spawnDepth cannot be changed once set")
	}
	e.SpawnDepth = &d
	return nil
}

// depthValue accepts a JSON number with an integral value in [0, MaxInt32]
// (2.0 and 2e0 included, as JavaScript's Number.isInteger does).
func depthValue(raw json.RawMessage) (int, bool) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, false
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' {
		return 0, false // json.Number also accepts a quoted number
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}
