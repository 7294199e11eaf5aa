package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootChecklist edits log.txt once per run: "runs:" gains an "x", so the
// file counts the runs.
const bootChecklist = "Count this start.\n/call edit {\"path\":\"log.txt\",\"old_string\":\"runs:\",\"new_string\":\"runs: x\"}\n"

// TestBootMD: with boot-md on, each workspace's BOOT.md runs once when
// the gateway starts (agents sharing a workspace run it once), again at
// the next start, not on a config reload; its session is gone after; a
// tenant's runs the first time the tenant is taken up.
func TestBootMD(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{hooks: {internal: {entries: {"boot-md": {enabled: true}}}},
		agents: {list: [{id: "main", default: true}, {id: "twin", workspace: "workspace"}, {id: "ops"}]}}`))
	for _, ws := range []string{"workspace", "workspace-ops"} {
		writeFile(t, filepath.Join(dir, ws, "BOOT.md"), []byte(bootChecklist))
		writeFile(t, filepath.Join(dir, ws, "log.txt"), []byte("runs:\n"))
	}
	runs := func(ws string) string {
		b, _ := os.ReadFile(filepath.Join(ws, "log.txt"))
		return strings.TrimSpace(string(b))
	}
	ts := startServer(t, dir, nil)
	waitFor(t, "both checklists to run", func() bool {
		return runs(filepath.Join(dir, "workspace")) == "runs: x" && runs(filepath.Join(dir, "workspace-ops")) == "runs: x"
	})
	waitFor(t, "the boot sessions to be deleted", func() bool { return len(bootSessions(t, ts, "main", "twin", "ops")) == 0 })

	// A reload of the config is no start.
	writeFile(t, filepath.Join(dir, "talon.json"), []byte(`{hooks: {internal: {enabled: true}},
		agents: {list: [{id: "main", default: true}, {id: "twin", workspace: "workspace"}, {id: "ops"}]}}`))
	if _, err := ts.srv.defaultTenant.current(ts.srv); err != nil {
		t.Fatal(err)
	}
	ts.stop()
	if got := runs(filepath.Join(dir, "workspace")); got != "runs: x" {
		t.Fatalf("after a reload and a stop the main workspace counts %q, want one run", got)
	}

	// The next start runs them again.
	ts = startServer(t, dir, nil)
	waitFor(t, "the checklist at the second start", func() bool { return runs(filepath.Join(dir, "workspace")) == "runs: x x" })
	ts.stop()

	// A tenant, taken up after the start; an empty checklist and a
	// missing one are no runs.
	ts = startServer(t, t.TempDir(), nil)
	tdir := filepath.Join(ts.dir, "tenants", "acme")
	writeFile(t, filepath.Join(tdir, "talon.json"), []byte(`{gateway: {auth: {token: "acme-token-0123456789"}},
		hooks: {internal: {enabled: true}}, agents: {list: [{id: "main"}, {id: "blank"}, {id: "none"}]}}`))
	writeFile(t, filepath.Join(tdir, "workspace", "BOOT.md"), []byte(bootChecklist))
	writeFile(t, filepath.Join(tdir, "workspace", "log.txt"), []byte("runs:\n"))
	writeFile(t, filepath.Join(tdir, "workspace-blank", "BOOT.md"), []byte("\n  \n"))
	acme, err := ts.srv.lookup("acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acme.current(ts.srv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tenant's checklist", func() bool { return runs(filepath.Join(tdir, "workspace")) == "runs: x" })
	waitFor(t, "the tenant's boot session to be deleted", func() bool {
		rows, err := acme.store.ListSessions(context.Background(), "main", 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if strings.Contains(r.Key, ":boot:") {
				return false
			}
		}
		return true
	})
}

// bootSessions are the boot sessions left in the operator's store.
func bootSessions(t *testing.T, ts *testServer, agents ...string) []string {
	t.Helper()
	var out []string
	for _, a := range agents {
		rows, err := ts.srv.defaultTenant.store.ListSessions(context.Background(), a, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if strings.Contains(r.Key, ":boot:") {
				out = append(out, r.Key)
			}
		}
	}
	return out
}
