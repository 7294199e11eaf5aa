package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"talon/internal/llm"
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
	tools := []llm.ToolSpec{{Name: "read", Description: "Read a file."}}
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

// TestPromptMemo: with the memo, each turn's prompt is the one built
// without it, whichever part changed since the turn before; an unchanged
// turn gets the kept string itself.
func TestPromptMemo(t *testing.T) {
	dir := t.TempDir()
	writeAt(t, filepath.Join(dir, "AGENTS.md"), "be brief", old)
	root := openTestRoot(t, dir)
	files := &fileCache{now: func() time.Time { return time.Now().Add(time.Hour) }}
	base := promptInput{root: root, maxChars: 100, agentID: "main", files: files,
		tools: []llm.ToolSpec{{Name: "read", Description: "Read a file."}}}
	steps := []struct {
		name   string
		change func(in *promptInput)
		same   bool // the prompt of the step before
	}{
		{"first", func(*promptInput) {}, false},
		{"again", func(*promptInput) {}, true},
		{"file edited", func(*promptInput) { writeAt(t, filepath.Join(dir, "AGENTS.md"), "be sharp", old.Add(time.Second)) }, false},
		{"file created", func(*promptInput) { writeAt(t, filepath.Join(dir, "USER.md"), "Ann", old) }, false},
		{"tool description", func(in *promptInput) { in.tools = []llm.ToolSpec{{Name: "read", Description: "Read."}} }, false},
		{"tool added", func(in *promptInput) {
			in.tools = append(in.tools, llm.ToolSpec{Name: "write", Description: "Write."})
		}, false},
		{"caller text", func(in *promptInput) { in.extra = "in French" }, false},
		{"first run", func(in *promptInput) { in.firstRun = true }, false},
		{"cap", func(in *promptInput) { in.maxChars = 3 }, false},
		{"skills", func(in *promptInput) { in.skills = "## Skills\n\n- demo" }, false},
		{"sandbox", func(in *promptInput) { in.sandbox = "You work in a sandbox." }, false},
		{"other agent", func(in *promptInput) { in.agentID = "ops" }, false},
		{"unchanged", func(*promptInput) {}, true},
	}
	memo := &promptMemo{}
	in := base
	var prev string
	for _, s := range steps {
		s.change(&in)
		plain := in
		plain.memo = nil
		want, _ := buildPrompt(plain)
		in.memo = memo
		got, _ := buildPrompt(in)
		if got != want {
			t.Errorf("%s: memo gave\n%s\nwant\n%s", s.name, got, want)
		}
		if kept := prev != "" && unsafe.StringData(got) == unsafe.StringData(prev); kept != s.same {
			t.Errorf("%s: the kept prompt returned: %v, want %v", s.name, kept, s.same)
		}
		prev = got
	}
}

// TestHeartbeatFileOnlyWithHeartbeats is R9.3: HEARTBEAT.md is part of
// an agent's prompt only when the agent runs scheduled heartbeats; a
// light context keeps it alone.
func TestHeartbeatFileOnlyWithHeartbeats(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, HeartbeatFile), []byte("- check the queue"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte("be kind"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := openTestRoot(t, dir)
	for _, c := range []struct{ heartbeat, light, checklist, soul bool }{
		{false, false, false, true},
		{true, false, true, true},
		{true, true, true, false}, // lightContext: the checklist alone
		{false, true, false, false},
	} {
		got, _ := buildPrompt(promptInput{root: root, maxChars: 100, agentID: "main", heartbeat: c.heartbeat, light: c.light})
		if strings.Contains(got, "check the queue") != c.checklist || strings.Contains(got, "be kind") != c.soul {
			t.Errorf("heartbeat %v light %v: checklist %v soul %v in\n%s", c.heartbeat, c.light, c.checklist, c.soul, got)
		}
	}
}
