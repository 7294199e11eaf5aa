package install

import (
	"fmt"
	"os"
	"path/filepath"

	"talon/internal/atomicfile"
	"talon/internal/config"
	"talon/internal/platform/template"
)

// Install installs the employee tp for a tenant: the template's files and
// seed (MEMORY.md, memory/, canvas/) into <tenant>/agents/<slug>/, its
// agents.list[] entry {id, name, workspace, model, sandbox, tools} into the
// tenant's config, and its required plugins enabled there. It refuses an
// employee the config already lists, and a required plugin the config keeps
// off (a *PluginError naming the key and the fix) before writing anything.
//
// Files go first and the config last, so a crash leaves at worst a
// workspace the config does not list yet; installing again completes it,
// keeping whatever that workspace holds beside the template's files.
func Install(stateDir, tenantID string, tp *template.Template) error {
	return apply(stateDir, tenantID, tp, true)
}

// Update brings an installed employee to tp: it replaces the files the
// template manages (template.Managed) and keeps everything else in the
// workspace — memory/, MEMORY.md, canvas/ and whatever the agent created —
// by moving it across with renames under a journal (see swap.go), so a
// crash at any point loses none of it. In the config it re-sets the
// entry's workspace, sandbox and tools.{alsoAllow,sandbox,exec}, keeping
// the name and model the tenant may have changed and every other key;
// enables the required plugins; and removes the employee's tools from the
// tenant-level tools.alsoAllow, where older installers put them.
func Update(stateDir, tenantID string, tp *template.Template) error {
	return apply(stateDir, tenantID, tp, false)
}

func apply(stateDir, tenantID string, tp *template.Template, install bool) error {
	verb := map[bool]string{true: "installing", false: "updating"}[install]
	fail := func(err error) error {
		return fmt.Errorf("%s employee %q for tenant %q: %w", verb, tp.Slug, tenantID, err)
	}
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if err := recoverSwap(pathsOf(t, tp.Slug)); err != nil {
		return fail(err)
	}
	edit := func(tree *config.Value, _ *config.Config) (*config.Value, error) {
		return applyAgent(tree, tp, install)
	}
	// Check the config change first: a refused plugin or a missing entry
	// must stop the operation before any file moves.
	if _, _, err := planConfig(t, edit); err != nil {
		return fail(err)
	}
	var seed []template.File
	if install {
		seed = tp.Seed()
	}
	if err := replaceWorkspace(t, tp.Slug, tp.Files(), seed); err != nil {
		return fail(err)
	}
	if err := editConfig(t, edit); err != nil {
		return fail(err)
	}
	return nil
}

// Uninstall removes the employee slug from a tenant: its agents.list[]
// entry, then its workspace with everything in it, memory included.
// Plugins it enabled stay enabled, since other employees may use them.
func Uninstall(stateDir, tenantID, slug string) error {
	fail := func(err error) error {
		return fmt.Errorf("uninstalling employee %q for tenant %q: %w", slug, tenantID, err)
	}
	if !template.ValidSlug(slug) {
		return fail(fmt.Errorf("%q is not a valid employee slug", slug))
	}
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	p := pathsOf(t, slug)
	if err := recoverSwap(p); err != nil {
		return fail(err)
	}
	listed := false
	err = editConfig(t, func(tree *config.Value, _ *config.Config) (*config.Value, error) {
		list := tree.Lookup("agents", "list")
		i := agentIndex(list, slug)
		listed = i >= 0
		if listed {
			list.Items = append(list.Items[:i:i], list.Items[i+1:]...)
		}
		return tree, nil
	})
	if err != nil {
		return fail(err)
	}
	there, err := exists(p.live)
	if err != nil {
		return fail(err)
	}
	if !listed && !there {
		return fail(fmt.Errorf("it is not installed"))
	}
	if there {
		if err := os.Rename(p.live, p.trash); err != nil {
			return fail(err)
		}
		if err := atomicfile.SyncDir(p.agents); err != nil {
			return fail(err)
		}
		if err := os.RemoveAll(p.trash); err != nil {
			return fail(err)
		}
	}
	return nil
}

// Recover finishes or rolls back every workspace swap of a tenant that a
// crash interrupted. Install, Update and Uninstall recover the employee
// they touch on their own; Recover is for start-up, before anything reads
// the workspaces.
func Recover(stateDir, tenantID string) error {
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return fmt.Errorf("recovering: %w", err)
	}
	defer unlock()
	slugs := map[string]bool{}
	journals, _ := filepath.Glob(filepath.Join(t.Dir, ".install-*.journal"))
	for _, j := range journals {
		slugs[trimAffixes(filepath.Base(j), ".install-", ".journal")] = true
	}
	for _, suffix := range []string{".new", ".old", ".trash"} {
		left, _ := filepath.Glob(filepath.Join(t.Dir, agentsDir, ".*"+suffix))
		for _, l := range left {
			slugs[trimAffixes(filepath.Base(l), ".", suffix)] = true
		}
	}
	for s := range slugs {
		if !template.ValidSlug(s) {
			continue // not ours
		}
		if err := recoverSwap(pathsOf(t, s)); err != nil {
			return fmt.Errorf("tenant %q, employee %q: %w", tenantID, s, err)
		}
	}
	return nil
}

func trimAffixes(s, prefix, suffix string) string {
	if len(s) < len(prefix)+len(suffix) || s[:len(prefix)] != prefix || s[len(s)-len(suffix):] != suffix {
		return ""
	}
	return s[len(prefix) : len(s)-len(suffix)]
}
