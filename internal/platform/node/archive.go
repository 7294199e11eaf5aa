package node

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"talon/internal/atomicfile"
	"talon/internal/platform/template"
)

// limits bound what an archive may unpack to: a hostile or broken one is
// refused when it passes a bound, not after it filled the disk.
type limits struct {
	entries    int   // files and directories
	fileBytes  int64 // one file
	totalBytes int64 // all files
	depth      int   // path components
}

// maxDepth bounds the path components of any archive entry: far deeper
// than any workspace, far shallower than PATH_MAX.
const maxDepth = 64

// templateLimits are a template's own (package template) with room for
// the manifest and the inline texts Files materialises from it; Load
// applies the exact ones once unpacked.
var templateLimits = limits{
	entries:    template.MaxEntries + 8,
	fileBytes:  max(template.MaxFileSize, template.MaxManifestSize),
	totalBytes: template.MaxTotalSize + 4*template.MaxManifestSize,
	depth:      template.MaxDepth + 2,
}

// Tenant archives: bounds an operator may raise in Options.
const (
	DefaultMaxImportBytes   = 8 << 30 // all files of a tenant
	DefaultMaxImportEntries = 1_000_000
)

// entryName checks an archive entry's name and returns it as a clean
// relative path: no absolute path, no "..", no empty or "." component,
// no NUL, valid UTF-8, at most depth components. A directory's name may
// end with one "/".
func entryName(name string, depth int) (string, error) {
	trimmed := strings.TrimSuffix(name, "/")
	switch {
	case trimmed == "":
		return "", errors.New("an entry has an empty name")
	case !utf8.ValidString(name) || strings.ContainsRune(name, 0):
		return "", fmt.Errorf("entry %q: the name is not valid UTF-8 text", name)
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("entry %q: an absolute path", name)
	case path.Clean(trimmed) != trimmed:
		return "", fmt.Errorf("entry %q: the path is not clean (empty, . or .. components)", name)
	}
	parts := strings.Split(trimmed, "/")
	for _, p := range parts {
		if p == ".." || p == "." {
			return "", fmt.Errorf("entry %q: the path leaves the archive's directory", name)
		}
	}
	if len(parts) > depth {
		return "", fmt.Errorf("entry %q: more than %d levels deep", name, depth)
	}
	return trimmed, nil
}

// endEntry is a tenant archive's last entry: the count of what came
// before it, so that an archive cut short (a dropped connection at an
// entry's boundary reads as a clean end to a tar reader) is refused.
const endEntry = ".talon-archive-end"

// archiveEnd is endEntry's content.
type archiveEnd struct {
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

// unpack writes the archive r into the empty directory dst: directories
// and regular files only (a symlink, hard link, device or FIFO is
// refused), within lim. Every write goes through an os.Root at dst, so
// no name can reach outside it even if a check above were wrong. With
// end, the archive must close with endEntry, matching what came before
// it. On an error dst holds a part of the archive; the caller removes it.
func unpack(r io.Reader, dst string, lim limits, end bool) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("unpacking: %w", err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var got archiveEnd
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if end {
				return fmt.Errorf("%w: unpacking: the archive is cut short (it has no end entry)", ErrInvalid)
			}
			return nil
		}
		if err != nil {
			return archiveErr(err, "unpacking: reading the archive")
		}
		if end && hdr.Name == endEntry {
			return checkEnd(tr, hdr, got)
		}
		if got.Entries++; got.Entries > lim.entries {
			return fmt.Errorf("%w: unpacking: more than %d entries", ErrInvalid, lim.entries)
		}
		name, err := entryName(hdr.Name, lim.depth)
		if err != nil {
			return fmt.Errorf("%w: unpacking: %v", ErrInvalid, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o700); err != nil {
				return archiveErr(err, "unpacking "+name)
			}
		case tar.TypeReg:
			if hdr.Size < 0 || hdr.Size > lim.fileBytes {
				return fmt.Errorf("%w: unpacking %s: %d bytes, more than %d", ErrInvalid, name, hdr.Size, lim.fileBytes)
			}
			if got.Bytes += hdr.Size; got.Bytes > lim.totalBytes {
				return fmt.Errorf("%w: unpacking %s: the files add up to more than %d bytes", ErrInvalid, name, lim.totalBytes)
			}
			if err := writeEntry(root, name, hdr, tr); err != nil {
				return archiveErr(err, "unpacking "+name)
			}
		default:
			return fmt.Errorf("%w: unpacking: entry %q is a %s; only files and directories are accepted", ErrInvalid, name, typeName(hdr.Typeflag))
		}
	}
}

// archiveErr is err of step what, wrapping ErrInvalid when the archive
// is at fault (a bad header, cut short, a name given twice or both as a
// file and a directory) rather than the disk or the connection.
func archiveErr(err error, what string) error {
	switch {
	case errors.Is(err, tar.ErrHeader), errors.Is(err, tar.ErrInsecurePath), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, errShort):
		return fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// syncDirs fsyncs every directory under dir, dir included, so that the
// entries of an unpacked tree survive a crash once it is renamed into
// place.
func syncDirs(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return atomicfile.SyncDir(p)
	})
}

