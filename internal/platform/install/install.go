package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"talon/internal/atomicfile"
	"talon/internal/config"
	"talon/internal/platform/template"
	"talon/internal/store/catalog"
)

// now is the clock that stamps kept copies; tests may replace it.
var now = time.Now

// Result is what Install or Update did.
type Result struct {
	// Changes are the file changes made (Config is left empty).
	Changes Changes
	// Files is the record to keep for the installation: what the template
	// now ships into the workspace (Shipped).
	Files []catalog.ShippedFile
}

// Install installs the employee tp for a tenant: the template's files and
// seed (MEMORY.md, memory/, canvas/) into <tenant>/agents/<slug>/, its
// agents.list[] entry {id, name, workspace, model, sandbox, tools} into the
// tenant's config, and its required plugins enabled there. It refuses an
// employee the config already lists, and a required plugin the config keeps
// off (a *PluginError naming the key and the fix) before writing anything.
//
// Files go first and the config last, so a crash leaves at worst a
// workspace the config does not list yet; installing again completes it.
// A workspace that is already there is treated as the employee's: a file
// holding exactly the template's content is taken as the template's, any
// other file at a template path is kept as <path>.local-<stamp>, and
// nothing else in it is touched.
func Install(stateDir, tenantID string, tp *template.Template) (Result, error) {
	return apply(stateDir, tenantID, tp, nil, true)
}

// Update brings an installed employee to tp. shipped is the record of
// what the template shipped at the last install or update (Result.Files);
// nil means unknown, and then only files holding exactly tp's content
// count as the template's. The template owns exactly the files it ships:
// Update writes the ones tp adds or changes, removes the ones shipped
// before that tp drops, and touches nothing else — memory/, MEMORY.md,
// USER.md, TOOLS.md, canvas/, skills and files the employee added stay as
// they are, unread. A template file the employee edited is never
// overwritten or removed: when tp changes it too, the employee's copy is
// kept beside it as <path>.local-<stamp> (Changes.Conflicts); when tp
// drops it, it stays (Changes.Kept). With an unchanged template Update
// writes nothing at all. A crash at any point is finished by Recover
// (see swap.go).
//
// In the config it re-sets the entry's workspace, sandbox and
// tools.{alsoAllow,sandbox,exec}, keeping the name and model the tenant
// may have changed and every other key; enables the required plugins; and
// removes the employee's tools from the tenant-level tools.alsoAllow,
// where older installers put them.
func Update(stateDir, tenantID string, tp *template.Template, shipped []catalog.ShippedFile) (Result, error) {
	return apply(stateDir, tenantID, tp, shipped, false)
}

func apply(stateDir, tenantID string, tp *template.Template, shipped []catalog.ShippedFile, install bool) (Result, error) {
	verb := map[bool]string{true: "installing", false: "updating"}[install]
	fail := func(err error) (Result, error) {
		return Result{}, fmt.Errorf("%s employee %q for tenant %q: %w", verb, tp.Slug, tenantID, err)
	}
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if err := recoverSwap(t, tp.Slug); err != nil {
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
	ch, err := updateFiles(t, tp, shipped, install)
	if err != nil {
		return fail(err)
	}
	if err := editConfig(t, edit); err != nil {
		return fail(err)
	}
	ch.Tenant, ch.Slug = tenantID, tp.Slug
	return Result{Changes: ch, Files: Shipped(tp)}, nil
}

// updateFiles plans the workspace's changes and, when there are any,
// carries them out under a journal.
func updateFiles(t Tenant, tp *template.Template, shipped []catalog.ShippedFile, install bool) (Changes, error) {
	w, err := openWorkspace(t, tp.Slug, true)
	if err != nil {
		return Changes{}, err
	}
	defer w.close()
	stamp := now().UTC().Format(stampLayout)
	files := tp.Files()
	pl, err := planFiles(shipped, files, stamp, w.look)
	if err != nil {
		return Changes{}, err
	}
	byPath := map[string]template.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	var stage []template.File
	for _, o := range pl.ops {
		if o.Kind == opPut {
			stage = append(stage, byPath[o.Path])
		}
	}
	if install {
		seedOps, seedFiles, err := planSeed(w, tp)
		if err != nil {
			return Changes{}, err
		}
		pl.ops, stage = append(pl.ops, seedOps...), append(stage, seedFiles...)
	}
	ch := Changes{Kept: pl.ch.Kept}
	p := pathsOf(t, tp.Slug)
	if len(pl.ops) == 0 {
		// Nothing to write, not even a journal. A pending record an
		// earlier update left unsettled is brought up to date, so that
		// settling this one settles it.
		if ok, err := exists(p.pending); err != nil || !ok {
			return ch, err
		}
		return ch, writePending(p, Shipped(tp))
	}
	j := journal{Slug: tp.Slug, Version: journalVersion, Stamp: stamp, Ops: pl.ops, Keep: templateDirs(files), Shipped: Shipped(tp)}
	done, err := w.run(p, j, stage)
	if err != nil {
		return Changes{}, err
	}
	done.Kept = append(done.Kept, ch.Kept...)
	return done, nil
}

// planSeed plans an install's seed entries (those the workspace lacks)
// and the template's directories (so empty ones exist).
func planSeed(w *workspace, tp *template.Template) ([]op, []template.File, error) {
	var ops []op
	var files []template.File
	for _, f := range tp.Seed() {
		top := topOf(f.Path)
		if top == f.Path {
			st, err := w.look(top)
			if err != nil {
				return nil, nil, err
			}
			if st.kind != absent {
				continue
			}
			ops = append(ops, op{Kind: opSeed, Path: top})
		}
		if len(ops) > 0 && ops[len(ops)-1].Path == top {
			files = append(files, f)
		}
	}
	for _, d := range templateDirs(tp.Files()) {
		ops = append(ops, op{Kind: opMkdir, Path: d})
	}
	return ops, files, nil
}

// Pending returns the record an update of slug wrote to disk and the
// caller has not settled yet: it is newer than the catalog's (see
// swap.go). Call it after Recover.
func Pending(stateDir, tenantID, slug string) ([]catalog.ShippedFile, bool, error) {
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return nil, false, fmt.Errorf("reading the pending record: %w", err)
	}
	defer unlock()
	files, ok, err := readPending(pathsOf(t, slug))
	if err != nil {
		return nil, false, fmt.Errorf("tenant %q, employee %q: %w", tenantID, slug, err)
	}
	return files, ok, nil
}

