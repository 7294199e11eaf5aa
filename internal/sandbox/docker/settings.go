package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"talon/internal/contain"
	"talon/internal/sandbox"
)

// DefaultImage is OpenClaw's default sandbox image, so that a config
// written for OpenClaw finds the image its owner already built.
const DefaultImage = "openclaw-sandbox:bookworm-slim"

// DefaultSocket is where the Docker engine listens by default.
const DefaultSocket = "/var/run/docker.sock"

// settings is the backend's configuration as it uses it, made from the
// options of sandbox.docker.
type settings struct {
	Socket          string
	Image           string
	ContainerPrefix string
	ReadOnlyRoot    bool
	Tmpfs           []string // "path" or "path:options"
	Network         string   // used only when the Spec grants network
	User            string   // "" means the owner of the workspace
	CapDrop         []string
	Env             []string // KEY=VALUE, sorted
	SetupCommand    string
	PidsLimit       int64 // 0: Spec.Limits.Processes
	Memory          int64 // bytes; 0: Spec.Limits.Memory
	MemorySwap      int64 // bytes; 0: the memory limit (no swap), -1 unlimited
	NanoCPUs        int64
	Ulimits         map[string]ulimit
	SecurityOpt     []string // seccomp and apparmor from seccompProfile / apparmorProfile
	DNS             []string
	ExtraHosts      []string
	Binds           []sandbox.Mount
}

type ulimit struct {
	Name string
	Soft int64
	Hard int64
}

// options is sandbox.docker as Talon's config writes it, one field per
// key. decodeStrict fills it key by key and each field's type reads and
// checks its own value, so a typo or a value of the wrong shape never
// silently weakens a sandbox; settings turns it into what the backend
// uses.
type options struct {
	Socket          text       `json:"socket"`
	Image           imageRef   `json:"image"`
	ContainerPrefix namePrefix `json:"containerPrefix"`
	Workdir         workdir    `json:"workdir"`
	ReadOnlyRoot    bool       `json:"readOnlyRoot"`
	Tmpfs           tmpfsList  `json:"tmpfs"`
	Network         network    `json:"network"`
	User            word       `json:"user"`
	CapDrop         words      `json:"capDrop"`
	Env             envVars    `json:"env"`
	SetupCommand    text       `json:"setupCommand"`
	PidsLimit       count      `json:"pidsLimit"`
	Memory          byteSize   `json:"memory"`
	MemorySwap      byteSize   `json:"memorySwap"`
	CPUs            nanoCPUs   `json:"cpus"`
	Ulimits         ulimits    `json:"ulimits"`
	SeccompProfile  seccomp    `json:"seccompProfile"`
	ApparmorProfile word       `json:"apparmorProfile"`
	DNS             words      `json:"dns"`
	ExtraHosts      words      `json:"extraHosts"`
	Binds           binds      `json:"binds"`
	GPUs            refused    `json:"gpus"`
	// OpenClaw's break-glass switches for checks Talon does not make the
	// same way (it refuses the host and container network modes
	// outright, and takes binds as the operator wrote them): accepted,
	// with no effect.
	AllowReservedTargets     json.RawMessage `json:"dangerouslyAllowReservedContainerTargets"`
	AllowExternalBindSources json.RawMessage `json:"dangerouslyAllowExternalBindSources"`
	AllowNamespaceJoin       json.RawMessage `json:"dangerouslyAllowContainerNamespaceJoin"`
}

// defaultOptions are the settings of an empty sandbox.docker.
func defaultOptions() options {
	return options{
		Image:           DefaultImage,
		ContainerPrefix: "talon-sbx-",
		ReadOnlyRoot:    true,
		Tmpfs:           tmpfsList{"/tmp", "/var/tmp", "/run"},
		Network:         "bridge",
		CapDrop:         words{"ALL"},
	}
}

// parseSettings reads the settings map Talon's config gives the backend
// (the JSON object of sandbox.docker) strictly: an unknown key, a value
// of the wrong type or one out of range is an error naming the key.
func parseSettings(m map[string]any) (settings, error) {
	o := defaultOptions()
	if err := decodeStrict(m, &o); err != nil {
		return settings{}, err
	}
	return o.settings(), nil
}

