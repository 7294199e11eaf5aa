package skill

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/prompt/*.golden from the current output")

// fixture loads testdata/workspace: the seed's generate-image skill and
// friends.
func fixture(t *testing.T) Set {
	t.Helper()
	root, err := os.OpenRoot(filepath.Join("testdata", "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	set, warns := Load(root)
	if len(warns) > 0 {
		t.Fatalf("fixture warnings: %v", warns)
	}
	return set
}

func except(removed ...string) func(string) bool {
	return func(tool string) bool {
		for _, r := range removed {
			if r == tool {
				return false
			}
		}
		return true
	}
}

func TestPrompt(t *testing.T) {
	set := fixture(t)
	cases := []struct {
		golden    string
		available func(string) bool
	}{
		{"all-tools", nil},
		{"policy-removed-tool", except("publish_linkedin", "sessions_send")},
		{"no-read", except("read")},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			got := set.Prompt(c.available)
			path := filepath.Join("testdata", "prompt", c.golden+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("prompt (-golden +got):\n%s", diff)
			}
		})
	}
}

func TestPromptEmpty(t *testing.T) {
	if got := (Set{}).Prompt(nil); got != "" {
		t.Errorf("empty set: %q", got)
	}
	hidden := Set{skills: []Skill{{Name: "x", Description: "d", Path: "skills/x/SKILL.md", DisableModelInvocation: true}}}
	if got := hidden.Prompt(nil); got != "" {
		t.Errorf("only hidden skills: %q", got)
	}
}
