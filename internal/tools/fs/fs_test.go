package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/tools"
)

func TestToolDefinitions(t *testing.T) {
	reg, err := tools.NewRegistry(All()...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"read", "write", "edit", "apply_patch"}, reg.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	for _, spec := range reg.Specs(reg.Names()) {
		t.Run(spec.Name, func(t *testing.T) {
			if err := tools.LintSchema(spec.Parameters); err != nil {
				t.Errorf("schema: %v", err)
			}
			if len(spec.Description) < 40 {
				t.Errorf("description too short: %q", spec.Description)
			}
			if n := tools.SchemaTokens(spec); n <= 0 || n > 600 {
				t.Errorf("SchemaTokens = %d, want 1..600", n)
			}
		})
	}
}

func TestNoWorkspaceIsTalonsError(t *testing.T) {
	for _, tool := range All() {
		_, err := tool.Run(context.Background(), &tools.Env{}, json.RawMessage(`{}`))
		if err == nil || !strings.Contains(err.Error(), "no workspace") {
			t.Errorf("%s without workspace: err = %v", tool.Name(), err)
		}
	}
}

// TestTraversal sends every tool paths that lead out of the workspace.
func TestTraversal(t *testing.T) {
	type attempt struct {
		name string
		path string
		want string
	}
	attempts := []attempt{
		{"dotdot", "../outside/secret", `path "../outside/secret" is outside the workspace`},
		{"dotdot only", "..", `path ".." is outside the workspace`},
		{"nested dotdot", "a/../../outside/secret", `path "a/../../outside/secret" is outside the workspace`},
		{"absolute", "/etc/passwd", `path "/etc/passwd" is outside the workspace; use a path relative to the workspace root`},
		{"absolute outside sibling", "OUTSIDE/secret", `is outside the workspace; use a path relative to the workspace root`},
		{"absolute inside", "WS/ok.txt", `is absolute; use the workspace-relative path "ok.txt"`},
		{"symlink to /etc", "etc_passwd", `path "etc_passwd" is outside the workspace (a symbolic link leads out of it)`},
		{"relative symlink out", "sneaky", `path "sneaky" is outside the workspace (a symbolic link leads out of it)`},
		{"symlink dir escape", "outdir/secret", `path "outdir/secret" is outside the workspace (a symbolic link leads out of it)`},
		{"symlink dir escape new file", "outdir/new.txt", `path "outdir/new.txt" is outside the workspace (a symbolic link leads out of it)`},
		{"nul byte", "a\x00b", `path "a\x00b" contains a NUL byte`},
	}
	for _, tool := range All() {
		for _, at := range attempts {
			t.Run(tool.Name()+"/"+at.name, func(t *testing.T) {
				w := newWS(t)
				w.file("ok.txt", "fine\n")
				w.symlink("/etc/passwd", "etc_passwd")
				w.symlink("../outside/secret", "sneaky")
				w.symlink("../outside", "outdir")
				p := strings.NewReplacer("OUTSIDE", w.outside, "WS", w.dir).Replace(at.path)
				var args any
				switch tool.Name() {
				case "read":
					args = obj{"path": p}
				case "write":
					args = obj{"path": p, "content": "pwned\n"}
				case "edit":
					args = obj{"path": p, "old_string": "top", "new_string": "pwned"}
				case "apply_patch":
					args = obj{"input": "*** Begin Patch\n*** Update File: " + p + "\n@@\n-top secret\n+pwned\n*** End Patch"}
				}
				before := w.snapshot()
				res := w.run(tool, args)
				if !res.IsError || !strings.Contains(res.Text, strings.ReplaceAll(at.want, "WS", w.dir)) {
					t.Errorf("result = %+v, want an error containing %q", res, at.want)
				}
				if strings.Contains(res.Text, "top secret") || strings.Contains(res.Text, "root:") {
					t.Errorf("result leaks outside content: %q", res.Text)
				}
				if diff := cmp.Diff(before, w.snapshot()); diff != "" {
					t.Errorf("files changed (-before +after):\n%s", diff)
				}
				w.checkOutside()
			})
		}
	}
}

