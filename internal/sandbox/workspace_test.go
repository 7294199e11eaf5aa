package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSeed(t *testing.T) {
	dir := t.TempDir()
	src, dst, outside := filepath.Join(dir, "agent"), filepath.Join(dir, "box"), filepath.Join(dir, "outside")
	write(t, filepath.Join(outside, "secret"), "host secret")
	write(t, filepath.Join(src, "AGENTS.md"), "agents")
	write(t, filepath.Join(src, "SOUL.md"), "soul from the agent")
	write(t, filepath.Join(src, "MEMORY.md"), "the owner's memory")
	write(t, filepath.Join(src, "notes.txt"), "not a bootstrap file")
	write(t, filepath.Join(src, "skills", "a", "SKILL.md"), "skill a")
	write(t, filepath.Join(src, "skills", "b", "deep", "run.sh"), "echo b")
	// Links and special files in the agent workspace are not copied.
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "USER.md")))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "skills", "a", "leak.md")))
	must(t, os.Symlink(outside, filepath.Join(src, "skills", "outside-dir")))
	must(t, syscall.Mkfifo(filepath.Join(src, "TOOLS.md"), 0o600))
	// The sandbox workspace already has a SOUL.md of its own, and a
	// sandboxed command planted skills/b as a link out.
	write(t, filepath.Join(dst, "SOUL.md"), "the sandbox's own soul")
	must(t, os.MkdirAll(filepath.Join(dst, "skills"), 0o700))
	must(t, os.Symlink(outside, filepath.Join(dst, "skills", "b")))

	created, err := Seed(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AGENTS.md", "skills/a/", "skills/a/SKILL.md"}
	if diff := cmp.Diff(want, created); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	if got := read(t, filepath.Join(dst, "SOUL.md")); got != "the sandbox's own soul" {
		t.Errorf("SOUL.md overwritten: %q", got)
	}
	for _, name := range []string{"MEMORY.md", "notes.txt", "USER.md", "TOOLS.md", "skills/a/leak.md", "skills/outside-dir"} {
		if _, err := os.Lstat(filepath.Join(dst, name)); !os.IsNotExist(err) {
			t.Errorf("%s copied (err %v)", name, err)
		}
	}
	entries, _ := os.ReadDir(outside)
	if names := dirNames(entries); !slices.Equal(names, []string{"secret"}) {
		t.Errorf("the link planted in the sandbox led a copy out: %s holds %v", outside, names)
	}

	// Seeding again creates nothing and overwrites nothing.
	write(t, filepath.Join(dst, "AGENTS.md"), "edited in the sandbox")
	if created, err := Seed(src, dst); err != nil || len(created) != 0 {
		t.Errorf("second seed: created %v, err %v", created, err)
	}
	if got := read(t, filepath.Join(dst, "AGENTS.md")); got != "edited in the sandbox" {
		t.Errorf("AGENTS.md overwritten: %q", got)
	}
}

func TestSeedMissingAgentWorkspace(t *testing.T) {
	dir := t.TempDir()
	if created, err := Seed(filepath.Join(dir, "none"), dir); err != nil || created != nil {
		t.Errorf("created %v, err %v", created, err)
	}
}

func TestSeedBounds(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "agent"), filepath.Join(dir, "box")
	must(t, os.MkdirAll(dst, 0o700))
	deep := filepath.Join(append([]string{src, "skills"}, strings.Split(strings.Repeat("d/", maxSeedDepth), "/")...)...)
	write(t, filepath.Join(deep, "x"), "x")
	_, err := Seed(src, dst)
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 16 directories") {
		t.Errorf("err = %v", err)
	}
}

func dirNames(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
