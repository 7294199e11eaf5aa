package node

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/platform/template"
)

func TestEntryName(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"a", "a", true},
		{"a/b/c.txt", "a/b/c.txt", true},
		{"dir/", "dir", true},
		{".hidden/x", ".hidden/x", true},
		{"..x", "..x", true},
		{"", "", false},
		{"/", "", false},
		{"/etc/passwd", "", false},
		{"../x", "", false},
		{"a/../../x", "", false},
		{"a/..", "", false},
		{"./a", "", false},
		{"a//b", "", false},
		{"a/./b", "", false},
		{"..", "", false},
		{"a\x00b", "", false},
		{"\xff", "", false},
		{strings.Repeat("d/", 64) + "f", "", false},
		{strings.Repeat("d/", 63) + "f", strings.Repeat("d/", 63) + "f", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := entryName(tc.name, maxDepth)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("entryName(%q) = %q, %v; want %q, ok %v", tc.name, got, err, tc.want, tc.ok)
			}
		})
	}
}

// TestTemplateArchive: a template packed and loaded on the other side is
// the same template — fields, files with their modes, seed — even after
// its directory changed on disk.
func TestTemplateArchive(t *testing.T) {
	for _, files := range []map[string]string{v1, v2} {
		tp := loadTemplateFiles(t, files)
		writeFile(t, filepath.Join(tp.Dir, "AGENTS.md"), "edited after the load\n")
		body, err := templateRequest(tp, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := loadTemplate(body.Template, body.Slug)
		if err != nil {
			t.Fatal(err)
		}
		opt := cmpopts.IgnoreUnexported(template.Template{})
		if d := cmp.Diff(tp, got, opt, cmpopts.IgnoreFields(template.Template{}, "Dir")); d != "" {
			t.Fatalf("fields (-sent +loaded):\n%s", d)
		}
		if d := cmp.Diff(tp.Files(), got.Files()); d != "" {
			t.Fatalf("files (-sent +loaded):\n%s", d)
		}
		if d := cmp.Diff(tp.Seed(), got.Seed()); d != "" {
			t.Fatalf("seed (-sent +loaded):\n%s", d)
		}
		if !bytes.Equal(tp.Manifest(), got.Manifest()) {
			t.Fatal("the manifest changed on the way")
		}
	}
	t.Run("a slug that is not the manifest's type", func(t *testing.T) {
		tp := loadTemplateFiles(t, v1)
		body, _ := templateRequest(tp, nil)
		if _, err := loadTemplate(body.Template, "other"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a slug that is a path", func(t *testing.T) {
		if _, err := loadTemplate(nil, "../x"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("got %v", err)
		}
	})
}

// entry is one archive entry to build.
type entry struct {
	name string
	typ  byte
	body string
	size int64 // when set, the header's size instead of len(body)
	link string
}

// archive builds a tar of es, ending with a correct end entry when end;
// an entry whose size is more than its body cuts the archive short there.
func archive(t testing.TB, end bool, es ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var sum archiveEnd
	for _, e := range es {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := int64(len(e.body))
		if e.size != 0 {
			size = e.size
		}
		if typ != tar.TypeReg {
			size = 0
		}
		hdr := &tar.Header{Typeflag: typ, Name: e.name, Size: size, Mode: 0o644, Linkname: e.link}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
			if size > int64(len(e.body)) {
				return buf.Bytes()
			}
			sum.Bytes += size
		}
		sum.Entries++
	}
	if end {
		b, _ := json.Marshal(sum)
		if err := addFile(tw, endEntry, 0o600, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lyingEnd is an archive of one file whose end entry counts two.
func lyingEnd(t testing.TB) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := addFile(tw, "talon.json", 0o600, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(archiveEnd{Entries: 2, Bytes: 3})
	if err := addFile(tw, endEntry, 0o600, b); err != nil {
		t.Fatal(err)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// TestUnpackRefuses: every hostile or broken archive is refused as
// invalid, and nothing is written outside the directory.
func TestUnpackRefuses(t *testing.T) {
	small := limits{entries: 4, fileBytes: 10, totalBytes: 15, depth: maxDepth}
	cfg := entry{name: "talon.json", body: "{}"}
	for _, tc := range []struct {
		name string
		tar  []byte
		lim  limits
	}{
		{"parent path", archive(t, true, cfg, entry{name: "../evil", body: "x"}), small},
		{"deep parent path", archive(t, true, cfg, entry{name: "a/../../evil", body: "x"}), small},
		{"absolute path", archive(t, true, cfg, entry{name: "/tmp/evil", body: "x"}), small},
		{"symlink", archive(t, true, cfg, entry{name: "link", typ: tar.TypeSymlink, link: "/etc"}), small},
		{"symlink then a file through it", archive(t, true, entry{name: "l", typ: tar.TypeSymlink, link: ".."}, entry{name: "l/x", body: "x"}), small},
		{"hard link", archive(t, true, cfg, entry{name: "h", typ: tar.TypeLink, link: "talon.json"}), small},
		{"character device", archive(t, true, cfg, entry{name: "null", typ: tar.TypeChar}), small},
		{"block device", archive(t, true, cfg, entry{name: "sda", typ: tar.TypeBlock}), small},
		{"fifo", archive(t, true, cfg, entry{name: "p", typ: tar.TypeFifo}), small},
		{"a file over the bound", archive(t, true, cfg, entry{name: "big", body: strings.Repeat("x", 11)}), small},
		{"files over the total", archive(t, true, entry{name: "a", body: "0123456789"}, entry{name: "b", body: "0123456789"}), small},
		{"a header claiming a huge size", archive(t, true, entry{name: "huge", body: "x", size: 1 << 40}), small},
		{"too many entries", archive(t, true, dirs("a/", "b/", "c/", "d/", "e/")...), small},
		{"a name given twice", archive(t, true, cfg, cfg), small},
		{"a file where a directory is", archive(t, true, entry{name: "a", body: "x"}, entry{name: "a/b", body: "y"}), small},
		{"no end entry", archive(t, false, cfg), small},
		{"cut short inside a file", archive(t, true, cfg, entry{name: "a", body: "x", size: 5}), small},
		{"an end entry counting other entries", lyingEnd(t), small},
		{"not a tar at all", []byte(strings.Repeat("garbage!", 200)), small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			writeFile(t, filepath.Join(dst, ".keep"), "")
			err := unpack(bytes.NewReader(tc.tar), dst, tc.lim, true)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("unpack: %v, want ErrInvalid", err)
			}
			if got := entries(t, parent); !cmp.Equal(got, []string{"dst"}) {
				t.Fatalf("beside the directory: %v", got)
			}
		})
	}
	t.Run("entries after the end entry", func(t *testing.T) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		b, _ := json.Marshal(archiveEnd{})
		_ = addFile(tw, endEntry, 0o600, b)
		_ = addFile(tw, "late", 0o600, []byte("x"))
		_ = tw.Close()
		if err := unpack(&buf, t.TempDir(), small, true); !errors.Is(err, ErrInvalid) {
			t.Fatalf("got %v", err)
		}
	})
}

// dirs are directory entries.
func dirs(names ...string) []entry {
	out := make([]entry, len(names))
	for i, n := range names {
		out[i] = entry{name: n, typ: tar.TypeDir}
	}
	return out
}
