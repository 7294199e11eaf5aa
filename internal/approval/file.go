package approval

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Security is how much exec may run: deny < allowlist < full.
type Security string

// Ask is when exec asks an operator: off < on-miss < always.
type Ask string

// The values of Security and Ask.
const (
	SecurityDeny      Security = "deny"
	SecurityAllowlist Security = "allowlist"
	SecurityFull      Security = "full"

	AskOff    Ask = "off"
	AskOnMiss Ask = "on-miss"
	AskAlways Ask = "always"
)

// rank orders securities from tightest (0) to loosest; -1 means invalid.
func (s Security) rank() int {
	return slices.Index([]Security{SecurityDeny, SecurityAllowlist, SecurityFull}, s)
}

// rank orders asks from loosest (0) to tightest; -1 means invalid.
func (a Ask) rank() int { return slices.Index([]Ask{AskOff, AskOnMiss, AskAlways}, a) }

// Valid reports whether s is one of deny, allowlist, full.
func (s Security) Valid() bool { return s.rank() >= 0 }

// Valid reports whether a is one of off, on-miss, always.
func (a Ask) Valid() bool { return a.rank() >= 0 }

// minSecurity returns the tighter of a and b.
func minSecurity(a, b Security) Security {
	if a.rank() <= b.rank() {
		return a
	}
	return b
}

// maxAsk returns the stricter of a and b.
func maxAsk(a, b Ask) Ask {
	if a.rank() >= b.rank() {
		return a
	}
	return b
}

// File is the approvals file (spec §4.1), always normalised.
type File struct {
	Version  int               `json:"version"`
	Socket   *Socket           `json:"socket,omitempty"`
	Defaults Defaults          `json:"defaults"`
	Agents   map[string]*Agent `json:"agents"`
}

// Socket is kept for OpenClaw compatibility (its macOS app talks to a unix
// socket beside the file); Talon serves no socket and only preserves it.
type Socket struct {
	Path  string `json:"path,omitempty"`
	Token string `json:"token,omitempty"`
}

// Defaults is the file's `defaults`; empty fields are unset.
type Defaults struct {
	Security        Security `json:"security,omitempty"`
	Ask             Ask      `json:"ask,omitempty"`
	AskFallback     Security `json:"askFallback,omitempty"`
	AutoAllowSkills *bool    `json:"autoAllowSkills,omitempty"`
}

// Agent is one `agents.<id>` entry ("*" applies to every agent).
type Agent struct {
	Security        Security `json:"security,omitempty"`
	Ask             Ask      `json:"ask,omitempty"`
	AskFallback     Security `json:"askFallback,omitempty"`
	AutoAllowSkills *bool    `json:"autoAllowSkills,omitempty"`
	Allowlist       []Entry  `json:"allowlist,omitempty"`
}

// Entry is one allowlist entry. Pattern matches the resolved executable
// path (§4.6); a pattern "=command:<sha256-16>" is the exact-command
// marker that allow-always stores.
type Entry struct {
	ID               string `json:"id"`
	Pattern          string `json:"pattern"`
	ArgPattern       string `json:"argPattern,omitempty"`
	Source           string `json:"source,omitempty"`
	LastUsedAt       int64  `json:"lastUsedAt,omitempty"`
	LastUsedCommand  string `json:"lastUsedCommand,omitempty"`
	LastResolvedPath string `json:"lastResolvedPath,omitempty"`
}

// FailClosed is the policy a corrupt or unreadable file falls back to
// (spec §4.2): nothing runs and nobody is asked.
func FailClosed() *File {
	return &File{Version: 1, Defaults: Defaults{Security: SecurityDeny, Ask: AskOff, AskFallback: SecurityDeny}, Agents: map[string]*Agent{}}
}

// Empty is the normalised form of a missing file.
func Empty() *File { return &File{Version: 1, Agents: map[string]*Agent{}} }

