package install

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/platform/template"
	"talon/internal/store/catalog"
)

// base is template "demo" as first installed: it ships neither USER.md
// nor TOOLS.md, which the employee keeps (as Talon's AGENTS.md tells it).
func base() map[string]string {
	return map[string]string{
		"template.yaml":     "type: demo\nname: Demo\ndescription: A demo employee.\n",
		"AGENTS.md":         "agents v1\n",
		"SOUL.md":           "soul v1\n",
		"IDENTITY.md":       "identity v1\n",
		"BOOTSTRAP.md":      "bootstrap v1\n",
		"skills/s/SKILL.md": "---\nname: s\ndescription: Skill v1.\n---\nv1\n",
		"MEMORY.md":         "seed memory\n",
		"memory/seed.md":    "seed note\n",
	}
}

// employeeFiles are what the employee writes after the install: files the
// template does not ship, anywhere in the workspace.
var employeeFiles = map[string]string{
	"USER.md":                "# User\nPrefers short answers.\n",
	"TOOLS.md":               "# Tools\nThe printer is on floor 2.\n",
	"skills/mine/SKILL.md":   "---\nname: mine\ndescription: Mine.\n---\nmine\n",
	"notes/2026-03-13.md":    "met the client\n",
	"memory/2026-03-13.md":   "what we learned\n",
	"MEMORY.md":              "the tenant's long-term memory\n",
	"canvas/chart.svg":       "<svg/>",
	"api-tools/weather.yaml": "not a template's tool\n",
}

// fixedNow stamps kept copies in these tests.
var fixedNow = time.Date(2026, 3, 13, 10, 15, 0, 0, time.UTC)

const stampNow = "20260313-101500"

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

// entry is one path of a tree as the tests compare it: content (or "/"
// for a directory, "->target" for a symlink), mode and mtime.
type entry struct {
	Body  string
	Mode  fs.FileMode
	MTime time.Time
}

