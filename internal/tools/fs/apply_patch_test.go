package fs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/tools"
)

const goSrc = `package main

import "fmt"

func main() {
	fmt.Println("hello")
}

func helper() int {
	return 1
}
`

func patch(body string) string {
	return "*** Begin Patch\n" + body + "\n*** End Patch"
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		input     string
		want      string            // the success text after the header line
		wantFiles map[string]string // "<missing>" for gone
	}{
		{
			name:      "add",
			input:     patch("*** Add File: src/new/hello.txt\n+hello\n+\n+world"),
			want:      "A src/new/hello.txt",
			wantFiles: map[string]string{"src/new/hello.txt": "hello\n\nworld\n"},
		},
		{
			name:      "add empty file",
			input:     patch("*** Add File: empty.txt"),
			want:      "A empty.txt",
			wantFiles: map[string]string{"empty.txt": ""},
		},
		{
			name:      "add with blank line instead of lone +",
			input:     patch("*** Add File: a.txt\n+one\n\n+three\n"),
			want:      "A a.txt",
			wantFiles: map[string]string{"a.txt": "one\n\nthree\n"},
		},
		{
			name:      "delete",
			files:     map[string]string{"old.txt": "bye\n"},
			input:     patch("*** Delete File: old.txt"),
			want:      "D old.txt",
			wantFiles: map[string]string{"old.txt": "<missing>"},
		},
		{
			name:  "update one hunk",
			files: map[string]string{"main.go": goSrc},
			input: patch("*** Update File: main.go\n@@\n func main() {\n-\tfmt.Println(\"hello\")\n+\tfmt.Println(\"hello, world\")\n }"),
			want:  "M main.go",
			wantFiles: map[string]string{"main.go": strings.Replace(goSrc,
				`fmt.Println("hello")`, `fmt.Println("hello, world")`, 1)},
		},
		{
			name:  "update without @@ on the first hunk",
			files: map[string]string{"main.go": goSrc},
			input: patch("*** Update File: main.go\n func helper() int {\n-\treturn 1\n+\treturn 2\n }"),
			want:  "M main.go",
			wantFiles: map[string]string{"main.go": strings.Replace(goSrc,
				"return 1", "return 2", 1)},
		},
		{
			name:  "multi-hunk with @@ context",
			files: map[string]string{"main.go": goSrc},
			input: patch(`*** Update File: main.go
@@ import "fmt"
-import "fmt"
+import (
+	"fmt"
+	"os"
+)
@@ func main() {
 func main() {
 	fmt.Println("hello")
+	os.Exit(0)
 }
@@ func helper() int {
-	return 1
+	return 42
 }`),
			want: "M main.go",
			wantFiles: map[string]string{"main.go": `package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("hello")
	os.Exit(0)
}

func helper() int {
	return 42
}
`},
		},
		{
			name:  "pure insertion after @@ line",
			files: map[string]string{"list.txt": "a\nb\nc\n"},
			input: patch("*** Update File: list.txt\n@@ b\n+b2"),
			want:  "M list.txt",
			wantFiles: map[string]string{
				"list.txt": "a\nb\nb2\nc\n"},
		},
		{
			name:      "pure insertion without @@ appends",
			files:     map[string]string{"list.txt": "a\nb\n"},
			input:     patch("*** Update File: list.txt\n+c"),
			want:      "M list.txt",
			wantFiles: map[string]string{"list.txt": "a\nb\nc\n"},
		},
		{
			name:      "@@ line matches despite indentation",
			files:     map[string]string{"a.py": "class A:\n    def f(self):\n        return 1\n"},
			input:     patch("*** Update File: a.py\n@@ def f(self):\n-        return 1\n+        return 2"),
			want:      "M a.py",
			wantFiles: map[string]string{"a.py": "class A:\n    def f(self):\n        return 2\n"},
		},
		{
			name:      "end of file",
			files:     map[string]string{"a.txt": "x\nend\nx\nend\n"},
			input:     patch("*** Update File: a.txt\n@@\n x\n-end\n+END\n*** End of File"),
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "x\nend\nx\nEND\n"},
		},
		{
			name:      "trailing whitespace tolerated",
			files:     map[string]string{"a.txt": "keep   \nold\t\n"},
			input:     patch("*** Update File: a.txt\n keep\n-old\n+new"),
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "keep   \nnew\n"},
		},
		{
			name:      "CRLF file keeps CRLF",
			files:     map[string]string{"win.txt": "one\r\ntwo\r\nthree\r\n"},
			input:     patch("*** Update File: win.txt\n one\n-two\n+TWO\n+2.5"),
			want:      "M win.txt",
			wantFiles: map[string]string{"win.txt": "one\r\nTWO\r\n2.5\r\nthree\r\n"},
		},
		{
			name:      "no final newline stays so",
			files:     map[string]string{"a.txt": "a\nb"},
			input:     patch("*** Update File: a.txt\n-b\n+c"),
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "a\nc"},
		},
		{
			name:      "move with change",
			files:     map[string]string{"old/name.go": goSrc},
			input:     patch("*** Update File: old/name.go\n*** Move to: new/dir/name.go\n@@\n-\treturn 1\n+\treturn 3"),
			want:      "M new/dir/name.go (moved from old/name.go)",
			wantFiles: map[string]string{"old/name.go": "<missing>", "new/dir/name.go": strings.Replace(goSrc, "return 1", "return 3", 1)},
		},
		{
			name:      "pure move",
			files:     map[string]string{"a.txt": "same\n"},
			input:     patch("*** Update File: a.txt\n*** Move to: b.txt"),
			want:      "M b.txt (moved from a.txt)",
			wantFiles: map[string]string{"a.txt": "<missing>", "b.txt": "same\n"},
		},
		{
			name:  "several files at once",
			files: map[string]string{"keep.txt": "1\n2\n3\n", "gone.txt": "x\n"},
			input: patch("*** Add File: added.txt\n+new\n*** Update File: keep.txt\n@@\n 1\n-2\n+two\n 3\n*** Delete File: gone.txt"),
			want:  "A added.txt\nM keep.txt\nD gone.txt",
			wantFiles: map[string]string{
				"added.txt": "new\n", "keep.txt": "1\ntwo\n3\n", "gone.txt": "<missing>"},
		},
		{
			name:      "add then update the same file",
			input:     patch("*** Add File: a.txt\n+one\n*** Update File: a.txt\n-one\n+uno"),
			want:      "A a.txt\nM a.txt",
			wantFiles: map[string]string{"a.txt": "uno\n"},
		},
		{
			name:      "delete then add the same file",
			files:     map[string]string{"a.txt": "old\n"},
			input:     patch("*** Delete File: a.txt\n*** Add File: a.txt\n+new"),
			want:      "D a.txt\nA a.txt",
			wantFiles: map[string]string{"a.txt": "new\n"},
		},
		{
			name:      "heredoc wrapper, CRLF patch, surrounding blanks",
			files:     map[string]string{"a.txt": "x\n"},
			input:     "\n\napply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Update File: a.txt\r\n-x\r\n+y\r\n*** End Patch\r\nEOF\n\n",
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "y\n"},
		},
		{
			name:      "unified diff hunk header",
			files:     map[string]string{"a.txt": "1\n2\n3\n"},
			input:     patch("*** Update File: a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+b\n 3"),
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "1\nb\n3\n"},
		},
		{
			name:      "empty context line written as blank",
			files:     map[string]string{"a.txt": "a\n\nb\n"},
			input:     patch("*** Update File: a.txt\n a\n\n-b\n+c\n\n"),
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "a\n\nc\n"},
		},
		{
			name:      "hunks searched in order",
			files:     map[string]string{"a.txt": "x\ny\nx\ny\n"},
			input:     patch("*** Update File: a.txt\n@@\n x\n-y\n+1\n@@\n x\n-y\n+2"),
			want:      "M a.txt",
			wantFiles: map[string]string{"a.txt": "x\n1\nx\n2\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWS(t)
			for p, c := range tt.files {
				w.file(p, c)
			}
			got := w.run(NewApplyPatch(), obj{"input": tt.input})
			want := tools.Result{Text: "Success. Updated the following files:\n" + tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for p, c := range tt.wantFiles {
				if diff := cmp.Diff(c, w.content(p)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
			}
			assertNoTempFiles(t, w)
			w.checkOutside()
		})
	}
}

