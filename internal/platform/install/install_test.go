package install

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
	"talon/internal/policy"
)

func TestTenants(t *testing.T) {
	state := t.TempDir()
	tn, err := CreateTenant(state, "acme", map[string]string{"LINKEDIN_ACCESS_TOKEN": "tok", "B": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tn.Token) {
		t.Fatalf("token %q is not 32 random bytes in hex", tn.Token)
	}
	fi, err := os.Stat(tn.Dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("tenant dir: %v, mode %v; want 0700", err, fi.Mode())
	}
	f := loadConfig(t, tn)
	if f.Config.Gateway.Auth.Token != tn.Token {
		t.Fatalf("config token %q, want %q", f.Config.Gateway.Auth.Token, tn.Token)
	}
	if d := cmp.Diff(map[string]string{"LINKEDIN_ACCESS_TOKEN": "tok", "B": "2"}, config.EnvVars(f.Config)); d != "" {
		t.Fatalf("env (-want +got):\n%s", d)
	}
	if _, err := CreateTenant(state, "acme", nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
	other, err := CreateTenant(state, "beta", nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.Token == tn.Token {
		t.Fatal("two tenants got the same token")
	}

	for _, c := range []struct{ id, env, errHas string }{
		{"", "", "tenant id \"\" is invalid"},
		{"..", "", "is invalid"},
		{"a/b", "", "is invalid"},
		{".hidden", "", "is invalid"},
		{"ok", "1BAD", `env name "1BAD" is invalid`},
		{"ok", "A-B", `env name "A-B" is invalid`},
	} {
		env := map[string]string{}
		if c.env != "" {
			env[c.env] = "x"
		}
		if _, err := CreateTenant(state, c.id, env); err == nil || !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("CreateTenant(%q, %q): %v, want an error containing %q", c.id, c.env, err, c.errHas)
		}
	}

	// A symlink under tenants/ is neither listed nor deleted through.
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"precious": "keep"})
	if err := os.Symlink(outside, filepath.Join(state, TenantsDir, "evil")); err != nil {
		t.Fatal(err)
	}
	list, err := ListTenants(state)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range list {
		ids = append(ids, x.ID)
	}
	if d := cmp.Diff([]string{"acme", "beta"}, ids); d != "" {
		t.Fatalf("ListTenants (-want +got):\n%s", d)
	}
	if err := DeleteTenant(state, "evil"); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("DeleteTenant(symlink): %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Fatalf("the symlink's target was touched: %v", err)
	}
	for _, id := range []string{"../x", "nope"} {
		if err := DeleteTenant(state, id); err == nil {
			t.Errorf("DeleteTenant(%q) succeeded", id)
		}
	}
	if err := DeleteTenant(state, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tn.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tenant dir still there: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(state, TenantsDir))
	if len(entries) != 2 { // beta and evil
		t.Fatalf("leftovers in tenants/: %v", entries)
	}
}

