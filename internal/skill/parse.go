package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"talon/internal/tools"
)

// nameRE is the AgentSkills name rule: lower-case letters and digits in
// runs joined by single hyphens.
var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// frontmatter is what Talon reads of a SKILL.md header. Pointers tell an
// absent key from an empty one. OpenClaw also accepts the command-* keys
// spelled with underscores, so both spellings are fields.
type frontmatter struct {
	Name                   *string `yaml:"name"`
	Description            *string `yaml:"description"`
	Metadata               any     `yaml:"metadata"`
	UserInvocable          *bool   `yaml:"user-invocable"`
	DisableModelInvocation *bool   `yaml:"disable-model-invocation"`
	CommandDispatch        *string `yaml:"command-dispatch"`
	CommandDispatchU       *string `yaml:"command_dispatch"`
	CommandTool            *string `yaml:"command-tool"`
	CommandToolU           *string `yaml:"command_tool"`
	CommandArgMode         *string `yaml:"command-arg-mode"`
	CommandArgModeU        *string `yaml:"command_arg_mode"`
}

// Parse reads one SKILL.md. file is its path relative to the workspace
// (skills/<dir>/SKILL.md): it names the file in errors, and its directory
// is the skill's name when the frontmatter has none. The error is a
// Warning. The returned skill's Command is not yet made unique; Load does
// that across the set.
func Parse(file string, data []byte) (Skill, error) {
	p := parser{file: file}
	return p.parse(data)
}

type parser struct {
	file string
	fm   []string // frontmatter lines; fm[i] is line i+2 of the file
}

func (p *parser) fail(line int, format string, args ...any) error {
	return Warning{Path: p.file, Line: line, Reason: fmt.Sprintf(format, args...)}
}

// keyLine is the file line of a top-level frontmatter key, or 0.
func (p *parser) keyLine(key string) int {
	for i, l := range p.fm {
		for _, k := range []string{key, `"` + key + `"`, `'` + key + `'`} {
			if rest, ok := strings.CutPrefix(l, k); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), ":") {
				return i + 2
			}
		}
	}
	return 0
}

// maxDepth bounds the nesting of flow collections ([ and {) in the
// frontmatter; metadata needs a handful.
const maxDepth = 10

// tooDeep returns the file line where [ and { nest deeper than maxDepth, or
// 0. Brackets inside quotes count too: that only errs on the safe side.
func tooDeep(fm []string) int {
	depth := 0
	for i, l := range fm {
		for _, c := range l {
			switch c {
			case '[', '{':
				if depth++; depth > maxDepth {
					return i + 2
				}
			case ']', '}':
				depth = max(depth-1, 0)
			}
		}
	}
	return 0
}

// keyAt is the top-level key whose value is on a file line, for messages.
func (p *parser) keyAt(line int) string {
	for i := min(line-2, len(p.fm)-1); i >= 0; i-- {
		if k, _, ok := strings.Cut(p.fm[i], ":"); ok && k != "" && k[0] != ' ' && k[0] != '\t' && k[0] != '-' && k[0] != '#' {
			return strings.Trim(k, `"' `)
		}
	}
	return "a value"
}

