package install

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLegacyJournal: an update by an earlier Talon (a whole-directory
// swap with a version 0 journal) killed midway is finished by this one's
// Recover as that release would have: nothing it was carrying is lost,
// and no leftovers remain.
func TestLegacyJournal(t *testing.T) {
	v2files := map[string]string{"AGENTS.md": "agents v2\n", "SOUL.md": "soul v2\n"}
	tenantFiles := map[string]string{"memory/m.md": "memory\n", "MEMORY.md": "long\n", "notes.md": "mine\n"}
	cases := []struct {
		name string
		// lay out the tenant dir as the old release left it.
		layout func(t *testing.T, p paths)
		want   map[string]string
	}{
		{"after the journal", func(t *testing.T, p paths) {
			writeFiles(t, p.live, with(tenantFiles, "AGENTS.md", "agents v1\n", "SOUL.md", "soul v1\n"))
			writeFiles(t, p.staging, v2files)
			writeJournal(t, p, `{"slug":"demo","carry":["memory","MEMORY.md","notes.md"]}`)
		}, with(tenantFiles, "AGENTS.md", "agents v2\n", "SOUL.md", "soul v2\n")},
		{"halfway through carrying", func(t *testing.T, p paths) {
			writeFiles(t, p.live, map[string]string{"notes.md": "mine\n", "AGENTS.md": "agents v1\n"})
			writeFiles(t, p.staging, with(v2files, "memory/m.md", "memory\n", "MEMORY.md", "long\n"))
			writeJournal(t, p, `{"slug":"demo","carry":["memory","MEMORY.md","notes.md"]}`)
		}, with(tenantFiles, "AGENTS.md", "agents v2\n", "SOUL.md", "soul v2\n")},
		{"after live moved aside, with a late file", func(t *testing.T, p paths) {
			writeFiles(t, p.old, map[string]string{"AGENTS.md": "agents v1\n", "late.md": "written during the update\n"})
			writeFiles(t, p.staging, with(v2files, "memory/m.md", "memory\n", "MEMORY.md", "long\n", "notes.md", "mine\n"))
			writeJournal(t, p, `{"slug":"demo","carry":null}`)
		}, with(tenantFiles, "AGENTS.md", "agents v2\n", "SOUL.md", "soul v2\n", "late.md", "written during the update\n")},
		{"old workspace left without a journal", func(t *testing.T, p paths) {
			writeFiles(t, p.live, with(tenantFiles, "AGENTS.md", "agents v2\n", "SOUL.md", "soul v2\n"))
			writeFiles(t, p.old, map[string]string{"AGENTS.md": "agents v1\n", "late.md": "late\n"})
		}, with(tenantFiles, "AGENTS.md", "agents v2\n", "SOUL.md", "soul v2\n", "late.md", "late\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			tn, err := CreateTenant(state, "acme", nil)
			if err != nil {
				t.Fatal(err)
			}
			p := pathsOf(tn, "demo")
			c.layout(t, p)
			if err := Recover(state, "acme"); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, readTree(t, p.live)); d != "" {
				t.Errorf("workspace (-want +got):\n%s", d)
			}
			entries, _ := os.ReadDir(p.agents)
			if len(entries) != 1 {
				t.Errorf("leftovers in agents/: %v", entries)
			}
			if _, err := os.Lstat(p.journal); !os.IsNotExist(err) {
				t.Error("the journal is left")
			}
		})
	}
}

func writeJournal(t *testing.T, p paths, body string) {
	t.Helper()
	if err := os.WriteFile(p.journal, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p.live), 0o700); err != nil {
		t.Fatal(err)
	}
}
