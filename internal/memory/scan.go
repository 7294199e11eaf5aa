package memory

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"talon/internal/tools"
)

// maxDepth bounds how deep under memory/ the listing goes.
const maxDepth = 16

// linkWarning is why a symbolic link is skipped: a link may lead out of
// the workspace, and the index reads nothing outside it.
const linkWarning = "%s is a symbolic link; it is not followed, so nothing through it is indexed"

// file is one memory file found in a workspace.
type file struct {
	path  string // slash-separated, relative to the workspace
	size  int64
	mtime int64 // modification time, Unix nanoseconds
}

// listing is what list found: the files to index, in path order, and why
// others were skipped.
type listing struct {
	files    []file
	warnings []string
}

// isMemoryName reports whether a cleaned relative path names a memory file:
// MEMORY.md or memory.md at the root, or a .md file under memory/.
func isMemoryName(p string) bool {
	if p == "MEMORY.md" || p == "memory.md" {
		return true
	}
	return strings.HasPrefix(p, "memory/") && strings.EqualFold(path.Ext(p), ".md") && len(p) > len("memory/.md")
}

// list finds the memory files in root. Symbolic links are skipped, never
// followed, and so are files too large or with more than one hard link.
// Directories that cannot be read are reported in the warnings.
func list(root *os.Root) listing {
	var l listing
	var top []os.FileInfo
	for _, name := range []string{"MEMORY.md", "memory.md"} {
		fi, ok := l.check(root, name)
		if !ok {
			continue
		}
		// On a case-insensitive file system both names are one file.
		if slices.ContainsFunc(top, func(o os.FileInfo) bool { return os.SameFile(o, fi) }) {
			continue
		}
		top = append(top, fi)
		l.add(name, fi)
	}
	fi, err := root.Lstat("memory")
	switch {
	case errors.Is(err, iofs.ErrNotExist):
	case err != nil:
		l.warn("memory/: %v", pathErr(err))
	case fi.Mode()&os.ModeSymlink != 0:
		l.warn(linkWarning, "memory")
	case fi.IsDir():
		l.walk(root, "memory", 1)
	}
	return l
}

func (l *listing) warn(format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}

// full reports whether MaxFiles are listed, warning the first time
// another file or directory is found.
func (l *listing) full(p string) bool {
	if len(l.files) < MaxFiles {
		return false
	}
	if !slices.ContainsFunc(l.warnings, func(w string) bool { return strings.HasPrefix(w, "more than") }) {
		l.warn("more than %d memory files; only the first %d in path order are indexed (the first left out is %s)", MaxFiles, MaxFiles, p)
	}
	return true
}

// check lstats a candidate file and says whether it may be indexed.
func (l *listing) check(root *os.Root, p string) (os.FileInfo, bool) {
	fi, err := root.Lstat(p)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		l.warn("%s: %v", p, pathErr(err))
		return nil, false
	}
	return fi, l.usable(p, fi)
}

// usable says whether a file, given its lstat, may be indexed.
func (l *listing) usable(p string, fi os.FileInfo) bool {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		l.warn(linkWarning, p)
		return false
	case !fi.Mode().IsRegular():
		return false
	case fi.Size() > MaxFileBytes:
		l.warn("%s is %s; files over %s are not indexed", p, sizeText(fi.Size()), sizeText(MaxFileBytes))
		return false
	}
	if err := tools.SingleLink(fi, p); err != nil {
		l.warn("%v; it is not indexed", err)
		return false
	}
	return true
}

func (l *listing) add(p string, fi os.FileInfo) {
	l.files = append(l.files, file{path: p, size: fi.Size(), mtime: fi.ModTime().UnixNano()})
}

// walk lists the .md files under dir, in path order.
func (l *listing) walk(root *os.Root, dir string, depth int) {
	if depth > maxDepth {
		l.warn("%s/ is nested more than %d directories deep under memory/; it is not indexed", dir, maxDepth)
		return
	}
	f, err := root.Open(dir)
	if err != nil {
		l.warn("%s/: %v", dir, pathErr(err))
		return
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		l.warn("%s/: %v", dir, pathErr(err))
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		p := dir + "/" + e.Name()
		switch t := e.Type(); {
		case t&os.ModeSymlink != 0:
			l.warn(linkWarning, p)
		case t.IsDir():
			if !l.full(p + "/") {
				l.walk(root, p, depth+1)
			}
		case t.IsRegular() && isMemoryName(p):
			if l.full(p) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, iofs.ErrNotExist) {
				continue // removed since ReadDir
			}
			if err != nil {
				l.warn("%s: %v", p, pathErr(err))
				continue
			}
			if l.usable(p, fi) {
				l.add(p, fi)
			}
		}
	}
}

// pathErr drops the *PathError wrapper, whose path is the root's name
// joined with ours: the model knows the workspace-relative path.
func pathErr(err error) error {
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sizeText writes a byte count for people.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
