package skill

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// workspace writes files (path → content) under a new directory and opens
// it as a root.
func workspace(t *testing.T, files map[string]string) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root, dir
}

func good(name string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: The %s skill.\n---\nbody\n", name, name)
}

func names(s Set) []string {
	var out []string
	for _, k := range s.All() {
		out = append(out, k.Name)
	}
	return out
}

func warnings(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Error())
	}
	return out
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, dir string)
		want  []string // skill names
		warns []string // each warning must contain the matching string
	}{
		{name: "no skills directory", files: map[string]string{"AGENTS.md": "x"}},
		{name: "good and broken side by side",
			files: map[string]string{
				"skills/b-skill/SKILL.md": good("b-skill"),
				"skills/a-skill/SKILL.md": good("a-skill"),
				"skills/broken/SKILL.md":  "no frontmatter here",
				"skills/empty-dir/x.txt":  "",
				"skills/lower/skill.md":   good("lower"),
				"skills/README.md":        "notes",
				"skills/.git/SKILL.md":    "hidden directories are not skills",
			},
			want: []string{"a-skill", "b-skill"},
			warns: []string{
				"skills/README.md: not a directory",
				"skills/broken/SKILL.md:1: no frontmatter",
				"skills/empty-dir/SKILL.md: no SKILL.md in this directory",
				"skills/lower/SKILL.md: no SKILL.md in this directory (the name is case-sensitive",
			}},
		{name: "duplicate names keep the first directory",
			files: map[string]string{"skills/one/SKILL.md": good("same"), "skills/two/SKILL.md": good("same")},
			want:  []string{"same"},
			warns: []string{`skills/two/SKILL.md: name "same" is already taken by skills/one/SKILL.md`}},
		{name: "symlinked SKILL.md outside the workspace is refused",
			files: map[string]string{"skills/inside/SKILL.md": good("inside")},
			setup: func(t *testing.T, dir string) {
				outside := filepath.Join(t.TempDir(), "SKILL.md")
				if err := os.WriteFile(outside, []byte(good("outside")), 0o644); err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, outside, filepath.Join(dir, "skills", "outside", "SKILL.md"))
			},
			want:  []string{"inside"},
			warns: []string{"skills/outside/SKILL.md: cannot open"}},
		{name: "symlinked skill directory outside the workspace is refused",
			setup: func(t *testing.T, dir string) {
				outside := t.TempDir()
				if err := os.WriteFile(filepath.Join(outside, "SKILL.md"), []byte(good("away")), 0o644); err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, outside, filepath.Join(dir, "skills", "away"))
			},
			warns: []string{"skills/away/SKILL.md: cannot open"}},
		{name: "relative symlink inside the workspace is followed",
			files: map[string]string{"shared/SKILL.md": good("shared")},
			setup: func(t *testing.T, dir string) {
				mustSymlink(t, "../shared", filepath.Join(dir, "skills", "shared"))
			},
			want: []string{"shared"}},
		{name: "absolute symlink is refused even when it points inside",
			files: map[string]string{"shared/SKILL.md": good("shared")},
			setup: func(t *testing.T, dir string) {
				mustSymlink(t, filepath.Join(dir, "shared"), filepath.Join(dir, "skills", "shared"))
			},
			warns: []string{"skills/shared/SKILL.md: cannot open"}},
		{name: "a FIFO does not block loading",
			setup: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "skills", "pipe", "SKILL.md")
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			warns: []string{"skills/pipe/SKILL.md: not a regular file"}},
		{name: "too big", files: map[string]string{"skills/big/SKILL.md": good("big") + strings.Repeat("x", MaxFileSize)},
			warns: []string{fmt.Sprintf("skills/big/SKILL.md: file is %d bytes, more than the 262144 allowed", len(good("big"))+MaxFileSize)}},
		{name: "control characters in a directory name",
			files: map[string]string{"skills/a\nb/SKILL.md": good("ab")},
			warns: []string{`skills/"a\nb": directory name has control characters`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, dir := workspace(t, c.files)
			if c.setup != nil {
				c.setup(t, dir)
			}
			set, warns := Load(root)
			if diff := cmp.Diff(c.want, names(set)); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
			got := warnings(warns)
			if len(got) != len(c.warns) {
				t.Fatalf("warnings:\n%s\nwant %d like:\n%s", strings.Join(got, "\n"), len(c.warns), strings.Join(c.warns, "\n"))
			}
			for i, w := range c.warns {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestLoadLimit(t *testing.T) {
	files := map[string]string{}
	for i := range MaxSkills + 3 {
		n := fmt.Sprintf("s%03d", i)
		files["skills/"+n+"/SKILL.md"] = good(n)
	}
	root, _ := workspace(t, files)
	set, warns := Load(root)
	if set.Len() != MaxSkills {
		t.Errorf("loaded %d skills, want %d", set.Len(), MaxSkills)
	}
	want := []string{`skills: more than 200 skills: 3 directories left unread, from "s200" to "s202"`}
	if diff := cmp.Diff(want, warnings(warns)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestLoadCommands(t *testing.T) {
	long := strings.Repeat("abcd-", 8) // commands cut to 32 characters collide
	root, _ := workspace(t, map[string]string{
		"skills/skill/SKILL.md": good("skill"),
		"skills/l1/SKILL.md":    good(long + "one"),
		"skills/l2/SKILL.md":    good(long + "two"),
	})
	set, warns := Load(root)
	if len(warns) > 0 {
		t.Fatal(warns)
	}
	got := map[string]string{}
	for _, k := range set.All() {
		got[k.Name] = k.Command
	}
	want := map[string]string{
		"skill":      "skill_2", // "/skill" is the generic form
		long + "one": "abcd_abcd_abcd_abcd_abcd_abcd_ab",
		long + "two": "abcd_abcd_abcd_abcd_abcd_abcd_2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if k, ok := set.Get("skill"); !ok || k.Path != "skills/skill/SKILL.md" {
		t.Errorf("Get(skill) = %+v, %v", k, ok)
	}
	if _, ok := set.Get("nope"); ok {
		t.Error("Get(nope) found a skill")
	}
}

func TestLoadNilRoot(t *testing.T) {
	if set, warns := Load(nil); set.Len() != 0 || warns != nil {
		t.Errorf("Load(nil) = %v, %v", set, warns)
	}
}