func (p *parser) parse(data []byte) (Skill, error) {
	if len(data) > MaxFileSize {
		return Skill{}, p.fail(0, "file is %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	if !utf8.Valid(data) {
		return Skill{}, p.fail(0, "file is not UTF-8 text")
	}
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\uFEFF"))), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if strings.TrimRight(lines[0], " \t") != "---" {
		return Skill{}, p.fail(1, `no frontmatter: the file must start with a line "---", then YAML with at least name and description, then "---"`)
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " \t"); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return Skill{}, p.fail(1, `frontmatter is not closed: no line "---" after the opening one`)
	}
	p.fm = lines[1:end]
	// A leading newline makes YAML's line numbers the file's.
	src := "\n" + strings.Join(p.fm, "\n") + "\n"
	// The YAML decoder slows down sharply with size and nesting, and the
	// agent itself can write skill files: keep what it is given small.
	if len(src) > MaxFrontmatter {
		return Skill{}, p.fail(1, "frontmatter is %d bytes, more than the %d allowed", len(src), MaxFrontmatter)
	}
	if line := tooDeep(p.fm); line > 0 {
		return Skill{}, p.fail(line, "frontmatter nests brackets more than %d deep", maxDepth)
	}
	// Aliases can expand a small header into a huge value; a skill header
	// has no use for them.
	for _, tk := range lexer.Tokenize(src) {
		if tk.Type == token.AliasType {
			return Skill{}, p.fail(tk.Position.Line, "YAML aliases (*%s) are not allowed in skill frontmatter", tk.Value)
		}
	}
	var f frontmatter
	if err := yaml.UnmarshalWithOptions([]byte(src), &f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && te.Token != nil {
			want := "text"
			if te.DstType != nil && te.DstType.Kind() == reflect.Bool {
				want = "true or false"
			}
			line := te.Token.Position.Line
			return Skill{}, p.fail(line, "%s must be %s, not %q", p.keyAt(line), want, te.Token.Value)
		}
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			return Skill{}, p.fail(ye.GetToken().Position.Line, "frontmatter is not valid YAML: %s", ye.GetMessage())
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return Skill{}, p.fail(0, "frontmatter is not valid YAML: %s", msg)
	}
	return p.build(&f)
}

func (p *parser) build(f *frontmatter) (Skill, error) {
	s := Skill{Path: p.file, UserInvocable: true}
	if f.Name != nil && strings.TrimSpace(*f.Name) != "" {
		s.Name = strings.TrimSpace(*f.Name)
		if err := checkName(s.Name); err != nil {
			return Skill{}, p.fail(p.keyLine("name"), "name %q %v", s.Name, err)
		}
	} else {
		s.Name = path.Base(path.Dir(p.file))
		if err := checkName(s.Name); err != nil {
			return Skill{}, p.fail(0, "no name in the frontmatter, and the directory name %q %v", s.Name, err)
		}
	}
	if f.Description != nil {
		s.Description = strings.TrimSpace(*f.Description)
	}
	switch n := utf8.RuneCountInString(s.Description); {
	case n == 0:
		return Skill{}, p.fail(p.keyLine("description"), "description is missing: the model chooses skills by it")
	case n > MaxDescriptionLen:
		return Skill{}, p.fail(p.keyLine("description"), "description is %d characters, more than the %d allowed", n, MaxDescriptionLen)
	}
	if f.UserInvocable != nil {
		s.UserInvocable = *f.UserInvocable
	}
	if f.DisableModelInvocation != nil {
		s.DisableModelInvocation = *f.DisableModelInvocation
	}
	b, err := p.metadata(f.Metadata, &s)
	if err != nil {
		return Skill{}, err
	}
	if err := p.dispatch(f, b, &s); err != nil {
		return Skill{}, err
	}
	s.Command = commandName(s.Name)
	return s, nil
}

func checkName(name string) error {
	switch {
	case len(name) > MaxNameLen:
		return fmt.Errorf("is %d characters, more than the %d allowed", len(name), MaxNameLen)
	case !nameRE.MatchString(name):
		return errors.New("is not lower-case letters and digits joined by single hyphens (like generate-image)")
	}
	return nil
}

// block is metadata.openclaw (or the legacy metadata.clawdbot), undecoded.
type block struct {
	name   string
	fields map[string]json.RawMessage
}

// metadata checks the metadata value, stores it as JSON in s, and returns
// its openclaw block.
func (p *parser) metadata(v any, s *Skill) (block, error) {
	if v == nil {
		return block{}, nil
	}
	line := p.keyLine("metadata")
	var raw []byte
	switch m := v.(type) {
	case string:
		// OpenClaw's documented form is one line of JSON; quoted, YAML
		// hands it over as a string.
		raw = []byte(strings.TrimSpace(m))
	case map[string]any:
		b, err := json.Marshal(m)
		if err != nil {
			return block{}, p.fail(line, "metadata cannot be turned into JSON: %v", err)
		}
		raw = b
	default:
		return block{}, p.fail(line, "metadata must be a JSON object, not %s", yamlKind(v))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return block{}, p.fail(line, "metadata must be a JSON object")
	}
	s.Metadata = json.RawMessage(raw)
	b := block{name: "openclaw"}
	data, ok := obj[b.name]
	if !ok {
		b.name = "clawdbot"
		if data, ok = obj[b.name]; !ok {
			return block{}, nil
		}
	}
	if err := json.Unmarshal(data, &b.fields); err != nil || b.fields == nil {
		return block{}, p.fail(line, "metadata.%s must be a JSON object", b.name)
	}
	if e, ok := b.fields["emoji"]; ok {
		if err := json.Unmarshal(e, &s.Emoji); err != nil {
			return block{}, p.fail(line, "metadata.%s.emoji must be a string", b.name)
		}
	}
	return b, nil
}

