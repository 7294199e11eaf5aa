package fs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"talon/internal/contain"
	"talon/internal/tools"
)

// Limits shared by the tools.
const (
	// MaxWriteBytes is the largest file write, edit and apply_patch will
	// produce or load.
	MaxWriteBytes = 10 << 20
	// maxSymlinks bounds the links resolveLink follows, as os.Root does.
	maxSymlinks = 8
)

// readOnlyMsg is the refusal of every writing tool in a read-only sandbox.
const readOnlyMsg = "the workspace is read-only in this sandbox (workspaceAccess ro)"

// errOutside marks a symbolic link that leads out of the workspace.
var errOutside = errors.New("path escapes from parent")

// workspace returns the root a call may touch. A missing one is Talon's
// failure, not the model's.
func workspace(env *tools.Env, tool string) (*os.Root, error) {
	if env == nil || env.Workspace == nil {
		return nil, fmt.Errorf("running %s: no workspace in the tool environment", tool)
	}
	return env.Workspace, nil
}

// relPath checks a path the model gave and returns it cleaned and relative
// to the workspace root. Absolute paths and paths that climb out with ".."
// are refused; symbolic links are left for os.Root to police.
func relPath(root *os.Root, p string) (string, error) {
	if p == "" {
		return "", errors.New("path must not be empty; use \".\" for the workspace root")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if path.IsAbs(p) {
		if rel, ok := insideRoot(root, p); ok {
			return "", fmt.Errorf("path %q is absolute; use the workspace-relative path %q", p, rel)
		}
		return "", fmt.Errorf("path %q is outside the workspace; use a path relative to the workspace root", p)
	}
	c := path.Clean(p)
	if _, ok := contain.Within(".", c); !ok {
		return "", fmt.Errorf("path %q is outside the workspace", p)
	}
	return c, nil
}

// insideRoot reports whether the absolute path p names something under the
// directory the root was opened at, and if so its relative path.
func insideRoot(root *os.Root, p string) (string, bool) {
	base, err := filepath.Abs(root.Name())
	if err != nil {
		return "", false
	}
	rel, ok := contain.Within(base, p)
	if !ok {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// isOutside reports whether err is os.Root refusing a path that leads out
// of the root, or resolveLink finding an absolute link.
func isOutside(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e == errOutside || e.Error() == errOutside.Error() {
			return true
		}
	}
	return false
}

// fsError turns a filesystem error into a message for the model, naming
// the path as the model wrote it and never the host path of the root.
func fsError(p string, err error) error {
	switch {
	case isOutside(err):
		return fmt.Errorf("path %q is outside the workspace (a symbolic link leads out of it)", p)
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("%q does not exist", p)
	case errors.Is(err, iofs.ErrPermission):
		return fmt.Errorf("permission denied for %q", p)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%q: a parent in the path is not a directory", p)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%q is a directory", p)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%q: too many levels of symbolic links", p)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%q: name too long", p)
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%q: no space left on the device", p)
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return fmt.Errorf("%q: %v", p, err)
}

// splitDir splits a relative path at its last slash without cleaning it:
// after a symbolic link, "link/../x" and "x" may be different files.
func splitDir(p string) (dir, base string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ".", p
	}
	return p[:i], p[i+1:]
}

// resolveLink follows symbolic links in the last element of p, so writing
// through a link changes its target and keeps the link. A missing final
// target is returned as is, to be created. Links that are absolute or lead
// out of the root fail with errOutside.
func resolveLink(root *os.Root, p string) (string, error) {
	for range maxSymlinks {
		fi, err := root.Lstat(p)
		if errors.Is(err, iofs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&iofs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := root.Readlink(p)
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			return "", errOutside
		}
		if dir, _ := splitDir(p); dir != "." {
			target = dir + "/" + target
		}
		p = target
	}
	return "", syscall.ELOOP
}

// atomicWrite replaces the file at p (already resolved) with data: it
// creates missing parent directories, writes a temporary file next to the
// target, syncs it and renames it over the target, keeping an existing
// file's permission bits. It reports whether the file is new.
func atomicWrite(root *os.Root, p string, data []byte) (created bool, err error) {
	dir, base := splitDir(p)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
	}
	mode := iofs.FileMode(0o644)
	fi, err := root.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		return false, syscall.EISDIR
	case err == nil:
		mode = fi.Mode().Perm()
	case errors.Is(err, iofs.ErrNotExist):
		created = true
	default:
		return false, err
	}
	tmp := tempName(dir, base)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return false, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, err
	}
	if !created {
		// OpenFile's mode is cut by the umask; restore the original bits.
		if err := f.Chmod(mode); err != nil {
			return false, err
		}
	}
	if err := f.Sync(); err != nil {
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	if err := root.Rename(tmp, p); err != nil {
		return false, err
	}
	ok = true
	syncDir(root, dir)
	return created, nil
}

// tempName is a fresh hidden name in dir for a temporary copy of base.
func tempName(dir, base string) string {
	if len(base) > 100 {
		base = base[:100]
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	name := "." + base + ".talon-" + hex.EncodeToString(rnd[:]) + ".tmp"
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// syncDir makes a rename in dir durable; failure only costs durability.
func syncDir(root *os.Root, dir string) {
	d, err := root.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// removeFile deletes the file at p (already resolved).
func removeFile(root *os.Root, p string) error {
	if err := root.Remove(p); err != nil {
		return err
	}
	dir, _ := splitDir(p)
	syncDir(root, dir)
	return nil
}

// readRegular loads the regular file at p (already resolved), refusing
// directories, devices, files with more than one hard link and files over
// MaxWriteBytes.
func readRegular(root *os.Root, shown, p string) ([]byte, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError(shown, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fsError(shown, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%q is a directory", shown)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%q is not a regular file", shown)
	}
	if err := tools.SingleLink(fi, shown); err != nil {
		return nil, err
	}
	if fi.Size() > MaxWriteBytes {
		return nil, fmt.Errorf("%q is %d bytes; files over %d MiB cannot be changed with this tool", shown, fi.Size(), MaxWriteBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
	if err != nil {
		return nil, fsError(shown, err)
	}
	if len(data) > MaxWriteBytes {
		return nil, fmt.Errorf("%q grew past %d MiB while it was read", shown, MaxWriteBytes>>20)
	}
	return data, nil
}

// plural is "1 line" or "2 lines".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, word[:len(word)-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
}
