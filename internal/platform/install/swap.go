package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"talon/internal/atomicfile"
	"talon/internal/platform/template"
	"talon/internal/store/catalog"
)

// How a workspace changes without ever losing what the employee wrote. An
// update touches only the paths its plan names (planFiles): the files the
// template ships or shipped, and on install the seed entries the
// workspace lacks. Everything else in the workspace is never read,
// moved or rewritten.
//
//  1. stage: write the new versions of the files to put into
//     agents/.<slug>.new/ (same relative paths) and fsync them. A crash
//     here leaves the workspace untouched; recovery deletes the staging
//     directory (roll back).
//  2. commit: write the journal <tenant>/.install-<slug>.journal listing
//     the steps (op). From here recovery rolls forward.
//  3. apply, step by step, each one idempotent:
//     remove — delete a file the template no longer ships, only while it
//     holds the recorded content (else it is the employee's: kept);
//     put — move a staged file in by rename; what is at its path stays
//     unless it holds a content the plan allows to replace, otherwise it
//     is first renamed to <path>.local-<stamp> (the employee's copy);
//     a put whose staged file is gone is done;
//     seed — move a staged top-level entry in when the workspace lacks it;
//     mkdir — create a template directory when missing.
//     Then directories emptied by removals (and not the template's) go,
//     and the directories whose entries changed are fsynced.
//  4. clean: delete the staging directory, write the pending record
//     <tenant>/.install-<slug>.shipped (what the template now ships, from
//     the journal), then delete the journal.
//
// Every rename is atomic, so each file is whole in one place at any
// moment; recovery simply runs steps 3 and 4 again.
//
// The record of shipped files lives in the platform's catalog, written
// after the files. The pending record bridges the two: it stays until the
// caller has stored the record (Settle), so a crash between the files and
// the catalog leaves it on disk, and the next sync takes it (Pending) over
// the catalog's older one. The catalog thus always catches up with what
// the workspace holds.

// agentsDir is the tenant subdirectory holding employee workspaces.
const agentsDir = "agents"

// journalVersion marks a journal of per-file steps; version 0 is the
// whole-directory swap of earlier Talon releases (legacy.go).
const journalVersion = 2

// journal is the commit record of an update in progress.
type journal struct {
	Slug    string `json:"slug"`
	Version int    `json:"version,omitempty"`
	// Stamp names kept copies: <path>.local-<Stamp>.
	Stamp string `json:"stamp,omitempty"`
	Ops   []op   `json:"ops,omitempty"`
	// Keep are the template's directories, never removed as empty.
	Keep []string `json:"keep,omitempty"`
	// Shipped is the record of what the template ships once this update
	// is done: the pending record step 4 writes.
	Shipped []catalog.ShippedFile `json:"shipped,omitempty"`
	// Carry is a version 0 journal's list of entries to carry.
	Carry []string `json:"carry,omitempty"`
}

// hook, when set (by tests), is called after every step that changes the
// disk, with a short name of the step.
var hook func(step string)

func step(name string) {
	if hook != nil {
		hook(name)
	}
}

type paths struct {
	tenant, agents, live, staging, old, trash, journal, pending string
}

func pathsOf(t Tenant, slug string) paths {
	a := filepath.Join(t.Dir, agentsDir)
	return paths{
		tenant:  t.Dir,
		agents:  a,
		live:    filepath.Join(a, slug),
		staging: filepath.Join(a, "."+slug+".new"),
		old:     filepath.Join(a, "."+slug+".old"),
		trash:   filepath.Join(a, "."+slug+".trash"),
		journal: filepath.Join(t.Dir, ".install-"+slug+".journal"),
		pending: filepath.Join(t.Dir, ".install-"+slug+".shipped"),
	}
}

func exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// mkdirNoFollow creates dir if missing and refuses a symlink in its place.
func mkdirNoFollow(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		step("mkdir agents")
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
	}
	return nil
}

