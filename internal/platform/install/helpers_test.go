package install

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"talon/internal/config"
	"talon/internal/platform/template"
)

// writeFiles creates files under dir; "/" as content makes a directory.
func writeFiles(t testing.TB, dir string, files map[string]string) {
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

// readTree returns every regular file under dir by slash path.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const toolYAML = `name: %s
description: Post a note.
parameters:
  text: {type: string, description: The note., required: true}
request:
  method: POST
  url: "https://api.example.com/notes"
  body: {type: json, content: {text: "{{params.text}}"}}
allowed_hosts: [api.example.com]
`

// v1 and v2 are two versions of the template "demo": v2 changes a file,
// adds one, removes one, renames its API tool and changes alsoAllow.
var (
	v1 = map[string]string{
		"template.yaml": `type: demo
name: Demo
description: A demo employee.
model: openrouter/anthropic/claude-sonnet-4
requiredTools: {alsoAllow: [post_note, web_fetch], plugins: [api-tools]}
`,
		"AGENTS.md":                "agents v1\n",
		"SOUL.md":                  "soul v1\n",
		"IDENTITY.md":              "identity v1\n",
		"TOOLS.md":                 "tools v1 (removed in v2)\n",
		"skills/s/SKILL.md":        "---\nname: s\ndescription: Skill v1.\n---\nv1\n",
		"api-tools/post_note.yaml": fmt.Sprintf(toolYAML, "post_note"),
		"MEMORY.md":                "seed memory\n",
		"memory/seed.md":           "seed note\n",
		"canvas/":                  "/",
	}
	v2 = map[string]string{
		"template.yaml": `type: demo
name: Demo Two
description: A demo employee, improved.
model: openrouter/anthropic/claude-sonnet-4
requiredTools: {alsoAllow: [post_note2, memory_get], plugins: [api-tools]}
sandbox: {mode: all, backend: bwrap}
exec: {security: allowlist, ask: on-miss}
`,
		"AGENTS.md":                 "agents v2\n",
		"SOUL.md":                   "soul v1\n",
		"IDENTITY.md":               "identity v2\n",
		"HEARTBEAT.md":              "heartbeat v2 (new)\n",
		"skills/s/SKILL.md":         "---\nname: s\ndescription: Skill v2.\n---\nv2\n",
		"skills/t/SKILL.md":         "---\nname: t\ndescription: Skill t.\n---\nt\n",
		"api-tools/post_note2.yaml": fmt.Sprintf(toolYAML, "post_note2"),
		"MEMORY.md":                 "a different seed that must never overwrite the tenant's\n",
		"memory/seed.md":            "other seed\n",
	}
)

// loadVersion writes files as template "demo" under a fresh directory and
// loads it.
func loadVersion(t testing.TB, files map[string]string) *template.Template {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	writeFiles(t, dir, files)
	tp, err := template.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func loadConfig(t testing.TB, tn Tenant) *config.File {
	t.Helper()
	f, err := config.Load(tn.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// patchConfig merge-patches the tenant's config with JSON5 text.
func patchConfig(t testing.TB, tn Tenant, patch string) {
	t.Helper()
	p, err := config.ParseJSON5([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	f := loadConfig(t, tn)
	if _, err := config.Save(tn.ConfigPath, config.MergePatch(f.Tree, p)); err != nil {
		t.Fatal(err)
	}
}
