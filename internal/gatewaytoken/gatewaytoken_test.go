package gatewaytoken

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestEnsure: the first call makes a 64-hex token in a 0600 file and says
// so; later calls return the same token and make nothing.
func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tok, created, err := Ensure(dir)
	if err != nil || !created {
		t.Fatalf("Ensure = %q, %v, %v; want a new token", tok, created, err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("token %q, want 64 hex characters", tok)
	}
	fi, err := os.Stat(Path(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v; want mode 0600", fi, err)
	}
	again, created, err := Ensure(dir)
	if err != nil || created || again != tok {
		t.Errorf("second Ensure = %q, %v, %v; want %q, not created", again, created, err, tok)
	}
	if got, err := Load(dir); got != tok || err != nil {
		t.Errorf("Load = %q, %v", got, err)
	}
}

// TestEnsureRace: starts racing on one state dir all end with one token.
func TestEnsureRace(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	toks := make([]string, n)
	made := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			if toks[i], made[i], err = Ensure(dir); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	created := 0
	for i := range n {
		if toks[i] != toks[0] {
			t.Errorf("start %d got %q, start 0 %q", i, toks[i], toks[0])
		}
		if made[i] {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d starts say they made the token, want 1", created)
	}
}

// TestLoadRefuses: a file that may not be Talon's secret, or may have
// been read, is refused with the reason, and Ensure does not replace it.
func TestLoadRefuses(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"missing", func(*testing.T, string) {}, "no such file"},
		{"readable by others", func(t *testing.T, dir string) { write(t, dir, strings.Repeat("a", 64), 0o644) }, "has mode -rw-r--r--"},
		{"readable by the group", func(t *testing.T, dir string) { write(t, dir, strings.Repeat("a", 64), 0o640) }, "others may have read it"},
		{"a symlink", func(t *testing.T, dir string) {
			other := filepath.Join(dir, "elsewhere")
			if err := os.WriteFile(other, []byte(strings.Repeat("a", 64)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, Path(dir)); err != nil {
				t.Fatal(err)
			}
		}, "is a symlink"},
		{"a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(Path(dir), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"too short", func(t *testing.T, dir string) { write(t, dir, "short\n", 0o600) }, "fewer than 16 characters"},
		{"empty", func(t *testing.T, dir string) { write(t, dir, "", 0o600) }, "fewer than 16 characters"},
		{"two words", func(t *testing.T, dir string) { write(t, dir, "0123456789abcdef 0123456789abcdef", 0o600) }, "spaces or control characters"},
		{"huge", func(t *testing.T, dir string) { write(t, dir, strings.Repeat("a", maxSize+1), 0o600) }, "larger than 1024 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			before, _ := os.ReadFile(Path(dir))
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load = %v, want an error with %q", err, c.want)
			}
			if c.name == "missing" {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("missing file: %v is not fs.ErrNotExist", err)
				}
				return
			}
			if _, _, err := Ensure(dir); err == nil {
				t.Error("Ensure used or replaced the refused file")
			}
			if after, _ := os.ReadFile(Path(dir)); string(after) != string(before) {
				t.Errorf("the file changed: %q, was %q", after, before)
			}
		})
	}
}

// TestLoadHandWritten: an operator's own token, with a newline, is read.
func TestLoadHandWritten(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "  my-own-token-of-some-length\n", 0o600)
	if got, err := Load(dir); got != "my-own-token-of-some-length" || err != nil {
		t.Errorf("Load = %q, %v", got, err)
	}
}

func write(t *testing.T, dir, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(Path(dir), []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(Path(dir), mode); err != nil {
		t.Fatal(err)
	}
}
