package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/provider"
	"talon/internal/skill"
)

// TestBuildPromptSkills checks where the skill list lands: after the tool
// summary and before the workspace files, as in OpenClaw's prompt.
func TestBuildPromptSkills(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"AGENTS.md":                   "use the skills",
		"skills/demo/SKILL.md":        "---\nname: demo\ndescription: Shows the demo.\ncommand-dispatch: tool\ncommand-tool: demo_tool\n---\nbody",
		"skills/hidden/SKILL.md":      "---\nname: hidden\ndescription: Not for the model.\ndisable-model-invocation: true\n---\n",
		"skills/broken/SKILL.md":      "no frontmatter",
		"skills/plain-notes/SKILL.md": "---\nname: plain-notes\ndescription: |\n  Two lines\n  of description.\n---\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	set, warns := skill.Load(root)
	if len(warns) != 1 || warns[0].Path != "skills/broken/SKILL.md" {
		t.Fatalf("warnings = %v, want one for skills/broken/SKILL.md", warns)
	}
	tools := []provider.ToolSpec{{Name: "read", Description: "Read a file."}}
	cases := []struct {
		name     string
		skills   string
		contains []string // in this order
		lacks    []string
	}{
		{"skills between tools and files", set.Prompt(func(tool string) bool { return tool == "read" }),
			[]string{"## Tools", "- read: Read a file.", "## Skills", "open its file with the read tool",
				"- demo: Shows the demo. (file: skills/demo/SKILL.md; its tool demo_tool is not available in this run",
				"- plain-notes: Two lines of description. (file: skills/plain-notes/SKILL.md)",
				"## AGENTS.md\n\nuse the skills"},
			[]string{"hidden", "broken"}},
		{"no skills, no section", "", []string{"## Tools", "## AGENTS.md"}, []string{"## Skills"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, problems := buildPrompt(promptInput{root: root, maxChars: 100, tools: tools, agentID: "main", skills: c.skills})
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			rest := got
			for _, s := range c.contains {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("prompt lacks %q after the earlier parts:\n%s", s, got)
				}
				rest = rest[i+len(s):]
			}
			for _, s := range c.lacks {
				if strings.Contains(got, s) {
					t.Errorf("prompt has %q:\n%s", s, got)
				}
			}
		})
	}
}
