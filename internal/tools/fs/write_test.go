package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/tools"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		args      any
		want      tools.Result
		wantFiles map[string]string // workspace path -> content ("<missing>" for none)
	}{
		{
			name:      "create",
			args:      obj{"path": "a.txt", "content": "hello\n"},
			want:      tools.Result{Text: `created "a.txt" (6 bytes)`},
			wantFiles: map[string]string{"a.txt": "hello\n"},
		},
		{
			name:      "create with parents",
			args:      obj{"path": "x/y/z/a.txt", "content": "deep"},
			want:      tools.Result{Text: `created "x/y/z/a.txt" (4 bytes)`},
			wantFiles: map[string]string{"x/y/z/a.txt": "deep"},
		},
		{
			name:      "replace",
			files:     map[string]string{"a.txt": "old content that is longer\n"},
			args:      obj{"path": "a.txt", "content": "new\n"},
			want:      tools.Result{Text: `replaced "a.txt" (4 bytes)`},
			wantFiles: map[string]string{"a.txt": "new\n"},
		},
		{
			name:      "empty content",
			files:     map[string]string{"a.txt": "old"},
			args:      obj{"path": "a.txt", "content": ""},
			want:      tools.Result{Text: `replaced "a.txt" (0 bytes)`},
			wantFiles: map[string]string{"a.txt": ""},
		},
		{
			name:      "one byte",
			args:      obj{"path": "a.txt", "content": "x"},
			want:      tools.Result{Text: `created "a.txt" (1 byte)`},
			wantFiles: map[string]string{"a.txt": "x"},
		},
		{
			name:      "directory",
			files:     map[string]string{"d/a.txt": "x"},
			args:      obj{"path": "d", "content": "x"},
			want:      tools.Result{Text: `"d" is a directory`, IsError: true},
			wantFiles: map[string]string{"d/a.txt": "x"},
		},
		{
			name: "workspace root",
			args: obj{"path": ".", "content": "x"},
			want: tools.Result{Text: `"." is the workspace directory, not a file`, IsError: true},
		},
		{
			name:      "parent is a file",
			files:     map[string]string{"a.txt": "x"},
			args:      obj{"path": "a.txt/b.txt", "content": "x"},
			want:      tools.Result{Text: `"a.txt/b.txt": a parent in the path is not a directory`, IsError: true},
			wantFiles: map[string]string{"a.txt": "x"},
		},
		{
			name: "missing content",
			args: obj{"path": "a.txt"},
			want: tools.Result{Text: `missing required argument "content"`, IsError: true},
		},
		{
			name:      "too large",
			args:      obj{"path": "a.txt", "content": strings.Repeat("x", MaxWriteBytes+1)},
			want:      tools.Result{Text: "content is 10485761 bytes; the limit is 10 MiB", IsError: true},
			wantFiles: map[string]string{"a.txt": "<missing>"},
		},
		{
			name: "content not a string",
			args: obj{"path": "a.txt", "content": []string{"a"}},
			want: tools.Result{Text: `argument "content" must be a string`, IsError: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWS(t)
			for p, c := range tt.files {
				w.file(p, c)
			}
			got := w.run(NewWrite(), tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for p, c := range tt.wantFiles {
				if got := w.content(p); got != c {
					t.Errorf("%s = %.80q, want %.80q", p, got, c)
				}
			}
			assertNoTempFiles(t, w)
			w.checkOutside()
		})
	}
}

