package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"talon/internal/tools"
)

// numbered returns n lines "line 1\n" ... "line n\n".
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	long := strings.Repeat("x", 199) + "\n" // 200-byte lines
	tests := []struct {
		name  string
		files map[string]string
		args  any
		want  tools.Result
	}{
		{
			name:  "whole file",
			files: map[string]string{"a.txt": "hello\nworld\n"},
			args:  obj{"path": "a.txt"},
			want:  tools.Result{Text: "hello\nworld\n"},
		},
		{
			name:  "no final newline",
			files: map[string]string{"a.txt": "hello\nworld"},
			args:  obj{"path": "a.txt"},
			want:  tools.Result{Text: "hello\nworld"},
		},
		{
			name:  "nested path and dot segments",
			files: map[string]string{"src/pkg/a.go": "package a\n"},
			args:  obj{"path": "./src/x/../pkg/a.go"},
			want:  tools.Result{Text: "package a\n"},
		},
		{
			name:  "offset and limit",
			files: map[string]string{"a.txt": numbered(10)},
			args:  obj{"path": "a.txt", "offset": 3, "limit": 2},
			want:  tools.Result{Text: "line 3\nline 4\n[lines 3-4 of 10 shown; call read with offset=5 to continue]"},
		},
		{
			name:  "offset to the end",
			files: map[string]string{"a.txt": numbered(10)},
			args:  obj{"path": "a.txt", "offset": 9},
			want:  tools.Result{Text: "line 9\nline 10\n[lines 9-10 of 10 shown]"},
		},
		{
			name:  "offset at last line without newline",
			files: map[string]string{"a.txt": "a\nb"},
			args:  obj{"path": "a.txt", "offset": 2},
			want:  tools.Result{Text: "b\n[lines 2-2 of 2 shown]"},
		},
		{
			name:  "default limit 2000",
			files: map[string]string{"a.txt": numbered(2500)},
			args:  obj{"path": "a.txt"},
			want:  tools.Result{Text: numbered(2000) + "[lines 1-2000 of 2500 shown; call read with offset=2001 to continue]"},
		},
		{
			name:  "byte limit",
			files: map[string]string{"a.txt": strings.Repeat(long, 3000)},
			args:  obj{"path": "a.txt"},
			want: tools.Result{Text: strings.Repeat(long, MaxReadBytes/200) +
				fmt.Sprintf("[lines 1-%d of 3000 shown (output limit 256 KiB); call read with offset=%d to continue]", MaxReadBytes/200, MaxReadBytes/200+1)},
		},
		{
			name:  "first line longer than the byte limit",
			files: map[string]string{"a.txt": strings.Repeat("é", MaxReadBytes) + "\nnext\n"},
			args:  obj{"path": "a.txt"},
			want: tools.Result{Text: strings.Repeat("é", MaxReadBytes/2) +
				"\n[line 1 is longer than 256 KiB and was cut; the file has 2 lines; call read with offset=2 to continue]"},
		},
		{
			name:  "empty file",
			files: map[string]string{"e.txt": ""},
			args:  obj{"path": "e.txt"},
			want:  tools.Result{Text: `["e.txt" is empty]`},
		},
		{
			name:  "offset past the end",
			files: map[string]string{"a.txt": numbered(3)},
			args:  obj{"path": "a.txt", "offset": 4},
			want:  tools.Result{Text: `offset 4 is past the end of "a.txt", which has 3 lines`, IsError: true},
		},
		{
			name:  "binary",
			files: map[string]string{"b.bin": "PK\x03\x04\x00\x00abc"},
			args:  obj{"path": "b.bin"},
			want:  tools.Result{Text: "binary file, 9 bytes", IsError: true},
		},
		{
			name:  "NUL after the sniffed part is text",
			files: map[string]string{"late.txt": strings.Repeat("a", binarySniff) + "\x00\n"},
			args:  obj{"path": "late.txt"},
			want:  tools.Result{Text: strings.Repeat("a", binarySniff) + "\x00\n"},
		},
		{
			name:  "directory",
			files: map[string]string{"d/b.txt": "", "d/a.txt": "", "d/sub/x": "", "d/Z": ""},
			args:  obj{"path": "d"},
			want:  tools.Result{Text: "\"d\" is a directory with 4 entries:\nZ\na.txt\nb.txt\nsub/"},
		},
		{
			name:  "workspace root",
			files: map[string]string{"a.txt": "", "src/x.go": ""},
			args:  obj{"path": "."},
			want:  tools.Result{Text: "\".\" is a directory with 2 entries:\na.txt\nsrc/"},
		},
		{
			name: "missing",
			args: obj{"path": "nope.txt"},
			want: tools.Result{Text: `"nope.txt" does not exist`, IsError: true},
		},
		{
			name:  "parent is a file",
			files: map[string]string{"a.txt": "x"},
			args:  obj{"path": "a.txt/b"},
			want:  tools.Result{Text: `"a.txt/b": a parent in the path is not a directory`, IsError: true},
		},
		{
			name: "missing path",
			args: obj{},
			want: tools.Result{Text: `missing required argument "path"`, IsError: true},
		},
		{
			name: "empty path",
			args: obj{"path": ""},
			want: tools.Result{Text: `path must not be empty; use "." for the workspace root`, IsError: true},
		},
		{
			name: "limit too large",
			args: obj{"path": "a", "limit": 5000},
			want: tools.Result{Text: `argument "limit" must be an integer from 1 to 2000`, IsError: true},
		},
		{
			name: "offset zero",
			args: obj{"path": "a", "offset": 0},
			want: tools.Result{Text: `argument "offset" must be an integer of at least 1`, IsError: true},
		},
		{
			name: "unknown argument",
			args: obj{"path": "a", "lines": 5},
			want: tools.Result{Text: `unknown argument "lines"; allowed arguments: path, offset, limit`, IsError: true},
		},
		{
			name: "not an object",
			args: `["a.txt"]`,
			want: tools.Result{Text: `arguments must be a JSON object, got an array`, IsError: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWS(t)
			for p, c := range tt.files {
				w.file(p, c)
			}
			got := w.run(NewRead(), tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				if len(diff) > 2000 {
					diff = diff[:2000] + "..."
				}
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadDirectoryLimit(t *testing.T) {
	w := newWS(t)
	for i := range MaxListEntries + 5 {
		w.file(fmt.Sprintf("many/f%04d", i), "")
	}
	res := w.run(NewRead(), obj{"path": "many"})
	lines := strings.Split(res.Text, "\n")
	if got, want := lines[0], `"many" is a directory with 1005 entries:`; got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
	if got, want := lines[len(lines)-1], "[first 1000 of 1005 entries shown]"; got != want {
		t.Errorf("footer = %q, want %q", got, want)
	}
	if got := len(lines); got != 1+MaxListEntries+1 {
		t.Errorf("%d lines, want %d", got, MaxListEntries+2)
	}
	if lines[1] != "f0000" || lines[MaxListEntries] != "f0999" {
		t.Errorf("entries not sorted: first %q, last %q", lines[1], lines[MaxListEntries])
	}
}

func TestReadSymlinkInside(t *testing.T) {
	w := newWS(t)
	w.file("real/a.txt", "real\n")
	w.symlink("real/a.txt", "link.txt")
	w.symlink("real", "linkdir")
	if res := w.run(NewRead(), obj{"path": "link.txt"}); res != (tools.Result{Text: "real\n"}) {
		t.Errorf("read link.txt = %+v", res)
	}
	if res := w.run(NewRead(), obj{"path": "linkdir/a.txt"}); res != (tools.Result{Text: "real\n"}) {
		t.Errorf("read linkdir/a.txt = %+v", res)
	}
}

func TestReadFIFO(t *testing.T) {
	w := newWS(t)
	if err := syscall.Mkfifo(filepath.Join(w.dir, "pipe"), 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	res := w.run(NewRead(), obj{"path": "pipe"})
	want := tools.Result{Text: `"pipe" is not a regular file or directory`, IsError: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("running as root: permission bits do not apply; checking the message mapping only")
		if got := fsError("a", os.ErrPermission).Error(); got != `permission denied for "a"` {
			t.Errorf("fsError = %q", got)
		}
		return
	}
	w := newWS(t)
	w.file("locked.txt", "x")
	if err := os.Chmod(filepath.Join(w.dir, "locked.txt"), 0); err != nil {
		t.Fatal(err)
	}
	res := w.run(NewRead(), obj{"path": "locked.txt"})
	want := tools.Result{Text: `permission denied for "locked.txt"`, IsError: true}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
