// Package atomicfile replaces a file so that a crash at any moment leaves
// either the old contents or the new, whole: write a temp file beside it,
// fsync, rename over the target, fsync the directory. It refuses to write
// through a symlink, which could point anywhere. Create makes a file that
// must not exist yet the same way, whole or not at all.
//
// Concurrency: Write and Create are safe to call from many goroutines; two
// concurrent Writes of one path each replace the file atomically and the
// last rename wins; of two concurrent Creates of one path exactly one
// succeeds. Callers that need more (baseHash checks) serialise writers
// themselves.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrSymlink is returned (wrapped) when path is a symlink.
var ErrSymlink = errors.New("refusing to write through a symlink")

// Write replaces path with data, mode perm. The directory is created with
// mode 0700 when missing. Errors name the step that failed.
func Write(path string, data []byte, perm fs.FileMode) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return ErrSymlink
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking the existing file: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replacing the file: %w", err)
	}
	// The rename is durable only once the directory entry is on disk.
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("syncing the directory: %w", err)
	}
	return nil
}

// Create writes a new file at path as Write does, but never replaces
// one: when path exists (a symlink included, dangling or not) it fails
// with an error that is fs.ErrExist, so of two concurrent Creates exactly
// one succeeds and the other can read the winner's file.
func Create(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	// link(2), unlike rename(2), refuses an existing target.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", path, fs.ErrExist)
		}
		return fmt.Errorf("creating the file: %w", err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("syncing the directory: %w", err)
	}
	return nil
}

// writeTemp writes data, synced, to a new temp file beside path (its
// directory made 0700 when missing) and returns the temp file's name.
func writeTemp(path string, data []byte, perm fs.FileMode) (name string, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("creating temp file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600; set perm explicitly so the result
	// does not depend on the umask either way.
	if err = tmp.Chmod(perm); err != nil {
		return "", fmt.Errorf("setting the temp file's mode: %w", err)
	}
	if _, err = tmp.Write(data); err != nil {
		return "", fmt.Errorf("writing temp file: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return "", fmt.Errorf("syncing temp file: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return "", fmt.Errorf("closing temp file: %w", err)
	}
	return tmp.Name(), nil
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
