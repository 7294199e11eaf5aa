package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func openTestRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestParseIdentity(t *testing.T) {
	cases := []struct {
		name, text string
		want       Identity
	}{
		{"plain lines", "# IDENTITY.md\n\n- Name: Ada\n- Emoji: 🦉\n- Avatar: avatars/ada.png\n- Theme: owl\n",
			Identity{Name: "Ada", Emoji: "🦉", Avatar: "avatars/ada.png", Theme: "owl"}},
		{"the last line of a key wins", "- Name: Ada\n- Emoji: 🦉\n- Name: Grace\n", Identity{Name: "Grace", Emoji: "🦉"}},
		{"bold keys, star bullets, any case, CRLF", "* **Name:** Ada\r\n- **EMOJI**: 🦉\r\n", Identity{Name: "Ada", Emoji: "🦉"}},
		{"template hints are unset", "- Name: _(pick something you like)_\n- Emoji: (your signature emoji)\n- Avatar:\n", Identity{}},
		{"other lines and keys ignored", "Name: not a bullet\n- Creature: owl\n- no colon here\n", Identity{}},
		{"a value with a colon", "- Avatar: https://example.test/a.png\n", Identity{Avatar: "https://example.test/a.png"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseIdentity(tc.text); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSeedWorkspace(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	created, err := SeedWorkspace(openTestRoot(t, dir), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"AGENTS.md", IdentityFile, "USER.md", "TOOLS.md"}; !slices.Equal(created, want) {
		t.Fatalf("created %v, want %v", created, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "SOUL.md")); string(b) != "mine" {
		t.Fatalf("SOUL.md overwritten: %q", b)
	}
	for _, name := range created {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
			t.Errorf("%s: %v %v", name, fi, err)
		}
	}
	if again, err := SeedWorkspace(openTestRoot(t, dir), false); err != nil || len(again) != 0 {
		t.Fatalf("second seed: %v %v", again, err)
	}
	empty := t.TempDir()
	if got, err := SeedWorkspace(openTestRoot(t, empty), true); err != nil || len(got) != 0 {
		t.Fatalf("skip: %v %v", got, err)
	}
}

func TestAppendIdentity(t *testing.T) {
	cases := []struct {
		name     string
		existing *string // nil = no file
		lines    []IdentityLine
		want     string // the file's end
		wantErr  string
	}{
		{"creates the file with its heading", nil, []IdentityLine{{"Name", "Ada"}, {"Emoji", "🦉"}},
			identityTemplate + "- Name: Ada\n- Emoji: 🦉\n", ""},
		{"appends on a new line", strPtr("# me\n- Name: Ada"), []IdentityLine{{"Name", "Grace"}}, "# me\n- Name: Ada\n- Name: Grace\n", ""},
		{"nothing to add", strPtr("x"), nil, "x", ""},
		{"a value spanning lines is refused", strPtr("x\n"), []IdentityLine{{"Name", "a\n- Avatar: evil"}}, "x\n", "spans lines"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, IdentityFile)
			if tc.existing != nil {
				if err := os.WriteFile(path, []byte(*tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := AppendIdentity(openTestRoot(t, dir), tc.lines)
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) || tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.want {
				t.Fatalf("file = %q, want %q", got, tc.want)
			}
			if id, err := ReadIdentity(openTestRoot(t, dir)); err != nil || tc.wantErr == "" && len(tc.lines) > 0 && id.Name == "" {
				t.Fatalf("read back: %+v %v", id, err)
			}
		})
	}
}

// TestIdentityStaysInWorkspace: IDENTITY.md as a link out of the
// workspace is neither read nor written through.
func TestIdentityStaysInWorkspace(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "secret.md")
	if err := os.WriteFile(target, []byte("- Name: leaked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, IdentityFile)); err != nil {
		t.Fatal(err)
	}
	if id, err := ReadIdentity(openTestRoot(t, dir)); err == nil || id.Name != "" {
		t.Fatalf("read through the link: %+v %v", id, err)
	}
	if err := AppendIdentity(openTestRoot(t, dir), []IdentityLine{{"Name", "x"}}); err == nil {
		t.Fatal("appended through the link")
	}
	if b, _ := os.ReadFile(target); string(b) != "- Name: leaked\n" {
		t.Fatalf("target changed: %q", b)
	}
}

func strPtr(s string) *string { return &s }
