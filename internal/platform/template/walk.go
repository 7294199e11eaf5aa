package template

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// walker collects a template directory's files, refusing anything a
// workspace should not receive: symlinks (which could pull in files from
// anywhere on the machine), devices, unknown top-level entries, and more
// than the size limits.
type walker struct {
	root    string
	files   []File
	total   int64
	entries int
}

func (w *walker) has(p string) bool {
	return slices.ContainsFunc(w.files, func(f File) bool { return f.Path == p })
}

// top reads the template directory's own entries.
func (w *walker) top() error {
	entries, err := os.ReadDir(w.root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if name == ManifestFile {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink; templates may not contain symlinks", name)
		case fi.IsDir() && slices.Contains(OptionalDirs, name):
			if err := w.dir(name, 1); err != nil {
				return err
			}
		case fi.Mode().IsRegular() && (slices.Contains(RequiredFiles, name) || slices.Contains(OptionalFiles, name)):
			if err := w.file(name, fi); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is not part of a template: the top level may hold %s, the files %s and the directories %s",
				name, ManifestFile, strings.Join(append(slices.Clone(RequiredFiles), OptionalFiles...), ", "),
				strings.Join(OptionalDirs, "/, ")+"/")
		}
	}
	return nil
}

// dir records directory rel and everything below it.
func (w *walker) dir(rel string, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%s is nested more than %d levels deep", rel, MaxDepth)
	}
	if err := w.count(rel); err != nil {
		return err
	}
	w.files = append(w.files, File{Path: rel, Mode: fs.ModeDir | 0o755})
	entries, err := os.ReadDir(filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	for _, e := range entries {
		p := path.Join(rel, e.Name())
		fi, err := e.Info()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink; templates may not contain symlinks", p)
		case fi.IsDir():
			if err := w.dir(p, depth+1); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := w.file(p, fi); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is not a regular file or directory", p)
		}
	}
	return nil
}

// file records regular file rel.
func (w *walker) file(rel string, fi fs.FileInfo) error {
	if err := w.count(rel); err != nil {
		return err
	}
	if fi.Size() > MaxFileSize {
		return fmt.Errorf("%s is %d bytes, more than %d", rel, fi.Size(), MaxFileSize)
	}
	data, err := readCapped(filepath.Join(w.root, filepath.FromSlash(rel)), MaxFileSize)
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	if w.total += int64(len(data)); w.total > MaxTotalSize {
		return fmt.Errorf("the template's files add up to more than %d bytes (at %s)", MaxTotalSize, rel)
	}
	mode := fs.FileMode(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	w.files = append(w.files, File{Path: rel, Mode: mode, Data: data})
	return nil
}

func (w *walker) count(rel string) error {
	if w.entries++; w.entries > MaxEntries {
		return fmt.Errorf("more than %d files and directories (at %s)", MaxEntries, rel)
	}
	return nil
}
