package template

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/policy"
)

const validManifest = `type: demo
name: Demo
description: A demo employee.
`

// writeTree creates files under dir; a value of "/" makes a directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if body == "/" {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func baseFiles(manifest string) map[string]string {
	return map[string]string{
		"template.yaml": manifest,
		"AGENTS.md":     "# Agents\n",
		"SOUL.md":       "# Soul\n",
		"IDENTITY.md":   "# Identity\n",
	}
}

const goodTool = `name: post_note
description: Post a note.
parameters:
  text: {type: string, description: The note., required: true}
request:
  method: POST
  url: "https://api.example.com/notes"
  body: {type: json, content: {text: "{{params.text}}"}}
allowed_hosts: [api.example.com]
`

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(m map[string]string)
		dir    string // template directory name; "demo" by default
		errHas string
	}{
		{"unknown key", func(m map[string]string) { m["template.yaml"] = validManifest + "colour: red\n" }, "", `line 4 column 1: unknown field "colour"`},
		{"wrong type", func(m map[string]string) { m["template.yaml"] = validManifest + "skills: web\n" }, "", "line 4"},
		{"empty manifest", func(m map[string]string) { m["template.yaml"] = "  \n" }, "", "template.yaml is empty"},
		{"missing manifest", func(m map[string]string) { delete(m, "template.yaml") }, "", "template.yaml is missing"},
		{"missing type", func(m map[string]string) { m["template.yaml"] = "name: X\ndescription: Y\n" }, "", `"type" is required`},
		{"bad slug", func(m map[string]string) { m["template.yaml"] = "type: Demo_1\nname: X\ndescription: Y\n" }, "", `"type" "Demo_1" is not a valid slug`},
		{"type not dir", nil, "other", `"type" is "demo" but the directory is "other"`},
		{"missing name", func(m map[string]string) { m["template.yaml"] = "type: demo\ndescription: Y\n" }, "", `"name" is required`},
		{"missing description", func(m map[string]string) { m["template.yaml"] = "type: demo\nname: X\n" }, "", `"description" is required`},
		{"bad model", func(m map[string]string) { m["template.yaml"] = validManifest + "model: gpt4\n" }, "", `"model" "gpt4" is not a model reference`},
		{"bad tool", func(m map[string]string) {
			m["template.yaml"] = validManifest + "requiredTools: {alsoAllow: [Web-Fetch]}\n"
		}, "", `requiredTools.alsoAllow[0] "Web-Fetch": not a tool name`},
		{"wildcard", func(m map[string]string) { m["template.yaml"] = validManifest + "requiredTools: {alsoAllow: ['*']}\n" }, "", "wildcards are not allowed"},
		{"twice", func(m map[string]string) {
			m["template.yaml"] = validManifest + "requiredTools: {alsoAllow: [web_fetch, web_fetch]}\n"
		}, "", "listed twice"},
		{"unknown plugin", func(m map[string]string) {
			m["template.yaml"] = validManifest + "requiredTools: {plugins: [voice-call]}\n"
		}, "", `requiredTools.plugins[0] "voice-call": unknown plugin: Talon's plugins are`},
		{"bad sandbox mode", func(m map[string]string) { m["template.yaml"] = validManifest + "sandbox: {mode: always}\n" }, "", "sandbox.mode"},
		{"bad exec ask", func(m map[string]string) { m["template.yaml"] = validManifest + "exec: {ask: sometimes}\n" }, "", "exec.ask"},
		{"host sandbox", func(m map[string]string) {
			m["template.yaml"] = validManifest + "sandbox: {mode: all, backend: host}\n"
		}, "", "sandbox"},
		{"unsandboxed employee", func(m map[string]string) {
			m["template.yaml"] = validManifest + "sandbox: {mode: non-main, backend: bwrap}\n"
		}, "", `sandbox.mode: a tenant's sessions always run sandboxed, so mode must be "all"`},
		{"sandbox off", func(m map[string]string) {
			m["template.yaml"] = validManifest + "sandbox: {mode: \"off\"}\n"
		}, "", `sandbox.mode: a tenant's sessions always run sandboxed`},
		{"empty inline", func(m map[string]string) { m["template.yaml"] = validManifest + "soul: ''\n" }, "", `"soul" is empty`},
		{"missing soul", func(m map[string]string) { delete(m, "SOUL.md") }, "", `SOUL.md is missing: add the file or an inline "soul" text`},
		{"missing identity", func(m map[string]string) { delete(m, "IDENTITY.md") }, "", `IDENTITY.md is missing`},
		{"stray file", func(m map[string]string) { m["notes.txt"] = "x" }, "", "notes.txt is not part of a template"},
		{"stray dir", func(m map[string]string) { m["build/"] = "/" }, "", "build is not part of a template"},
		{"skill file", func(m map[string]string) { m["skills/x.md"] = "x" }, "", "skills/x.md: a skill is a directory"},
		{"skill missing", func(m map[string]string) { m["skills/a/README.md"] = "x" }, "", "skills/a/SKILL.md is missing"},
		{"skill broken", func(m map[string]string) { m["skills/a/SKILL.md"] = "---\nname: [\n---\n" }, "", "skills/a/SKILL.md"},
		{"api tool broken", func(m map[string]string) {
			m["template.yaml"] = validManifest + "requiredTools: {alsoAllow: [post_note], plugins: [api-tools]}\n"
			m["api-tools/post_note.yaml"] = "name: post_note\n"
		}, "", `api-tools/post_note.yaml`},
		{"api tool not allowed", func(m map[string]string) {
			m["template.yaml"] = validManifest + "requiredTools: {plugins: [api-tools]}\n"
			m["api-tools/post_note.yaml"] = goodTool
		}, "", `tool "post_note" is not in requiredTools.alsoAllow`},
		{"api plugin missing", func(m map[string]string) {
			m["template.yaml"] = validManifest + "requiredTools: {alsoAllow: [post_note]}\n"
			m["api-tools/post_note.yaml"] = goodTool
		}, "", `requiredTools.plugins does not list "api-tools"`},
		{"api-tools stray", func(m map[string]string) { m["api-tools/readme.md"] = "x" }, "", "api-tools/readme.md: api-tools/ holds one .yaml file"},
		{"big file", func(m map[string]string) { m["USER.md"] = strings.Repeat("x", MaxFileSize+1) }, "", "USER.md is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := baseFiles(validManifest)
			if c.edit != nil {
				c.edit(files)
			}
			name := c.dir
			if name == "" {
				name = "demo"
			}
			dir := filepath.Join(t.TempDir(), name)
			writeTree(t, dir, files)
			_, err := Load(dir)
			if err == nil {
				t.Fatalf("Load succeeded; want an error containing %q", c.errHas)
			}
			if !strings.Contains(err.Error(), c.errHas) {
				t.Fatalf("error %q does not contain %q", err, c.errHas)
			}
		})
	}
}