// snapshot lists every entry under dir, directories included.
func snapshot(t testing.TB, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		e := entry{Mode: fi.Mode(), MTime: fi.ModTime()}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			e.Body = "->" + target
		case d.IsDir():
			e.Body = "/"
		case !d.Type().IsRegular():
			e.Body = "special" // never opened: a FIFO would block
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Body = string(b)
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bodies is a snapshot's regular files and their contents.
func bodies(s map[string]entry) map[string]string {
	out := map[string]string{}
	for p, e := range s {
		if e.Mode.IsRegular() {
			out[p] = e.Body
		}
	}
	return out
}

// installed creates tenant acme in a fresh state dir, installs tp and
// lets the employee write employeeFiles; it returns the state dir, the
// tenant, the workspace and the installation's record.
func installed(t *testing.T, tp *template.Template) (string, Tenant, string, []catalog.ShippedFile) {
	t.Helper()
	state := t.TempDir()
	tn, err := CreateTenant(state, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Install(state, "acme", tp)
	if err != nil {
		t.Fatal(err)
	}
	if err := Settle(state, "acme", tp.Slug, res.Files); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(tn.Dir, "agents", tp.Slug)
	writeFiles(t, ws, employeeFiles)
	return state, tn, ws, res.Files
}

func setClock(t *testing.T) {
	saved := now
	now = func() time.Time { return fixedNow }
	t.Cleanup(func() { now = saved })
}

// TestOwnership runs an update over an installed workspace in which the
// employee wrote its own files (and, per case, edited or removed template
// files), and checks the workspace file by file: the template's changes
// arrive, nothing the employee wrote is lost or rewritten (mtimes
// included), an edited template file the template changes too is kept
// as <name>.local-<stamp>, and what the plan predicted is what happened.
func TestOwnership(t *testing.T) {
	setClock(t)
	local := func(p string) string { return p + LocalSuffix + stampNow }
	cases := []struct {
		name string
		// employee changes the workspace before the update.
		employee func(t *testing.T, ws string)
		next     map[string]string // the template after; nil: unchanged
		// want is the workspace's files after the update, beyond
		// employeeFiles, which must all be untouched unless in moved.
		want  map[string]string
		moved []string
		ch    Changes
		check func(t *testing.T, ws string)
	}{
		{
			name: "unchanged template, edited and deleted template files",
			employee: func(t *testing.T, ws string) {
				writeFiles(t, ws, map[string]string{"SOUL.md": "my own soul\n"})
				os.Remove(filepath.Join(ws, "BOOTSTRAP.md"))
			},
			want: map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "my own soul\n", "IDENTITY.md": "identity v1\n",
				"skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n"},
		},
		{
			name:     "the template changes a file the employee edited",
			employee: func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"SOUL.md": "my own soul\n"}) },
			next:     with(base(), "SOUL.md", "soul v2\n", "AGENTS.md", "agents v2\n"),
			want: map[string]string{"AGENTS.md": "agents v2\n", "SOUL.md": "soul v2\n", local("SOUL.md"): "my own soul\n",
				"IDENTITY.md": "identity v1\n", "BOOTSTRAP.md": "bootstrap v1\n", "skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n"},
			ch: Changes{Changed: []string{"AGENTS.md"}, Conflicts: []Conflict{{Path: "SOUL.md", Copy: local("SOUL.md")}}},
		},
		{
			name:     "the template changes another file",
			employee: func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"SOUL.md": "my own soul\n"}) },
			next:     with(base(), "AGENTS.md", "agents v2\n"),
			want: map[string]string{"AGENTS.md": "agents v2\n", "SOUL.md": "my own soul\n", "IDENTITY.md": "identity v1\n",
				"BOOTSTRAP.md": "bootstrap v1\n", "skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n"},
			ch: Changes{Changed: []string{"AGENTS.md"}},
		},
		{
			name:     "the template drops files, one of them edited",
			employee: func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"BOOTSTRAP.md": "my bootstrap\n"}) },
			next:     with(base(), "skills/s/SKILL.md", "", "BOOTSTRAP.md", ""),
			want: map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "soul v1\n", "IDENTITY.md": "identity v1\n",
				"BOOTSTRAP.md": "my bootstrap\n", "memory/seed.md": "seed note\n"},
			ch: Changes{Removed: []string{"skills/s/SKILL.md"}, Kept: []string{"BOOTSTRAP.md"}},
		},
		{
			name: "the template starts shipping files the employee has",
			next: with(base(), "USER.md", "# User\n(template)\n", "TOOLS.md", employeeFiles["TOOLS.md"]),
			want: map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "soul v1\n", "IDENTITY.md": "identity v1\n",
				"BOOTSTRAP.md": "bootstrap v1\n", "skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n",
				"USER.md": "# User\n(template)\n", local("USER.md"): employeeFiles["USER.md"]},
			moved: []string{"USER.md"},
			ch:    Changes{Conflicts: []Conflict{{Path: "USER.md", Copy: local("USER.md")}}},
		},
		{
			name:     "the template changes a file the employee deleted",
			employee: func(t *testing.T, ws string) { os.Remove(filepath.Join(ws, "BOOTSTRAP.md")) },
			next:     with(base(), "BOOTSTRAP.md", "bootstrap v2\n"),
			want: map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "soul v1\n", "IDENTITY.md": "identity v1\n",
				"BOOTSTRAP.md": "bootstrap v2\n", "skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n"},
			ch: Changes{Added: []string{"BOOTSTRAP.md"}},
		},
		{
			name: "a directory where the template changes a file",
			employee: func(t *testing.T, ws string) {
				os.Remove(filepath.Join(ws, "SOUL.md"))
				writeFiles(t, ws, map[string]string{"SOUL.md/part.md": "my soul, in parts\n"})
			},
			next: with(base(), "SOUL.md", "soul v2\n"),
			want: map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "soul v2\n", local("SOUL.md") + "/part.md": "my soul, in parts\n",
				"IDENTITY.md": "identity v1\n", "BOOTSTRAP.md": "bootstrap v1\n", "skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n"},
			ch: Changes{Conflicts: []Conflict{{Path: "SOUL.md", Copy: local("SOUL.md")}}},
		},
		{
			name: "a FIFO where the template changes a file",
			employee: func(t *testing.T, ws string) {
				os.Remove(filepath.Join(ws, "SOUL.md"))
				if err := syscall.Mkfifo(filepath.Join(ws, "SOUL.md"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			next: with(base(), "SOUL.md", "soul v2\n"),
			want: map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "soul v2\n",
				"IDENTITY.md": "identity v1\n", "BOOTSTRAP.md": "bootstrap v1\n", "skills/s/SKILL.md": base()["skills/s/SKILL.md"], "memory/seed.md": "seed note\n"},
			ch: Changes{Conflicts: []Conflict{{Path: "SOUL.md", Copy: local("SOUL.md")}}},
			check: func(t *testing.T, ws string) {
				if fi, err := os.Lstat(filepath.Join(ws, local("SOUL.md"))); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
					t.Errorf("the FIFO was not moved aside: %v %v", fi, err)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := loadVersion(t, base())
			state, tn, ws, record := installed(t, tp)
			if c.employee != nil {
				c.employee(t, ws)
			}
			next := tp
			if c.next != nil {
				next = loadVersion(t, c.next)
			}
			before := snapshot(t, ws)
			agentsBefore, _ := os.Stat(filepath.Join(tn.Dir, "agents"))

			plan, err := Plan(state, "acme", next, record)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, snapshot(t, ws)); d != "" {
				t.Fatalf("Plan changed the workspace:\n%s", d)
			}
			res, err := Update(state, "acme", next, record)
			if err != nil {
				t.Fatal(err)
			}
			c.ch.Tenant, c.ch.Slug = "acme", "demo"
			plan.Config = nil
			if d := cmp.Diff(c.ch, plan); d != "" {
				t.Errorf("Plan (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.ch, res.Changes); d != "" {
				t.Errorf("Update's changes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(Shipped(next), res.Files); d != "" {
				t.Errorf("Update's record (-want +got):\n%s", d)
			}
			after := snapshot(t, ws)
			want := with(employeeFiles)
			for _, m := range c.moved {
				delete(want, m)
			}
			for k, v := range c.want {
				want[k] = v
			}
			if d := cmp.Diff(want, bodies(after)); d != "" {
				t.Errorf("workspace (-want +got):\n%s", d)
			}
			for p := range employeeFiles {
				if contains(c.moved, p) {
					continue
				}
				if d := cmp.Diff(before[p], after[p]); d != "" {
					t.Errorf("the employee's %s was touched:\n%s", p, d)
				}
			}
			for _, m := range c.moved { // a rename keeps the file as it was
				if d := cmp.Diff(before[m], after[local(m)]); d != "" {
					t.Errorf("the kept copy of %s is not the employee's file as it was:\n%s", m, d)
				}
			}
			if c.check != nil {
				c.check(t, ws)
			}
			if c.next == nil {
				if d := cmp.Diff(before, after); d != "" {
					t.Errorf("an update with an unchanged template changed the workspace:\n%s", d)
				}
				if agentsAfter, _ := os.Stat(filepath.Join(tn.Dir, "agents")); !agentsAfter.ModTime().Equal(agentsBefore.ModTime()) {
					t.Error("an update with an unchanged template wrote in agents/ (a staging directory?)")
				}
			}
			leftovers(t, tn)
			// Updating again to the same template is a no-op.
			again := snapshot(t, ws)
			if res, err := Update(state, "acme", next, res.Files); err != nil || !res.Changes.Empty() || len(res.Changes.Kept) > 0 {
				t.Errorf("second update: %+v, %v", res.Changes, err)
			}
			if d := cmp.Diff(again, snapshot(t, ws)); d != "" {
				t.Errorf("a second update changed the workspace:\n%s", d)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// leftovers fails when an update left its journal or staging behind.
func leftovers(t *testing.T, tn Tenant) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(tn.Dir, ".install-demo.journal")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the journal is left")
	}
	entries, _ := os.ReadDir(filepath.Join(tn.Dir, "agents"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("agents/%s is left", e.Name())
		}
	}
}

// TestSymlinkInWorkspace: a symlink the employee put where the template
// has a directory is never followed, by a plan or an update: the update
// fails naming it and nothing outside the workspace changes.
func TestSymlinkInWorkspace(t *testing.T) {
	tp := loadVersion(t, base())
	state, _, ws, record := installed(t, tp)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"s/SKILL.md": "outside\n"})
	if err := os.Rename(filepath.Join(ws, "skills"), filepath.Join(ws, "skills.mine")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "skills")); err != nil {
		t.Fatal(err)
	}
	next := loadVersion(t, with(base(), "skills/s/SKILL.md", "---\nname: s\ndescription: Skill v2.\n---\nv2\n"))
	before := snapshot(t, outside)
	for _, run := range []func() error{
		func() error { _, err := Plan(state, "acme", next, record); return err },
		func() error { _, err := Update(state, "acme", next, record); return err },
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), "agents/demo/skills is a symlink") {
			t.Errorf("got %v, want a refusal naming agents/demo/skills", err)
		}
	}
	if d := cmp.Diff(before, snapshot(t, outside)); d != "" {
		t.Errorf("the symlink's target changed:\n%s", d)
	}
}

