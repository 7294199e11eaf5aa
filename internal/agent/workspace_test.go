package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/config"
)

func parseConfig(t *testing.T, js string) *config.Config {
	t.Helper()
	f, err := config.Parse("talon.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return f.Config
}

// TestWorkspacesCheck: a workspace may not hold the state, the config or
// another agent's files (also through a symbolic link), may not be in the
// trash, and a tenant's stays in its directory.
func TestWorkspacesCheck(t *testing.T) {
	state := t.TempDir()
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "ws-ops"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(state, "ws-ops"), filepath.Join(state, "alias")); err != nil {
		t.Fatal(err)
	}
	cfg := parseConfig(t, `{agents: {list: [{id: "main"}, {id: "ops", workspace: "ws-ops"}]}}`)
	cases := []struct {
		name     string
		confined bool
		id, raw  string
		want     string // the directory, or the error
	}{
		{"relative to the state", true, "new", "ws-new", filepath.Join(state, "ws-new")},
		{"its own workspace again", true, "ops", "ws-ops", filepath.Join(state, "ws-ops")},
		{"outside a tenant", true, "new", outside, "workspace " + outside + " is outside the tenant directory"},
		{"anywhere for the default tenant", false, "new", outside, outside},
		{"the state itself", false, "new", state, "workspace " + state + " would contain the state directory " + state},
		{"above the state", false, "new", filepath.Dir(state), "workspace " + filepath.Dir(state) + " would contain the state directory " + state},
		{"the trash", true, "new", "trash/x", "workspace " + filepath.Join(state, "trash/x") + " is in the trash"},
		{"inside another agent's", true, "new", "ws-ops/sub", "workspace " + filepath.Join(state, "ws-ops/sub") + ` overlaps the workspace ` + filepath.Join(state, "ws-ops") + ` of agent "ops"`},
		{"another agent's through a link", true, "new", "alias", "workspace " + filepath.Join(state, "alias") + ` overlaps the workspace ` + filepath.Join(state, "ws-ops") + ` of agent "ops"`},
		{"the default agent's", true, "new", "workspace", "workspace " + filepath.Join(state, "workspace") + ` overlaps the workspace ` + filepath.Join(state, "workspace") + ` of agent "main"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := Workspaces{Dir: state, ConfigPath: filepath.Join(state, "talon.json"), Confined: tc.confined}
			got, err := w.Check(cfg, tc.id, tc.raw)
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Check(%q, %q) = %q, want %q", tc.id, tc.raw, got, tc.want)
			}
		})
	}
	// The config file may live outside the state directory.
	cfgDir := t.TempDir()
	w := Workspaces{Dir: state, ConfigPath: filepath.Join(cfgDir, "talon.json")}
	if _, err := w.Check(cfg, "new", cfgDir); err == nil || !strings.Contains(err.Error(), "would contain the config file") {
		t.Errorf("a workspace holding the config file: %v", err)
	}
}

// TestWorkspacesPrepareAndIdentity: a prepared workspace has its bootstrap
// files and identity lines, and the agents.list entry's identity object
// wins over the file.
func TestWorkspacesPrepareAndIdentity(t *testing.T) {
	state := t.TempDir()
	w := Workspaces{Dir: state, Confined: true}
	cfg := parseConfig(t, `{agents: {list: [{id: "main"}, {id: "ops", workspace: "deep/ws-ops", identity: {emoji: " 🦉 ", theme: ""}}]}}`)
	dir := cfg.AgentWorkspace(state, "ops")
	lines := Identity{Name: "Ops", Emoji: "🤖"}.Lines()
	if err := w.Prepare(cfg, dir, true, lines); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"AGENTS.md", "SOUL.md", IdentityFile, "USER.md", "TOOLS.md"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("bootstrap file: %v", err)
		}
	}
	if got, want := w.Identity(cfg, "ops"), (Identity{Name: "Ops", Emoji: "🦉"}); got != want {
		t.Errorf("Identity = %+v, want %+v", got, want)
	}
	if got := w.Identity(cfg, "main"); got != (Identity{}) {
		t.Errorf("an agent without a workspace: Identity = %+v", got)
	}
	// A line that spans lines is refused, naming the workspace.
	err := w.Prepare(cfg, dir, false, []IdentityLine{{Key: "Name", Value: "a\n- Avatar: x"}})
	if err == nil || !strings.HasPrefix(err.Error(), "preparing workspace "+dir+": ") {
		t.Errorf("Prepare with a multi-line value: %v", err)
	}
	// A tenant's workspace is not prepared outside its directory, nor
	// through a symbolic link that leads out of it.
	outside := t.TempDir()
	if err := w.Prepare(cfg, outside, true, nil); err == nil || !strings.Contains(err.Error(), "outside the tenant directory") {
		t.Errorf("Prepare outside the tenant: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(state, "out")); err != nil {
		t.Fatal(err)
	}
	if err := w.Prepare(cfg, filepath.Join(state, "out", "ws"), true, nil); err == nil {
		t.Error("Prepare through a link out of the tenant directory succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Prepare wrote outside the tenant directory: %v", entries)
	}
}

func TestIdentityLines(t *testing.T) {
	got := Identity{Name: "Ada", Avatar: "a.png", Theme: "owl"}.Lines()
	want := []IdentityLine{{"Name", "Ada"}, {"Avatar", "a.png"}, {"Theme", "owl"}}
	if len(got) != len(want) {
		t.Fatalf("Lines = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Lines = %v, want %v", got, want)
		}
	}
	if l := (Identity{}).Lines(); l != nil {
		t.Errorf("no identity: Lines = %v", l)
	}
}

// TestWorkspacesTrash: a workspace moves whole into the trash and back;
// one shared with a remaining agent, or holding the state, stays.
func TestWorkspacesTrash(t *testing.T) {
	for _, confined := range []bool{true, false} {
		t.Run(map[bool]string{true: "tenant", false: "default tenant"}[confined], func(t *testing.T) {
			state := t.TempDir()
			w := Workspaces{Dir: state, Confined: confined}
			dir := filepath.Join(state, "ws-ops")
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			rest := parseConfig(t, `{agents: {list: [{id: "main", workspace: "ws-main"}]}}`)
			undo, err := w.Trash(rest, "ops", dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the workspace is still there: %v", err)
			}
			moved, _ := filepath.Glob(filepath.Join(state, "trash", "ops-*", "workspace", "sub"))
			if len(moved) != 1 {
				t.Fatalf("trash holds %v", moved)
			}
			if err := undo(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "sub")); err != nil {
				t.Fatalf("undo: %v", err)
			}
			if undo, err := w.Trash(rest, "gone", filepath.Join(state, "ws-gone")); undo != nil || err != nil {
				t.Errorf("a missing workspace: %v", err)
			}

			shared := parseConfig(t, `{agents: {list: [{id: "main", workspace: "ws-ops/sub"}]}}`)
			for _, tc := range []struct {
				rest   *config.Config
				dir    string
				reason string
			}{
				{shared, dir, `overlaps the workspace of agent "main"`},
				{rest, state, "contains the state directory"},
			} {
				_, err := w.Trash(tc.rest, "ops", tc.dir)
				te, ok := errors.AsType[*TrashError](err)
				if !ok || te.Reason != tc.reason || te.Dir != tc.dir || te.Agent != "ops" {
					t.Errorf("Trash(%s) = %v, want a *TrashError: %s", tc.dir, err, tc.reason)
				}
			}
		})
	}
}
