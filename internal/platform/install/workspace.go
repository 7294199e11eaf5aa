package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// workspace reaches one employee's workspace <tenant>/agents/<slug>/ and
// its staging directory agents/.<slug>.new/ through an os.Root on the
// tenant's agents/ directory, so that nothing the employee put in its
// workspace (a symlink to /etc, say) leads a read or a rename outside the
// tenant's agents/. On top of that every directory on the way to a path is
// checked to be a real directory, not a symlink, before it is used: the
// installer never follows a link the employee made.
type workspace struct {
	root *os.Root // nil when agents/ does not exist (a plan for nothing)
	dir  string   // <tenant>/agents
	slug string
}

// openWorkspace opens the tenant's agents/ directory, creating it when
// create is set; without it a missing agents/ is a workspace where every
// path is absent.
func openWorkspace(t Tenant, slug string, create bool) (*workspace, error) {
	w := &workspace{dir: filepath.Join(t.Dir, agentsDir), slug: slug}
	if create {
		if err := mkdirNoFollow(w.dir); err != nil {
			return nil, err
		}
	}
	fi, err := os.Lstat(w.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return w, nil
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a directory (symlinks are refused)", w.dir)
	}
	if w.root, err = os.OpenRoot(w.dir); err != nil {
		return nil, fmt.Errorf("opening %s: %w", w.dir, err)
	}
	return w, nil
}

func (w *workspace) close() {
	if w.root != nil {
		w.root.Close()
	}
}

// live is workspace path p relative to the root; "" is the workspace.
func (w *workspace) live(p string) string { return path.Join(w.slug, p) }

// staged is p in the staging directory, relative to the root.
func (w *workspace) staged(p string) string { return path.Join("."+w.slug+".new", p) }

// show names workspace path p for a person: agents/<slug>/p.
func (w *workspace) show(p string) string { return path.Join(agentsDir, w.slug, p) }

// checkDirs checks the workspace and every directory above p in it: each
// must be a real directory. A missing one ends the walk with missing set.
func (w *workspace) checkDirs(p string) (missing bool, err error) {
	for _, d := range append([]string{""}, parents(p)...) {
		fi, err := w.root.Lstat(w.live(d))
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if !fi.IsDir() {
			return false, notDirError(w.show(d))
		}
	}
	return false, nil
}

func notDirError(shown string) error {
	return fmt.Errorf("%s is a symlink or a file where the template needs a directory; the installer does not follow it: move it away and sync again", shown)
}

// look reports what workspace path p holds, hashing a regular file.
func (w *workspace) look(p string) (fileState, error) {
	if w.root == nil {
		return fileState{}, nil
	}
	missing, err := w.checkDirs(p)
	if err != nil || missing {
		return fileState{}, err
	}
	fi, err := w.root.Lstat(w.live(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileState{}, nil
	case err != nil:
		return fileState{}, err
	case fi.IsDir():
		return fileState{kind: dir}, nil
	case !fi.Mode().IsRegular():
		return fileState{kind: other}, nil
	}
	// O_NOFOLLOW and O_NONBLOCK: if the file was swapped for a link or a
	// FIFO since the Lstat, the open fails or returns at once; the fstat
	// below then says what it is.
	f, err := w.root.OpenFile(w.live(p), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fileState{kind: other}, nil
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return fileState{}, fmt.Errorf("reading %s: %w", w.show(p), err)
	}
	if !fi.Mode().IsRegular() {
		return fileState{kind: other}, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fileState{}, fmt.Errorf("reading %s: %w", w.show(p), err)
	}
	return fileState{kind: regular, sum: hex.EncodeToString(h.Sum(nil)), exec: fi.Mode()&0o100 != 0}, nil
}

// exists reports whether root-relative path rel exists (not following a
// final symlink).
func (w *workspace) exists(rel string) (bool, error) {
	_, err := w.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// mkdirs creates workspace directory d and those above it, the workspace
// included, as needed; each existing one must be a real directory. It
// records in touched the root-relative directories whose entries changed.
func (w *workspace) mkdirs(d string, touched map[string]bool) error {
	dirs := []string{""}
	if d != "" && d != "." {
		dirs = append(append(dirs, parents(d)...), d)
	}
	for _, x := range dirs {
		fi, err := w.root.Lstat(w.live(x))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := w.root.Mkdir(w.live(x), 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", w.show(x), err)
			}
			step("mkdir")
			touched[path.Dir(w.live(x))] = true
		case err != nil:
			return err
		case !fi.IsDir():
			return notDirError(w.show(x))
		}
	}
	return nil
}

// freeName returns name, or name-2, name-3 … : the first workspace path
// not taken.
func (w *workspace) freeName(name string) (string, error) {
	for i := 1; i <= 1000; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s-%d", name, i)
		}
		ok, err := w.exists(w.live(n))
		if err != nil {
			return "", err
		}
		if !ok {
			return n, nil
		}
	}
	return "", fmt.Errorf("no free name for a copy of %s: %s-2 … -1000 are taken", w.show(name), name)
}

// syncDirs fsyncs the root-relative directories in touched that still
// exist, so the renames in them are durable.
func (w *workspace) syncDirs(touched map[string]bool) error {
	for d := range touched {
		if ok, err := w.exists(d); err != nil || !ok {
			continue // gone again (a pruned directory)
		}
		f, err := w.root.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("syncing %s: %w", d, err)
		}
	}
	return nil
}
