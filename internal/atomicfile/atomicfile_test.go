package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	p := filepath.Join(dir, "f.json")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "two" {
		t.Fatalf("read %q, %v; want two", got, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", di.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temp files left behind: %v", ents)
	}
}

func TestWriteRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("x"), 0o600); !errors.Is(err, ErrSymlink) {
		t.Fatalf("err = %v, want ErrSymlink", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "keep" {
		t.Errorf("target changed to %q", got)
	}
}

// TestCreate: a new file is made whole with its mode; an existing file,
// or a symlink in its place, is left alone and reported as fs.ErrExist;
// no temp file stays behind either way.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		exists  bool
		content string // what name holds afterwards
	}{
		{"new", false, "made"},
		{"target", true, "keep"},
		{"link", true, "keep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			err := Create(p, []byte("made"), 0o640)
			if got := errors.Is(err, fs.ErrExist); got != c.exists || !c.exists && err != nil {
				t.Fatalf("Create = %v, want exists %v", err, c.exists)
			}
			if got, _ := os.ReadFile(p); string(got) != c.content {
				t.Errorf("%s holds %q, want %q", c.name, got, c.content)
			}
			if !c.exists {
				if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want 0640", fi.Mode().Perm())
				}
			}
		})
	}
	if err := Create(filepath.Join(dir, "dangling"), []byte("x"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a dangling symlink = %v, want fs.ErrExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dangling symlink's target was created: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Errorf("entries %v, want target, link, dangling, new and nothing else", ents)
	}
}
