package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/talonproc"
)

// TestRestartKeepsEmployeeFiles is the README's platform walk-through on
// the real binary: a tenant, an employee installed from the repository's
// templates, a chat on the offline model (talon serve --model inspect) in
// which the employee writes the files its AGENTS.md tells it to keep and
// some of its own, then restarts over the same state dir — after SIGTERM
// and after SIGKILL — whose start-up sync must leave every file as it
// was, content and mtime; then a template change, which keeps the
// employee's edit of a file the template changes too beside the new one.
func TestRestartKeepsEmployeeFiles(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		missing(t, "bwrap is not on PATH (apt-get install -y bubblewrap): a tenant's commands run in it")
	}
	const admin = "restart-admin-secret"
	dir := t.TempDir()
	tpl := t.TempDir()
	if err := os.CopyFS(tpl, os.DirFS(filepath.Join(repoRoot, "templates"))); err != nil {
		t.Fatal(err)
	}
	s := startOffline(t, dir, tpl, admin)
	waitPlatform(t, s, admin)
	a := &attacker{t: t, s: s, admin: admin}
	token := a.tenant("acme")
	if code, body := a.api("POST", "/api/tenants/acme/installations", `{"slug":"researcher"}`); code != 201 {
		t.Fatalf("install: %d %s", code, body)
	}
	ws := filepath.Join(dir, "tenants", "acme", "agents", "researcher")
	written := map[string]string{
		"USER.md":                   "# User\nPrefers short answers.\n",
		"TOOLS.md":                  "# Tools\nweb_fetch works for arxiv.org.\n",
		"skills/summarize/SKILL.md": "---\nname: summarize\ndescription: Summarize a page in three lines\n---\nThree lines.\n",
		"notes/today.md":            "Read two papers.\n",
		"memory/2026-11-26.md":      "The user likes arxiv.\n",
		"SOUL.md":                   "# Soul\nThe employee rewrote this itself.\n",
	}
	for path, content := range written {
		a.call(t, "acme", token, "researcher", "write", map[string]any{"path": path, "content": content})
	}
	before := snapshot(t, ws)
	for path, content := range written {
		if got := before[path]; got.content != content {
			t.Fatalf("%s before the restart = %q", path, got.content)
		}
	}

	restart := func(kill bool) {
		t.Helper()
		if kill {
			s.proc.Cmd.Process.Kill()
			for exited, _ := s.proc.Exited(); !exited; exited, _ = s.proc.Exited() {
				time.Sleep(10 * time.Millisecond)
			}
		} else {
			s.stop(t)
		}
		s = startOffline(t, dir, tpl, admin)
		a.s = s
		waitPlatform(t, s, admin)
		waitFor(t, "the start-up sync", func() bool { return strings.Contains(s.proc.Log.String(), "platform start-up sync done") })
	}
	for _, kill := range []bool{false, true} {
		restart(kill)
		if log := s.proc.Log.String(); !strings.Contains(log, "changed=0") {
			t.Errorf("the start-up sync changed something:\n%s", log)
		}
		same(t, before, snapshot(t, ws))
		if code, body := a.api("POST", "/api/library/sync/researcher?dryRun=true", ""); code != 200 || !strings.Contains(body, `"changes":[]`) {
			t.Errorf("a dry-run sync of the unchanged template: %d %s", code, body)
		}
	}
	if reply := a.call(t, "acme", token, "researcher", "read", map[string]any{"path": "notes/today.md"}); !strings.Contains(reply, "Read two papers.") {
		t.Errorf("after the restarts the employee reads %q", reply)
	}

	// The template changes SOUL.md, which the employee edited, and
	// AGENTS.md, which it did not.
	for _, f := range []string{"SOUL.md", "AGENTS.md"} {
		p := filepath.Join(tpl, "researcher", f)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(b, "\nA new line from the template.\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	restart(false)
	after := snapshot(t, ws)
	var copies []string
	for path, f := range after {
		if strings.HasPrefix(path, "SOUL.md.local-") {
			copies = append(copies, path)
			if f.content != written["SOUL.md"] {
				t.Errorf("%s = %q, want the employee's SOUL.md", path, f.content)
			}
		}
	}
	if len(copies) != 1 {
		t.Errorf("copies of the employee's SOUL.md: %v", copies)
	}
	for _, f := range []string{"SOUL.md", "AGENTS.md"} {
		if !strings.HasSuffix(after[f].content, "A new line from the template.\n") {
			t.Errorf("%s after the template changed = %q", f, after[f].content)
		}
	}
	for path, content := range written {
		if path != "SOUL.md" && after[path].content != content {
			t.Errorf("%s after the template changed = %q", path, after[path].content)
		}
	}
}

// same fails the test for every file of before that is gone, changed or
// rewritten in after, and every file after has that before had not.
func same(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	for path, b := range before {
		got, ok := after[path]
		switch {
		case !ok:
			t.Errorf("%s is gone after the restart", path)
		case got.content != b.content:
			t.Errorf("%s changed after the restart:\n%q\nwas\n%q", path, got.content, b.content)
		case !got.mod.Equal(b.mod):
			t.Errorf("%s was rewritten after the restart (mtime %s, was %s)", path, got.mod, b.mod)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok {
			t.Errorf("%s appeared after the restart", path)
		}
	}
}

// startOffline starts talon serve with the platform and every agent on
// the offline model.
func startOffline(t *testing.T, dir, templates, admin string) *server {
	t.Helper()
	p, err := talonproc.Start(talonproc.Options{
		Bin: talonBin, StateDir: dir, ReadyTimeout: readyTimeout,
		Env: append(cleanEnv("TALON_GATEWAY_TOKEN", "TALON_ADMIN_TOKEN", "TALON_PLATFORM_DATABASE", "TALON_MODEL", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY"), "TALON_ADMIN_TOKEN="+admin),
		Args: func(port int) []string {
			return []string{"serve", "--state-dir", dir, "--port", strconv.Itoa(port), "--templates", templates, "--model", "inspect"}
		},
	})
	if err != nil {
		t.Fatalf("starting talon serve: %v", err)
	}
	s := &server{dir: dir, base: p.URL, proc: p}
	t.Cleanup(func() {
		if exited, _ := s.proc.Exited(); !exited {
			s.stop(t)
		}
	})
	return s
}

type fileState struct {
	content string
	mod     time.Time
}

// snapshot reads every regular file under dir.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fileState{string(b), fi.ModTime()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
