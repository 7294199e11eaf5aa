package analyze

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"talon/internal/contain"
)

// FS is the file-system view used to resolve executables: the host's, or a mapping of a
// sandbox's root. Paths passed in are absolute as the command will see them.
type FS interface {
	// Stat follows symlinks, like os.Stat.
	Stat(name string) (fs.FileInfo, error)
	// EvalSymlinks returns the path with every symlink resolved, like filepath.EvalSymlinks.
	EvalSymlinks(name string) (string, error)
}

// HostFS is the FS of the machine the gateway runs on.
type HostFS struct{}

var _ FS = HostFS{}

// Stat implements FS with os.Stat.
func (HostFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// EvalSymlinks implements FS with filepath.EvalSymlinks.
func (HostFS) EvalSymlinks(name string) (string, error) { return filepath.EvalSymlinks(name) }

// Mount shows the host path Source at the absolute path Target of a sandbox.
type Mount struct {
	Source string // absolute host path
	Target string // absolute path inside the sandbox
}

// MountFS is a sandbox's view of the file system made of host paths mounted at targets,
// as bubblewrap binds them: a path inside is the host path of the mount with the longest
// target that contains it, and paths under no mount do not exist. Symlinks are resolved in
// the sandbox's namespace, so an absolute link target means a path inside the sandbox.
type MountFS struct {
	Mounts []Mount
}

var _ FS = MountFS{}

// maxLinks bounds symlink resolution, like the kernel's ELOOP limit.
const maxLinks = 40

// host maps a clean absolute sandbox path to its host path.
func (m MountFS) host(p string) (string, bool) {
	best, bestLen := "", -1
	for _, mt := range m.Mounts {
		t := path.Clean(mt.Target)
		if rel, in := contain.Within(t, p); in && len(t) > bestLen {
			best, bestLen = path.Join(mt.Source, rel), len(t)
		}
	}
	return best, bestLen >= 0
}

// EvalSymlinks implements FS: it walks name one component at a time inside the sandbox,
// replacing each symlink by its target, so ".." after a link means the link target's parent.
func (m MountFS) EvalSymlinks(name string) (string, error) {
	if !path.IsAbs(name) {
		return "", fmt.Errorf("resolving %q in the sandbox: not an absolute path", name)
	}
	resolved, rest, links := "/", name, 0
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, comp)
		h, ok := m.host(next)
		if !ok {
			return "", &fs.PathError{Op: "evalsymlinks", Path: name, Err: fs.ErrNotExist}
		}
		fi, err := os.Lstat(h)
		if err != nil {
			return "", fmt.Errorf("resolving %q in the sandbox: %w", name, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("resolving %q in the sandbox: too many levels of symbolic links", name)
		}
		target, err := os.Readlink(h)
		if err != nil {
			return "", fmt.Errorf("resolving %q in the sandbox: %w", name, err)
		}
		if path.IsAbs(target) {
			resolved = "/"
		}
		rest = target + "/" + rest
	}
	return resolved, nil
}

// Stat implements FS: it resolves name inside the sandbox, then stats the host file.
func (m MountFS) Stat(name string) (fs.FileInfo, error) {
	real, err := m.EvalSymlinks(name)
	if err != nil {
		return nil, err
	}
	h, ok := m.host(real)
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return os.Stat(h)
}
