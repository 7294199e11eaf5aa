package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/provider"
)

func mustConfig(t *testing.T, src string) *config.Config {
	t.Helper()
	f, err := config.Parse("test.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

func TestWorkspaceDir(t *testing.T) {
	home, _ := os.UserHomeDir()
	cases := []struct {
		name, cfg, agent, want string
	}{
		{"default agent", `{}`, "main", "/state/workspace"},
		{"other agent", `{agents:{list:[{id:"main"},{id:"ops"}]}}`, "ops", "/state/workspace-ops"},
		{"first listed is default", `{agents:{list:[{id:"somi"}]}}`, "somi", "/state/workspace"},
		{"explicit", `{agents:{list:[{id:"ops",workspace:"/srv/ops"}]}}`, "ops", "/srv/ops"},
		{"relative to state", `{agents:{list:[{id:"ops",workspace:"ws/ops"}]}}`, "ops", "/state/ws/ops"},
		{"home", `{agents:{list:[{id:"ops",workspace:"~/clawd"}]}}`, "ops", filepath.Join(home, "clawd")},
		{"defaults workspace", `{agents:{defaults:{workspace:"/w"},list:[{id:"main"},{id:"ops"}]}}`, "ops", "/w-ops"},
		{"defaults workspace, default agent", `{agents:{defaults:{workspace:"/w"}}}`, "main", "/w"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := WorkspaceDir(mustConfig(t, c.cfg), "/state", c.agent); got != c.want {
				t.Errorf("WorkspaceDir = %s, want %s", got, c.want)
			}
		})
	}
}

func TestModelRef(t *testing.T) {
	cases := []struct{ cfg, agent, want string }{
		{`{}`, "main", "inspect"},
		{`{agents:{defaults:{model:"openai/gpt-5.2"}}}`, "main", "openai/gpt-5.2"},
		{`{agents:{defaults:{model:{primary:"anthropic/claude"}}}}`, "main", "anthropic/claude"},
		{`{agents:{defaults:{model:"a/b"},list:[{id:"ops",model:"c/d"}]}}`, "ops", "c/d"},
		{`{agents:{defaults:{model:"a/b"},list:[{id:"ops",model:{primary:"e/f"}}]}}`, "ops", "e/f"},
	}
	for _, c := range cases {
		if got := ModelRef(mustConfig(t, c.cfg), c.agent); got != c.want {
			t.Errorf("%s: ModelRef = %s, want %s", c.cfg, got, c.want)
		}
	}
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
	tools := []provider.ToolSpec{{Name: "read", Description: "Read a file.\nMore."}}
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