func TestLoadSymlink(t *testing.T) {
	for _, link := range []string{"USER.md", "memory/x.md"} {
		t.Run(link, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "demo")
			writeTree(t, dir, baseFiles(validManifest))
			if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), link+" is a symlink") {
				t.Fatalf("got %v, want a symlink refusal naming %s", err, link)
			}
		})
	}
}

func TestInlineAndFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	files := baseFiles(validManifest + "soul: inline soul\nagents: inline agents\n")
	delete(files, "SOUL.md")
	files["canvas/"] = "/"
	files["memory/seed.md"] = "seed"
	files["MEMORY.md"] = "long term"
	files["skills/s/SKILL.md"] = "---\nname: s\ndescription: A skill.\n---\nbody\n"
	writeTree(t, dir, files)
	if err := os.WriteFile(filepath.Join(dir, "BOOT.md"), []byte("boot"), 0o755); err != nil {
		t.Fatal(err)
	}
	tp, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range tp.Files() {
		got[f.Path] = f.Mode.String() + " " + string(f.Data)
	}
	want := map[string]string{
		"AGENTS.md":         "-rw-r--r-- # Agents\n", // the file wins over inline text
		"SOUL.md":           "-rw-r--r-- inline soul",
		"IDENTITY.md":       "-rw-r--r-- # Identity\n",
		"BOOT.md":           "-rwxr-xr-x boot",
		"skills":            "drwxr-xr-x ",
		"skills/s":          "drwxr-xr-x ",
		"skills/s/SKILL.md": "-rw-r--r-- ---\nname: s\ndescription: A skill.\n---\nbody\n",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Files (-want +got):\n%s", d)
	}
	var seed []string
	for _, f := range tp.Seed() {
		seed = append(seed, f.Path)
	}
	if d := cmp.Diff([]string{"MEMORY.md", "canvas", "memory", "memory/seed.md"}, seed); d != "" {
		t.Errorf("Seed (-want +got):\n%s", d)
	}
}

