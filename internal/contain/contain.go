// Package contain answers one question for every caller that guards a
// boundary on disk: is this path inside that directory? Within answers by
// the text of two clean paths; Resolved answers for the file system as it
// is now, following every symbolic link on the way, so that a link a
// sandboxed command planted cannot lead a tenant's workspace into another
// tenant's directory. Real is that resolution alone, for callers that
// compare two paths (do two workspaces overlap?) rather than keep one in.
//
// Resolved checks a moment in time: a caller that then opens the path
// should open it through an os.Root of the directory where it can (see
// internal/sandbox's Manager.Workspace), which keeps every later step
// inside too.
//
// The functions are safe for concurrent use.
package contain

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Within reports whether p is dir or lies inside it, by their text alone,
// and p relative to dir ("." for dir itself). Both are cleaned first; a
// relative path is never inside an absolute one, nor the other way round.
func Within(dir, p string) (rel string, ok bool) {
	dir, p = filepath.Clean(dir), filepath.Clean(p)
	if filepath.IsAbs(dir) != filepath.IsAbs(p) {
		return "", false
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// Overlap reports whether one of a and b is the other or lies inside it,
// by their text.
func Overlap(a, b string) bool {
	_, ab := Within(a, b)
	_, ba := Within(b, a)
	return ab || ba
}

// OutsideError is a path that leads out of the directory it must stay in.
type OutsideError struct {
	Dir, Path string
	// Real is where Path leads, when a symbolic link took it elsewhere.
	Real string
}

func (e *OutsideError) Error() string {
	if e.Real != "" && e.Real != e.Path {
		return fmt.Sprintf("%s leads to %s, outside %s", e.Path, e.Real, e.Dir)
	}
	return fmt.Sprintf("%s is outside %s", e.Path, e.Dir)
}

// Resolved returns where p really is, with every symbolic link resolved,
// when that is dir or inside dir (dir resolved too); else an
// *OutsideError. A p that does not exist yet is resolved as far as it
// exists: the rest holds no link. p and dir must be absolute.
func Resolved(dir, p string) (string, error) {
	if !filepath.IsAbs(dir) || !filepath.IsAbs(p) {
		return "", fmt.Errorf("checking %s against %s: both paths must be absolute", p, dir)
	}
	if _, ok := Within(dir, p); !ok {
		return "", &OutsideError{Dir: dir, Path: p}
	}
	realDir, err := resolve(dir)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", dir, err)
	}
	real, err := resolve(p)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", p, err)
	}
	if _, ok := Within(realDir, real); !ok {
		return "", &OutsideError{Dir: dir, Path: p, Real: real}
	}
	return real, nil
}

// Real is where p really is, every symbolic link resolved: Resolved's
// resolution without its boundary, for callers that compare two paths
// rather than keep one inside a directory. A p that does not exist yet is
// resolved as far as it exists; a dangling link or a loop is an error.
func Real(p string) (string, error) { return resolve(p) }

// resolve is filepath.EvalSymlinks of the longest part of p that exists,
// with the rest appended.
func resolve(p string) (string, error) {
	p = filepath.Clean(p)
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		// A dangling link is a name that exists: where it would lead is
		// unknown until its target appears, so it is refused.
		if _, lerr := os.Lstat(p); lerr == nil || !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
