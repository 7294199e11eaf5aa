package api

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/platform"
)

// patchTenantConfig merge-patches a tenant's config file.
func patchTenantConfig(t *testing.T, e *env, id, patch string) {
	t.Helper()
	path := filepath.Join(e.state, "tenants", id, config.Filename)
	f, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := config.ParseJSON5([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Save(path, config.MergePatch(f.Tree, p)); err != nil {
		t.Fatal(err)
	}
}

type syncResp struct {
	DryRun  bool
	Results []platform.SyncResult
}

// TestSyncDryRunThenReal: a template edited on disk reaches a dry run and
// a sync at once; the sync writes the template's changes, keeps the
// employee's files and memory, and keeps the employee's copy of a file
// both changed, saying so.
func TestSyncDryRunThenReal(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	for _, id := range []string{"acme", "beta"} {
		e.createTenant(t, id)
		e.ok(t, 201, "POST", "/api/tenants/"+id+"/installations", `{"slug":"helper"}`, nil)
	}
	ws := filepath.Join(e.state, "tenants", "acme", "agents", "helper")
	note := filepath.Join(ws, "memory", "note.md")
	if err := os.MkdirAll(filepath.Dir(note), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(note, []byte("the tenant's memory"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The employee keeps its own USER.md and edits SOUL.md.
	if err := os.WriteFile(filepath.Join(ws, "USER.md"), []byte("the user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "SOUL.md"), []byte("my own soul\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// check checks both tenants' results: beta's want, and for acme,
	// whose SOUL.md was edited, the kept copy instead of "~ SOUL.md".
	check := func(r syncResp, dry bool, want []string) {
		t.Helper()
		if r.DryRun != dry || len(r.Results) != 2 {
			t.Fatalf("sync = %+v", r)
		}
		for _, res := range r.Results {
			if res.Error != "" || res.Slug != "helper" {
				t.Fatalf("result %+v", res)
			}
			w := want
			if res.Tenant == "acme" && slices.Contains(want, "~ SOUL.md") {
				w = slices.DeleteFunc(slices.Clone(want), func(s string) bool { return s == "~ SOUL.md" })
				if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "SOUL.md" || !strings.HasPrefix(res.Conflicts[0].Copy, "SOUL.md.local-") {
					t.Fatalf("acme's sync does not report the kept copy: %+v", res)
				}
				w = append(w, "! kept your copy of SOUL.md as "+res.Conflicts[0].Copy+" (the template changed it too)")
			}
			slices.Sort(w)
			got := slices.Sorted(slices.Values(res.Summary))
			if !slices.Equal(w, got) {
				t.Fatalf("tenant %s changes %q, want %q", res.Tenant, got, w)
			}
		}
	}
	// Nothing changed in the template: nothing to do.
	var r syncResp
	e.ok(t, 200, "POST", "/api/library/sync/helper?dryRun=true", "", &r)
	check(r, true, nil)
	// A new version of the template, edited on disk while the platform
	// runs: the next sync reads it, no restart or reload in between.
	for name, body := range map[string]string{"AGENTS.md": "# Helper v2\n", "TOOLS.md": "# Tools\n", "SOUL.md": "Calm, brief, kind.\n"} {
		if err := os.WriteFile(filepath.Join(e.templates, "helper", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changes := []string{"~ AGENTS.md", "+ TOOLS.md", "~ SOUL.md"}
	e.ok(t, 200, "POST", "/api/library/sync/helper?dryRun=true", "", &r)
	check(r, true, changes)
	if data, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(data) == "# Helper v2\n" {
		t.Fatal("a dry run wrote AGENTS.md")
	}
	if _, err := os.Stat(filepath.Join(ws, "TOOLS.md")); err == nil {
		t.Fatal("a dry run wrote TOOLS.md")
	}

	e.ok(t, 200, "POST", "/api/library/sync/helper", "", &r)
	check(r, false, changes)
	copyOf := r.Results[0].Conflicts[0].Copy
	if data, _ := os.ReadFile(filepath.Join(ws, copyOf)); string(data) != "my own soul\n" {
		t.Fatalf("the kept copy %s holds %q", copyOf, data)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(data) != "# Helper v2\n" {
		t.Fatalf("AGENTS.md after sync: %q", data)
	}
	for path, want := range map[string]string{note: "the tenant's memory", filepath.Join(ws, "USER.md"): "the user\n", filepath.Join(ws, "SOUL.md"): "Calm, brief, kind.\n"} {
		if data, _ := os.ReadFile(path); string(data) != want {
			t.Fatalf("%s after sync: %q, want %q", path, data, want)
		}
	}
	e.ok(t, 200, "POST", "/api/library/sync?dryRun=1", "", &r)
	check(r, true, nil)
}

// TestLibraryFollowsDisk: GET /api/library reads the templates directory
// as it is now: a template made invalid on disk is reported in loadErrors
// and no longer listed, and listed again once fixed; an installed
// template whose directory is removed is reported too.
func TestLibraryFollowsDisk(t *testing.T) {
	e := newEnv(t, Options{AdminToken: adminTok})
	type lib struct {
		Library    []struct{ Slug string }
		LoadErrors []string
	}
	slugs := func(l lib) []string {
		var out []string
		for _, x := range l.Library {
			out = append(out, x.Slug)
		}
		return out
	}
	var l lib
	e.ok(t, 200, "GET", "/api/library", "", &l)
	if !slices.Equal(slugs(l), []string{"helper", "memo"}) || len(l.LoadErrors) != 0 {
		t.Fatalf("library %+v", l)
	}
	manifest := filepath.Join(e.templates, "memo", "template.yaml")
	good, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, append(good, "bogus: key\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok(t, 200, "GET", "/api/library", "", &l)
	if !slices.Equal(slugs(l), []string{"helper"}) || len(l.LoadErrors) != 1 || !strings.Contains(l.LoadErrors[0], "memo") || !strings.Contains(l.LoadErrors[0], "bogus") {
		t.Fatalf("library after breaking memo: %+v", l)
	}
	if err := os.WriteFile(manifest, good, 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok(t, 200, "GET", "/api/library", "", &l)
	if !slices.Equal(slugs(l), []string{"helper", "memo"}) || len(l.LoadErrors) != 0 {
		t.Fatalf("library after fixing memo: %+v", l)
	}

	e.createTenant(t, "acme")
	e.ok(t, 201, "POST", "/api/tenants/acme/installations", `{"slug":"memo"}`, nil)
	if err := os.RemoveAll(filepath.Join(e.templates, "memo")); err != nil {
		t.Fatal(err)
	}
	e.ok(t, 200, "GET", "/api/library", "", &l)
	if !slices.Equal(slugs(l), []string{"helper"}) || len(l.LoadErrors) != 1 || !strings.Contains(l.LoadErrors[0], "memo is installed for 1 tenant(s)") {
		t.Fatalf("library after removing an installed template: %+v", l)
	}
	var r syncResp
	e.ok(t, 200, "POST", "/api/library/sync", "", &r)
	if len(r.Results) != 1 || !strings.Contains(r.Results[0].Error, "gone") {
		t.Fatalf("sync of a removed template: %+v", r)
	}
}
