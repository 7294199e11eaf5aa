// Package image holds the image tool: it reads a PNG, JPEG, GIF or WebP
// file from the workspace (an os.Root, as the file tools use) and reports
// what it is. Talon's providers cannot carry images in messages yet, so
// the tool returns the facts it read — format, dimensions, size — and
// says plainly that the pixels were not sent; it never pretends to have
// looked at the picture. Remote URLs are refused: in a sandboxed session
// with OpenClaw's own message (seed 000), elsewhere because Talon does not
// fetch them.
//
// The tool is stateless and safe for concurrent use.
package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	goimage "image"
	_ "image/gif" // DecodeConfig for the formats the standard library has
	_ "image/jpeg"
	_ "image/png"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"talon/internal/sandbox"
	"talon/internal/tools"
)

// MaxBytes is the largest image the tool reads.
const MaxBytes = 20 << 20

// ErrSandboxedURL is OpenClaw's refusal of a remote URL in a sandbox.
var ErrSandboxedURL = errors.New("Sandboxed image tool does not allow remote URLs.")

type imageTool struct{}

var _ tools.Tool = (*imageTool)(nil)

// New returns the image tool.
func New() tools.Tool { return &imageTool{} }

var schema = tools.Object(
	tools.Prop{Name: "image", Type: tools.TypeString, Required: true,
		Description: `Path of a PNG, JPEG, GIF or WebP file, relative to the workspace, e.g. "screenshots/home.png".`},
)

func (*imageTool) Name() string { return "image" }

func (*imageTool) Description() string {
	return "Read a PNG, JPEG, GIF or WebP file (up to 20 MiB) in the workspace: its format, dimensions and size. " +
		"Talon cannot show the pixels to the model yet. Remote URLs are not fetched."
}

func (*imageTool) Schema() json.RawMessage { return schema }

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func (*imageTool) Run(_ context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
	if env == nil || env.Workspace == nil {
		return tools.Result{}, errors.New("running image: no workspace in the tool environment")
	}
	a, err := tools.ParseArgsFor(raw, schema)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	ref, err := a.String("image", true)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	p, err := localPath(env, ref)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	info, err := read(env.Workspace, p)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("image %q: %w", ref, err)), nil
	}
	return tools.Result{Text: fmt.Sprintf(
		"Image %q: %s, %d×%d pixels, %d bytes. The pixels were not sent: Talon cannot pass images to models yet, "+
			"so describe only what these facts show, or ask the user what the image contains.",
		p, info.format, info.width, info.height, info.size)}, nil
}

// localPath turns the model's reference into a path relative to the
// workspace, refusing URLs and paths that lead out of it.
func localPath(env *tools.Env, ref string) (string, error) {
	p := strings.TrimPrefix(strings.TrimSpace(ref), "@") // OpenClaw accepts "@path"
	switch lower := strings.ToLower(p); {
	case p == "":
		return "", errors.New(`argument "image" must not be empty`)
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New(`argument "image" contains a NUL byte`)
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		if env.Sandboxed {
			return "", ErrSandboxedURL
		}
		return "", errors.New("remote image URLs are not fetched: the image tool reads files in the workspace; download the image into the workspace first and pass its path")
	case strings.HasPrefix(lower, "file://"):
		p = p[len("file://"):]
	case scheme.MatchString(p):
		return "", fmt.Errorf("unsupported image reference %q: pass the path of a file in the workspace", ref)
	}
	if path.IsAbs(p) {
		rel, ok := inside(env, path.Clean(p))
		if !ok {
			return "", fmt.Errorf("path %q is outside the workspace; pass a path relative to the workspace", ref)
		}
		p = rel
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q is outside the workspace", ref)
	}
	return c, nil
}

// inside maps an absolute path that names something in the workspace, as
// commands see it (sandbox.Workdir) or as the host does, to a relative one.
func inside(env *tools.Env, p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, sandbox.Workdir+"/"); ok {
		return rest, true
	}
	base, err := filepath.Abs(env.Workspace.Name())
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// facts are what the tool reports about an image.
type facts struct {
	format        string
	width, height int
	size          int64
}

// read opens p in root and reads the facts of the image in it.
func read(root *os.Root, p string) (facts, error) {
	fi, err := root.Stat(p)
	if err != nil {
		return facts{}, fsError(err)
	}
	if !fi.Mode().IsRegular() {
		return facts{}, errors.New("not a regular file")
	}
	if fi.Size() > MaxBytes {
		return facts{}, fmt.Errorf("%d bytes; the limit is %d MiB", fi.Size(), MaxBytes>>20)
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return facts{}, fsError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return facts{}, fsError(err)
	}
	if len(data) > MaxBytes {
		return facts{}, fmt.Errorf("more than %d MiB", MaxBytes>>20)
	}
	out := facts{size: int64(len(data))}
	// Sniffing the content, not trusting the name.
	switch ct := http.DetectContentType(data); ct {
	case "image/png", "image/jpeg", "image/gif":
		cfg, name, err := goimage.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return facts{}, fmt.Errorf("looks like %s but its header cannot be read: %v", ct, err)
		}
		out.format, out.width, out.height = strings.ToUpper(name), cfg.Width, cfg.Height
	case "image/webp":
		w, h, err := webpSize(data)
		if err != nil {
			return facts{}, fmt.Errorf("looks like image/webp but its header cannot be read: %v", err)
		}
		out.format, out.width, out.height = "WebP", w, h
	default:
		return facts{}, fmt.Errorf("not a PNG, JPEG, GIF or WebP image (its content looks like %s)", ct)
	}
	return out, nil
}

// webpSize reads the canvas size of a WebP file from its first chunk:
// VP8X (extended), VP8L (lossless) or VP8 (lossy), as RFC 9649 lays them
// out. The standard library has no WebP decoder.
func webpSize(b []byte) (int, int, error) {
	if len(b) < 30 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, errors.New("too short for a WebP header")
	}
	le24 := func(p []byte) int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
	switch string(b[12:16]) {
	case "VP8X":
		return le24(b[24:27]) + 1, le24(b[27:30]) + 1, nil
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, errors.New("VP8L chunk without its signature")
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, nil
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, errors.New("VP8 chunk without its start code")
		}
		return int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff), int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff), nil
	}
	return 0, 0, fmt.Errorf("unknown first chunk %q", b[12:16])
}

// fsError words a filesystem error for the model without the host path.
func fsError(err error) error {
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