func TestInstallUpdateUninstall(t *testing.T) {
	state := t.TempDir()
	tn, err := CreateTenant(state, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The tenant's own config: another agent, a deny list, and tools an
	// older installer put at the tenant level.
	patchConfig(t, tn, `{
		agents: {list: [{id: "main", name: "Main", tools: {deny: ["exec"]}}]},
		tools: {deny: ["browser"], alsoAllow: ["post_note", "tenant_own"]},
		session: {scope: "per-sender"},
	}`)
	tp1, tp2 := loadVersion(t, v1), loadVersion(t, v2)
	res, err := Install(state, "acme", tp1)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Shipped(tp1), res.Files); d != "" {
		t.Fatalf("install's record (-want +got):\n%s", d)
	}
	ws := filepath.Join(tn.Dir, "agents", "demo")
	got := readTree(t, ws)
	want := map[string]string{
		"AGENTS.md": "agents v1\n", "SOUL.md": "soul v1\n", "IDENTITY.md": "identity v1\n",
		"TOOLS.md": "tools v1 (removed in v2)\n", "skills/s/SKILL.md": v1["skills/s/SKILL.md"],
		"api-tools/post_note.yaml": v1["api-tools/post_note.yaml"],
		"MEMORY.md":                "seed memory\n", "memory/seed.md": "seed note\n",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("workspace after install (-want +got):\n%s", d)
	}
	if fi, err := os.Stat(filepath.Join(ws, "canvas")); err != nil || !fi.IsDir() {
		t.Fatalf("canvas/ not created: %v", err)
	}
	f := loadConfig(t, tn)
	c := f.Config
	if len(c.Agents.List) != 2 || c.Agents.List[0].ID != "main" || !slices.Equal(c.Agents.List[0].Tools.Deny, []string{"exec"}) {
		t.Fatalf("other agent changed: %+v", c.Agents.List)
	}
	a := c.Agents.List[1]
	if a.ID != "demo" || a.Name != "Demo" || a.Workspace != "agents/demo" || a.Model.Str != "openrouter/anthropic/claude-sonnet-4" {
		t.Fatalf("entry: %+v", a)
	}
	if d := cmp.Diff([]string{"post_note", "web_fetch"}, []string(a.Tools.AlsoAllow)); d != "" {
		t.Fatalf("alsoAllow (-want +got):\n%s", d)
	}
	if d := cmp.Diff(append(slices.Clone(policy.SandboxDefaultAllow), "post_note", "web_fetch"), []string(a.Tools.Sandbox.Tools.Allow)); d != "" {
		t.Fatalf("sandbox allow (-want +got):\n%s", d)
	}
	if e := c.Plugins.Entries["api-tools"]; e.Enabled == nil || !*e.Enabled {
		t.Fatalf("api-tools not enabled: %+v", c.Plugins.Entries)
	}
	if d := cmp.Diff([]string{"tenant_own"}, []string(c.Tools.AlsoAllow)); d != "" {
		t.Fatalf("tenant-level alsoAllow (-want +got):\n%s", d)
	}
	if c.Session.Scope != "per-sender" || !slices.Equal(c.Tools.Deny, []string{"browser"}) || c.Gateway.Auth.Token != tn.Token {
		t.Fatalf("unrelated config changed: %s", f.Raw)
	}
	if _, err := Install(state, "acme", tp1); err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Fatalf("second install: %v", err)
	}

	// The tenant writes memory and files of its own, and renames its
	// employee; an update keeps all of it.
	tenantFiles := map[string]string{
		"memory/2026-01-01.md": "what we learned\n", "memory/deep/er/note.md": "nested\n",
		"MEMORY.md": "tenant's long-term memory\n", "notes.md": "agent's own file\n",
		"canvas/chart.svg": "<svg/>",
	}
	writeFiles(t, ws, tenantFiles)
	patchConfig(t, tn, `{agents: {list: [{id: "demo", name: "Our Demo", tools: {deny: ["process"]}}]}}`)

	ch, err := Plan(state, "acme", tp2, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Changes{
		Tenant: "acme", Slug: "demo",
		Added:   []string{"HEARTBEAT.md", "api-tools/post_note2.yaml", "skills/t/SKILL.md"},
		Changed: []string{"AGENTS.md", "IDENTITY.md", "skills/s/SKILL.md"},
		Removed: []string{"TOOLS.md", "api-tools/post_note.yaml"},
	}, Changes{Tenant: ch.Tenant, Slug: ch.Slug, Added: ch.Added, Changed: ch.Changed, Removed: ch.Removed}); d != "" {
		t.Fatalf("Plan files (-want +got):\n%s", d)
	}
	var paths []string
	for _, x := range ch.Config {
		paths = append(paths, x.Path)
	}
	if d := cmp.Diff([]string{
		"agents.list[id=demo].tools.alsoAllow", "agents.list[id=demo].tools.sandbox.tools.allow",
		"agents.list[id=demo].tools.exec", "agents.list[id=demo].sandbox",
	}, paths); d != "" {
		t.Fatalf("Plan config paths (-want +got):\n%s\n%v", d, ch.Config)
	}
	if raw, _ := os.ReadFile(tn.ConfigPath); strings.Contains(string(raw), "post_note2") {
		t.Fatal("Plan wrote the config")
	}

	res, err = Update(state, "acme", tp2, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	got = readTree(t, ws)
	want = map[string]string{
		"AGENTS.md": "agents v2\n", "SOUL.md": "soul v1\n", "IDENTITY.md": "identity v2\n",
		"HEARTBEAT.md": "heartbeat v2 (new)\n", "skills/s/SKILL.md": v2["skills/s/SKILL.md"],
		"skills/t/SKILL.md": v2["skills/t/SKILL.md"], "api-tools/post_note2.yaml": v2["api-tools/post_note2.yaml"],
		"memory/seed.md": "seed note\n",
	}
	for k, v := range tenantFiles {
		want[k] = v
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("workspace after update (-want +got):\n%s", d)
	}
	c = loadConfig(t, tn).Config
	a = c.Agents.List[1]
	if a.Name != "Our Demo" || !slices.Equal(a.Tools.Deny, []string{"process"}) {
		t.Fatalf("update lost the tenant's name or deny: %+v", a)
	}
	if d := cmp.Diff([]string{"post_note2", "memory_get"}, []string(a.Tools.AlsoAllow)); d != "" {
		t.Fatalf("alsoAllow after update (-want +got):\n%s", d)
	}
	if a.Sandbox.Mode != "all" || a.Sandbox.Backend != "bwrap" || a.Tools.Exec == nil || a.Tools.Exec.Ask != "on-miss" {
		t.Fatalf("sandbox/exec after update: %+v %+v", a.Sandbox, a.Tools.Exec)
	}
	if ch, err := Plan(state, "acme", tp2, res.Files); err != nil || !ch.Empty() {
		t.Fatalf("Plan after update: %v %+v", err, ch)
	}
	// Back to v1: the sandbox and exec keys go, the tenant's deny stays.
	if _, err := Update(state, "acme", tp1, res.Files); err != nil {
		t.Fatal(err)
	}
	a = loadConfig(t, tn).Config.Agents.List[1]
	if a.Sandbox.Mode != "" || a.Tools.Exec != nil || !slices.Equal(a.Tools.Deny, []string{"process"}) {
		t.Fatalf("after downgrade: %+v", a)
	}

	if err := Uninstall(state, "acme", "demo"); err != nil {
		t.Fatal(err)
	}
	c = loadConfig(t, tn).Config
	if len(c.Agents.List) != 1 || c.Agents.List[0].ID != "main" {
		t.Fatalf("agents after uninstall: %+v", c.Agents.List)
	}
	if _, err := os.Lstat(ws); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace still there: %v", err)
	}
	if err := Uninstall(state, "acme", "demo"); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("second uninstall: %v", err)
	}
	if _, err := Update(state, "acme", tp1, nil); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("update of an uninstalled employee: %v", err)
	}
}

