package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzApplyPatchParse feeds arbitrary text to the patch parser and, when
// it parses, applies it to a fresh workspace: neither may panic, and no
// file may appear or change outside the workspace, whatever the paths,
// links and hunks say.
func FuzzApplyPatchParse(f *testing.F) {
	seeds := []string{
		patch("*** Add File: a.txt\n+hello"),
		patch("*** Add File: ../evil.txt\n+x"),
		patch("*** Add File: out/evil.txt\n+x"),
		patch("*** Add File: /tmp/evil.txt\n+x"),
		patch("*** Update File: a.txt\n@@ one\n-two\n+2\n three\n*** End of File"),
		patch("*** Update File: a.txt\n*** Move to: ../moved.txt"),
		patch("*** Update File: a.txt\n*** Move to: out/moved.txt\n-one\n+1"),
		patch("*** Update File: link\n-secret\n+pwned"),
		patch("*** Delete File: out/secret"),
		patch("*** Delete File: a.txt\n*** Add File: a.txt\n+x\n*** Update File: a.txt\n-x\n+y"),
		patch("*** Update File: a.txt\n@@ -1,3 +1,3 @@\n one\n\n-two\n+2"),
		"<<'EOF'\n" + patch("*** Add File: sub/dir/x\n+x") + "\nEOF",
		"*** Begin Patch\r\n*** Update File: a.txt\r\n-one\r\n+uno\r\n*** End Patch\r\n",
		"*** Begin Patch\n*** End Patch",
		"@@\n-\n+",
		"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		ops, err := parsePatch(input)
		if err != nil {
			if _, ok := err.(*PatchError); !ok {
				t.Fatalf("parsePatch error of type %T: %v", err, err)
			}
			return
		}
		if len(ops) == 0 {
			t.Fatal("parsePatch returned no operations and no error")
		}

		base := t.TempDir()
		dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
		for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{"out": "../outside", "link": "../outside/secret", "abs": outside} {
			if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
				t.Fatal(err)
			}
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()

		_, _ = applyPatch(context.Background(), root, input)

		entries, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("base directory holds %v, want only outside and ws", names)
		}
		entries, err = os.ReadDir(outside)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "secret" {
			t.Fatalf("outside directory holds %v", entries)
		}
		if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "secret\n" {
			t.Fatalf("outside/secret = %q, %v", b, err)
		}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".talon-") {
				t.Errorf("temporary file left: %s", p)
			}
			return nil
		})
	})
}
