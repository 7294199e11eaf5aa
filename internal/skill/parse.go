package skill

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
	"talon/internal/safeyaml"
)

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
	if err := safeyaml.Unmarshal([]byte(src), &f); err != nil {
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
