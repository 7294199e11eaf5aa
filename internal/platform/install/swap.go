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

	"talon/internal/atomicfile"
	"talon/internal/platform/template"
)

// How a workspace is replaced without ever losing the tenant's entries
// (memory/, MEMORY.md, canvas/, whatever the agent wrote):
//
//  1. build: write the template's files into agents/.<slug>.new (plus, on
//     install, the seed entries the workspace lacks) and fsync them.
//     A crash here leaves the live workspace untouched; recovery deletes
//     the half-built directory (roll back).
//  2. commit: write the journal <tenant>/.install-<slug>.journal naming the
//     live entries to carry over. From here recovery rolls forward.
//  3. carry: rename each carried entry from the live workspace into the new
//     one. A rename is atomic, so an entry is always whole in one of the
//     two; recovery carries whatever is still in the live one.
//  4. swap: rename live → agents/.<slug>.old, then new → live.
//  5. sweep: entries that appeared in the old workspace after the journal
//     was written (an agent writing during the update) move to the new one
//     when the name is free there.
//  6. clean: rename old → agents/.<slug>.trash, delete it, delete the
//     journal.
//
// Every step after the commit is idempotent, so recovery simply runs them
// again; directories are fsynced after the renames in them.

// agentsDir is the tenant subdirectory holding employee workspaces.
const agentsDir = "agents"

// journal is the commit record of a swap in progress.
type journal struct {
	Slug  string   `json:"slug"`
	Carry []string `json:"carry"`
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
	tenant, agents, live, staging, old, trash, journal string
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
	}
}

func exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// replaceWorkspace installs files (and seed entries the workspace lacks,
// when seed is non-nil) as the workspace of slug, keeping every entry of
// the current workspace that the template does not manage.
func replaceWorkspace(t Tenant, slug string, files, seed []template.File) error {
	p := pathsOf(t, slug)
	if err := recoverSwap(p); err != nil {
		return err
	}
	if err := mkdirNoFollow(p.agents); err != nil {
		return err
	}
	if err := os.Mkdir(p.staging, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", p.staging, err)
	}
	step("mkdir staging")
	liveNames, err := topNames(p.live)
	if err != nil {
		return err
	}
	var carry []string
	for _, n := range liveNames {
		if !template.Managed(n) {
			carry = append(carry, n)
		}
	}
	toWrite := files
	for _, f := range seed {
		top, _, _ := strings.Cut(f.Path, "/")
		if !slices.Contains(liveNames, top) {
			toWrite = append(toWrite, f)
		}
	}
	if err := writeTree(p.staging, toWrite); err != nil {
		return fmt.Errorf("building the new workspace in %s: %w", p.staging, err)
	}
	if err := atomicfile.SyncDir(p.agents); err != nil {
		return err
	}
	data, err := json.Marshal(journal{Slug: slug, Carry: carry})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p.journal, data, 0o600); err != nil {
		return fmt.Errorf("writing the journal %s: %w", p.journal, err)
	}
	step("journal")
	return rollForward(p, carry)
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