// decodeStrict fills o from m key by key, in sorted order so that the
// first error does not depend on the map's: each key goes into the field
// whose json tag names it. A key no field names is an error, a null value
// leaves the field's default, and every error names its key.
func decodeStrict(m map[string]any, o *options) error {
	fields := fieldsByKey(o)
	for _, k := range sortedKeys(m) {
		f, ok := fields[k]
		if !ok {
			return fmt.Errorf("sandbox.docker.%s: unknown setting", k)
		}
		if m[k] == nil {
			continue
		}
		raw, err := json.Marshal(m[k])
		if err == nil {
			err = json.Unmarshal(raw, f)
		}
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			err = fmt.Errorf("%s: want %s", raw, describe(te.Type))
		}
		if err != nil {
			return fmt.Errorf("sandbox.docker.%s: %w", k, err)
		}
	}
	return nil
}

// fieldsByKey maps each json tag of options to its field's address.
func fieldsByKey(o *options) map[string]any {
	v := reflect.ValueOf(o).Elem()
	out := make(map[string]any, v.NumField())
	for i := range v.NumField() {
		out[v.Type().Field(i).Tag.Get("json")] = v.Field(i).Addr().Interface()
	}
	return out
}

// describe names what a value of type t is written as, for the error of
// a field without a type of its own (readOnlyRoot).
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a number"
}

// settings is what the backend uses of o.
func (o options) settings() settings {
	s := settings{
		Socket:          string(o.Socket),
		Image:           string(o.Image),
		ContainerPrefix: string(o.ContainerPrefix),
		ReadOnlyRoot:    o.ReadOnlyRoot,
		Tmpfs:           o.Tmpfs,
		Network:         string(o.Network),
		User:            string(o.User),
		CapDrop:         o.CapDrop,
		Env:             o.Env,
		SetupCommand:    string(o.SetupCommand),
		PidsLimit:       int64(o.PidsLimit),
		Memory:          int64(o.Memory),
		MemorySwap:      int64(o.MemorySwap),
		NanoCPUs:        int64(o.CPUs),
		Ulimits:         o.Ulimits,
		DNS:             o.DNS,
		ExtraHosts:      o.ExtraHosts,
		Binds:           o.Binds,
	}
	if o.SeccompProfile != "" {
		s.SecurityOpt = append(s.SecurityOpt, string(o.SeccompProfile))
	}
	if o.ApparmorProfile != "" {
		s.SecurityOpt = append(s.SecurityOpt, "apparmor="+string(o.ApparmorProfile))
	}
	sort.Strings(s.SecurityOpt)
	return s
}

// text is a string without NUL bytes (socket, setupCommand).
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	s, err := str(b)
	*t = text(s)
	return err
}

// word is a non-empty string, trimmed (user, apparmorProfile).
type word string

func (w *word) UnmarshalJSON(b []byte) error {
	s, err := nonEmpty(b)
	*w = word(s)
	return err
}

// imageRef is an image reference that can go into a request path as it
// is.
type imageRef string

func (r *imageRef) UnmarshalJSON(b []byte) error {
	s, err := nonEmpty(b)
	if err == nil && !validImage(s) {
		err = fmt.Errorf("%q: not an image reference (name[:tag] or name@digest)", s)
	}
	*r = imageRef(s)
	return err
}

// namePrefix starts every container name.
type namePrefix string

func (p *namePrefix) UnmarshalJSON(b []byte) error {
	s, err := str(b)
	if err == nil && !validName(s) {
		err = fmt.Errorf("%q: want letters, digits, '-', '_' or '.'", s)
	}
	*p = namePrefix(s)
	return err
}

// workdir is accepted only as the directory every sandbox works in.
type workdir struct{}

func (workdir) UnmarshalJSON(b []byte) error {
	w, err := str(b)
	if err == nil && path.Clean(w) != sandbox.Workdir {
		err = fmt.Errorf("%q: Talon's sandboxes always work in %s", w, sandbox.Workdir)
	}
	return err
}

// words is a list of non-empty strings (capDrop, dns, extraHosts).
type words []string

func (l *words) UnmarshalJSON(b []byte) error {
	items, err := strList(b)
	*l = items
	return err
}

// tmpfsList is tmpfs: "path" or "path:options", never over / or the
// workspace.
type tmpfsList []string

func (l *tmpfsList) UnmarshalJSON(b []byte) error {
	items, err := strList(b)
	if err != nil {
		return err
	}
	for _, t := range items {
		p, _, _ := strings.Cut(t, ":")
		if !path.IsAbs(p) || path.Clean(p) == "/" || path.Clean(p) == sandbox.Workdir {
			return fmt.Errorf("%q: want an absolute path other than / and %s, with optional :options", t, sandbox.Workdir)
		}
	}
	*l = items
	return nil
}

// network is the network commands get when the Spec grants one; never the
// host's or another container's.
type network string