// TestApplyPatchAllOrNothing: a patch whose last operation fails changes
// no file, though the ones before it were fine.
func TestApplyPatchAllOrNothing(t *testing.T) {
	files := map[string]string{"a.txt": "a1\na2\n", "b.txt": "b1\nb2\nb3\n", "c.txt": "c\n"}
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{
			name: "context mismatch in second file",
			input: patch("*** Add File: new.txt\n+n\n*** Update File: a.txt\n-a1\n+A1\n*** Delete File: c.txt\n" +
				"*** Update File: b.txt\n@@\n b1\n-b2\n+B2\n@@\n-b9\n+B9"),
			want: `apply_patch failed and changed nothing. Update File "b.txt" (patch line 8): hunk 2 (patch line 13): these lines were not found:
  b9
Read the file again and copy the unchanged and removed lines exactly.`,
		},
		{
			name:  "@@ line not found",
			input: patch("*** Update File: a.txt\n-a1\n+A1\n*** Update File: b.txt\n@@ b7\n-b3\n+B3"),
			want:  `apply_patch failed and changed nothing. Update File "b.txt" (patch line 5): hunk 1 (patch line 6): the @@ line "b7" was not found`,
		},
		{
			name:  "removed line after @@ not found",
			input: patch("*** Update File: b.txt\n@@ b2\n-b1\n+B1"),
			want: `apply_patch failed and changed nothing. Update File "b.txt" (patch line 2): hunk 1 (patch line 3): these lines were not found after the @@ line "b2":
  b1
Read the file again and copy the unchanged and removed lines exactly.`,
		},
		{
			name:  "end of file mismatch",
			input: patch("*** Update File: b.txt\n-b2\n+B2\n*** End of File"),
			want: `apply_patch failed and changed nothing. Update File "b.txt" (patch line 2): hunk 1 (patch line 3): these lines were not found at the end of the file:
  b2
Read the file again and copy the unchanged and removed lines exactly.`,
		},
		{
			name:  "add existing",
			input: patch("*** Delete File: c.txt\n*** Add File: a.txt\n+x"),
			want:  `apply_patch failed and changed nothing. Add File "a.txt" (patch line 3): the file already exists; use "*** Update File" to change it, or delete it first`,
		},
		{
			name:  "delete missing",
			input: patch("*** Delete File: c.txt\n*** Delete File: c.txt"),
			want:  `apply_patch failed and changed nothing. Delete File "c.txt" (patch line 3): the file does not exist`,
		},
		{
			name:  "update missing",
			input: patch("*** Update File: zzz.txt\n-a\n+b"),
			want:  `apply_patch failed and changed nothing. Update File "zzz.txt" (patch line 2): the file does not exist; use "*** Add File" to create it`,
		},
		{
			name:  "move onto existing",
			input: patch("*** Update File: a.txt\n*** Move to: b.txt\n-a1\n+x"),
			want:  `apply_patch failed and changed nothing. Update File "a.txt" (patch line 2): Move to "b.txt": that file already exists`,
		},
		{
			name:  "path outside",
			input: patch("*** Update File: a.txt\n-a1\n+x\n*** Add File: ../outside/evil\n+x"),
			want:  `apply_patch failed and changed nothing. Add File "../outside/evil" (patch line 5): path "../outside/evil" is outside the workspace`,
		},
		{
			name:  "move outside",
			input: patch("*** Update File: a.txt\n*** Move to: /tmp/a.txt"),
			want:  `apply_patch failed and changed nothing. Update File "a.txt" (patch line 2): Move to: path "/tmp/a.txt" is outside the workspace; use a path relative to the workspace root`,
		},
		{
			name:  "directory",
			input: patch("*** Delete File: dir"),
			want:  `apply_patch failed and changed nothing. Delete File "dir" (patch line 2): "dir" is a directory`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWS(t)
			for p, c := range files {
				w.file(p, c)
			}
			w.file("dir/x", "")
			before := w.snapshot()
			got := w.run(NewApplyPatch(), obj{"input": tt.input})
			if diff := cmp.Diff(tools.Result{Text: tt.want, IsError: true}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, w.snapshot()); diff != "" {
				t.Errorf("files changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestApplyPatchMalformed(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"empty", "  \n", "invalid patch: the patch is empty; it must start with \"*** Begin Patch\" and end with \"*** End Patch\""},
		{"no begin", "*** Update File: a.txt\n-a\n+b\n*** End Patch", `invalid patch, line 1: the first line must be "*** Begin Patch", not "*** Update File: a.txt"`},
		{"no end", "*** Begin Patch\n*** Update File: a.txt\n-a\n+b", `invalid patch, line 4: the last line must be "*** End Patch", not "+b"`},
		{"only begin", "*** Begin Patch", `invalid patch, line 1: the last line must be "*** End Patch", not "*** Begin Patch"`},
		{"no operations", "*** Begin Patch\n\n*** End Patch", "invalid patch: the patch has no file operations"},
		{"bad header", patch("*** Modify File: a.txt\n-a"), `invalid patch, line 2: "*** Modify File: a.txt" is not a file operation; expected "*** Add File: ...", "*** Delete File: ..." or "*** Update File: ..." followed by a path`},
		{"diff header", patch("--- a/a.txt\n+++ b/a.txt"), `invalid patch, line 2: "--- a/a.txt" is not a file operation; expected "*** Add File: ...", "*** Delete File: ..." or "*** Update File: ..." followed by a path`},
		{"no path", patch("*** Delete File:"), "invalid patch, line 2: Delete File has no path"},
		{"empty update", patch("*** Update File: a.txt"), `invalid patch, line 2: Update File "a.txt" has no hunks; add lines starting with "@@", " ", "-" or "+"`},
		{"bad hunk line", patch("*** Update File: a.txt\n@@\n a\nb\n+c"), `invalid patch, line 5: in Update File "a.txt", "b": every line of a hunk must start with " " (context), "-" (remove) or "+" (add)`},
		{"hunk with no lines", patch("*** Update File: a.txt\n@@ a\n@@ b\n-b"), `invalid patch, line 3: in Update File "a.txt" a hunk has no lines`},
		{"add line without +", patch("*** Add File: a.txt\n+one\ntwo"), `invalid patch, line 4: in Add File "a.txt" every line must start with "+" (an empty line is a lone "+"), not "two"`},
		{"second begin", patch("*** Add File: a\n+x\n*** Begin Patch"), `invalid patch, line 4: a second "*** Begin Patch"; send one patch, with all file operations between one "*** Begin Patch" and one "*** End Patch"`},
		{"early end", patch("*** Add File: a\n+x\n*** End Patch\n*** Add File: b\n+y"), `invalid patch, line 4: "*** End Patch" before the last line; put every file operation before it`},
		{"empty move", patch("*** Update File: a.txt\n*** Move to:\n-a"), "invalid patch, line 3: Move to has no path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWS(t)
			w.file("a.txt", "a\n")
			before := w.snapshot()
			got := w.run(NewApplyPatch(), obj{"input": tt.input})
			want := tools.Result{Text: "apply_patch failed and changed nothing. " + tt.want, IsError: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, w.snapshot()); diff != "" {
				t.Errorf("files changed:\n%s", diff)
			}
		})
	}
}