func TestWriteKeepsMode(t *testing.T) {
	w := newWS(t)
	w.file("run.sh", "#!/bin/sh\n")
	p := filepath.Join(w.dir, "run.sh")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	if res := w.run(NewWrite(), obj{"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}); res.IsError {
		t.Fatal(res.Text)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o751 {
		t.Errorf("mode = %o, want 751", got)
	}
}

// TestWriteThroughSymlink: a link inside the workspace stays a link and
// its target gets the content.
func TestWriteThroughSymlink(t *testing.T) {
	w := newWS(t)
	w.file("docs/AGENTS.md", "old\n")
	w.symlink("docs/AGENTS.md", "CLAUDE.md")
	w.symlink("docs", "d")
	w.symlink("docs/missing.md", "dangling")
	for _, c := range []struct{ path, target string }{
		{"CLAUDE.md", "docs/AGENTS.md"},
		{"d/AGENTS.md", "docs/AGENTS.md"},
		{"dangling", "docs/missing.md"},
	} {
		if res := w.run(NewWrite(), obj{"path": c.path, "content": "via " + c.path + "\n"}); res.IsError {
			t.Fatalf("write %s: %s", c.path, res.Text)
		}
		if got, want := w.content(c.target), "via "+c.path+"\n"; got != want {
			t.Errorf("after writing %s, %s = %q, want %q", c.path, c.target, got, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(w.dir, "CLAUDE.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("CLAUDE.md is no longer a symlink: %v %v", fi, err)
	}
	if res := w.run(NewEdit(), obj{"path": "CLAUDE.md", "old_string": "via d/AGENTS.md", "new_string": "edited"}); res.IsError {
		t.Fatalf("edit through link: %s", res.Text)
	}
	if got := w.content("docs/AGENTS.md"); got != "edited\n" {
		t.Errorf("after edit, docs/AGENTS.md = %q", got)
	}
}

func TestWriteSymlinkLoop(t *testing.T) {
	w := newWS(t)
	w.symlink("b", "a")
	w.symlink("a", "b")
	res := w.run(NewWrite(), obj{"path": "a", "content": "x"})
	want := tools.Result{Text: `"a": too many levels of symbolic links`, IsError: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestEdit(t *testing.T) {
	const src = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name     string
		content  string
		args     obj
		want     tools.Result
		wantFile string // "" means unchanged
	}{
		{
			name:     "single",
			content:  src,
			args:     obj{"old_string": "func a() {\n\treturn 1", "new_string": "func a() {\n\treturn 2"},
			want:     tools.Result{Text: `edited "f.go": 1 replacement`},
			wantFile: "func a() {\n\treturn 2\n}\n\nfunc b() {\n\treturn 1\n}\n",
		},
		{
			name:    "ambiguous",
			content: src,
			args:    obj{"old_string": "return 1", "new_string": "return 2"},
			want:    tools.Result{Text: `old_string occurs 2 times in "f.go"; include more surrounding lines to make it unique, or set replace_all to true to replace all 2`, IsError: true},
		},
		{
			name:     "replace all",
			content:  src,
			args:     obj{"old_string": "return 1", "new_string": "return 2", "replace_all": true},
			want:     tools.Result{Text: `edited "f.go": 2 replacements`},
			wantFile: strings.ReplaceAll(src, "return 1", "return 2"),
		},
		{
			name:     "replace all with one match",
			content:  src,
			args:     obj{"old_string": "func b", "new_string": "func c", "replace_all": true},
			want:     tools.Result{Text: `edited "f.go": 1 replacement`},
			wantFile: strings.ReplaceAll(src, "func b", "func c"),
		},
		{
			name:     "delete text",
			content:  src,
			args:     obj{"old_string": "\nfunc b() {\n\treturn 1\n}\n", "new_string": ""},
			want:     tools.Result{Text: `edited "f.go": 1 replacement`},
			wantFile: "func a() {\n\treturn 1\n}\n",
		},
		{
			name:    "not found, whitespace differs",
			content: src,
			args:    obj{"old_string": "func a() {\n    return 1", "new_string": "x"},
			want:    tools.Result{Text: `old_string was not found in "f.go". Text that differs only in whitespace or indentation exists; read the file again and copy old_string exactly, including spaces, tabs and line breaks.`, IsError: true},
		},
		{
			name:    "not found, first line matches",
			content: src,
			args:    obj{"old_string": "func a() {\n\treturn 3", "new_string": "x"},
			want:    tools.Result{Text: `old_string was not found in "f.go". Its first line "func a() {" occurs, but the lines after it differ; read the file again and copy old_string exactly.`, IsError: true},
		},
		{
			name:    "not found at all",
			content: src,
			args:    obj{"old_string": "func z()", "new_string": "x"},
			want:    tools.Result{Text: `old_string was not found in "f.go". It must match the current file exactly, including whitespace and indentation; read the file again and copy the text from it.`, IsError: true},
		},
		{
			name:     "CRLF file, LF old_string",
			content:  "a\r\nb\r\nc\r\n",
			args:     obj{"old_string": "a\nb\n", "new_string": "x\ny\n"},
			want:     tools.Result{Text: `edited "f.go": 1 replacement`},
			wantFile: "x\r\ny\r\nc\r\n",
		},
		{
			name:    "same strings",
			content: src,
			args:    obj{"old_string": "a", "new_string": "a"},
			want:    tools.Result{Text: "old_string and new_string are the same; nothing would change", IsError: true},
		},
		{
			name:    "empty old_string",
			content: src,
			args:    obj{"old_string": "", "new_string": "a"},
			want:    tools.Result{Text: "old_string must not be empty; to create or overwrite a file, use write", IsError: true},
		},
		{
			name:    "missing new_string",
			content: src,
			args:    obj{"old_string": "a"},
			want:    tools.Result{Text: `missing required argument "new_string"`, IsError: true},
		},
		{
			name:    "replace_all not a bool",
			content: src,
			args:    obj{"old_string": "a", "new_string": "b", "replace_all": "always"},
			want:    tools.Result{Text: `argument "replace_all" must be true or false`, IsError: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWS(t)
			w.file("f.go", tt.content)
			tt.args["path"] = "f.go"
			got := w.run(NewEdit(), tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			want := tt.wantFile
			if want == "" {
				want = tt.content
			}
			if diff := cmp.Diff(want, w.content("f.go")); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
			assertNoTempFiles(t, w)
		})
	}
}

func TestEditMissingAndDirectory(t *testing.T) {
	w := newWS(t)
	w.file("d/x", "")
	for _, c := range []struct{ path, want string }{
		{"nope.txt", `"nope.txt" does not exist`},
		{"d", `"d" is a directory`},
	} {
		res := w.run(NewEdit(), obj{"path": c.path, "old_string": "a", "new_string": "b"})
		if diff := cmp.Diff(tools.Result{Text: c.want, IsError: true}, res); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
	}
	if got := w.content("nope.txt"); got != "<missing>" {
		t.Errorf("edit created nope.txt: %q", got)
	}
}
