package install

import (
	"testing"

	"talon/internal/config"
)

// TestEditConfigBaseHash has another writer change the config between
// editConfig's read and its save: the save must not overwrite that change
// but re-apply the edit to the new file.
func TestEditConfigBaseHash(t *testing.T) {
	state := t.TempDir()
	tn, err := CreateTenant(state, "acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	err = editConfig(tn, func(tree *config.Value, _ *config.Config) (*config.Value, error) {
		calls++
		if calls == 1 { // the other writer, after our read
			patchConfig(t, tn, `{session: {scope: "global"}}`)
		}
		tree.Set("meta", config.NewObject(config.Member{Key: "by", Value: config.NewString("installer")}))
		return tree, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("edit applied %d times, want 2 (once more after the conflict)", calls)
	}
	f := loadConfig(t, tn)
	if f.Config.Session.Scope != "global" || f.Tree.Lookup("meta", "by").Str != "installer" {
		t.Fatalf("lost an edit: %s", f.Raw)
	}
}