func TestApplyPatchArgs(t *testing.T) {
	w := newWS(t)
	for _, c := range []struct {
		args any
		want string
	}{
		{obj{}, `missing required argument "input"`},
		{obj{"patch": "x"}, `unknown argument "patch"; allowed arguments: input`},
		{obj{"input": 3}, `argument "input" must be a string`},
	} {
		got := w.run(NewApplyPatch(), c.args)
		if diff := cmp.Diff(tools.Result{Text: c.want, IsError: true}, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", c.args, diff)
		}
	}
}

// TestApplyPatchRollback makes the second of two writes fail and checks
// that the first is undone.
func TestApplyPatchRollback(t *testing.T) {
	w := newWS(t)
	w.file("a.txt", "a\n")
	// Check the patch, then put a file where its new file's directory must
	// go, so the second write fails after the first succeeded.
	ops, err := parsePatch(patch("*** Update File: a.txt\n-a\n+A\n*** Add File: sub/new.txt\n+n"))
	if err != nil {
		t.Fatal(err)
	}
	o := &overlay{root: w.root, orig: map[string]fileState{}, cur: map[string]fileState{}}
	for _, op := range ops {
		if _, err := o.check(op); err != nil {
			t.Fatal(err)
		}
	}
	// Between check and commit, something makes sub/new.txt unwritable.
	w.file("sub", "now a file\n")
	err = o.commit()
	if err == nil || !strings.Contains(err.Error(), `writing "sub/new.txt" failed`) || !strings.Contains(err.Error(), "restored") {
		t.Fatalf("commit error = %v", err)
	}
	if got := w.content("a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q, want it restored", got)
	}
	assertNoTempFiles(t, w)
}

func TestApplyPatchCanceled(t *testing.T) {
	w := newWS(t)
	w.file("a.txt", "a\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewApplyPatch().Run(ctx, w.env, []byte(`{"input":"*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"}`))
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if got := w.content("a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q", got)
	}
}

func TestApplyPatchSymlinkParentEscape(t *testing.T) {
	w := newWS(t)
	w.symlink("../outside", "out")
	res := w.run(NewApplyPatch(), obj{"input": patch("*** Add File: out/planted.txt\n+x")})
	want := tools.Result{Text: `apply_patch failed and changed nothing. Add File "out/planted.txt" (patch line 2): path "out/planted.txt" is outside the workspace (a symbolic link leads out of it)`, IsError: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(w.outside, "planted.txt")); err == nil {
		t.Error("file planted outside the workspace")
	}
	w.checkOutside()
}
