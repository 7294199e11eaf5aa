package template

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"talon/internal/ceiling"
	"talon/internal/config"
	"talon/internal/plugin"
	"talon/internal/policy"
	"talon/internal/safeyaml"
	"talon/internal/tools"
)

// ManifestFile is the file that makes a directory a template.
const ManifestFile = "template.yaml"

// Limits on a manifest, so a hostile or careless one cannot bloat a config.
const (
	MaxManifestSize = 256 << 10 // bytes of template.yaml
	MaxInlineSize   = 64 << 10  // bytes of one inline soul/agents/identity
	MaxListLen      = 100       // entries of skills, alsoAllow, plugins
	maxTextLen      = 1024      // characters of name, description, …
)

// slugRE is the slug rule: it names a directory, an agent id and a URL
// segment, so it is kept to lower-case letters, digits and dashes.
var slugRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,47}$`)

// ValidSlug reports whether s is a valid template slug.
func ValidSlug(s string) bool { return slugRE.MatchString(s) }

// manifest is template.yaml as written. Pointers tell absent from empty.
type manifest struct {
	Type          string         `yaml:"type"`
	Name          string         `yaml:"name"`
	Description   string         `yaml:"description"`
	Emoji         string         `yaml:"emoji"`
	Category      string         `yaml:"category"`
	Skills        []string       `yaml:"skills"`
	Model         string         `yaml:"model"`
	RequiredTools requiredTools  `yaml:"requiredTools"`
	Sandbox       *SandboxConfig `yaml:"sandbox"`
	Exec          *ExecConfig    `yaml:"exec"`
	Soul          *string        `yaml:"soul"`
	Agents        *string        `yaml:"agents"`
	Identity      *string        `yaml:"identity"`
}

type requiredTools struct {
	AlsoAllow []string `yaml:"alsoAllow"`
	Plugins   []string `yaml:"plugins"`
}

// SandboxConfig is template.yaml's optional `sandbox` block, written to
// the agent's agents.list[].sandbox: mode and backend, held to config's
// rules and to the tenant ceiling's (mode all, backend bwrap or docker:
// an employee runs in a tenant, whose sessions are always sandboxed).
type SandboxConfig struct {
	Mode    string `yaml:"mode" json:"mode,omitempty"`
	Backend string `yaml:"backend" json:"backend,omitempty"`
}

// ExecConfig is template.yaml's optional `exec` block, written to the
// agent's agents.list[].tools.exec: security deny|allowlist|full, ask
// off|on-miss|always.
type ExecConfig struct {
	Security string `yaml:"security" json:"security,omitempty"`
	Ask      string `yaml:"ask" json:"ask,omitempty"`
}

// parseManifest decodes and checks template.yaml on its own; the checks
// that need the directory (type = directory name, files) are Load's.
func parseManifest(data []byte) (*manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", ManifestFile, len(data), MaxManifestSize)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s is empty", ManifestFile)
	}
	var m manifest
	if err := safeyaml.Unmarshal(data, &m, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", ManifestFile, yamlMessage(err))
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return &m, nil
}

// yamlMessage keeps the first line of a go-yaml error ("[5:5] unknown
// field \"bogus\"") and spells out its position; the rest is an excerpt.
func yamlMessage(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if pos, rest, ok := strings.Cut(strings.TrimPrefix(msg, "["), "] "); ok && strings.HasPrefix(msg, "[") {
		l, c, _ := strings.Cut(pos, ":")
		return fmt.Sprintf("line %s column %s: %s", l, c, rest)
	}
	return msg
}

func (m *manifest) check() error {
	switch {
	case m.Type == "":
		return errors.New(`"type" is required: the template's slug, equal to its directory name`)
	case !slugRE.MatchString(m.Type):
		return fmt.Errorf(`"type" %q is not a valid slug: use lower-case letters, digits and dashes, starting with a letter, at most 48 characters`, m.Type)
	}
	for _, f := range []struct{ key, val string }{
		{"name", m.Name}, {"description", m.Description},
	} {
		if strings.TrimSpace(f.val) == "" {
			return fmt.Errorf("%q is required", f.key)
		}
	}
	for _, f := range []struct{ key, val string }{
		{"name", m.Name}, {"description", m.Description}, {"emoji", m.Emoji}, {"category", m.Category},
	} {
		if n := len([]rune(f.val)); n > maxTextLen {
			return fmt.Errorf("%q is %d characters, more than %d", f.key, n, maxTextLen)
		}
	}
	if strings.ContainsAny(m.Name, "\r\n") {
		return errors.New(`"name" must be one line`)
	}
	if err := checkList("skills", m.Skills, func(s string) error {
		if strings.TrimSpace(s) != s || s == "" || strings.ContainsAny(s, "\r\n") {
			return errors.New("must be a non-empty single line without surrounding spaces")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := checkModel(m.Model); err != nil {
		return err
	}
	if err := checkList("requiredTools.alsoAllow", m.RequiredTools.AlsoAllow, checkToolEntry); err != nil {
		return err
	}
	if err := checkList("requiredTools.plugins", m.RequiredTools.Plugins, checkPluginID); err != nil {
		return err
	}
	for _, in := range []struct {
		key string
		val *string
	}{{"soul", m.Soul}, {"agents", m.Agents}, {"identity", m.Identity}} {
		switch {
		case in.val == nil:
		case strings.TrimSpace(*in.val) == "":
			return fmt.Errorf("%q is empty; remove it or give it text", in.key)
		case len(*in.val) > MaxInlineSize:
			return fmt.Errorf("%q is %d bytes, more than %d", in.key, len(*in.val), MaxInlineSize)
		}
	}
	return m.checkAgentEntry()
}

func checkList(key string, list []string, each func(string) error) error {
	if len(list) > MaxListLen {
		return fmt.Errorf("%q has %d entries, more than %d", key, len(list), MaxListLen)
	}
	for i, s := range list {
		if err := each(s); err != nil {
			return fmt.Errorf("%s[%d] %q: %w", key, i, s, err)
		}
		if slices.Contains(list[:i], s) {
			return fmt.Errorf("%s[%d] %q: listed twice", key, i, s)
		}
	}
	return nil
}

// checkModel accepts what config.ModelRefs accepts as a plain string and
// what the provider resolver can use: a reference config.ParseModelRef
// reads with a provider ("provider/model", or "inspect"), with no spaces.
func checkModel(ref string) error {
	if ref == "" {
		return nil // agents.defaults.model applies
	}
	refs, err := config.ModelRefs(&config.Raw{Value: config.NewString(ref)})
	if err != nil {
		return fmt.Errorf(`"model": %w`, err)
	}
	if refs[0] != ref {
		return fmt.Errorf(`"model" %q has surrounding spaces`, ref)
	}
	if m, err := config.ParseModelRef(ref); err != nil || m.Provider == "" || strings.ContainsAny(ref, " \t\r\n") {
		return fmt.Errorf(`"model" %q is not a model reference: write provider/model, e.g. openrouter/anthropic/claude-sonnet-4`, ref)
	}
	return nil
}

// checkToolEntry accepts what an allow list can usefully name: a tool
// name, a core group, group:plugins, or the id of a compiled-in plugin
// (which stands for all its tools).
func checkToolEntry(e string) error {
	switch {
	case tools.ValidName(e):
		return nil
	case e == policy.GroupPlugins || slices.Contains(policy.GroupNames, e):
		return nil
	case knownPlugin(e):
		return nil
	case e == "*" || strings.ContainsAny(e, "*?"):
		return errors.New("wildcards are not allowed: name the tools the employee needs")
	}
	return fmt.Errorf("not a tool name (%s), a tool group (%s) or a plugin id (%s)",
		"lower-case letters, digits and _", strings.Join(append(slices.Clone(policy.GroupNames), policy.GroupPlugins), ", "),
		strings.Join(PluginIDs(), ", "))
}

func checkPluginID(id string) error {
	if !knownPlugin(id) {
		return fmt.Errorf("unknown plugin: Talon's plugins are %s", strings.Join(PluginIDs(), ", "))
	}
	return nil
}

// PluginIDs lists the ids of the plugins compiled into Talon, sorted.
func PluginIDs() []string {
	var ids []string
	for _, m := range plugin.Modules() {
		ids = append(ids, m.ID)
	}
	return ids
}

func knownPlugin(id string) bool { return slices.Contains(PluginIDs(), id) }

// checkAgentEntry runs config's own decoder and validator over the
// agents.list[] entry an install would write, so the sandbox and exec
// values obey exactly the rules the gateway applies.
func (m *manifest) checkAgentEntry() error {
	if m.Sandbox == nil && m.Exec == nil {
		return nil
	}
	if m.Sandbox != nil && *m.Sandbox == (SandboxConfig{}) {
		return errors.New(`"sandbox" is empty; remove it or set mode and backend`)
	}
	if m.Exec != nil && *m.Exec == (ExecConfig{}) {
		return errors.New(`"exec" is empty; remove it or set security and ask`)
	}
	entry := agentEntry(m, nil)
	tree := config.NewObject(config.Member{Key: "agents", Value: config.NewObject(
		config.Member{Key: "list", Value: config.NewArray(entry)})})
	var c config.Config
	if _, err := config.Decode(tree, &c); err != nil {
		return fmt.Errorf("sandbox/exec: %w", err)
	}
	for _, is := range config.Validate(&c) {
		p := strings.TrimPrefix(is.Path, "agents.list[0].")
		p = strings.TrimPrefix(p, "tools.")
		return fmt.Errorf("%s: %s", p, is.Message)
	}
	// An employee is installed into a tenant, whose config is held to the
	// operator's ceiling: a template must not ask for what no tenant may
	// have (Talon's default ceiling, the strictest it starts with).
	ceil, _ := ceiling.New(nil, nil)
	for _, v := range ceil.Apply(tree, "/tenant").Violations {
		if p, ok := strings.CutPrefix(v.Path, "agents.list[0]."); ok {
			return fmt.Errorf("%s: %s", p, v.Message)
		}
	}
	return nil
}