func TestRequiredPluginOff(t *testing.T) {
	memTemplate := map[string]string{
		"template.yaml": "type: demo\nname: D\ndescription: D.\nrequiredTools: {alsoAllow: [memory_get], plugins: [memory-core]}\n",
		"AGENTS.md":     "a", "SOUL.md": "s", "IDENTITY.md": "i",
	}
	cases := []struct {
		name, patch string
		files       map[string]string
		key, fix    string
	}{
		{"plugins disabled", `{plugins: {enabled: false}}`, v1, "plugins.enabled", "set plugins.enabled to true"},
		{"denied", `{plugins: {deny: ["api-tools"]}}`, v1, "plugins.deny", `remove "api-tools" from plugins.deny`},
		{"not allowed", `{plugins: {allow: ["image-gen"]}}`, v1, "plugins.allow", `add "api-tools" to plugins.allow`},
		{"memory slot", `{plugins: {slots: {memory: "none"}}}`, memTemplate, "plugins.slots.memory", `set plugins.slots.memory to "memory-core"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			tn, err := CreateTenant(state, "acme", nil)
			if err != nil {
				t.Fatal(err)
			}
			patchConfig(t, tn, c.patch)
			before, _ := os.ReadFile(tn.ConfigPath)
			_, err = Install(state, "acme", loadVersion(t, c.files))
			var pe *PluginError
			if !errors.As(err, &pe) || pe.Key != c.key || !strings.Contains(err.Error(), c.fix) {
				t.Fatalf("got %v; want a PluginError with key %s and fix %q", err, c.key, c.fix)
			}
			if _, err := os.Lstat(filepath.Join(tn.Dir, "agents", "demo")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("files were copied although the install was refused")
			}
			if after, _ := os.ReadFile(tn.ConfigPath); string(after) != string(before) {
				t.Fatal("config written although the install was refused")
			}
		})
	}
}
