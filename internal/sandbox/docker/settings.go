package docker

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
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

// settings is the backend's configuration: OpenClaw's
// `agents.defaults.sandbox.docker` keys that make sense for Talon, plus
// Talon's own `socket`.
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

// ignoredKeys are OpenClaw keys that are accepted and have no effect:
// OpenClaw's break-glass switches for checks Talon does not make the same
// way (Talon refuses the host and container network modes outright, and
// takes binds as the operator wrote them).
var ignoredKeys = []string{
	"dangerouslyAllowReservedContainerTargets",
	"dangerouslyAllowExternalBindSources",
	"dangerouslyAllowContainerNamespaceJoin",
}

// parseSettings reads the settings map Talon's config gives the backend
// (the JSON object of sandbox.docker). Unknown keys are errors, so a typo
// does not silently weaken a sandbox.
func parseSettings(m map[string]any) (settings, error) {
	s := settings{
		Socket:          "",
		Image:           DefaultImage,
		ContainerPrefix: "talon-sbx-",
		ReadOnlyRoot:    true,
		Tmpfs:           []string{"/tmp", "/var/tmp", "/run"},
		Network:         "bridge",
		CapDrop:         []string{"ALL"},
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		if v == nil {
			continue
		}
		var err error
		switch k {
		case "socket":
			s.Socket, err = str(v)
		case "image":
			if s.Image, err = nonEmpty(v); err == nil && !validImage(s.Image) {
				err = fmt.Errorf("%q: not an image reference (name[:tag] or name@digest)", s.Image)
			}
		case "containerPrefix":
			s.ContainerPrefix, err = str(v)
			if err == nil && !validName(s.ContainerPrefix) {
				err = fmt.Errorf("%q: want letters, digits, '-', '_' or '.'", s.ContainerPrefix)
			}
		case "workdir":
			var w string
			if w, err = str(v); err == nil && path.Clean(w) != sandbox.Workdir {
				err = fmt.Errorf("%q: Talon's sandboxes always work in %s", w, sandbox.Workdir)
			}
		case "readOnlyRoot":
			s.ReadOnlyRoot, err = boolean(v)
		case "tmpfs":
			s.Tmpfs, err = tmpfsList(v)
		case "network":
			s.Network, err = network(v)
		case "user":
			s.User, err = nonEmpty(v)
		case "capDrop":
			s.CapDrop, err = strList(v)
		case "env":
			s.Env, err = envMap(v)
		case "setupCommand":
			s.SetupCommand, err = str(v)
		case "pidsLimit":
			s.PidsLimit, err = positive(v)
		case "memory":
			s.Memory, err = byteSize(v)
		case "memorySwap":
			s.MemorySwap, err = byteSize(v)
		case "cpus":
			var f float64
			if f, err = number(v); err == nil {
				if f <= 0 || f > 1024 {
					err = fmt.Errorf("%v: want a number of CPUs above 0", v)
				}
				s.NanoCPUs = int64(f * 1e9)
			}
		case "ulimits":
			s.Ulimits, err = ulimits(v)
		case "seccompProfile":
			var o string
			if o, err = seccomp(v); err == nil {
				s.SecurityOpt = append(s.SecurityOpt, o)
			}
		case "apparmorProfile":
			var p string
			if p, err = nonEmpty(v); err == nil {
				s.SecurityOpt = append(s.SecurityOpt, "apparmor="+p)
			}
		case "dns":
			s.DNS, err = strList(v)
		case "extraHosts":
			s.ExtraHosts, err = strList(v)
		case "binds":
			s.Binds, err = binds(v)
		case "gpus":
			err = fmt.Errorf("GPUs are not supported by Talon's docker backend; remove the key")
		default:
			if slices.Contains(ignoredKeys, k) {
				continue
			}
			err = fmt.Errorf("unknown setting")
		}
		if err != nil {
			return settings{}, fmt.Errorf("sandbox.docker.%s: %w", k, err)
		}
	}
	sort.Strings(s.SecurityOpt)
	return s, nil
}

func str(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%v: want a string", v)
	}
	if strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("%q: contains a NUL byte", s)
	}
	return s, nil
}

func nonEmpty(v any) (string, error) {
	s, err := str(v)
	if err == nil && strings.TrimSpace(s) == "" {
		err = fmt.Errorf("empty")
	}
	return strings.TrimSpace(s), err
}

func boolean(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%v: want true or false", v)
	}
	return b, nil
}

func number(v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		return n, nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case json.Number:
		return n.Float64()
	}
	return 0, fmt.Errorf("%v: want a number", v)
}

func integer(v any) (int64, error) {
	f, err := number(v)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("%v: want a whole number", v)
	}
	return int64(f), nil
}

func positive(v any) (int64, error) {
	n, err := integer(v)
	if err == nil && n <= 0 {
		err = fmt.Errorf("%d: want a number above 0", n)
	}
	return n, err
}

