package config

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestHash(t *testing.T) {
	tests := map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	}
	for in, want := range tests {
		if got := Hash([]byte(in)); got != want {
			t.Errorf("Hash(%q) = %s, want %s", in, got, want)
		}
	}
	if Hash(nil) != Hash([]byte{}) {
		t.Error("Hash(nil) should equal the hash of empty input")
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if p, ok := Find(dir); ok {
		t.Errorf("Find in an empty dir = %s", p)
	}
	// A directory with a config name is not a config.
	if err := os.Mkdir(filepath.Join(dir, "talon.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ create, want string }{
		{"clawdbot.json", "clawdbot.json"},
		{"openclaw.json", "openclaw.json"},
	}
	for _, s := range steps {
		touch(s.create)
		if p, ok := Find(dir); !ok || p != filepath.Join(dir, s.want) {
			t.Errorf("after creating %s: Find = %s, %v; want %s", s.create, p, ok, s.want)
		}
	}
	if err := os.Remove(filepath.Join(dir, "talon.json")); err != nil {
		t.Fatal(err)
	}
	touch("talon.json")
	if p, ok := Find(dir); !ok || p != filepath.Join(dir, "talon.json") {
		t.Errorf("Find = %s, %v; want talon.json first", p, ok)
	}
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openclaw.json")
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Exists || f.Path != path || f.Raw != nil || f.Hash != Hash(nil) || f.Config == nil ||
		f.Tree == nil || f.Tree.Kind != Object || len(f.Tree.Members) != 0 {
		t.Errorf("missing file loaded as %+v", f)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"syntax", "{\n  a: 1,\n  b 2\n}", "loading config PATH: line 3, column 5: expected ':' after the property name, found '2'"},
		{"top level array", "[]", "loading config PATH: expected an object at the top level, found array"},
		{"empty file", "", "loading config PATH: line 1, column 1: expected a value, found end of input"},
		{"invalid", "{tools: {allow: 1}, gateway: {port: 0}}",
			"loading config PATH: invalid config: tools.allow: expected array of strings; gateway.port: expected a port number from 1 to 65535 (got 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "openclaw.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if diff := cmp.Diff(strings.ReplaceAll(tt.want, "PATH", path), err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadInvalidKeepsFile(t *testing.T) {
	raw := []byte(`{tools: {allow: 1}, foo: 2}`)
	f, err := Parse("x.json", raw)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Issues) != 1 {
		t.Fatalf("want a wrapped *ValidationError with one issue, got %v", err)
	}
	if f == nil || f.Hash != Hash(raw) || f.Tree.Get("foo") == nil || len(f.Warnings) != 1 {
		t.Errorf("an invalid file should still come back with hash, tree and warnings: %+v", f)
	}
}

func TestLoad(t *testing.T) {
	raw := []byte("// c\n{agents: {list: [{id: 'main'}]}, meta: {}}\n")
	path := filepath.Join(t.TempDir(), "openclaw.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Exists || string(f.Raw) != string(raw) || f.Hash != Hash(raw) || len(f.Config.Agents.List) != 1 {
		t.Errorf("Load = %+v", f)
	}
	if diff := cmp.Diff([]Issue{{"meta", MsgUnused}}, f.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestSave(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "state")
	path := filepath.Join(dir, "talon.json")
	tree := mustJSON5(t, `{zeta: 1, alpha: {unknown: [1, 'x']}, gateway: {port: 1}}`)
	hash, err := Save(path, tree)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if hash != Hash(data) {
		t.Errorf("Save returned %s, file hashes to %s", hash, Hash(data))
	}
	if diff := cmp.Diff(string(tree.Indented()), string(data)); diff != "" {
		t.Errorf("file content (-want +got):\n%s", diff)
	}
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700|fs.ModeDir)
	assertNoTemp(t, dir)

	// Overwriting keeps it private even if someone loosened the mode.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Tree.Set("added", NewBool(true))
	if _, err := Save(path, f.Tree); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range again.Tree.Members {
		keys = append(keys, m.Key)
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "gateway", "added"}, keys); diff != "" {
		t.Errorf("key order after round trip (-want +got):\n%s", diff)
	}
	if !Equal(again.Tree.Get("alpha"), tree.Get("alpha")) {
		t.Errorf("unknown key changed: %s", compact(t, again.Tree.Get("alpha")))
	}
	assertNoTemp(t, dir)
}

func TestSaveRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.json")
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "openclaw.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("creating a symlink to test with: %v", err)
	}
	_, err := Save(link, mustJSON5(t, `{a: 1}`))
	want := "saving config " + link + ": refusing to write through a symlink; point Talon at the real file"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if data, _ := os.ReadFile(target); string(data) != "{}" {
		t.Errorf("symlink target changed to %q", data)
	}
	assertNoTemp(t, dir)
}

func TestSaveFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory at the path makes the final rename fail.
	path := filepath.Join(dir, "talon.json")
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Save(path, mustJSON5(t, `{a: 1}`))
	if err == nil || !strings.HasPrefix(err.Error(), "saving config "+path+": replacing the file: ") {
		t.Errorf("error = %v", err)
	}
	assertNoTemp(t, dir)
}

func TestSaveRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "talon.json")
	tests := []struct {
		name string
		tree *Value
		want string
	}{
		{"nil", nil, "saving config PATH: expected an object at the top level"},
		{"array", NewArray(), "saving config PATH: expected an object at the top level"},
		{"Infinity", mustJSON5(t, `{a: {b: [NaN]}}`), "saving config PATH: a.b[0]: NaN cannot be written as JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Save(path, tt.tree)
			if err == nil || err.Error() != strings.ReplaceAll(tt.want, "PATH", path) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("file was written: %v", err)
			}
		})
	}
}

func TestRoundTripGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "roundtrip", "*.json5"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json5")
		t.Run(name, func(t *testing.T) {
			f, err := Load(in)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "talon.json")
			if _, err := Save(out, f.Tree); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".json5") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("saved file differs from %s (-want +got):\n%s", golden, diff)
			}
			// What we write must load to the same tree and config.
			back, err := Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if !Equal(back.Tree, f.Tree) {
				t.Error("saved file loads to a different tree")
			}
			if diff := cmp.Diff(f.Config, back.Config); diff != "" {
				t.Errorf("saved file decodes differently (-first +second):\n%s", diff)
			}
		})
	}
}

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode(); got != want {
		t.Errorf("%s mode = %v, want %v", path, got, want)
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestConcurrentLoadSave(t *testing.T) {
	dir := t.TempDir()
	src := mustJSON5(t, `{agents: {list: [{id: 'a', tools: {allow: ['read']}}]}, gateway: {port: 1}}`)
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func() {
			path := filepath.Join(dir, string(rune('a'+i)), "talon.json")
			var err error
			for j := 0; j < 5 && err == nil; j++ {
				if _, err = Save(path, src); err == nil {
					_, err = Load(path)
				}
			}
			done <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