func yamlKind(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case bool:
		return "a boolean"
	case uint64, int64, int, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// setting is where and how a command-* key was given; where is empty when
// it was not.
type setting struct {
	where, value string
	line         int
}

// setting reads one command-* key from the top level (either spelling) and
// from the metadata block, refusing places that disagree.
func (p *parser) setting(hyphen string, top, topU *string, b block) (setting, error) {
	var given []setting
	if top != nil {
		given = append(given, setting{hyphen, strings.TrimSpace(*top), p.keyLine(hyphen)})
	}
	if under := strings.ReplaceAll(hyphen, "-", "_"); topU != nil {
		given = append(given, setting{under, strings.TrimSpace(*topU), p.keyLine(under)})
	}
	if raw, ok := b.fields[hyphen]; ok {
		where, line := "metadata."+b.name+"."+hyphen, p.keyLine("metadata")
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return setting{}, p.fail(line, "%s must be a string", where)
		}
		given = append(given, setting{where, strings.TrimSpace(v), line})
	}
	if len(given) == 0 {
		return setting{}, nil
	}
	got := given[0]
	for _, g := range given[1:] {
		if g.value != got.value {
			return setting{}, p.fail(g.line, "%s is %q but %s is %q: give it once", got.where, got.value, g.where, g.value)
		}
	}
	if got.value == "" {
		return setting{}, p.fail(got.line, "%s is empty", got.where)
	}
	return got, nil
}

// dispatch reads command-dispatch, command-tool and command-arg-mode.
func (p *parser) dispatch(f *frontmatter, b block, s *Skill) error {
	mode, err := p.setting("command-dispatch", f.CommandDispatch, f.CommandDispatchU, b)
	if err != nil {
		return err
	}
	tool, err := p.setting("command-tool", f.CommandTool, f.CommandToolU, b)
	if err != nil {
		return err
	}
	arg, err := p.setting("command-arg-mode", f.CommandArgMode, f.CommandArgModeU, b)
	if err != nil {
		return err
	}
	if mode.where == "" {
		for _, x := range []setting{tool, arg} {
			if x.where != "" {
				return p.fail(x.line, "%s is set but command-dispatch is not: add command-dispatch: tool, or remove it", x.where)
			}
		}
		return nil
	}
	if !strings.EqualFold(mode.value, "tool") {
		return p.fail(mode.line, `%s is %q; the only dispatch is "tool"`, mode.where, mode.value)
	}
	if arg.where != "" && !strings.EqualFold(arg.value, "raw") {
		return p.fail(arg.line, `%s is %q; the only argument mode is "raw"`, arg.where, arg.value)
	}
	switch {
	case tool.where == "":
		return p.fail(mode.line, "%s is tool but command-tool, the tool to call, is missing", mode.where)
	case !tools.ValidName(tool.value):
		return p.fail(tool.line, "%s %q is not a tool name (lower-case letters, digits and _, starting with a letter, at most %d)",
			tool.where, tool.value, tools.MaxNameLen)
	}
	s.Tool = tool.value
	return nil
}

// commandName is the slash command OpenClaw derives from a skill name:
// lower case, each run of characters other than letters, digits and "_"
// made one "_", trimmed of "_", cut to 32 characters.
func commandName(name string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
			continue
		}
		if !under {
			b.WriteByte('_')
			under = true
		}
	}
	c := strings.Trim(b.String(), "_")
	if len(c) > maxCommandLen {
		c = c[:maxCommandLen]
	}
	if c == "" {
		return "skill"
	}
	return c
}

// maxCommandLen is OpenClaw's limit on a skill command's length.
const maxCommandLen = 32
