package yamltool

import (
	"fmt"
	"regexp"
	"strings"
)

// Template namespaces.
const (
	nsEnv      = "env"
	nsParams   = "params"
	nsResponse = "response"
)

// maxTemplateLen bounds one template string.
const maxTemplateLen = 8 << 10

var (
	tagRe     = regexp.MustCompile(`^\s*([a-z]+)((?:\.[A-Za-z0-9_-]+)+)\s*$`)
	envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// piece is a literal run of text, or one tag when ns is set.
type piece struct {
	lit  string
	ns   string
	path []string
}

// template is a string split once, at parse time, into literal text and
// tags. Rendering substitutes each tag's value and never scans a value
// for tags again: that is what makes the engine single pass, so a value
// "{{env.SECRET}}" is sent as those very characters.
type template []piece

// parseTemplate splits s; allowed lists the namespaces this place may use.
func parseTemplate(s string, allowed ...string) (template, error) {
	if len(s) > maxTemplateLen {
		return nil, fmt.Errorf("template is %d bytes, more than %d", len(s), maxTemplateLen)
	}
	var t template
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			t = append(t, piece{lit: s})
			break
		}
		if i > 0 {
			t = append(t, piece{lit: s[:i]})
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("tag %q has no closing }}", abbrev(s[i:]))
		}
		body := s[i+2 : i+2+j]
		m := tagRe.FindStringSubmatch(body)
		if m == nil {
			return nil, fmt.Errorf("malformed tag {{%s}}: want {{env.NAME}}, {{params.NAME}} or {{response.PATH}}", abbrev(body))
		}
		ns, path := m[1], strings.Split(m[2][1:], ".")
		ok := false
		for _, a := range allowed {
			ok = ok || a == ns
		}
		if !ok {
			switch ns {
			case nsEnv, nsParams, nsResponse:
				return nil, fmt.Errorf("tag {{%s}}: namespace %q cannot be used here (allowed: %s)", body, ns, strings.Join(allowed, ", "))
			}
			return nil, fmt.Errorf("tag {{%s}}: unknown namespace %q (allowed: %s)", body, ns, strings.Join(allowed, ", "))
		}
		if ns != nsResponse && len(path) != 1 {
			return nil, fmt.Errorf("tag {{%s}}: %s takes one name, not a path", body, ns)
		}
		if ns == nsEnv && !envNameRe.MatchString(path[0]) {
			return nil, fmt.Errorf("tag {{%s}}: %q is not an env var name", body, path[0])
		}
		t = append(t, piece{ns: ns, path: path})
		s = s[i+2+j+2:]
	}
	return t, nil
}

// single reports the tag when the template is exactly one tag.
func (t template) single() (piece, bool) {
	if len(t) == 1 && t[0].ns != "" {
		return t[0], true
	}
	return piece{}, false
}

// hasTags reports whether the template has any tag.
func (t template) hasTags() bool {
	for _, p := range t {
		if p.ns != "" {
			return true
		}
	}
	return false
}

// render writes the template with each tag replaced by value(tag) passed
// through esc (nil for none).
func (t template) render(value func(piece) (string, error), esc func(string) string) (string, error) {
	var b strings.Builder
	for _, p := range t {
		if p.ns == "" {
			b.WriteString(p.lit)
			continue
		}
		v, err := value(p)
		if err != nil {
			return "", err
		}
		if esc != nil {
			v = esc(v)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// IsEnvName reports whether s is an environment variable name as
// templates and requires_env accept it.
func IsEnvName(s string) bool { return envNameRe.MatchString(s) }

func (p piece) String() string { return "{{" + p.ns + "." + strings.Join(p.path, ".") + "}}" }

func abbrev(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
