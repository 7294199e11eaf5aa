package platform

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/gateway/gatewaytest"
	"talon/internal/platform/install"
	"talon/internal/platform/relay"
	"talon/internal/store"
	"talon/internal/store/catalog"
	"talon/internal/store/pg"
	"talon/internal/store/pg/pgtest"
	"talon/protocol/client"
)

// writeTemplate writes templates/<slug>/ with files.
func writeTemplate(t testing.TB, root, slug string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, slug)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// helperV1 is an employee on the offline inspect model; v2 adds a YAML
// API tool (and the api-tools plugin it needs) and rewrites AGENTS.md.
func helperV1() map[string]string {
	return map[string]string{
		"template.yaml": "type: helper\nname: Helper\ndescription: Helps with notes\nemoji: \"🧩\"\ncategory: general\nskills: []\nmodel: inspect\n",
		"AGENTS.md":     "# Helper\nKeep notes in memory/.\n",
		"SOUL.md":       "Calm and brief.\n",
		"IDENTITY.md":   "- Name: Helper\n",
		"MEMORY.md":     "# Memory\n",
	}
}

func helperV2() map[string]string {
	f := helperV1()
	f["template.yaml"] = "type: helper\nname: Helper\ndescription: Helps with notes\nemoji: \"🧩\"\ncategory: general\nskills: []\nmodel: inspect\nrequiredTools:\n  alsoAllow: [echo_word]\n  plugins: [api-tools]\n"
	f["AGENTS.md"] = "# Helper v2\nKeep notes in memory/ and echo words.\n"
	f["api-tools/echo_word.yaml"] = "name: echo_word\ndescription: Echo a word\nparameters:\n  word:\n    type: string\n    description: The word\n    required: true\nrequest:\n  method: GET\n  url: \"https://echo.example.com/{{params.word}}\"\nallowed_hosts: [echo.example.com]\n"
	return f
}

// rig is a gateway over a state dir, the platform over it with a catalog,
// and the relay between them, as talon serve wires them.
type rig struct {
	state, templates string
	p                *Platform
	tokens           map[string]string
}

func newRig(t *testing.T, st catalog.Store) *rig {
	t.Helper()
	r := &rig{state: t.TempDir(), templates: t.TempDir(), tokens: map[string]string{}}
	writeTemplate(t, r.templates, "helper", helperV1())
	url := gatewaytest.Start(t, r.state)
	rl := relay.New(func(ctx context.Context, tenant string) (*client.Client, error) {
		return client.Dial(ctx, url, client.Options{Token: r.tokens[tenant], Tenant: tenant, ClientID: "talon-platform", Mode: "backend"})
	})
	t.Cleanup(rl.Close)
	var err error
	r.p, err = New(context.Background(), Options{StateDir: r.state, Templates: r.templates, Store: st, Relay: rl})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) chat(t *testing.T, tenant, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end, err := r.p.Chat(ctx, tenant, "helper", "u1", text, nil)
	if err != nil {
		t.Fatalf("chat %q: %v", text, err)
	}
	if end.Kind != "final" {
		t.Fatalf("chat %q ended %+v", text, end)
	}
	return end.Text
}

// TestLifecycle: install → chat → update the template → sync → the
// tenant's memory is intact and the new files and tools are live, on
// SQLite and on PostgreSQL.
func TestLifecycle(t *testing.T) {
	stores := []struct {
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
			dsn := pgtest.Start(t).NewDB(t)
			s, err := pg.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) { lifecycle(t, newRig(t, sc.open(t))) })
	}
}

