package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/platform"
)

// TestTemplatesSync: `talon templates sync --dry-run` prints per tenant
// what a changed template would change and writes nothing; without
// --dry-run it applies it, keeping (and saying so) the employee's copy of
// a file both changed and leaving the employee's own files alone, and a
// second run finds nothing to do.
func TestTemplatesSync(t *testing.T) {
	state, tpl := t.TempDir(), t.TempDir()
	write := func(agents, soul string) {
		for name, content := range map[string]string{
			"template.yaml": "type: helper\nname: Helper\ndescription: Helps\nemoji: \"🧩\"\ncategory: general\nskills: []\nmodel: inspect\n",
			"AGENTS.md":     agents, "SOUL.md": soul, "IDENTITY.md": "- Name: Helper\n",
		} {
			p := filepath.Join(tpl, "helper", name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("# v1\n", "Calm.\n")
	ctx := context.Background()
	st, err := platform.OpenStore(ctx, state, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.New(ctx, platform.Options{StateDir: state, Templates: tpl, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acme", "globex"} {
		if _, err := p.CreateTenant(ctx, id, id, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Install(ctx, id, "helper"); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	ws := filepath.Join(state, "tenants", "acme", "agents", "helper")
	for name, body := range map[string]string{"SOUL.md": "my own soul\n", "USER.md": "the user\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# v2\n", "Calm and kind.\n")
	args := []string{"templates", "sync", "helper", "--state-dir", state, "--templates", tpl}
	out, errOut, code := talon(t, "", append(args, "--dry-run")...)
	if code != 0 || !strings.Contains(out, "acme/helper: would change:\n  ~ AGENTS.md") || !strings.Contains(out, "globex/helper: would change:") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	agents := filepath.Join(state, "tenants", "acme", "agents", "helper", "AGENTS.md")
	if b, _ := os.ReadFile(agents); string(b) != "# v1\n" {
		t.Fatalf("the dry run wrote AGENTS.md: %q", b)
	}
	out, errOut, code = talon(t, "", args...)
	if code != 0 || !strings.Contains(out, "acme/helper: changed:") || !strings.Contains(out, "  ! kept your copy of SOUL.md as SOUL.md.local-") ||
		!strings.Contains(out, "globex/helper: changed:\n  ~ AGENTS.md\n  ~ SOUL.md") {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(agents); string(b) != "# v2\n" {
		t.Fatalf("AGENTS.md after sync: %q", b)
	}
	copies, _ := filepath.Glob(filepath.Join(ws, "SOUL.md.local-*"))
	if len(copies) != 1 {
		t.Fatalf("kept copies: %v", copies)
	}
	for path, want := range map[string]string{copies[0]: "my own soul\n", filepath.Join(ws, "USER.md"): "the user\n", filepath.Join(ws, "SOUL.md"): "Calm and kind.\n"} {
		if b, _ := os.ReadFile(path); string(b) != want {
			t.Errorf("%s = %q, want %q", path, b, want)
		}
	}
	out, _, code = talon(t, "", append(args, "--dry-run")...)
	if code != 0 || strings.Count(out, "up to date") != 2 {
		t.Fatalf("second dry run: exit %d\n%s", code, out)
	}
	out, errOut, code = talon(t, "", "templates", "sync", "ghost", "--state-dir", state, "--templates", tpl)
	if code == 0 || !strings.Contains(errOut, `no such template "ghost"`) {
		t.Fatalf("unknown template: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = talon(t, "", "templates", "list", "--state-dir", state, "--templates", tpl)
	if code != 0 || !strings.Contains(out, "helper") || !strings.Contains(out, " 2 ") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
}
