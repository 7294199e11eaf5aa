package skill

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"talon/internal/tools"
)

// FuzzParse feeds arbitrary files to the frontmatter parser: it must never
// panic, and whatever it accepts must meet the rules Load promises.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "workspace", "skills", "*", FileName))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "---\n---\n", "---\nname: a\n", "---\nname: &a x\ndescription: *a\n---\n",
		"---\nname: x\ndescription: d\nmetadata: '{\"openclaw\":{\"command-dispatch\":\"tool\"}}'\n---\n",
		"---\nname: x\ndescription: d\nmetadata: {openclaw: {command-tool: [1]}}\n---\n",
		"---\r\nname: x\r\ndescription: d\r\ncommand_dispatch: tool\r\ncommand_tool: t\r\n...\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("skills/fuzz/SKILL.md", data)
		if err != nil {
			if _, ok := err.(Warning); !ok {
				t.Fatalf("error is %T, not a Warning", err)
			}
			return
		}
		if checkName(s.Name) != nil {
			t.Fatalf("accepted bad name %q", s.Name)
		}
		if n := utf8.RuneCountInString(s.Description); n == 0 || n > MaxDescriptionLen || strings.TrimSpace(s.Description) != s.Description {
			t.Fatalf("accepted bad description %q", s.Description)
		}
		if s.Tool != "" && !tools.ValidName(s.Tool) {
			t.Fatalf("accepted bad tool %q", s.Tool)
		}
		if s.Metadata != nil && !json.Valid(s.Metadata) {
			t.Fatalf("metadata is not JSON: %s", s.Metadata)
		}
		if s.Command == "" || len(s.Command) > maxCommandLen {
			t.Fatalf("bad command %q", s.Command)
		}
		// A dispatch skill must be reachable by its command.
		set := Set{skills: []Skill{s}}
		if c, ok := set.Dispatch("/" + s.Command + " x"); ok != (s.Tool != "" && s.UserInvocable) || ok && c.Tool != s.Tool {
			t.Fatalf("Dispatch(/%s) = %+v, %v for %+v", s.Command, c, ok, s)
		}
	})
}