// Parse decodes and normalises approvals-file bytes. It fails when the
// bytes are not a JSON object or the version is not 1 (Talon treats an
// unknown version as corrupt, not as empty: an empty file would be
// permissive). Values normalisation drops are returned as warnings, each
// naming the key, so an operator sees what was ignored.
func Parse(raw []byte) (f *File, warnings []string, err error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&top); err != nil {
		return nil, nil, fmt.Errorf("parsing exec approvals: %w", err)
	}
	if top == nil {
		return nil, nil, errors.New("parsing exec approvals: expected a JSON object at the top level")
	}
	if dec.More() {
		return nil, nil, errors.New("parsing exec approvals: unexpected data after the top-level object")
	}
	var version float64
	if err := json.Unmarshal(top["version"], &version); err != nil || version != 1 {
		return nil, nil, fmt.Errorf("parsing exec approvals: version must be 1 (got %s)", orMissing(top["version"]))
	}
	f = Empty()
	warn := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }
	for k := range top {
		if k != "version" && k != "socket" && k != "defaults" && k != "agents" {
			warn("%s: unknown key dropped", k)
		}
	}
	if s, ok := top["socket"]; ok && string(s) != "null" {
		var sock Socket
		if err := json.Unmarshal(s, &sock); err != nil {
			warn("socket: dropped (%v)", err)
		} else if sock != (Socket{}) {
			f.Socket = &sock
		}
	}
	if d, ok := top["defaults"]; ok && string(d) != "null" {
		a, w := parseAgent("defaults", d)
		warnings = append(warnings, w...)
		if len(a.Allowlist) > 0 {
			warn("defaults.allowlist: allowlists belong to agents; dropped")
		}
		f.Defaults = Defaults{Security: a.Security, Ask: a.Ask, AskFallback: a.AskFallback, AutoAllowSkills: a.AutoAllowSkills}
	}
	if ag, ok := top["agents"]; ok && string(ag) != "null" {
		var agents map[string]json.RawMessage
		if err := json.Unmarshal(ag, &agents); err != nil {
			return nil, nil, fmt.Errorf("parsing exec approvals: agents: %w", err)
		}
		ids := make([]string, 0, len(agents))
		for id := range agents {
			ids = append(ids, id)
		}
		sort.Strings(ids) // warnings in a stable order
		for _, id := range ids {
			a, w := parseAgent("agents."+id, agents[id])
			warnings = append(warnings, w...)
			f.Agents[id] = a
		}
	}
	warnings = append(warnings, f.normalize()...)
	return f, warnings, nil
}

func orMissing(raw json.RawMessage) string {
	if raw == nil {
		return "nothing"
	}
	return string(raw)
}

// parseAgent decodes one agent (or defaults) object leniently: each bad
// field is dropped with a warning rather than failing the whole file, as
// OpenClaw's normalisation does.
func parseAgent(at string, raw json.RawMessage) (*Agent, []string) {
	var warnings []string
	warn := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }
	var m map[string]json.RawMessage
	a := &Agent{}
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		warn("%s: expected an object; dropped", at)
		return a, warnings
	}
	str := func(key string) (string, bool) {
		v, ok := m[key]
		if !ok || string(v) == "null" {
			return "", false
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			warn("%s.%s: expected a string; dropped", at, key)
			return "", false
		}
		return s, true
	}
	for k := range m {
		switch k {
		case "security", "ask", "askFallback", "autoAllowSkills", "allowlist":
		default:
			warn("%s.%s: unknown key dropped", at, k)
		}
	}
	if s, ok := str("security"); ok {
		if a.Security = Security(s); !a.Security.Valid() {
			warn("%s.security: unknown value %q dropped", at, s)
			a.Security = ""
		}
	}
	if s, ok := str("ask"); ok {
		if a.Ask = Ask(s); !a.Ask.Valid() {
			warn("%s.ask: unknown value %q dropped", at, s)
			a.Ask = ""
		}
	}
	if s, ok := str("askFallback"); ok {
		if a.AskFallback = Security(s); !a.AskFallback.Valid() {
			warn("%s.askFallback: unknown value %q dropped", at, s)
			a.AskFallback = ""
		}
	}
	if v, ok := m["autoAllowSkills"]; ok && string(v) != "null" {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			warn("%s.autoAllowSkills: expected true or false; dropped", at)
		} else {
			a.AutoAllowSkills = &b
		}
	}
	if v, ok := m["allowlist"]; ok && string(v) != "null" {
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			warn("%s.allowlist: expected an array; dropped", at)
		}
		for i, it := range items {
			var s string
			if json.Unmarshal(it, &s) == nil {
				a.Allowlist = append(a.Allowlist, Entry{Pattern: s}) // legacy string item
				continue
			}
			var e Entry
			if err := json.Unmarshal(it, &e); err != nil {
				warn("%s.allowlist[%d]: %v; dropped", at, i, err)
				continue
			}
			a.Allowlist = append(a.Allowlist, e)
		}
	}
	return a, warnings
}