// checkEnd reads the end entry and what follows it: nothing, and counts
// equal to got.
func checkEnd(tr *tar.Reader, hdr *tar.Header, got archiveEnd) error {
	if hdr.Typeflag != tar.TypeReg || hdr.Size > 4096 {
		return fmt.Errorf("%w: unpacking: a malformed %s entry", ErrInvalid, endEntry)
	}
	var want archiveEnd
	if err := json.NewDecoder(io.LimitReader(tr, hdr.Size)).Decode(&want); err != nil {
		return fmt.Errorf("%w: unpacking: reading %s: %v", ErrInvalid, endEntry, err)
	}
	if want != got {
		return fmt.Errorf("%w: unpacking: the archive holds %d entries and %d bytes, but says %d and %d", ErrInvalid, got.Entries, got.Bytes, want.Entries, want.Bytes)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: unpacking: entries after %s", ErrInvalid, endEntry)
	}
	return nil
}

// writeEntry creates the new file name under root with hdr's content:
// mode 0600, or 0700 when the archive gave it an execute bit. A name
// given twice is refused.
func writeEntry(root *os.Root, name string, hdr *tar.Header, r io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	perm := fs.FileMode(0o600)
	if hdr.Mode&0o100 != 0 {
		perm = 0o700
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, hdr.Size))
	if err == nil {
		// The source deletes its copy once the import is answered: what
		// is answered must be on the disk.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != hdr.Size {
		err = fmt.Errorf("%w: %d bytes into its %d", errShort, n, hdr.Size)
	}
	return err
}

// errShort is a file the archive ends inside.
var errShort = errors.New("the archive ends inside the file")

func typeName(flag byte) string {
	switch flag {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("entry of type %q", flag)
}

// packTemplate writes tp as an archive: its template.yaml and the files
// it loaded (Files and Seed), exactly the snapshot the caller validated,
// whatever its directory holds now.
func packTemplate(w io.Writer, tp *template.Template) error {
	tw := tar.NewWriter(w)
	if err := addFile(tw, template.ManifestFile, 0o644, tp.Manifest()); err != nil {
		return err
	}
	for _, f := range append(tp.Files(), tp.Seed()...) {
		var err error
		if f.Mode.IsDir() {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: f.Path + "/", Mode: 0o755})
		} else {
			err = addFile(tw, f.Path, int64(f.Mode.Perm()), f.Data)
		}
		if err != nil {
			return fmt.Errorf("packing template %s: %w", tp.Slug, err)
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// loadTemplate unpacks a template archive into a private temporary
// directory named for slug and loads it there with all of template.Load's
// checks; the directory is gone when it returns (a Template is a snapshot).
func loadTemplate(archive []byte, slug string) (*template.Template, error) {
	if !template.ValidSlug(slug) {
		return nil, fmt.Errorf("%w: template slug %q is invalid", ErrInvalid, slug)
	}
	tmp, err := os.MkdirTemp("", "talon-node-template-")
	if err != nil {
		return nil, fmt.Errorf("unpacking template %s: %w", slug, err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, slug)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("unpacking template %s: %w", slug, err)
	}
	if err := unpack(bytes.NewReader(archive), dir, templateLimits, false); err != nil {
		return nil, fmt.Errorf("template %s: %w", slug, err)
	}
	tp, err := template.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: template %s does not load: %v", ErrInvalid, slug, err)
	}
	return tp, nil
}

// drainMarker is gateway.DrainMarker (which this package may not import;
// a test holds them equal): the source's, never the copy's.
const drainMarker = ".draining"

// packDir writes the tree at dir as an archive of its directories and
// regular files, names relative to dir, closed by endEntry; a drained
// tenant's drainMarker is left out. Symlinks and
// special files are left out (a tenant's agent may have made one in its
// workspace; unpack refuses them) and returned.
func packDir(w io.Writer, dir string) (skipped []string, err error) {
	tw := tar.NewWriter(w)
	var end archiveEnd
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == endEntry || rel == drainMarker:
			skipped = append(skipped, rel)
			return nil
		case d.IsDir():
			end.Entries++
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o700})
		case d.Type().IsRegular():
			n, err := packFile(tw, p, rel)
			end.Entries++
			end.Bytes += n
			return err
		}
		skipped = append(skipped, rel)
		return nil
	})
	if err != nil {
		return skipped, fmt.Errorf("packing %s: %w", dir, err)
	}
	b, _ := json.Marshal(end)
	if err := addFile(tw, endEntry, 0o600, b); err != nil {
		return skipped, fmt.Errorf("packing %s: %w", dir, err)
	}
	return skipped, tw.Close()
}

// packFile adds the regular file p as rel. It is opened without
// following a symlink, or waiting on a FIFO, swapped in since the walk
// saw it.
func packFile(tw *tar.Writer, p, rel string) (int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s changed while being packed", rel)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return 0, err
	}
	// A file that grows while copied would overrun its header: the tenant
	// is drained, so nothing writes; LimitReader keeps the archive valid
	// anyway, and one that shrank fails the archive's next write.
	_, err = io.Copy(tw, io.LimitReader(f, fi.Size()))
	return fi.Size(), err
}