func TestToolsFollowPolicyDefault(t *testing.T) {
	tp := &Template{AlsoAllow: []string{"web_fetch", "exec", "memory_get"}}
	want := append(slices.Clone(policy.SandboxDefaultAllow), "web_fetch", "memory_get")
	if d := cmp.Diff(want, tp.Tools().SandboxAllow); d != "" {
		t.Fatalf("SandboxAllow (-want +got):\n%s", d)
	}
	// The list is read at call time: a change of the policy default shows.
	saved := policy.SandboxDefaultAllow
	t.Cleanup(func() { policy.SandboxDefaultAllow = saved })
	policy.SandboxDefaultAllow = []string{"read", "new_core_tool"}
	if d := cmp.Diff([]string{"read", "new_core_tool", "web_fetch", "exec", "memory_get"}, tp.Tools().SandboxAllow); d != "" {
		t.Fatalf("after changing the default (-want +got):\n%s", d)
	}
	if got := (&Template{}).Tools(); got.SandboxAllow != nil || got.AlsoAllow != nil {
		t.Fatalf("no alsoAllow should leave the sandbox default alone, got %+v", got)
	}
}

// TestShippedTemplates loads templates/ at the repository root and checks
// each employee's entry decodes as a valid agents.list[] entry.
func TestShippedTemplates(t *testing.T) {
	ts, errs := LoadAll(filepath.Join("..", "..", "..", "templates"))
	for _, err := range errs {
		t.Error(err)
	}
	got := map[string]*Template{}
	for _, tp := range ts {
		got[tp.Slug] = tp
	}
	for _, slug := range []string{"researcher", "social", "coder"} {
		tp := got[slug]
		if tp == nil {
			t.Fatalf("template %q not loaded", slug)
		}
		tree := config.NewObject(config.Member{Key: "agents", Value: config.NewObject(
			config.Member{Key: "list", Value: config.NewArray(tp.AgentEntry("agents/" + slug))})})
		var c config.Config
		if _, err := config.Decode(tree, &c); err != nil {
			t.Fatalf("%s: %v", slug, err)
		}
		if issues := config.Validate(&c); len(issues) > 0 {
			t.Fatalf("%s: %v", slug, issues)
		}
		a := c.Agents.List[0]
		switch slug {
		case "researcher":
			if !slices.Contains(a.Tools.Sandbox.Tools.Allow, "web_fetch") || !slices.Contains(a.Tools.AlsoAllow, "memory_search") {
				t.Errorf("researcher tools: %+v", a.Tools)
			}
		case "social":
			if !slices.Contains(tp.Plugins, "api-tools") || !slices.Contains(a.Tools.Sandbox.Tools.Allow, "publish_linkedin") {
				t.Errorf("social: plugins %v tools %+v", tp.Plugins, a.Tools)
			}
		case "coder":
			if a.Sandbox.Mode != "all" || a.Sandbox.Backend != "bwrap" || a.Tools.Exec == nil || a.Tools.Exec.Ask != "on-miss" || a.Tools.Exec.Security != "allowlist" {
				t.Errorf("coder: sandbox %+v exec %+v", a.Sandbox, a.Tools.Exec)
			}
		}
	}
}
