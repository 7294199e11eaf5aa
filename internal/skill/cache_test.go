package skill

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadSeesEdits: the parse cache never hides an edit or a fix.
func TestLoadSeesEdits(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "skills", "note", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	steps := []struct {
		content, desc string
		warn          bool
	}{
		{"---\nname: note\ndescription: First\n---\nbody\n", "First", false},
		{"---\nname: note\ndescription: First\n---\nbody\n", "First", false}, // cached
		{"---\nname: note\ndescription: Second\n---\nbody\n", "Second", false},
		{"---\nname: note\n---\nbody\n", "", true}, // no description: refused
		{"---\nname: note\ndescription: Fixed\n---\nbody\n", "Fixed", false},
	}
	for i, st := range steps {
		if err := os.WriteFile(file, []byte(st.content), 0o644); err != nil {
			t.Fatal(err)
		}
		set, warns := Load(root)
		s, ok := set.Get("note")
		switch {
		case st.warn && (ok || len(warns) != 1):
			t.Errorf("step %d: skill %v, warnings %v; want refused", i, ok, warns)
		case !st.warn && (!ok || s.Description != st.desc || len(warns) != 0):
			t.Errorf("step %d: %+v %v, warnings %v; want description %q", i, s, ok, warns, st.desc)
		}
	}
}