// run carries out a planned update: stage the files the ops need (stage
// holds them, parents before children), commit the journal, apply, clean.
// It returns what apply did.
func (w *workspace) run(p paths, j journal, stage []template.File) (Changes, error) {
	if err := os.Mkdir(p.staging, 0o755); err != nil {
		return Changes{}, fmt.Errorf("creating %s: %w", p.staging, err)
	}
	step("mkdir staging")
	if err := writeTree(p.staging, stage); err != nil {
		return Changes{}, fmt.Errorf("staging the new files in %s: %w", p.staging, err)
	}
	if err := atomicfile.SyncDir(p.agents); err != nil {
		return Changes{}, err
	}
	data, err := json.Marshal(j)
	if err != nil {
		return Changes{}, err
	}
	if err := atomicfile.Write(p.journal, data, 0o600); err != nil {
		return Changes{}, fmt.Errorf("writing the journal %s: %w", p.journal, err)
	}
	step("journal")
	ch, err := w.apply(j)
	if err != nil {
		return ch, err
	}
	return ch, clean(p, j.Shipped)
}

// writeTree creates files under root, making missing parents, and makes
// them durable: each file is fsynced, then every directory.
func writeTree(root string, files []template.File) error {
	dirs := map[string]bool{root: true}
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		for _, d := range parents(f.Path) {
			dirs[filepath.Join(root, filepath.FromSlash(d))] = true
		}
		if f.Mode.IsDir() {
			if err := os.MkdirAll(p, f.Mode.Perm()); err != nil {
				return err
			}
			dirs[p] = true
			step("mkdir")
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeFile(p, f); err != nil {
			return err
		}
		step("write")
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return fmt.Errorf("syncing %s: %w", d, err)
		}
	}
	return nil
}

func writeFile(p string, f template.File) error {
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.Mode.Perm())
	if err != nil {
		return err
	}
	if _, err := w.Write(f.Data); err != nil {
		w.Close()
		return err
	}
	if err := w.Sync(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// apply runs a journal's steps (3 above); run again after a crash it
// finishes what is left. It returns what it did this time.
func (w *workspace) apply(j journal) (Changes, error) {
	var ch Changes
	touched := map[string]bool{}
	for _, o := range j.Ops {
		if err := catalog.CheckShippedPath(o.Path); err != nil {
			return ch, fmt.Errorf("journal step %s: %w", o.Kind, err)
		}
		var err error
		switch o.Kind {
		case opRemove:
			err = w.remove(o, &ch, touched)
		case opPut:
			err = w.put(o, j.Stamp, &ch, touched)
		case opSeed:
			err = w.seed(o, touched)
		case opMkdir:
			err = w.mkdirs(o.Path, touched)
		default:
			err = fmt.Errorf("journal names an unknown step %q", o.Kind)
		}
		if err != nil {
			return ch, err
		}
	}
	for _, o := range j.Ops {
		if o.Kind == opRemove {
			w.prune(o.Path, j.Keep, touched)
		}
	}
	return ch, w.syncDirs(touched)
}

func (w *workspace) remove(o op, ch *Changes, touched map[string]bool) error {
	st, err := w.look(o.Path)
	switch {
	case err != nil:
		return err
	case st.kind == absent:
	case st.kind == regular && slices.Contains(o.Replace, st.sum):
		if err := w.root.Remove(w.live(o.Path)); err != nil {
			return fmt.Errorf("removing %s: %w", w.show(o.Path), err)
		}
		step("remove")
		touched[path.Dir(w.live(o.Path))] = true
		ch.Removed = append(ch.Removed, o.Path)
	default:
		ch.Kept = append(ch.Kept, o.Path) // edited since the plan
	}
	return nil
}

func (w *workspace) put(o op, stamp string, ch *Changes, touched map[string]bool) error {
	if ok, err := w.exists(w.staged(o.Path)); err != nil || !ok {
		return err // done before a crash
	}
	if err := w.mkdirs(path.Dir(o.Path), touched); err != nil {
		return err
	}
	st, err := w.look(o.Path)
	if err != nil {
		return err
	}
	switch {
	case st.kind == absent:
		ch.Added = append(ch.Added, o.Path)
	case st.kind == regular && slices.Contains(o.Replace, st.sum):
		ch.Changed = append(ch.Changed, o.Path)
	default:
		cp, err := w.freeName(o.Path + LocalSuffix + stamp)
		if err != nil {
			return err
		}
		if err := w.root.Rename(w.live(o.Path), w.live(cp)); err != nil {
			return fmt.Errorf("keeping your copy of %s: %w", w.show(o.Path), err)
		}
		step("keep copy")
		ch.Conflicts = append(ch.Conflicts, Conflict{Path: o.Path, Copy: cp})
	}
	if err := w.root.Rename(w.staged(o.Path), w.live(o.Path)); err != nil {
		return fmt.Errorf("writing %s: %w", w.show(o.Path), err)
	}
	step("put")
	touched[path.Dir(w.live(o.Path))] = true
	return nil
}

func (w *workspace) seed(o op, touched map[string]bool) error {
	if ok, err := w.exists(w.staged(o.Path)); err != nil || !ok {
		return err
	}
	if ok, err := w.exists(w.live(o.Path)); err != nil || ok {
		return err // the tenant's own: the staged copy goes with the staging directory
	}
	if err := w.mkdirs("", touched); err != nil {
		return err
	}
	if err := w.root.Rename(w.staged(o.Path), w.live(o.Path)); err != nil {
		return fmt.Errorf("seeding %s: %w", w.show(o.Path), err)
	}
	step("seed")
	touched[w.live("")] = true
	return nil
}

// prune removes the directories above a removed file that are now empty,
// nearest first, stopping at the first that is not (or is the template's).
func (w *workspace) prune(removed string, keep []string, touched map[string]bool) {
	ds := parents(removed)
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		if slices.Contains(keep, d) {
			return
		}
		if missing, err := w.checkDirs(d + "/x"); err != nil || missing {
			return
		}
		if err := w.root.Remove(w.live(d)); err != nil {
			return // not empty: the employee's files are in it
		}
		step("rmdir")
		touched[path.Dir(w.live(d))] = true
	}
}

