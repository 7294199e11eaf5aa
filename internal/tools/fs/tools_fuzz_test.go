package fs

import (
	"context"
	"encoding/json"
	iofs "io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/tools"
)

// FuzzFileTools calls read, write and edit with model-chosen paths and
// text in a workspace whose links lead out of it (out -> ../outside,
// link -> ../outside/secret, abs -> the outside directory by its absolute
// path, loop -> itself). Whatever the arguments: no Go error, nothing
// outside the workspace read or changed, no temporary file left, no host
// path in the answer; a write that succeeds leaves exactly its content at
// the path, and an edit that succeeds leaves its new text there.
func FuzzFileTools(f *testing.F) {
	type seed struct {
		tool                  uint8
		path, content, oldStr string
		offset                int
	}
	for _, s := range []seed{
		{0, "a.txt", "", "", 1}, {0, ".", "", "", 0}, {0, "out/secret", "", "", 0}, {0, "link", "", "", 2},
		{0, "abs/secret", "", "", 0}, {0, "../outside/secret", "", "", 0}, {0, "/etc/passwd", "", "", 0},
		{0, "sub/../../outside/secret", "", "", 0}, {0, "loop", "", "", 0}, {0, "inner", "", "", 3},
		{1, "new/dir/x.txt", "hello\n", "", 0}, {1, "out/evil", "x", "", 0}, {1, "link", "pwned", "", 0},
		{1, "inner", "through a link\n", "", 0}, {1, "a.txt/", "x", "", 0}, {1, "sub", "x", "", 0},
		{1, "a\x00b", "x", "", 0}, {1, strings.Repeat("d/", 200) + "f", "deep", "", 0},
		{2, "a.txt", "2", "two", 0}, {2, "a.txt", "", "one\n", 0}, {2, "link", "pwned", "secret", 0},
		{2, "a.txt", "x", "missing", 0}, {2, "out/secret", "x", "top", 0}, {2, "a.txt", "tw", "", 0},
	} {
		f.Add(s.tool, s.path, s.content, s.oldStr, s.offset)
	}
	f.Fuzz(func(t *testing.T, which uint8, p, content, oldStr string, offset int) {
		w := newWS(t)
		w.file("a.txt", "one\ntwo\nthree\n")
		w.file("sub/b.txt", "bee\n")
		w.symlink("../outside", "out")
		w.symlink("../outside/secret", "link")
		w.symlink(w.outside, "abs")
		w.symlink("loop", "loop")
		w.symlink("sub/b.txt", "inner")

		tool := []tools.Tool{NewRead(), NewWrite(), NewEdit()}[int(which)%3]
		args := map[string]any{"path": p}
		switch tool.Name() {
		case "read":
			if offset != 0 {
				args["offset"] = offset
			}
		case "write":
			args["content"] = content
		case "edit":
			args["old_string"], args["new_string"] = oldStr, content
		}
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		// What the tool sees: JSON carries no invalid UTF-8.
		var sent struct{ Path, Content, NewString string }
		if err := json.Unmarshal(raw, &sent); err != nil {
			t.Fatal(err)
		}
		p, content = sent.Path, sent.Content+sent.NewString
		res, err := tool.Run(context.Background(), w.env, raw)
		if err != nil {
			t.Fatalf("%s(%s): Go error %v", tool.Name(), raw, err)
		}
		w.checkOutside()
		if strings.Contains(res.Text, w.base) {
			t.Fatalf("%s(%s) shows a host path: %s", tool.Name(), raw, res.Text)
		}
		if tool.Name() == "read" && strings.Contains(res.Text, strings.TrimSpace(secret)) {
			t.Fatalf("read(%s) shows the secret outside the workspace: %s", raw, res.Text)
		}
		filepath.WalkDir(w.dir, func(q string, d iofs.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".talon-") {
				t.Errorf("temporary file left: %s", q)
			}
			return nil
		})
		if res.IsError {
			return
		}
		switch tool.Name() {
		case "write":
			got, err := w.root.ReadFile(path.Clean(p))
			if err != nil || string(got) != content {
				t.Fatalf("write(%s) succeeded (%s) but the file holds %q, %v", raw, res.Text, got, err)
			}
		case "edit":
			got, err := w.root.ReadFile(path.Clean(p))
			if err != nil || !strings.Contains(string(got), content) {
				t.Fatalf("edit(%s) succeeded (%s) but the file holds %q, %v", raw, res.Text, got, err)
			}
		}
	})
}
