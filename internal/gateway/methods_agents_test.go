package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"talon/internal/config"
	"talon/protocol"
	"talon/protocol/client"
)

type agentsListResult struct {
	DefaultID string `json:"defaultId"`
	MainKey   string `json:"mainKey"`
	Scope     string `json:"scope"`
	Agents    []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Identity *struct {
			Name, Theme, Emoji, Avatar string
			AvatarURL                  string `json:"avatarUrl"`
		} `json:"identity"`
		Workspace string `json:"workspace"`
		Model     *struct {
			Primary   string   `json:"primary"`
			Fallbacks []string `json:"fallbacks"`
		} `json:"model"`
	} `json:"agents"`
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAgentsLifecycle: create, update and delete, and what each does to
// the config file, the workspace on disk, agents.list, and the next chat
// turn (no restart).
func TestAgentsLifecycle(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}}, agents: {defaults: {model: "inspect"}}}`)
	admin := dialWS(t, url)
	chat := func(model string) reply {
		t.Helper()
		return ts.post(map[string]string{"Authorization": "Bearer " + wsToken}, `{"model":"`+model+`","messages":[{"role":"user","content":"/tools"}]}`)
	}

	l := mustCall[agentsListResult](t, admin, "agents.list", nil)
	if l.DefaultID != "main" || l.MainKey != "main" || l.Scope != "per-sender" || len(l.Agents) != 1 ||
		l.Agents[0].ID != "main" || l.Agents[0].Workspace != filepath.Join(ts.dir, "workspace") || l.Agents[0].Model.Primary != "inspect" {
		t.Fatalf("agents.list = %+v", l)
	}
	if r := chat("openclaw/research-bot"); r.status != 400 {
		t.Fatalf("chat with an agent not yet created: %d %s", r.status, r.body)
	}

	created := mustCall[map[string]any](t, admin, "agents.create", map[string]any{
		"name": "Research Bot", "workspace": "ws-research", "model": "inspect", "emoji": "🔬", "avatar": "https://example.test/r.png"})
	ws := filepath.Join(ts.dir, "ws-research")
	if created["ok"] != true || created["agentId"] != "research-bot" || created["name"] != "Research Bot" || created["workspace"] != ws || created["model"] != "inspect" {
		t.Fatalf("agents.create = %v", created)
	}
	for _, f := range []string{"AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md"} {
		if readText(t, filepath.Join(ws, f)) == "" {
			t.Errorf("%s is empty", f)
		}
	}
	if id := readText(t, filepath.Join(ws, "IDENTITY.md")); !strings.HasSuffix(id, "\n- Name: Research Bot\n- Emoji: 🔬\n- Avatar: https://example.test/r.png\n") {
		t.Errorf("IDENTITY.md:\n%s", id)
	}
	f := onDisk(t, ts)
	if got := f.Config.Agents.List; len(got) != 2 || got[0].ID != "main" || got[1].ID != "research-bot" || got[1].Name != "Research Bot" || got[1].Workspace != ws {
		t.Fatalf("agents.list on disk = %+v", got)
	}
	if r := chat("openclaw/research-bot"); r.status != 200 || !strings.Contains(r.content, "read") {
		t.Fatalf("chat with the new agent: %d %s", r.status, r.body)
	}
	l = mustCall[agentsListResult](t, admin, "agents.list", nil)
	if len(l.Agents) != 2 || l.DefaultID != "main" {
		t.Fatalf("agents.list = %+v", l)
	}
	a := l.Agents[1]
	if a.ID != "research-bot" || a.Name != "Research Bot" || a.Workspace != ws || a.Model.Primary != "inspect" || a.Identity == nil ||
		a.Identity.Name != "Research Bot" || a.Identity.Emoji != "🔬" || a.Identity.Avatar != "https://example.test/r.png" || a.Identity.AvatarURL != a.Identity.Avatar {
		t.Fatalf("agents.list entry = %+v identity %+v", a, a.Identity)
	}

	up := mustCall[map[string]any](t, admin, "agents.update", map[string]any{"agentId": "Research-Bot", "name": "Researcher", "emoji": "📚"})
	if up["ok"] != true || up["agentId"] != "research-bot" {
		t.Fatalf("agents.update = %v", up)
	}
	l = mustCall[agentsListResult](t, admin, "agents.list", nil)
	if a := l.Agents[1]; a.Name != "Researcher" || a.Identity.Name != "Researcher" || a.Identity.Emoji != "📚" || a.Identity.Avatar != "https://example.test/r.png" {
		t.Fatalf("after update: %+v %+v", a, a.Identity)
	}
	mustCall[map[string]any](t, admin, "agents.update", map[string]any{"agentId": "research-bot", "workspace": "ws-research-2", "model": "inspect"})
	ws2 := filepath.Join(ts.dir, "ws-research-2")
	if onDisk(t, ts).Config.Agents.List[1].Workspace != ws2 || readText(t, filepath.Join(ws2, "SOUL.md")) == "" {
		t.Fatal("the new workspace is not in the config or not prepared")
	}

	// Bindings of the agent go with it; others stay.
	hash := mustCall[configSnapshot](t, admin, "config.get", nil).Hash
	mustCall[writeResult](t, admin, "config.patch", map[string]any{"baseHash": hash, "raw": `{bindings: [
		{agentId: "research-bot", match: {channel: "slack"}}, {agentId: "main", match: {channel: "telegram"}}, {agentId: "Research-Bot", match: {channel: "x"}}]}`})
	writeFile(t, filepath.Join(ws2, "notes", "keep.md"), []byte("mine"))
	del := mustCall[map[string]any](t, admin, "agents.delete", map[string]any{"agentId": "research-bot"})
	if del["ok"] != true || del["agentId"] != "research-bot" || del["removedBindings"] != float64(2) {
		t.Fatalf("agents.delete = %v", del)
	}
	f = onDisk(t, ts)
	if len(f.Config.Agents.List) != 1 || f.Tree.Get("bindings") == nil || len(f.Tree.Get("bindings").Items) != 1 {
		t.Fatalf("after delete:\n%s", f.Raw)
	}
	if _, err := os.Stat(ws2); !os.IsNotExist(err) {
		t.Fatalf("workspace still there: %v", err)
	}
	trashed, _ := filepath.Glob(filepath.Join(ts.dir, "trash", "research-bot-*", "workspace", "notes", "keep.md"))
	if len(trashed) != 1 || readText(t, trashed[0]) != "mine" {
		t.Fatalf("trash holds %v", trashed)
	}
	if _, err := os.Stat(ws); err != nil {
		t.Errorf("the agent's earlier workspace was touched: %v", err)
	}
	if r := chat("openclaw/research-bot"); r.status != 400 {
		t.Fatalf("chat with a deleted agent: %d %s", r.status, r.body)
	}

	// deleteFiles:false keeps the workspace where it is.
	mustCall[map[string]any](t, admin, "agents.create", map[string]any{"name": "keeper", "workspace": "ws-keeper"})
	mustCall[map[string]any](t, admin, "agents.delete", map[string]any{"agentId": "keeper", "deleteFiles": false})
	if _, err := os.Stat(filepath.Join(ts.dir, "ws-keeper", "IDENTITY.md")); err != nil {
		t.Fatalf("deleteFiles:false moved the files: %v", err)
	}
}

// TestAgentsErrors: every refusal of agents.*, each leaving the config
// file as it was.
func TestAgentsErrors(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}},
		agents: {list: [{id: "boss", default: true}, {id: "helper", workspace: "ws-helper"}]}}`)
	admin := dialWS(t, url)
	reader := dialWS(t, url, protocol.ScopeRead)
	cases := []struct {
		name   string
		method string
		params map[string]any
		want   string
		reader bool
	}{
		{"create: no name", "agents.create", map[string]any{"workspace": "w"}, "invalid agents.create params: name is required", false},
		{"create: blank name", "agents.create", map[string]any{"name": "  ", "workspace": "w"}, "invalid agents.create params: name must not be empty", false},
		{"create: no workspace", "agents.create", map[string]any{"name": "x"}, "invalid agents.create params: workspace is required", false},
		{"create: name not a string", "agents.create", map[string]any{"name": 3, "workspace": "w"}, "invalid agents.create params: name must be a string, not number", false},
		{"create: main", "agents.create", map[string]any{"name": "Main", "workspace": "w"}, `invalid agents.create params: agent id "main" is reserved`, false},
		{"create: nothing left of the name", "agents.create", map[string]any{"name": "!!!", "workspace": "w"}, `invalid agents.create params: agent id "main" is reserved`, false},
		{"create: duplicate", "agents.create", map[string]any{"name": "Helper", "workspace": "w"}, `agent "helper" already exists`, false},
		{"create: two-line name", "agents.create", map[string]any{"name": "a\nb", "workspace": "w"}, "invalid agents.create params: name must be one line of text", false},
		{"create: two-line emoji", "agents.create", map[string]any{"name": "x", "workspace": "w", "emoji": "a\n- Name: evil"}, "invalid agents.create params: emoji must be one line of text", false},
		{"create: long avatar", "agents.create", map[string]any{"name": "x", "workspace": "w", "avatar": strings.Repeat("a", 2049)}, "invalid agents.create params: avatar is longer than 2048 characters", false},
		{"create: the state dir", "agents.create", map[string]any{"name": "x", "workspace": "."}, "invalid agents.create params: workspace " + ts.dir + " would contain the state directory", false},
		{"create: above the state dir", "agents.create", map[string]any{"name": "x", "workspace": ".."}, "invalid agents.create params: workspace " + filepath.Dir(ts.dir) + " would contain the state directory", false},
		{"create: in the trash", "agents.create", map[string]any{"name": "x", "workspace": "trash/x"}, "invalid agents.create params: workspace " + filepath.Join(ts.dir, "trash", "x") + " is in the trash", false},
		{"create: inside another's", "agents.create", map[string]any{"name": "x", "workspace": "ws-helper/sub"}, "invalid agents.create params: workspace " + filepath.Join(ts.dir, "ws-helper", "sub") + ` overlaps the workspace ` + filepath.Join(ts.dir, "ws-helper") + ` of agent "helper"`, false},
		{"create: the default agent's", "agents.create", map[string]any{"name": "x", "workspace": "workspace"}, "invalid agents.create params: workspace " + filepath.Join(ts.dir, "workspace") + ` overlaps the workspace`, false},
		{"create: read scope", "agents.create", map[string]any{"name": "x", "workspace": "w"}, "missing scope: operator.admin", true},
		{"update: no agentId", "agents.update", map[string]any{"name": "x"}, "invalid agents.update params: agentId is required", false},
		{"update: unknown", "agents.update", map[string]any{"agentId": "nope", "name": "x"}, `agent "nope" not found`, false},
		{"update: empty name", "agents.update", map[string]any{"agentId": "helper", "name": ""}, "invalid agents.update params: name must not be empty", false},
		{"update: workspace onto another's", "agents.update", map[string]any{"agentId": "boss", "workspace": "ws-helper"}, "invalid agents.update params: workspace " + filepath.Join(ts.dir, "ws-helper") + " overlaps", false},
		{"update: read scope", "agents.update", map[string]any{"agentId": "helper", "name": "x"}, "missing scope: operator.admin", true},
		{"delete: no agentId", "agents.delete", map[string]any{}, "invalid agents.delete params: agentId is required", false},
		{"delete: main", "agents.delete", map[string]any{"agentId": "MAIN"}, `agent "main" cannot be deleted`, false},
		{"delete: unknown", "agents.delete", map[string]any{"agentId": "nope"}, `agent "nope" not found`, false},
		{"delete: the default", "agents.delete", map[string]any{"agentId": "boss"}, `agent "boss" is the default agent and cannot be deleted`, false},
		{"delete: deleteFiles not a boolean", "agents.delete", map[string]any{"agentId": "helper", "deleteFiles": "yes"}, "invalid agents.delete params: deleteFiles must be a boolean, not string", false},
		{"delete: read scope", "agents.delete", map[string]any{"agentId": "helper"}, "missing scope: operator.admin", true},
	}
	path := filepath.Join(ts.dir, "talon.json")
	before := readText(t, path)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := admin
			if tc.reader {
				c = reader
			}
			callFails(t, c, tc.method, tc.params, tc.want)
			if now := readText(t, path); now != before {
				t.Fatalf("the config changed:\n%s", now)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "w")); !os.IsNotExist(err) {
		t.Errorf("a refused create made its workspace: %v", err)
	}

	// A config that no longer validates is not edited.
	writeFile(t, path, []byte(`{gateway: {auth: {token: "`+wsToken+`"}}, session: {scope: "bogus"}}`))
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"agents.create", map[string]any{"name": "x", "workspace": "w"}},
		{"agents.update", map[string]any{"agentId": "main", "name": "x"}},
		{"agents.delete", map[string]any{"agentId": "helper"}},
	} {
		callFails(t, admin, m.method, m.params, "invalid config; fix before patching")
	}
}