// Settle deletes slug's pending record once the caller has stored files
// as the installation's record, unless an update since wrote another.
func Settle(stateDir, tenantID, slug string, files []catalog.ShippedFile) error {
	t, unlock, err := openLocked(stateDir, tenantID)
	if err != nil {
		return fmt.Errorf("settling the pending record: %w", err)
	}
	defer unlock()
	p := pathsOf(t, slug)
	have, ok, err := readPending(p)
	if err != nil || !ok || !slices.Equal(have, files) {
		return err
	}
	if err := os.Remove(p.pending); err != nil {
		return fmt.Errorf("settling the pending record: %w", err)
	}
	return nil
}

func readPending(p paths) ([]catalog.ShippedFile, bool, error) {
	data, err := os.ReadFile(p.pending)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var files []catalog.ShippedFile
	if err := json.Unmarshal(data, &files); err != nil || len(files) == 0 {
		return nil, false, fmt.Errorf("the pending record %s is unreadable (%v); delete it to fall back on the catalog's", p.pending, err)
	}
	for _, f := range files {
		if err := catalog.CheckShippedPath(f.Path); err != nil {
			return nil, false, fmt.Errorf("the pending record %s: %w", p.pending, err)
		}
	}
	return files, true, nil
}

func writePending(p paths, files []catalog.ShippedFile) error {
	data, err := json.Marshal(files)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p.pending, data, 0o600); err != nil {
		return fmt.Errorf("writing the pending record %s: %w", p.pending, err)
	}
	step("pending record")
	return nil
}

// Uninstall removes the employee slug from a tenant: its agents.list[]
// entry, then its workspace with everything in it — its memory (memory/,
// MEMORY.md) and every file it wrote. Plugins it enabled stay enabled,
// since other employees may use them.
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
	if err := recoverSwap(t, slug); err != nil {
		return fail(err)
	}
	// The record goes first: a reinstall must never take an old one.
	if err := os.Remove(p.pending); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	listed := false
	err = editConfig(t, func(tree *config.Value, _ *config.Config) (*config.Value, error) {
		list := tree.Lookup("agents", "list")
		i := config.AgentIndex(list, slug)
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
		return fail(fmt.Errorf("it is %w", ErrNotInstalled))
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

// Recover finishes or rolls back every workspace update of a tenant that
// a crash interrupted. Install, Update and Uninstall recover the employee
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
		if err := recoverSwap(t, s); err != nil {
			return fmt.Errorf("tenant %q, employee %q: %w", tenantID, s, err)
		}
	}
	return nil
}

func trimAffixes(s, prefix, suffix string) string {
	if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) || len(s) < len(prefix)+len(suffix) {
		return ""
	}
	return s[len(prefix) : len(s)-len(suffix)]
}
