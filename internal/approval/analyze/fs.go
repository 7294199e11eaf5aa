package analyze

import (
	"io/fs"
	"os"
	"path/filepath"
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