// clean deletes the staging directory, writes the pending record and
// deletes the journal (step 4).
func clean(p paths, shipped []catalog.ShippedFile) error {
	if err := os.RemoveAll(p.staging); err != nil {
		return fmt.Errorf("deleting %s: %w", p.staging, err)
	}
	step("remove staging") // not fsynced: without the journal, recovery deletes a leftover
	if err := writePending(p, shipped); err != nil {
		return err
	}
	if err := os.Remove(p.journal); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	step("remove journal")
	return atomicfile.SyncDir(p.tenant)
}

// recoverSwap finishes an update whose journal exists, or rolls back one
// that crashed before its journal was written.
func recoverSwap(t Tenant, slug string) error {
	p := pathsOf(t, slug)
	data, err := os.ReadFile(p.journal)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rollBack(p)
	case err != nil:
		return fmt.Errorf("recovering: reading %s: %w", p.journal, err)
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("recovering: journal %s is unreadable (%v); inspect %s and %s by hand", p.journal, err, p.live, p.staging)
	}
	if j.Version == 0 {
		if err := legacyRollForward(p, j.Carry); err != nil {
			return fmt.Errorf("recovering an interrupted update: %w", err)
		}
		return nil
	}
	if j.Version != journalVersion {
		return fmt.Errorf("recovering: journal %s has version %d, which this Talon does not know; finish it with the Talon that wrote it", p.journal, j.Version)
	}
	w, err := openWorkspace(t, slug, true)
	if err != nil {
		return fmt.Errorf("recovering: %w", err)
	}
	defer w.close()
	if _, err := w.apply(j); err != nil {
		return fmt.Errorf("recovering an interrupted update: %w", err)
	}
	return clean(p, j.Shipped)
}

// rollBack deletes what an update left before its commit: a half-staged
// directory, and stray leftovers of a directory swap (legacy.go).
func rollBack(p paths) error {
	for _, d := range []string{p.staging, p.trash} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("recovering: removing %s: %w", d, err)
		}
	}
	if ok, err := exists(p.old); err != nil {
		return err
	} else if ok {
		return legacyFinish(p)
	}
	return nil
}