// normalize applies the rules of spec §4.1 that Parse's decoding does not:
// empty patterns dropped, missing ids generated, legacy agents.default
// merged into agents.main. It is also run on files built in code before
// they are saved.
func (f *File) normalize() (warnings []string) {
	f.Version = 1
	if f.Agents == nil {
		f.Agents = map[string]*Agent{}
	}
	if f.Socket != nil && *f.Socket == (Socket{}) {
		f.Socket = nil
	}
	if d, ok := f.Agents["default"]; ok {
		m := f.Agents["main"]
		if m == nil {
			m = &Agent{}
		}
		// main's own settings win; the legacy entry only fills gaps.
		if m.Security == "" {
			m.Security = d.Security
		}
		if m.Ask == "" {
			m.Ask = d.Ask
		}
		if m.AskFallback == "" {
			m.AskFallback = d.AskFallback
		}
		if m.AutoAllowSkills == nil {
			m.AutoAllowSkills = d.AutoAllowSkills
		}
		m.Allowlist = append(m.Allowlist, d.Allowlist...)
		f.Agents["main"] = m
		delete(f.Agents, "default")
		warnings = append(warnings, "agents.default: legacy entry merged into agents.main")
	}
	for id, a := range f.Agents {
		if a == nil {
			f.Agents[id] = &Agent{}
			continue
		}
		kept := a.Allowlist[:0]
		for i, e := range a.Allowlist {
			e.Pattern = strings.TrimSpace(e.Pattern)
			if e.Pattern == "" {
				warnings = append(warnings, fmt.Sprintf("agents.%s.allowlist[%d]: empty pattern dropped", id, i))
				continue
			}
			if e.ID == "" {
				e.ID = newUUID()
			}
			kept = append(kept, e)
		}
		a.Allowlist = kept
	}
	return warnings
}

// Marshal returns the bytes Talon writes for f: indented JSON with a
// trailing newline and agents in key order, so equal files hash equal.
func (f *File) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding exec approvals: %w", err)
	}
	return append(b, '\n'), nil
}

// Clone returns a deep copy of f.
func (f *File) Clone() *File {
	c := *f
	if f.Socket != nil {
		s := *f.Socket
		c.Socket = &s
	}
	c.Agents = make(map[string]*Agent, len(f.Agents))
	for id, a := range f.Agents {
		if a == nil {
			continue
		}
		ac := *a
		ac.Allowlist = slices.Clone(a.Allowlist)
		c.Agents[id] = &ac
	}
	return &c
}

// Redacted returns a copy without the socket token, for display (spec:
// exec.approvals.get strips file.socket.token).
func (f *File) Redacted() *File {
	c := f.Clone()
	if c.Socket != nil {
		c.Socket.Token = ""
		if *c.Socket == (Socket{}) {
			c.Socket = nil
		}
	}
	return c
}

// newUUID returns a random (version 4) UUID for allowlist entry ids.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