func lifecycle(t *testing.T, r *rig) {
	ctx := context.Background()
	ten, err := r.p.CreateTenant(ctx, "acme", "Acme", map[string]string{"TEAM": "ops"})
	if err != nil {
		t.Fatal(err)
	}
	r.tokens["acme"] = ten.Token
	lib, err := r.p.Library(ctx)
	if err != nil || len(lib) != 1 || lib[0].Slug != "helper" || lib[0].TemplateHash == "" {
		t.Fatalf("library = %+v, %v", lib, err)
	}
	in, err := r.p.Install(ctx, "acme", "helper")
	if err != nil {
		t.Fatal(err)
	}
	if in.TemplateHash != lib[0].TemplateHash {
		t.Errorf("installed hash %s, library %s", in.TemplateHash, lib[0].TemplateHash)
	}
	if _, err := r.p.Install(ctx, "acme", "helper"); err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Errorf("second install: %v", err)
	}
	if got := r.chat(t, "acme", "/tools"); !strings.Contains(got, "read") || strings.Contains(got, "echo_word") {
		t.Fatalf("v1 tools:\n%s", got)
	}
	// The employee writes its memory, as it would at work.
	if got := r.chat(t, "acme", `/call write {"path":"memory/notes.md","content":"the launch is on Friday"}`); strings.Contains(got, "error") {
		t.Fatalf("writing memory: %s", got)
	}
	ws := filepath.Join(r.state, "tenants", "acme", "agents", "helper")
	if err := os.WriteFile(filepath.Join(ws, "MEMORY.md"), []byte("# Memory\nAcme prefers email.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A new version of the template: a dry run says what would change and
	// changes nothing; the sync applies it.
	writeTemplate(t, r.templates, "helper", helperV2())
	if err := r.p.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	dry, err := r.p.Sync(ctx, "helper", true)
	if err != nil || len(dry) != 1 || dry[0].Error != "" {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	summary := strings.Join(dry[0].Summary, "\n")
	for _, want := range []string{"+ api-tools/echo_word.yaml", "~ AGENTS.md", "alsoAllow"} {
		if !strings.Contains(summary, want) {
			t.Errorf("dry run lacks %q:\n%s", want, summary)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "AGENTS.md")); strings.Contains(string(b), "v2") {
		t.Fatal("the dry run wrote AGENTS.md")
	}
	res, err := r.p.Sync(ctx, "helper", false)
	if err != nil || len(res) != 1 || res[0].Error != "" {
		t.Fatalf("sync = %+v, %v", res, err)
	}
	for name, want := range map[string]string{
		"memory/notes.md": "the launch is on Friday",
		"MEMORY.md":       "Acme prefers email.",
		"AGENTS.md":       "# Helper v2",
	} {
		if b, err := os.ReadFile(filepath.Join(ws, name)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s after sync = %q, %v; want %q", name, b, err, want)
		}
	}
	if got := r.chat(t, "acme", "/tools"); !strings.Contains(got, "echo_word") || !strings.Contains(got, "read") {
		t.Fatalf("v2 tools (the new API tool must be live):\n%s", got)
	}
	ins, err := r.p.Installations(ctx, catalog.Filter{TenantID: "acme"})
	if err != nil || len(ins) != 1 || ins[0].TemplateHash == in.TemplateHash || ins[0].Status != catalog.StatusOK {
		t.Fatalf("installation after sync = %+v, %v", ins, err)
	}
	// A second sync has nothing to do.
	if res, _ := r.p.Sync(ctx, "helper", true); len(res) != 1 || len(res[0].Summary) != 0 {
		t.Errorf("second dry run = %+v", res)
	}
	if err := r.p.Uninstall(ctx, "acme", "helper"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace after uninstall: %v", err)
	}
	if err := r.p.DeleteTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if ts, _ := r.p.Tenants(ctx); len(ts) != 0 {
		t.Errorf("tenants after delete = %+v", ts)
	}
}

// TestRequiredPluginRefused: a required plugin the tenant's config keeps
// off makes install and sync fail naming the plugin and the fix.
func TestRequiredPluginRefused(t *testing.T) {
	c, err := store.OpenCatalog(filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := newRig(t, c)
	ctx := context.Background()
	writeTemplate(t, r.templates, "helper", helperV2())
	if err := r.p.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	ten, err := r.p.CreateTenant(ctx, "acme", "Acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(ten.Dir, "talon.json")
	b, _ := os.ReadFile(cfg)
	patched := strings.Replace(string(b), "{", `{"plugins":{"deny":["api-tools"]},`, 1)
	if err := os.WriteFile(cfg, []byte(patched), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = r.p.Install(ctx, "acme", "helper")
	var pe *install.PluginError
	if !errors.As(err, &pe) || pe.Plugin != "api-tools" || pe.Key != "plugins.deny" || pe.Fix == "" {
		t.Fatalf("install with the plugin denied: %v", err)
	}
	if ins, _ := r.p.Installations(ctx, catalog.Filter{TenantID: "acme"}); len(ins) != 0 {
		t.Errorf("a refused install was recorded: %+v", ins)
	}
}