// TestUpdateWithoutRecord: an installation whose record is unknown (a
// Talon before records) counts as the template's only the files that
// hold exactly the new template's content. An update then writes the
// template's new files, keeps every other file at a template path as the
// employee's copy, and removes nothing — not even files an older template
// version shipped, since nothing proves it did.
func TestUpdateWithoutRecord(t *testing.T) {
	setClock(t)
	v1, v2 := loadVersion(t, base()), loadVersion(t, with(base(), "AGENTS.md", "agents v2\n", "BOOTSTRAP.md", "", "HEARTBEAT.md", "beat\n"))
	state, _, ws, _ := installed(t, v1)
	writeFiles(t, ws, map[string]string{"SOUL.md": "my own soul\n"})
	res, err := Update(state, "acme", v2, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{Tenant: "acme", Slug: "demo", Added: []string{"HEARTBEAT.md"}, Conflicts: []Conflict{
		{Path: "AGENTS.md", Copy: "AGENTS.md" + LocalSuffix + stampNow},
		{Path: "SOUL.md", Copy: "SOUL.md" + LocalSuffix + stampNow},
	}}
	if d := cmp.Diff(want, res.Changes); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	got := bodies(snapshot(t, ws))
	for p, body := range map[string]string{
		"AGENTS.md": "agents v2\n", "AGENTS.md" + LocalSuffix + stampNow: "agents v1\n",
		"SOUL.md": "soul v1\n", "SOUL.md" + LocalSuffix + stampNow: "my own soul\n",
		"BOOTSTRAP.md": "bootstrap v1\n", "HEARTBEAT.md": "beat\n", "USER.md": employeeFiles["USER.md"],
	} {
		if got[p] != body {
			t.Errorf("%s = %q, want %q", p, got[p], body)
		}
	}
}

// TestReinstall: uninstalling deletes the workspace with the employee's
// memory and files (as the platform says when it does it); installing
// again starts from the template, and no record of the first installation
// survives.
func TestReinstall(t *testing.T) {
	tp := loadVersion(t, base())
	state, tn, ws, _ := installed(t, tp)
	if err := Uninstall(state, "acme", "demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ws); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("workspace after uninstall: %v", err)
	}
	if _, ok, err := Pending(state, "acme", "demo"); ok || err != nil {
		t.Fatalf("a pending record survived the uninstall: %v", err)
	}
	res, err := Install(state, "acme", tp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"AGENTS.md": "agents v1\n", "SOUL.md": "soul v1\n", "IDENTITY.md": "identity v1\n", "BOOTSTRAP.md": "bootstrap v1\n",
		"skills/s/SKILL.md": base()["skills/s/SKILL.md"], "MEMORY.md": "seed memory\n", "memory/seed.md": "seed note\n"}
	if d := cmp.Diff(want, bodies(snapshot(t, ws))); d != "" {
		t.Errorf("workspace after reinstall (-want +got):\n%s", d)
	}
	if files, ok, err := Pending(state, "acme", "demo"); err != nil || !ok || !cmp.Equal(files, res.Files) {
		t.Errorf("pending record after install: %v %v %v", files, ok, err)
	}
	if err := Settle(state, "acme", "demo", res.Files); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := Pending(state, "acme", "demo"); ok {
		t.Error("Settle left the pending record")
	}
	leftovers(t, tn)
}
