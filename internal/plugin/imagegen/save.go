package imagegen

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// CanvasDir is where images are saved, relative to the workspace.
const CanvasDir = "canvas"

// maxSuffix bounds the search for a free name.
const maxSuffix = 1000

// maxBase bounds a file's base name (without suffix and extension).
const maxBase = 64

var baseName = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)

// checkFilename validates the model's filename argument and returns the
// base name: a known image extension is dropped, since the content decides
// it.
func checkFilename(s string) (string, error) {
	lower := strings.ToLower(s)
	for _, ext := range []string{".png", ".jpg", ".jpeg", ".webp"} {
		if strings.HasSuffix(lower, ext) {
			s = s[:len(s)-len(ext)]
			break
		}
	}
	switch {
	case s == "":
		return "", errors.New(`argument "filename" must not be empty; leave it out for a name made from the prompt`)
	case strings.ContainsAny(s, `/\`):
		return "", fmt.Errorf(`argument "filename" %q must be a base name without a directory; images always go to %s/`, truncate(s, 80), CanvasDir)
	case len(s) > maxBase:
		return "", fmt.Errorf(`argument "filename" is %d bytes; at most %d`, len(s), maxBase)
	case !baseName.MatchString(s) || strings.Contains(s, ".."):
		return "", fmt.Errorf(`argument "filename" %q may hold only lower-case letters, digits, '.', '_' and '-', start and end with a letter or digit and not contain "..", e.g. "sunset-over-hills"`, truncate(s, 80))
	}
	return s, nil
}

// nameFromPrompt makes a base name from the prompt's first words and a
// random suffix, so two calls with one prompt do not fight over a name.
func nameFromPrompt(prompt string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(prompt) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "image"
	}
	var rnd [3]byte
	rand.Read(rnd[:])
	return slug + "-" + hex.EncodeToString(rnd[:])
}

// save writes pic to canvas/<base><ext> in root, or canvas/<base>-N<ext>
// when that name is taken, and returns the workspace-relative path. The
// file appears whole or not at all, and never replaces another.
func save(root *os.Root, base string, pic picture) (string, error) {
	if err := root.MkdirAll(CanvasDir, 0o755); err != nil {
		if errors.Is(err, iofs.ErrExist) {
			// MkdirAll's answer when the name is taken by a file.
			err = syscall.ENOTDIR
		}
		return "", fmt.Errorf("creating %s/: %w", CanvasDir, fsError(err))
	}
	ext := extByMIME[pic.mime]
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := CanvasDir + "/." + base + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("creating a temporary file in %s/: %w", CanvasDir, fsError(err))
	}
	// The temporary name goes in every case: after the link the image has
	// its final name, and before it the file is unfinished.
	defer root.Remove(tmp)
	_, err = f.Write(pic.data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing the image: %w", fsError(err))
	}
	for n := 1; n <= maxSuffix; n++ {
		name := CanvasDir + "/" + base + ext
		if n > 1 {
			name = CanvasDir + "/" + base + "-" + strconv.Itoa(n) + ext
		}
		// A hard link, unlike a rename, fails when the name exists, so
		// a file made meanwhile by anyone is never replaced.
		err := root.Link(tmp, name)
		if err == nil {
			syncDir(root)
			return name, nil
		}
		if !errors.Is(err, iofs.ErrExist) {
			return "", fmt.Errorf("naming the image %s: %w", name, fsError(err))
		}
	}
	return "", fmt.Errorf("%s/%s%s and %d numbered variants exist; choose another filename", CanvasDir, base, ext, maxSuffix)
}

// syncDir makes the new name durable; failure only costs durability.
func syncDir(root *os.Root) {
	if d, err := root.Open(CanvasDir); err == nil {
		d.Sync()
		d.Close()
	}
}

// fsError words a filesystem error without the host path.
func fsError(err error) error {
	switch {
	case errors.Is(err, iofs.ErrPermission):
		return errors.New("permission denied")
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s is not a directory", CanvasDir)
	case errors.Is(err, syscall.ENOSPC):
		return errors.New("no space left on the device")
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("%s leads out of the workspace (a symbolic link)", CanvasDir)
	}
	var pe *iofs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
