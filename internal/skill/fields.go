package skill

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"talon/internal/tools"
)

// nameRE is the AgentSkills name rule: lower-case letters and digits in
// runs joined by single hyphens.
var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// build checks the decoded frontmatter and turns it into a Skill.
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
