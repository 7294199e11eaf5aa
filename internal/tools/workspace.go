package tools

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"unicode"

	"talon/internal/contain"
	"talon/internal/sandbox"
)

// scheme matches a reference that starts with a URL scheme.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// FilePath turns a file reference the model gave in argument arg — a
// workspace-relative path, "@path" (OpenClaw's spelling), "file://…", or
// an absolute path inside the workspace as commands (sandbox.Workdir) or
// the host see it — into a clean path relative to the workspace. URLs
// and other schemes are refused, as are paths that lead out of it;
// symbolic links are left to os.Root.
func FilePath(env *Env, arg, ref string) (string, error) {
	p := strings.TrimPrefix(strings.TrimSpace(ref), "@")
	switch lower := strings.ToLower(p); {
	case p == "":
		return "", fmt.Errorf("argument %q must not be empty", arg)
	case strings.IndexByte(p, 0) >= 0:
		return "", fmt.Errorf("argument %q contains a NUL byte", arg)
	case strings.HasPrefix(lower, "file://"):
		p = p[len("file://"):]
	case scheme.MatchString(p):
		return "", fmt.Errorf("argument %q: unsupported reference %q: pass the path of a file in the workspace", arg, ref)
	}
	if path.IsAbs(p) {
		rel, ok := inside(env, path.Clean(p))
		if !ok {
			return "", fmt.Errorf("path %q is outside the workspace; pass a path relative to the workspace", ref)
		}
		p = rel
	}
	c := path.Clean(p)
	if _, ok := contain.Within(".", c); !ok {
		return "", fmt.Errorf("path %q is outside the workspace", ref)
	}
	return c, nil
}

// inside maps an absolute path that names something in the workspace, as
// commands see it (sandbox.Workdir) or as the host does, to a relative one.
func inside(env *Env, p string) (string, bool) {
	if rel, ok := contain.Within(sandbox.Workdir, p); ok && rel != "." {
		return rel, true
	}
	if env == nil || env.Workspace == nil {
		return "", false
	}
	base, err := filepath.Abs(env.Workspace.Name())
	if err != nil {
		return "", false
	}
	rel, ok := contain.Within(base, p)
	if !ok || rel == "." {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// ReadFile reads the file at p (relative, from FilePath) in root: only a
// regular file with a single name (SingleLink), at most max bytes, read
// from the opened file so that a name swapped after the check reads
// nothing else. Errors are worded for the model without host paths.
func ReadFile(root *os.Root, p string, max int64) ([]byte, error) {
	fi, err := root.Stat(p)
	if err != nil {
		return nil, FSError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%d bytes; the limit is %s", fi.Size(), sizeOf(max))
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, FSError(err)
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return nil, FSError(err)
	}
	if !ofi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if err := SingleLink(ofi, p); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, FSError(err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("more than %s", sizeOf(max))
	}
	return data, nil
}

// sizeOf words a byte limit: "20 MiB", "1500 bytes".
func sizeOf(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// FSError words a filesystem error for the model without the host path.
func FSError(err error) error {
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return errors.New("does not exist")
	case errors.Is(err, iofs.ErrPermission):
		return errors.New("permission denied")
	case strings.Contains(err.Error(), "path escapes from parent"):
		return errors.New("is outside the workspace (a symbolic link leads out of it)")
	case errors.Is(err, syscall.ENOTDIR):
		return errors.New("a parent in the path is not a directory")
	case errors.Is(err, syscall.ELOOP):
		return errors.New("too many levels of symbolic links")
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err
}

// BaseName makes a file name someone else chose (a chat attachment's, a
// model's filename) safe to show, send and create in a directory: the
// last element, without control characters, at most 128 bytes, "file"
// when nothing is left.
func BaseName(n string) string {
	n = path.Base(strings.ReplaceAll(n, "\\", "/"))
	n = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, n)
	for len(n) > 128 {
		ext := path.Ext(n)
		if len(ext) > 16 {
			ext = ""
		}
		n = strings.ToValidUTF8(n[:128-len(ext)], "") + ext
	}
	if n = strings.TrimSpace(n); n == "" || n == "." || n == "/" || n == ".." {
		return "file"
	}
	return n
}

// CreateNew writes data to a new file dir/name in root, creating dir, or
// to dir/stem-2.ext and so on when the name is taken: a file a tool or a
// channel writes never replaces one. It returns the path written; a
// failed write leaves no file behind.
func CreateNew(root *os.Root, dir, name string, data []byte) (string, error) {
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= 100; i++ {
		p := path.Join(dir, name)
		if i > 1 {
			p = path.Join(dir, fmt.Sprintf("%s-%d%s", stem, i, ext))
		}
		f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, iofs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, werr := f.Write(data)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			root.Remove(p)
			return "", werr
		}
		return p, nil
	}
	return "", fmt.Errorf("%s: a hundred files of that name in %s already", name, dir)
}

// ByteSize words a byte count for the model: "812 B", "54 KB", "3.2 MB".
func ByteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