// TestHardlinkOutside: os.Root cannot see that a hard link's inode is
// shared with a file outside, so the tools that read a file refuse one
// with more than one link, and write replaces the link with a new file
// (atomic rename) instead of writing through it.
func TestHardlinkOutside(t *testing.T) {
	for _, tc := range []struct {
		tool    string
		args    obj
		refused bool
	}{
		{"read", obj{"path": "hard"}, true},
		{"edit", obj{"path": "hard", "old_string": "top secret", "new_string": "pwned"}, true},
		{"apply_patch", obj{"input": "*** Begin Patch\n*** Update File: hard\n-top secret\n+pwned\n*** End Patch"}, true},
		{"write", obj{"path": "hard", "content": "pwned\n"}, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			w := newWS(t)
			if err := os.Link(filepath.Join(w.outside, "secret"), filepath.Join(w.dir, "hard")); err != nil {
				t.Fatalf("making a hard link: %v", err)
			}
			tool := map[string]tools.Tool{"read": NewRead(), "edit": NewEdit(), "apply_patch": NewApplyPatch(), "write": NewWrite()}[tc.tool]
			res := w.run(tool, tc.args)
			if tc.refused {
				if !res.IsError || !strings.Contains(res.Text, "2 hard links") || strings.Contains(res.Text, "top secret") {
					t.Fatalf("result = %+v, want a refusal naming the links and not the content", res)
				}
			} else {
				if res.IsError {
					t.Fatalf("result = %+v", res)
				}
				if got := w.content("hard"); got != "pwned\n" {
					t.Errorf("workspace file = %q", got)
				}
			}
			w.checkOutside()
		})
	}
}

func TestReadOnly(t *testing.T) {
	calls := []struct {
		tool tools.Tool
		args obj
	}{
		{NewWrite(), obj{"path": "a.txt", "content": "x"}},
		{NewEdit(), obj{"path": "a.txt", "old_string": "hello", "new_string": "bye"}},
		{NewApplyPatch(), obj{"input": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}},
	}
	for _, c := range calls {
		t.Run(c.tool.Name(), func(t *testing.T) {
			w := newWS(t)
			w.env.ReadOnly = true
			w.file("a.txt", "hello\n")
			before := w.snapshot()
			res := w.run(c.tool, c.args)
			want := tools.Result{Text: "the workspace is read-only in this sandbox (workspaceAccess ro)", IsError: true}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, w.snapshot()); diff != "" {
				t.Errorf("files changed:\n%s", diff)
			}
		})
	}
	t.Run("read still works", func(t *testing.T) {
		w := newWS(t)
		w.env.ReadOnly = true
		w.file("a.txt", "hello\n")
		if res := w.run(NewRead(), obj{"path": "a.txt"}); res.IsError || res.Text != "hello\n" {
			t.Errorf("read = %+v", res)
		}
	})
}

func TestConcurrentWrites(t *testing.T) {
	w := newWS(t)
	write, edit := NewWrite(), NewEdit()
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := fmt.Sprintf("dir%d/sub/f%d.txt", i%3, i)
			args, _ := json.Marshal(obj{"path": p, "content": fmt.Sprintf("file %d\n", i)})
			res, err := write.Run(context.Background(), w.env, args)
			if err != nil || res.IsError {
				t.Errorf("write %s: %v %+v", p, err, res)
				return
			}
			args, _ = json.Marshal(obj{"path": p, "old_string": "file", "new_string": "edited"})
			if res, err := edit.Run(context.Background(), w.env, args); err != nil || res.IsError {
				t.Errorf("edit %s: %v %+v", p, err, res)
			}
		})
	}
	wg.Wait()
	for i := range n {
		p := fmt.Sprintf("dir%d/sub/f%d.txt", i%3, i)
		if got, want := w.content(p), fmt.Sprintf("edited %d\n", i); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	assertNoTempFiles(t, w)
}

func TestConcurrentWritesSameFile(t *testing.T) {
	w := newWS(t)
	write := NewWrite()
	contents := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 16 {
		c := strings.Repeat(fmt.Sprintf("writer %d\n", i), 5000)
		contents[c] = true
		wg.Go(func() {
			args, _ := json.Marshal(obj{"path": "same.txt", "content": c})
			if res, err := write.Run(context.Background(), w.env, args); err != nil || res.IsError {
				t.Errorf("write: %v %+v", err, res)
			}
		})
	}
	wg.Wait()
	if !contents[w.content("same.txt")] {
		t.Error("same.txt holds a mix of writes")
	}
	assertNoTempFiles(t, w)
}

func assertNoTempFiles(t *testing.T, w *ws) {
	t.Helper()
	for p := range w.snapshot() {
		if strings.Contains(p, ".talon-") {
			t.Errorf("temporary file left: %s", p)
		}
	}
}