func strList(v any) ([]string, error) {
	items, ok := v.([]any)
	if !ok {
		if ss, ok := v.([]string); ok {
			return slices.Clone(ss), nil
		}
		return nil, fmt.Errorf("%v: want a list of strings", v)
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

func tmpfsList(v any) ([]string, error) {
	l, err := strList(v)
	if err != nil {
		return nil, err
	}
	for _, t := range l {
		p, _, _ := strings.Cut(t, ":")
		if !path.IsAbs(p) || path.Clean(p) == "/" || path.Clean(p) == sandbox.Workdir {
			return nil, fmt.Errorf("%q: want an absolute path other than / and %s, with optional :options", t, sandbox.Workdir)
		}
	}
	return l, nil
}

func network(v any) (string, error) {
	n, err := nonEmpty(v)
	if err != nil {
		return "", err
	}
	switch {
	case n == "host":
		return "", fmt.Errorf(`"host" would give commands the host's network stack, loopback services included; use "bridge" or a named network`)
	case strings.HasPrefix(n, "container:"):
		return "", fmt.Errorf("%q would join another container's network namespace; not allowed", n)
	case n == "none":
		// Spec.Network decides whether commands get a network; "none"
		// here only says what the default already is.
	}
	return n, nil
}

func envMap(v any) ([]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%v: want an object of NAME: value", v)
	}
	out := make([]string, 0, len(m))
	for k, x := range m {
		if !validEnvName(k) {
			return nil, fmt.Errorf("%q: not a variable name", k)
		}
		var s string
		switch x := x.(type) {
		case string:
			s = x
		case bool, float64, int, int64, json.Number:
			s = fmt.Sprint(x)
		default:
			return nil, fmt.Errorf("%s: want a string", k)
		}
		if strings.ContainsRune(s, 0) {
			return nil, fmt.Errorf("%s: contains a NUL byte", k)
		}
		out = append(out, k+"="+s)
	}
	sort.Strings(out)
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

// byteSize reads a size as Docker writes it: a number of bytes, or a
// string with a binary unit (512m, 1g, 1.5GiB); -1 means unlimited.
func byteSize(v any) (int64, error) {
	if s, ok := v.(string); ok {
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
			return 0, fmt.Errorf("%q: want a size such as 512m or 2g", s)
		}
		return int64(f * float64(mult)), nil
	}
	n, err := integer(v)
	if err != nil {
		return 0, fmt.Errorf("%v: want bytes or a size such as 512m", v)
	}
	if n < -1 || n == 0 {
		return 0, fmt.Errorf("%d: want bytes above 0, or -1 for unlimited", n)
	}
	return n, nil
}

// ulimits reads OpenClaw's ulimits object: name → number (soft = hard),
// {soft, hard}, or "soft:hard".
func ulimits(v any) (map[string]ulimit, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%v: want an object of name: limit", v)
	}
	out := map[string]ulimit{}
	for name, x := range m {
		if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < 'a' || r > 'z' }) {
			return nil, fmt.Errorf("%q: not a ulimit name (nofile, nproc, fsize, cpu, ...)", name)
		}
		u := ulimit{Name: name}
		var err error
		switch x := x.(type) {
		case map[string]any:
			if u.Soft, err = integer(x["soft"]); err == nil {
				u.Hard, err = integer(x["hard"])
			}
		case string:
			a, b, ok := strings.Cut(x, ":")
			if !ok {
				b = a
			}
			if u.Soft, err = strconv.ParseInt(a, 10, 64); err == nil {
				u.Hard, err = strconv.ParseInt(b, 10, 64)
			}
		default:
			u.Soft, err = integer(x)
			u.Hard = u.Soft
		}
		if err != nil || u.Soft < -1 || u.Hard < -1 || u.Hard != -1 && u.Soft > u.Hard {
			return nil, fmt.Errorf("%s: %v: want a number, \"soft:hard\" or {soft, hard} with soft <= hard", name, x)
		}
		out[name] = u
	}
	return out, nil
}

// seccomp turns seccompProfile into a security option. The Engine API
// takes the profile's JSON itself (the docker CLI reads the file), so the
// file is read here; "unconfined" passes as is.
func seccomp(v any) (string, error) {
	p, err := nonEmpty(v)
	if err != nil {
		return "", err
	}
	if p == "unconfined" {
		return "seccomp=unconfined", nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("reading the profile: %w", err)
	}
	var probe map[string]any
	if err := json.Unmarshal(b, &probe); err != nil {
		return "", fmt.Errorf("%s is not a JSON seccomp profile: %w", p, err)
	}
	return "seccomp=" + string(b), nil
}

// binds reads OpenClaw's binds: "source:target[:ro|rw]" with absolute
// paths on both sides.
func binds(v any) ([]sandbox.Mount, error) {
	l, err := strList(v)
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.Mount, 0, len(l))
	for _, b := range l {
		parts := strings.Split(b, ":")
		m := sandbox.Mount{}
		switch {
		case len(parts) == 2:
		case len(parts) == 3 && (parts[2] == "ro" || parts[2] == "rw"):
			m.ReadOnly = parts[2] == "ro"
		default:
			return nil, fmt.Errorf("%q: want source:target or source:target:ro|rw", b)
		}
		m.Source, m.Target = parts[0], path.Clean(parts[1])
		if !path.IsAbs(m.Source) || !path.IsAbs(m.Target) {
			return nil, fmt.Errorf("%q: source and target must be absolute paths", b)
		}
		if reservedTarget(m.Target) {
			return nil, fmt.Errorf("%q: %s is reserved for the sandbox itself", b, m.Target)
		}
		out = append(out, m)
	}
	return out, nil
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
