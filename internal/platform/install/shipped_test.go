package install

import (
	"path/filepath"
	"slices"
	"testing"

	"talon/internal/platform/template"
	"talon/internal/policy"
)

// TestShippedTemplatesInstall installs the three employees of templates/
// into one tenant and checks seed 000's "Adding an Agent with Plugin
// Tools" verification with the gateway's own resolvers: each agent's
// alsoAllow tools pass its sandbox allow list (layer 3) next to every
// default tool, and each required plugin loads.
func TestShippedTemplatesInstall(t *testing.T) {
	ts, errs := template.LoadAll(filepath.Join("..", "..", "..", "templates"))
	for _, err := range errs {
		t.Fatal(err)
	}
	if len(ts) < 3 {
		t.Fatalf("loaded %d templates", len(ts))
	}
	state := t.TempDir()
	tn, err := CreateTenant(state, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range ts {
		if _, err := Install(state, "acme", tp); err != nil {
			t.Fatal(err)
		}
	}
	cfg := loadConfig(t, tn).Config
	for _, tp := range ts {
		sp := policy.ResolveSandboxPolicy(cfg, tp.Slug)
		for _, tool := range append(slices.Clone(policy.SandboxDefaultAllow), tp.AlsoAllow...) {
			if !slices.Contains(sp.Allow, tool) {
				t.Errorf("%s: %s is not in the resolved sandbox allow list %v", tp.Slug, tool, sp.Allow)
			}
		}
		for _, id := range tp.Plugins {
			if st := policy.LoadState(cfg, id, policy.OriginBundled, ""); !st.Enabled {
				t.Errorf("%s: plugin %s is off: %+v", tp.Slug, id, st)
			}
		}
	}
	if st := policy.ResolveSandboxSettings(cfg, "coder"); st.Mode != "all" {
		t.Errorf("coder sandbox settings: %+v", st)
	}
}