func (n *network) UnmarshalJSON(b []byte) error {
	s, err := nonEmpty(b)
	switch {
	case err != nil:
		return err
	case s == "host":
		return fmt.Errorf(`"host" would give commands the host's network stack, loopback services included; use "bridge" or a named network`)
	case strings.HasPrefix(s, "container:"):
		return fmt.Errorf("%q would join another container's network namespace; not allowed", s)
	case s == "none":
		// Spec.Network decides whether commands get a network; "none"
		// here only says what the default already is.
	}
	*n = network(s)
	return nil
}

// envVars is env, an object of NAME: value, as sorted NAME=value.
type envVars []string

func (e *envVars) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if b[0] != '{' || json.Unmarshal(b, &m) != nil {
		return fmt.Errorf("%s: want an object of NAME: value", b)
	}
	out := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		if !validEnvName(k) {
			return fmt.Errorf("%q: not a variable name", k)
		}
		var s string
		switch x := m[k].(type) {
		case string:
			s = x
		case bool, float64:
			s = fmt.Sprint(x)
		default:
			return fmt.Errorf("%s: want a string", k)
		}
		if strings.ContainsRune(s, 0) {
			return fmt.Errorf("%s: contains a NUL byte", k)
		}
		out = append(out, k+"="+s)
	}
	sort.Strings(out)
	*e = out
	return nil
}

// count is a whole number above 0 (pidsLimit).
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	n, err := integer(b)
	if err == nil && n <= 0 {
		err = fmt.Errorf("%d: want a number above 0", n)
	}
	*c = count(n)
	return err
}

// nanoCPUs is cpus, a number of CPUs, in billionths.
type nanoCPUs int64

func (c *nanoCPUs) UnmarshalJSON(b []byte) error {
	f, err := number(b)
	if err == nil && (f <= 0 || f > 1024) {
		err = fmt.Errorf("%s: want a number of CPUs above 0", b)
	}
	*c = nanoCPUs(f * 1e9)
	return err
}

// refused is a key Talon cannot honour (gpus): any value is an error.
type refused struct{}

func (refused) UnmarshalJSON([]byte) error {
	return fmt.Errorf("GPUs are not supported by Talon's docker backend; remove the key")
}

// str reads a JSON string without NUL bytes.
func str(b []byte) (string, error) {
	var s string
	if b[0] != '"' || json.Unmarshal(b, &s) != nil {
		return "", fmt.Errorf("%s: want a string", b)
	}
	if strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("%q: contains a NUL byte", s)
	}
	return s, nil
}

func nonEmpty(b []byte) (string, error) {
	s, err := str(b)
	if err == nil && strings.TrimSpace(s) == "" {
		err = fmt.Errorf("empty")
	}
	return strings.TrimSpace(s), err
}

// number reads a JSON number.
func number(b []byte) (float64, error) {
	var f float64
	if b[0] != '-' && (b[0] < '0' || b[0] > '9') || json.Unmarshal(b, &f) != nil {
		return 0, fmt.Errorf("%s: want a number", b)
	}
	return f, nil
}

func integer(b []byte) (int64, error) {
	f, err := number(b)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("%s: want a whole number", b)
	}
	return int64(f), nil
}