// TestAgentsDeleteKeepsSharedFiles: a workspace that another agent's
// overlaps (a hand-edited config) is not moved: the delete is refused
// unless the files are kept.
func TestAgentsDeleteKeepsSharedFiles(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}},
		agents: {list: [{id: "main"}, {id: "a", workspace: "shared"}, {id: "b", workspace: "shared/b"}]}}`)
	admin := dialWS(t, url)
	writeFile(t, filepath.Join(ts.dir, "shared", "b", "x"), []byte("x"))
	callFails(t, admin, "agents.delete", map[string]any{"agentId": "a"},
		"agents.delete: workspace "+filepath.Join(ts.dir, "shared")+` of agent "a" overlaps the workspace of agent "b"`)
	if len(onDisk(t, ts).Config.Agents.List) != 3 {
		t.Fatal("the refused delete changed the config")
	}
	mustCall[map[string]any](t, admin, "agents.delete", map[string]any{"agentId": "a", "deleteFiles": false})
	if readText(t, filepath.Join(ts.dir, "shared", "b", "x")) != "x" {
		t.Fatal("files moved")
	}
}

// TestAgentsTenantWorkspaces: a tenant's agents live inside the tenant
// directory, through symbolic links too, and relative workspaces resolve
// against it.
func TestAgentsTenantWorkspaces(t *testing.T) {
	ts, url := startWS(t, "")
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	outside := t.TempDir()
	writeFile(t, filepath.Join(tdir, "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}}}`))
	if err := os.Symlink(outside, filepath.Join(tdir, "out")); err != nil {
		t.Fatal(err)
	}
	c := dialTenant(t, url, "acme", "acme-token")
	for _, tc := range []struct{ workspace, want string }{
		{outside, "invalid agents.create params: workspace " + outside + " is outside the tenant directory"},
		{"../other", "invalid agents.create params: workspace …/tenants/other is outside the tenant directory"},
		{"~/ws", "invalid agents.create params: workspace "},
		{"out/ws", "preparing workspace: creating workspace out/ws"},
	} {
		err := c.Call(context.Background(), "agents.create", map[string]any{"name": "x", "workspace": tc.workspace}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("workspace %q: err = %v, want %q", tc.workspace, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("something was written outside the tenant: %v", entries)
	}
	if f, _ := config.Load(filepath.Join(tdir, "talon.json")); len(f.Config.Agents.List) != 0 {
		t.Fatalf("a refused create changed the config: %+v", f.Config.Agents.List)
	}
	res := mustCall[map[string]any](t, c, "agents.create", map[string]any{"name": "ok", "workspace": "ws-ok"})
	if res["workspace"] != "ws-ok" { // relative: a tenant is shown no host path
		t.Fatalf("agents.create = %v", res)
	}
	mustCall[map[string]any](t, c, "agents.delete", map[string]any{"agentId": "ok"})
	if got, _ := filepath.Glob(filepath.Join(tdir, "trash", "ok-*", "workspace", "IDENTITY.md")); len(got) != 1 {
		t.Fatalf("tenant trash: %v", got)
	}
	// config.patch is held to the same rule.
	hash := mustCall[configSnapshot](t, c, "config.get", nil).Hash
	pe := callFails(t, c, "config.patch", map[string]any{"baseHash": hash, "raw": `{agents: {defaults: {workspace: "` + outside + `"}}}`}, `invalid config: agents.defaults.workspace: beyond the operator's ceiling for tenants: the workspace of agent "main" must be inside the tenant directory, not the directory itself (this one leads outside it)`)
	if d, _ := pe.Details.(map[string]any); d == nil {
		t.Fatal("no issues in details")
	}
}

func dialTenant(t *testing.T, url, tenant, token string) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), url, client.Options{Tenant: tenant, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAgentsConcurrentCreates: creates racing with each other and with
// config.patch lose nothing — every agent ends up in the file.
func TestAgentsConcurrentCreates(t *testing.T) {
	ts, url := startWithConfig(t, `{gateway: {auth: {token: "`+wsToken+`"}}}`)
	admin := dialWS(t, url)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- admin.Call(context.Background(), "agents.create", map[string]any{"name": fmt.Sprintf("agent %d", i), "workspace": fmt.Sprintf("ws-%d", i)}, nil)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	var ids []string
	for _, a := range onDisk(t, ts).Config.Agents.List {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	if want := "agent-0 agent-1 agent-2 agent-3 agent-4 agent-5 agent-6 agent-7 main"; strings.Join(ids, " ") != want {
		t.Fatalf("agents = %v", ids)
	}
}
