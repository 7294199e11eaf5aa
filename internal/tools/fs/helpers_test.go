package fs

import (
	"context"
	"encoding/json"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"talon/internal/tools"
)

// ws is a workspace in a temporary directory, next to a directory
// "outside" holding a file "secret" that no tool may reach.
type ws struct {
	t       *testing.T
	base    string // parent of the workspace
	dir     string // the workspace
	outside string
	root    *os.Root
	env     *tools.Env
}

const secret = "top secret\n"

func newWS(t *testing.T) *ws {
	t.Helper()
	base := t.TempDir()
	w := &ws{t: t, base: base, dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.dir, w.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.outside, "secret"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	w.root = root
	w.env = &tools.Env{AgentID: "main", SessionKey: "agent:main:main", Workspace: root}
	return w
}

// file writes a file in the workspace, creating parents.
func (w *ws) file(rel, content string) {
	w.t.Helper()
	p := filepath.Join(w.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// symlink makes a link at rel in the workspace pointing at target.
func (w *ws) symlink(target, rel string) {
	w.t.Helper()
	if err := os.Symlink(target, filepath.Join(w.dir, rel)); err != nil {
		w.t.Fatal(err)
	}
}

// content returns a workspace file's content, or "<missing>".
func (w *ws) content(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, rel))
	if errors.Is(err, iofs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// snapshot maps every path under the base directory (workspace and
// outside) to its content, "<dir>" or "-> target".
func (w *ws) snapshot() map[string]string {
	w.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.base, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.base, p)
		switch {
		case d.Type()&iofs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			out[rel] = "-> " + t
		case d.IsDir():
			out[rel] = "<dir>"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// checkOutside fails the test if anything outside the workspace changed.
func (w *ws) checkOutside() {
	w.t.Helper()
	var names []string
	entries, err := os.ReadDir(w.base)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 2 || names[0] != "outside" || names[1] != "ws" {
		w.t.Errorf("base directory holds %v, want [outside ws]", names)
	}
	entries, err = os.ReadDir(w.outside)
	if err != nil {
		w.t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "secret" {
		w.t.Errorf("outside directory changed: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(w.outside, "secret")); string(b) != secret {
		w.t.Errorf("outside/secret changed: %q", b)
	}
}

// run calls tool with args (a JSON string or a value to marshal); a Go
// error fails the test.
func (w *ws) run(tool tools.Tool, args any) tools.Result {
	w.t.Helper()
	var raw []byte
	switch a := args.(type) {
	case string:
		raw = []byte(a)
	default:
		var err error
		if raw, err = json.Marshal(a); err != nil {
			w.t.Fatal(err)
		}
	}
	res, err := tool.Run(context.Background(), w.env, raw)
	if err != nil {
		w.t.Fatalf("%s.Run: %v", tool.Name(), err)
	}
	return res
}

type obj = map[string]any