// strList reads a JSON list of non-empty strings.
func strList(b []byte) ([]string, error) {
	var items []json.RawMessage
	if b[0] != '[' || json.Unmarshal(b, &items) != nil {
		return nil, fmt.Errorf("%s: want a list of strings", b)
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, err := nonEmpty(it)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if !(r == '_' || r < unicode.MaxASCII && unicode.IsLetter(r) || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// byteSize is a size as Docker writes it: a number of bytes, or a string
// with a binary unit (512m, 1g, 1.5GiB); -1 means unlimited.
type byteSize int64

func (z *byteSize) UnmarshalJSON(b []byte) error {
	if b[0] == '"' {
		s, err := str(b)
		if err != nil {
			return err
		}
		t := strings.ToLower(strings.TrimSpace(s))
		t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
		mult := int64(1)
		if t != "" {
			if i := strings.IndexByte("kmgt", t[len(t)-1]); i >= 0 {
				mult = 1 << (10 * (i + 1))
				t = t[:len(t)-1]
			}
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || f < 0 || f*float64(mult) > 1<<62 {
			return fmt.Errorf("%q: want a size such as 512m or 2g", s)
		}
		*z = byteSize(f * float64(mult))
		return nil
	}
	n, err := integer(b)
	if err != nil {
		return fmt.Errorf("%s: want bytes or a size such as 512m", b)
	}
	if n < -1 || n == 0 {
		return fmt.Errorf("%d: want bytes above 0, or -1 for unlimited", n)
	}
	*z = byteSize(n)
	return nil
}

// ulimits is OpenClaw's ulimits object: name → number (soft = hard),
// "soft:hard" or {soft, hard}.
type ulimits map[string]ulimit

func (u *ulimits) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if b[0] != '{' || json.Unmarshal(b, &m) != nil {
		return fmt.Errorf("%s: want an object of name: limit", b)
	}
	out := ulimits{}
	for _, name := range sortedKeys(m) {
		if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < 'a' || r > 'z' }) {
			return fmt.Errorf("%q: not a ulimit name (nofile, nproc, fsize, cpu, ...)", name)
		}
		l, err := parseUlimit(m[name])
		if err != nil || l.Soft < -1 || l.Hard < -1 || l.Hard != -1 && l.Soft > l.Hard {
			return fmt.Errorf("%s: %s: want a number, \"soft:hard\" or {soft, hard} with soft <= hard", name, m[name])
		}
		l.Name = name
		out[name] = l
	}
	*u = out
	return nil
}

// parseUlimit reads one limit in any of its three forms; {soft, hard}
// takes no other key.
func parseUlimit(b json.RawMessage) (ulimit, error) {
	var (
		l   ulimit
		err error
	)
	switch b[0] {
	case '{':
		var sh map[string]json.RawMessage
		if err = json.Unmarshal(b, &sh); err != nil || len(sh) != 2 || sh["soft"] == nil || sh["hard"] == nil {
			return ulimit{}, errors.New("want soft and hard only")
		}
		if l.Soft, err = integer(sh["soft"]); err == nil {
			l.Hard, err = integer(sh["hard"])
		}
	case '"':
		var s string
		if err = json.Unmarshal(b, &s); err != nil {
			return ulimit{}, err
		}
		soft, hard, ok := strings.Cut(s, ":")
		if !ok {
			hard = soft
		}
		if l.Soft, err = strconv.ParseInt(soft, 10, 64); err == nil {
			l.Hard, err = strconv.ParseInt(hard, 10, 64)
		}
	default:
		l.Soft, err = integer(b)
		l.Hard = l.Soft
	}
	return l, err
}

// seccomp is seccompProfile as a security option. The Engine API takes
// the profile's JSON itself (the docker CLI reads the file), so the file
// is read here; "unconfined" passes as is.
type seccomp string

func (o *seccomp) UnmarshalJSON(b []byte) error {
	p, err := nonEmpty(b)
	if err != nil {
		return err
	}
	if p == "unconfined" {
		*o = "seccomp=unconfined"
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("reading the profile: %w", err)
	}
	var probe map[string]any
	if err := json.Unmarshal(data, &probe); err != nil {
		return fmt.Errorf("%s is not a JSON seccomp profile: %w", p, err)
	}
	*o = seccomp("seccomp=" + string(data))
	return nil
}

// binds is OpenClaw's binds: "source:target[:ro|rw]" with absolute paths
// on both sides, never over the sandbox's own mounts.
type binds []sandbox.Mount

func (l *binds) UnmarshalJSON(b []byte) error {
	items, err := strList(b)
	if err != nil {
		return err
	}
	out := make([]sandbox.Mount, 0, len(items))
	for _, spec := range items {
		parts := strings.Split(spec, ":")
		m := sandbox.Mount{}
		switch {
		case len(parts) == 2:
		case len(parts) == 3 && (parts[2] == "ro" || parts[2] == "rw"):
			m.ReadOnly = parts[2] == "ro"
		default:
			return fmt.Errorf("%q: want source:target or source:target:ro|rw", spec)
		}
		m.Source, m.Target = parts[0], path.Clean(parts[1])
		if !path.IsAbs(m.Source) || !path.IsAbs(m.Target) {
			return fmt.Errorf("%q: source and target must be absolute paths", spec)
		}
		if reservedTarget(m.Target) {
			return fmt.Errorf("%q: %s is reserved for the sandbox itself", spec, m.Target)
		}
		out = append(out, m)
	}
	*l = out
	return nil
}

// reservedTarget reports whether a configured bind would cover the root,
// the workspace or the agent's read-only mount.
func reservedTarget(t string) bool {
	for _, r := range []string{sandbox.Workdir, sandbox.AgentMount} {
		if _, in := contain.Within(r, t); in {
			return true
		}
	}
	return t == "/"
}

func validName(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	})
}

// validImage accepts what an image reference may contain, so that the
// name can go into a request path as it is.
func validImage(s string) bool {
	return s[0] != '-' && s[0] != '.' && s[0] != '/' && !strings.Contains(s, "..") && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@", r))
	})
}
