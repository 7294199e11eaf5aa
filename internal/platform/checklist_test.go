package platform

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"talon/internal/config"
	"talon/internal/policy"
	"talon/internal/store"
	"talon/internal/store/catalog"
)

// Seed 000's checklists, as Talon does them: no gateway restart, no
// hand-kept lists, one sync on the platform's start. Each restarts the
// platform (New + SyncAll, as talon serve does) where the seed restarts
// it, and verifies with the inspect model's /tools where the seed runs its
// curl test.

// restart is a platform restart: a new Platform over the same state and
// catalog, which syncs every installation on start.
func (r *rig) restart(t *testing.T) {
	t.Helper()
	p, err := New(context.Background(), r.p.o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.SyncAll(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res {
		if x.Error != "" {
			t.Fatalf("start-up sync %s/%s: %s", x.Tenant, x.Slug, x.Error)
		}
	}
	r.p = p
}

// agentEntry is the tenant config's agents.list entry for slug.
func agentEntry(t *testing.T, r *rig, tenant, slug string) (config.Agent, *config.Config) {
	t.Helper()
	f, err := config.Load(filepath.Join(r.state, "tenants", tenant, "talon.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Config.Agents.List {
		if a.ID == slug {
			return a, f.Config
		}
	}
	t.Fatalf("no agents.list entry %q", slug)
	return config.Agent{}, nil
}

func checklistRig(t *testing.T, files map[string]string) *rig {
	t.Helper()
	c, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := newRig(t, c)
	writeTemplate(t, r.templates, "helper", files)
	if err := r.p.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ten, err := r.p.CreateTenant(context.Background(), "acme", "Acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.tokens["acme"] = ten.Token
	return r
}

func toolLines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// "Adding an Agent with Plugin Tools": the template names its tool and
// plugin; installing enables the plugin for the tenant (no gateway
// restart), writes alsoAllow AND the sandbox allow list, and the tool is
// in the agent's tool list.
func TestChecklistAgentWithPluginTools(t *testing.T) {
	f := helperV1()
	f["template.yaml"] = strings.Replace(f["template.yaml"], "model: inspect\n", "model: inspect\nrequiredTools:\n  alsoAllow: [generate_image]\n  plugins: [image-gen]\n", 1)
	r := checklistRig(t, f)
	lib, err := r.p.Library(context.Background())
	if err != nil || len(lib) != 1 {
		t.Fatalf("library (the seed's agent_library insert) = %+v, %v", lib, err)
	}
	if _, err := r.p.Install(context.Background(), "acme", "helper"); err != nil {
		t.Fatal(err)
	}
	a, cfg := agentEntry(t, r, "acme", "helper")
	if !slices.Contains(a.Tools.AlsoAllow, "generate_image") {
		t.Errorf("tools.alsoAllow = %v", a.Tools.AlsoAllow)
	}
	want := append(slices.Clone(policy.SandboxDefaultAllow), "generate_image")
	if !slices.Equal(a.Tools.Sandbox.Tools.Allow, want) {
		t.Errorf("tools.sandbox.tools.allow = %v, want the policy default + generate_image %v", a.Tools.Sandbox.Tools.Allow, want)
	}
	if st := policy.LoadState(cfg, "image-gen", policy.OriginBundled, "tools"); !st.Enabled {
		t.Errorf("image-gen in the tenant config: %+v", st)
	}
	if got := toolLines(r.chat(t, "acme", "/tools")); !slices.Contains(got, "generate_image") {
		t.Errorf("the curl test: generate_image missing from %v", got)
	}
}

// "Updating Agent Template Files": edit the template, restart the
// platform, the tenant's agent directory has the new content.
func TestChecklistUpdatingTemplateFiles(t *testing.T) {
	r := checklistRig(t, helperV1())
	if _, err := r.p.Install(context.Background(), "acme", "helper"); err != nil {
		t.Fatal(err)
	}
	f := helperV1()
	f["SOUL.md"] = "Warm and thorough.\n"
	writeTemplate(t, r.templates, "helper", f)
	r.restart(t)
	b, err := os.ReadFile(filepath.Join(r.state, "tenants", "acme", "agents", "helper", "SOUL.md"))
	if err != nil || string(b) != "Warm and thorough.\n" {
		t.Fatalf("SOUL.md after the restart: %q, %v", b, err)
	}
}

// "Adding a New Required Plugin to Existing Agent": add the plugin and the
// tool to the template, restart the platform: alsoAllow and the sandbox
// list are updated, the plugin is on, the tool is listed.
func TestChecklistNewRequiredPlugin(t *testing.T) {
	r := checklistRig(t, helperV1())
	if _, err := r.p.Install(context.Background(), "acme", "helper"); err != nil {
		t.Fatal(err)
	}
	if got := toolLines(r.chat(t, "acme", "/tools")); slices.Contains(got, "echo_word") {
		t.Fatalf("echo_word before the change: %v", got)
	}
	writeTemplate(t, r.templates, "helper", helperV2())
	r.restart(t)
	a, cfg := agentEntry(t, r, "acme", "helper")
	if !slices.Contains(a.Tools.AlsoAllow, "echo_word") || !slices.Contains(a.Tools.Sandbox.Tools.Allow, "echo_word") {
		t.Errorf("tools after the sync: alsoAllow %v, sandbox allow %v", a.Tools.AlsoAllow, a.Tools.Sandbox.Tools.Allow)
	}
	if st := policy.LoadState(cfg, "api-tools", policy.OriginBundled, "tools"); !st.Enabled {
		t.Errorf("api-tools in the tenant config: %+v", st)
	}
	if got := toolLines(r.chat(t, "acme", "/tools")); !slices.Contains(got, "echo_word") {
		t.Errorf("the curl test: echo_word missing from %v", got)
	}
}

// "Adding an Agent WITHOUT Plugin Tools": no requiredTools, no tools
// config written (the agent follows the defaults as they change), and the
// default tools are there.
func TestChecklistBasicAgent(t *testing.T) {
	r := checklistRig(t, helperV1())
	if _, err := r.p.Install(context.Background(), "acme", "helper"); err != nil {
		t.Fatal(err)
	}
	a, _ := agentEntry(t, r, "acme", "helper")
	if a.Tools.AlsoAllow != nil || a.Tools.Sandbox.Tools.Allow != nil {
		t.Errorf("a basic agent got a tools config: %+v", a.Tools)
	}
	got := toolLines(r.chat(t, "acme", "/tools"))
	for _, want := range []string{"read", "write", "edit", "image", "sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"} {
		if !slices.Contains(got, want) {
			t.Errorf("default tool %s missing from %v", want, got)
		}
	}
}

// A sync that needs a plugin the tenant's config keeps off reports it,
// naming the plugin and the key, records the installation as failed, and
// leaves the workspace as it was.
func TestSyncRequiredPluginRefused(t *testing.T) {
	r := checklistRig(t, helperV1())
	ctx := context.Background()
	if _, err := r.p.Install(ctx, "acme", "helper"); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(r.state, "tenants", "acme", "talon.json")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "{", `{"plugins":{"deny":["api-tools"]},`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	writeTemplate(t, r.templates, "helper", helperV2())
	if err := r.p.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := r.p.Sync(ctx, "helper", false)
	if err != nil || len(res) != 1 || !strings.Contains(res[0].Error, "api-tools") || !strings.Contains(res[0].Error, "plugins.deny") {
		t.Fatalf("sync = %+v, %v", res, err)
	}
	ins, _ := r.p.Installations(ctx, catalog.Filter{TenantID: "acme"})
	if len(ins) != 1 || ins[0].Status != "error" || !strings.Contains(ins[0].Message, "api-tools") {
		t.Errorf("installation = %+v", ins)
	}
	if b, _ := os.ReadFile(filepath.Join(r.state, "tenants", "acme", "agents", "helper", "AGENTS.md")); strings.Contains(string(b), "v2") {
		t.Error("a refused sync changed the workspace")
	}
}