// topNames lists a directory's entries; a missing directory has none.
func topNames(dir string) ([]string, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (symlinks are refused)", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// writeTree creates files (parents listed before children) under root and
// makes them durable: each file is fsynced, then every directory.
func writeTree(root string, files []template.File) error {
	dirs := []string{root}
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		if f.Mode.IsDir() {
			if err := os.Mkdir(p, f.Mode.Perm()); err != nil {
				return err
			}
			dirs = append(dirs, p)
			step("mkdir")
			continue
		}
		if err := writeFile(p, f); err != nil {
			return err
		}
		step("write")
	}
	for _, d := range dirs {
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

// rollForward runs steps 3–6; each is a no-op when already done.
func rollForward(p paths, carry []string) error {
	staged, err := exists(p.staging)
	if err != nil {
		return err
	}
	if staged {
		for _, n := range carry {
			if n == "" || strings.ContainsAny(n, `/\`) || n == "." || n == ".." {
				return fmt.Errorf("journal %s names an invalid entry %q", p.journal, n)
			}
			src, dst := filepath.Join(p.live, n), filepath.Join(p.staging, n)
			if ok, err := exists(src); err != nil || !ok {
				if err != nil {
					return err
				}
				continue // carried already
			}
			if ok, err := exists(dst); err != nil || ok {
				if err != nil {
					return err
				}
				return fmt.Errorf("carrying %s: %s exists in the new workspace too; resolve by hand", n, dst)
			}
			if err := os.Rename(src, dst); err != nil {
				return fmt.Errorf("carrying %s into the new workspace: %w", n, err)
			}
			step("carry")
		}
		for _, d := range []string{p.live, p.staging} {
			if ok, _ := exists(d); ok {
				if err := atomicfile.SyncDir(d); err != nil {
					return err
				}
			}
		}
		if ok, err := exists(p.live); err != nil {
			return err
		} else if ok {
			if err := os.RemoveAll(p.old); err != nil {
				return err
			}
			if err := os.Rename(p.live, p.old); err != nil {
				return fmt.Errorf("moving the old workspace aside: %w", err)
			}
			step("live to old")
		}
		if err := os.Rename(p.staging, p.live); err != nil {
			return fmt.Errorf("moving the new workspace into place: %w", err)
		}
		step("staging to live")
		if err := atomicfile.SyncDir(p.agents); err != nil {
			return err
		}
	}
	if err := sweep(p); err != nil {
		return err
	}
	return clean(p)
}

// sweep moves the old workspace's unmanaged entries that the live one
// lacks into it (step 5).
func sweep(p paths) error {
	names, err := topNames(p.old)
	if err != nil || names == nil {
		return err
	}
	moved := false
	for _, n := range names {
		if template.Managed(n) {
			continue
		}
		dst := filepath.Join(p.live, n)
		if ok, err := exists(dst); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if err := os.Rename(filepath.Join(p.old, n), dst); err != nil {
			return fmt.Errorf("keeping %s: %w", n, err)
		}
		moved = true
		step("sweep")
	}
	if moved {
		return atomicfile.SyncDir(p.live)
	}
	return nil
}

// clean deletes the old workspace and then the journal (step 6).
func clean(p paths) error {
	if ok, err := exists(p.old); err != nil {
		return err
	} else if ok {
		if err := os.RemoveAll(p.trash); err != nil {
			return err
		}
		if err := os.Rename(p.old, p.trash); err != nil {
			return err
		}
		step("old to trash")
		if err := atomicfile.SyncDir(p.agents); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(p.trash); err != nil {
		return fmt.Errorf("deleting %s: %w", p.trash, err)
	}
	step("remove trash")
	if err := os.Remove(p.journal); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	step("remove journal")
	return atomicfile.SyncDir(p.tenant)
}

// recoverSwap finishes a swap whose journal exists, or rolls back one that
// crashed before its journal was written.
func recoverSwap(p paths) error {
	data, err := os.ReadFile(p.journal)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No commit: a half-built workspace and stray leftovers go.
		for _, d := range []string{p.staging, p.trash} {
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("recovering: removing %s: %w", d, err)
			}
		}
		if ok, err := exists(p.old); err != nil {
			return err
		} else if ok {
			// Only clean() leaves .old without a journal, never before the
			// sweep: finish it the same way.
			if err := sweep(p); err != nil {
				return fmt.Errorf("recovering: %w", err)
			}
			return clean(p)
		}
		return nil
	case err != nil:
		return fmt.Errorf("recovering: reading %s: %w", p.journal, err)
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return fmt.Errorf("recovering: journal %s is unreadable (%v); inspect %s and %s by hand", p.journal, err, p.live, p.staging)
	}
	if err := rollForward(p, j.Carry); err != nil {
		return fmt.Errorf("recovering an interrupted update: %w", err)
	}
	return nil
}
