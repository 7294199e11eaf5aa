package platform

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/platform/install"
	"talon/internal/store"
	"talon/internal/store/catalog"
	"talon/internal/store/pg"
	"talon/internal/store/pg/pgtest"
)

// stores opens each catalog the platform runs on: SQLite, and the real
// PostgreSQL harness the store tests use.
var stores = []struct {
	name string
	open func(t *testing.T) catalog.Store
}{
	{"sqlite", func(t *testing.T) catalog.Store {
		c, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}},
	{"postgres", func(t *testing.T) catalog.Store {
		s, err := pg.Open(context.Background(), pgtest.Start(t).NewDB(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// stamped is one workspace entry: content ("/" for a directory), mode and
// modification time.
type stamped struct {
	Body  string
	Mode  fs.FileMode
	MTime time.Time
}

func treeOf(t *testing.T, dir string) map[string]stamped {
	t.Helper()
	out := map[string]stamped{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := stamped{Body: "/", Mode: fi.Mode(), MTime: fi.ModTime()}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Body = string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// employeeWrites is what the researcher writes at work: the files Talon's
// AGENTS.md tells agents to keep, a skill of its own, notes, memory.
var employeeWrites = map[string]string{
	"USER.md":                       "# User\nAnna, prefers sources in German.\n",
	"TOOLS.md":                      "# Tools\nThe archive needs a VPN.\n",
	"skills/press-review/SKILL.md":  "---\nname: press-review\ndescription: Weekly press review.\n---\nCollect, then summarise.\n",
	"notes/2026-03-13.md":           "Call with the editor.\n",
	"memory/2026-03-13-solar.md":    "Solar prices fell 12%.\n",
	"MEMORY.md":                     "# Memory\nAnna's team: energy.\n",
	"canvas/chart.svg":              "<svg/>",
	"api-tools/own-tool-notes.yaml": "kept as is\n",
}

// TestRestartKeepsEmployeeFiles is issue 18's case, on SQLite and on
// PostgreSQL: install researcher, let the employee write USER.md,
// TOOLS.md, a skill, notes and memory, edit SOUL.md, then restart (a new
// Platform over the same state dir and catalog, syncing every
// installation on start, as talon serve does) twice, sync, change the
// template on disk and sync, restart again, uninstall and reinstall. At
// every step nothing the employee wrote changes, an unchanged template
// writes nothing (mtimes compared), the template's changes arrive, and
// the employee's edit of a file the template changes is kept beside it.
func TestRestartKeepsEmployeeFiles(t *testing.T) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) { restartKeeps(t, sc.open(t)) })
	}
}

func restartKeeps(t *testing.T, st catalog.Store) {
	ctx := context.Background()
	state, tpl := t.TempDir(), filepath.Join(t.TempDir(), "templates")
	if err := os.CopyFS(filepath.Join(tpl, "researcher"), os.DirFS(filepath.Join("..", "..", "templates", "researcher"))); err != nil {
		t.Fatal(err)
	}
	opts := Options{StateDir: state, Templates: tpl, Store: st}
	p, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateTenant(ctx, "acme", "Acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Install(ctx, "acme", "researcher"); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(state, "tenants", "acme", "agents", "researcher")
	writeFiles(t, ws, employeeWrites)
	writeFiles(t, ws, map[string]string{"SOUL.md": "I answer in German.\n"})
	cfg := filepath.Join(state, "tenants", "acme", "talon.json")

	// restart starts a new platform and its start-up sync, which must
	// find nothing to do.
	restart := func(step string) {
		t.Helper()
		var err error
		if p, err = New(ctx, opts); err != nil {
			t.Fatal(err)
		}
		res, err := p.SyncAll(ctx, false)
		if err != nil || len(res) != 1 || res[0].Error != "" || len(res[0].Summary) != 0 {
			t.Fatalf("%s: start-up sync %+v, %v; want no changes", step, res, err)
		}
	}
	unchanged := func(step string, before map[string]stamped, cfgBefore os.FileInfo) {
		t.Helper()
		if d := cmp.Diff(before, treeOf(t, ws)); d != "" {
			t.Fatalf("%s changed the workspace (-before +after):\n%s", step, d)
		}
		if fi, _ := os.Stat(cfg); !fi.ModTime().Equal(cfgBefore.ModTime()) {
			t.Fatalf("%s rewrote the tenant's config", step)
		}
	}
	before := treeOf(t, ws)
	cfgBefore, _ := os.Stat(cfg)
	restart("the first restart")
	unchanged("the first restart", before, cfgBefore)
	restart("the second restart")
	unchanged("the second restart", before, cfgBefore)
	for _, dry := range []bool{true, false} {
		res, err := p.Sync(ctx, "researcher", dry)
		if err != nil || len(res) != 1 || len(res[0].Summary) != 0 {
			t.Fatalf("sync (dry run %v) of an unchanged template: %+v, %v", dry, res, err)
		}
	}
	unchanged("a sync of an unchanged template", before, cfgBefore)
	ins, err := p.Installations(ctx, catalog.Filter{TenantID: "acme"})
	if err != nil || len(ins) != 1 || len(ins[0].Files) != 3 {
		t.Fatalf("the installation's record: %+v, %v", ins, err)
	}

	// The template changes on disk, with no reload: SOUL.md (which the
	// employee edited), AGENTS.md, and a new skill.
	writeFiles(t, filepath.Join(tpl, "researcher"), map[string]string{
		"SOUL.md":                    "Curious, careful, cites everything.\n",
		"AGENTS.md":                  "# Researcher v2\n",
		"skills/fact-check/SKILL.md": "---\nname: fact-check\ndescription: Check a claim.\n---\nCheck it twice.\n",
	})
	dry, err := p.Sync(ctx, "researcher", true)
	if err != nil || len(dry) != 1 {
		t.Fatalf("dry run %+v, %v", dry, err)
	}
	copyOf := "SOUL.md" + install.LocalSuffix
	if c := dry[0].Conflicts; len(c) != 1 || c[0].Path != "SOUL.md" || !strings.HasPrefix(c[0].Copy, copyOf) {
		t.Fatalf("the dry run does not report the kept copy: %+v", dry[0])
	}
	res, err := p.Sync(ctx, "researcher", false)
	if err != nil || len(res) != 1 || res[0].Error != "" {
		t.Fatalf("sync %+v, %v", res, err)
	}
	want := []string{"+ skills/fact-check/SKILL.md", "~ AGENTS.md", "! kept your copy of SOUL.md as " + res[0].Conflicts[0].Copy + " (the template changed it too)"}
	if d := cmp.Diff(want, res[0].Summary); d != "" {
		t.Fatalf("sync summary (-want +got):\n%s", d)
	}
	after := treeOf(t, ws)
	for p, body := range employeeWrites {
		if d := cmp.Diff(before[p], after[p]); d != "" {
			t.Errorf("the sync touched the employee's %s (body %q):\n%s", p, body, d)
		}
	}
	for p, body := range map[string]string{
		"SOUL.md": "Curious, careful, cites everything.\n", res[0].Conflicts[0].Copy: "I answer in German.\n",
		"AGENTS.md": "# Researcher v2\n", "skills/fact-check/SKILL.md": "---\nname: fact-check\ndescription: Check a claim.\n---\nCheck it twice.\n",
	} {
		if after[p].Body != body {
			t.Errorf("%s = %q after the sync, want %q", p, after[p].Body, body)
		}
	}
	cfgBefore, _ = os.Stat(cfg)
	restart("the restart after the sync")
	unchanged("the restart after the sync", after, cfgBefore)

	// The template drops its new skill: it goes, the employee's stays.
	if err := os.RemoveAll(filepath.Join(tpl, "researcher", "skills")); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Sync(ctx, "researcher", false); err != nil || !slices.Equal(res[0].Summary, []string{"- skills/fact-check/SKILL.md"}) {
		t.Fatalf("sync after dropping the skill: %+v, %v", res, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "skills", "fact-check")); !os.IsNotExist(err) {
		t.Errorf("the dropped skill's directory is still there: %v", err)
	}
	if got := treeOf(t, ws)["skills/press-review/SKILL.md"]; got != before["skills/press-review/SKILL.md"] {
		t.Errorf("the employee's skill after the drop: %+v", got)
	}

	// Uninstall says what goes; a reinstall starts from the template.
	if err := p.Uninstall(ctx, "acme", "researcher"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace after uninstall: %v", err)
	}
	if _, err := p.Install(ctx, "acme", "researcher"); err != nil {
		t.Fatal(err)
	}
	got := treeOf(t, ws)
	if got["USER.md"].Body != "" || got["MEMORY.md"].Body != "" || got["SOUL.md"].Body != "Curious, careful, cites everything.\n" ||
		got["memory/README.md"].Body == "" {
		t.Errorf("workspace after reinstall: %v", got)
	}
	restart("the restart after the reinstall")
}

// writeFiles writes files under dir, making parents.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// installedResearcher is a platform over a copy of templates/researcher
// with researcher installed for acme, the employee's files written and
// SOUL.md edited.
func installedResearcher(t *testing.T, st catalog.Store) (p *Platform, opts Options, ws, tpl string) {
	t.Helper()
	ctx := context.Background()
	state := t.TempDir()
	tpl = filepath.Join(t.TempDir(), "templates")
	if err := os.CopyFS(filepath.Join(tpl, "researcher"), os.DirFS(filepath.Join("..", "..", "templates", "researcher"))); err != nil {
		t.Fatal(err)
	}
	opts = Options{StateDir: state, Templates: tpl, Store: st}
	p, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateTenant(ctx, "acme", "Acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Install(ctx, "acme", "researcher"); err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(state, "tenants", "acme", "agents", "researcher")
	writeFiles(t, ws, employeeWrites)
	writeFiles(t, ws, map[string]string{"SOUL.md": "I answer in German.\n"})
	return p, opts, ws, tpl
}

// TestRecordlessInstallation: an installation made by a Talon that kept
// no record of shipped files. When its recorded template hash is the
// current template's, the template's files are what it shipped: the
// start-up sync writes nothing and records them. When the template
// changed since, only files holding exactly its content count as its:
// the edited SOUL.md is kept as the employee's copy, and nothing the
// template cannot be shown to have shipped is removed.
func TestRecordlessInstallation(t *testing.T) {
	cases := []struct {
		name      string
		hash      func(current string) string
		conflicts []string
	}{
		{"same template", func(h string) string { return h }, nil},
		{"older template", func(string) string { return "an-older-template" }, []string{"SOUL.md"}},
	}
	for _, sc := range stores {
		for _, c := range cases {
			t.Run(sc.name+"/"+c.name, func(t *testing.T) {
				ctx := context.Background()
				st := sc.open(t)
				p, opts, ws, _ := installedResearcher(t, st)
				ins, err := p.Installations(ctx, catalog.Filter{})
				if err != nil {
					t.Fatal(err)
				}
				// What an earlier Talon left: the installation without files.
				if err := st.Uninstall(ctx, "acme", "researcher"); err != nil {
					t.Fatal(err)
				}
				if err := st.Install(ctx, catalog.Installation{TenantID: "acme", Slug: "researcher", TemplateHash: c.hash(ins[0].TemplateHash)}); err != nil {
					t.Fatal(err)
				}
				before := treeOf(t, ws)
				p, err = New(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				res, err := p.SyncAll(ctx, false)
				if err != nil || len(res) != 1 || res[0].Error != "" {
					t.Fatalf("start-up sync %+v, %v", res, err)
				}
				var conflicts []string
				for _, k := range res[0].Conflicts {
					conflicts = append(conflicts, k.Path)
				}
				if d := cmp.Diff(c.conflicts, conflicts); d != "" || len(res[0].Summary) != len(c.conflicts) {
					t.Fatalf("start-up sync %q (-want +got conflicts):\n%s", res[0].Summary, d)
				}
				after := treeOf(t, ws)
				for p := range before {
					if (p == "SOUL.md" || p == ".") && c.conflicts != nil {
						continue // the copy is renamed in the workspace's top directory
					}
					if d := cmp.Diff(before[p], after[p]); d != "" {
						t.Errorf("%s changed:\n%s", p, d)
					}
				}
				if c.conflicts != nil && after[res[0].Conflicts[0].Copy].Body != "I answer in German.\n" {
					t.Errorf("the employee's SOUL.md is not in its kept copy: %v", after)
				}
				ins, err = p.Installations(ctx, catalog.Filter{})
				if err != nil || len(ins) != 1 || len(ins[0].Files) != 3 {
					t.Fatalf("the record after the sync: %+v, %v", ins, err)
				}
				restartNoChanges(t, opts)
			})
		}
	}
}

// restartNoChanges restarts the platform and fails unless its start-up
// sync has nothing to do.
func restartNoChanges(t *testing.T, opts Options) *Platform {
	t.Helper()
	ctx := context.Background()
	p, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.SyncAll(ctx, false)
	if err != nil || len(res) != 1 || res[0].Error != "" || len(res[0].Summary) != 0 {
		t.Fatalf("start-up sync %+v, %v; want no changes", res, err)
	}
	return p
}

// TestKilledBeforeTheRecord: a sync killed after the workspace was
// updated but before the catalog stored the new record (here: the
// installer's Update run alone, as the sync runs it). The next start-up
// sync takes the record the update left on disk, so it finds nothing to
// do, stores the record, and a later template change (back to the first
// version) is an ordinary update, not a conflict.
func TestKilledBeforeTheRecord(t *testing.T) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			p, opts, ws, tpl := installedResearcher(t, sc.open(t))
			agentsV1, err := os.ReadFile(filepath.Join(tpl, "researcher", "AGENTS.md"))
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, filepath.Join(tpl, "researcher"), map[string]string{"AGENTS.md": "# Researcher v2\n"})
			tp, _, err := p.template(ctx, "researcher")
			if err != nil {
				t.Fatal(err)
			}
			ins, err := p.Installations(ctx, catalog.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := install.Update(opts.StateDir, "acme", tp, ins[0].Files); err != nil {
				t.Fatal(err)
			}
			// ... killed here: the catalog still has the first record.
			p = restartNoChanges(t, opts)
			ins, err = p.Installations(ctx, catalog.Filter{})
			if err != nil || len(ins) != 1 || !cmp.Equal(ins[0].Files, install.Shipped(tp)) {
				t.Fatalf("the record after the restart: %+v, %v", ins, err)
			}
			if _, ok, err := install.Pending(opts.StateDir, "acme", "researcher"); ok || err != nil {
				t.Fatalf("the pending record survived: %v", err)
			}
			writeFiles(t, filepath.Join(tpl, "researcher"), map[string]string{"AGENTS.md": string(agentsV1)})
			res, err := p.Sync(ctx, "researcher", false)
			if err != nil || len(res) != 1 || !slices.Equal(res[0].Summary, []string{"~ AGENTS.md"}) {
				t.Fatalf("sync back to the first version: %+v, %v", res, err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(b) != string(agentsV1) {
				t.Fatalf("AGENTS.md = %q", b)
			}
		})
	}
}
