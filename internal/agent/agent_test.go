package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/llm"
)

func mustConfig(t *testing.T, src string) *config.Config {
	t.Helper()
	f, err := config.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

func TestBuildPrompt(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"AGENTS.md": "be brief", "SOUL.md": strings.Repeat("x", 30), "BOOTSTRAP.md": "introduce yourself", "NOTES.md": "not a bootstrap file",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tools := []llm.ToolSpec{{Name: "read", Description: "Read a file.\nMore."}}
	cases := []struct {
		name     string
		in       promptInput
		contains []string
		lacks    []string
	}{
		{"first run", promptInput{root: root, firstRun: true, maxChars: 100, tools: tools, agentID: "main"},
			[]string{"## AGENTS.md\n\nbe brief", "## BOOTSTRAP.md\n\nintroduce yourself", "- read: Read a file.", `agent "main"`},
			[]string{"not a bootstrap file", "More."}},
		{"later run", promptInput{root: root, maxChars: 100, agentID: "main"},
			[]string{"be brief"}, []string{"introduce yourself", "## Tools"}},
		{"cap marks the cut", promptInput{root: root, maxChars: 10, agentID: "main"},
			[]string{"xxxxxxxxxx\n[…truncated: 20 more characters]"}, nil},
		{"caller instructions", promptInput{root: root, maxChars: 100, extra: "answer in French", agentID: "main"},
			[]string{"## Instructions from the caller\n\nanswer in French"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, problems := buildPrompt(c.in)
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			for _, s := range c.contains {
				if !strings.Contains(got, s) {
					t.Errorf("prompt lacks %q:\n%s", s, got)
				}
			}
			for _, s := range c.lacks {
				if strings.Contains(got, s) {
					t.Errorf("prompt has %q:\n%s", s, got)
				}
			}
		})
	}
}
