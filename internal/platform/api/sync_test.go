package api

import (
	"os"
	"path/filepath"
	"slices"
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
	// A new version of the template.
	if err := os.WriteFile(filepath.Join(e.templates, "helper", "AGENTS.md"), []byte("# Helper v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.templates, "helper", "TOOLS.md"), []byte("# Tools\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	type syncResp struct {
		DryRun  bool
		Results []platform.SyncResult
	}
	check := func(r syncResp, dry bool, wantChanges []string) {
		t.Helper()
		if r.DryRun != dry || len(r.Results) != 2 {
			t.Fatalf("sync = %+v", r)
		}
		for _, res := range r.Results {
			if res.Error != "" || res.Slug != "helper" {
				t.Fatalf("result %+v", res)
			}
			for _, c := range wantChanges {
				if !slices.Contains(res.Summary, c) {
					t.Fatalf("tenant %s changes %q lack %q", res.Tenant, res.Summary, c)
				}
			}
			if len(wantChanges) == 0 && len(res.Summary) != 0 {
				t.Fatalf("tenant %s still has changes %q", res.Tenant, res.Summary)
			}
		}
	}
	var r syncResp
	e.ok(t, 200, "POST", "/api/library/sync/helper?dryRun=true", "", &r)
	check(r, true, []string{"~ AGENTS.md", "+ TOOLS.md"})
	if data, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(data) == "# Helper v2\n" {
		t.Fatal("a dry run wrote AGENTS.md")
	}
	if _, err := os.Stat(filepath.Join(ws, "TOOLS.md")); err == nil {
		t.Fatal("a dry run wrote TOOLS.md")
	}

	e.ok(t, 200, "POST", "/api/library/sync/helper", "", &r)
	check(r, false, []string{"~ AGENTS.md", "+ TOOLS.md"})
	if data, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); string(data) != "# Helper v2\n" {
		t.Fatalf("AGENTS.md after sync: %q", data)
	}
	if data, _ := os.ReadFile(note); string(data) != "the tenant's memory" {
		t.Fatalf("memory after sync: %q", data)
	}
	e.ok(t, 200, "POST", "/api/library/sync?dryRun=1", "", &r)
	check(r, true, nil)
}
