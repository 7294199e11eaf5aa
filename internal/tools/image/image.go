// Package image holds the image tool: it reads a PNG, JPEG, GIF or WebP
// file from the workspace (an os.Root, as the file tools use) and asks an
// image-capable model about it, as OpenClaw's image tool does: the model
// gets the prompt and the image's bytes, and its text is the result, after
// a line of the facts the tool read (format, dimensions, size). The model
// call is tools.Env.Vision, which the agent runner sets; without it the
// tool says no image model is configured rather than answer for it.
// Remote URLs are refused: in a sandboxed session with OpenClaw's own
// message (seed 000), elsewhere because Talon does not fetch them.
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
	"net/http"
	"os"
	"strings"

	"talon/internal/llm"
	"talon/internal/tools"
)

// MaxBytes is the largest image the tool reads.
const MaxBytes = 20 << 20

// DefaultPrompt is what the model is asked when the call gives no prompt
// (OpenClaw's default).
const DefaultPrompt = "Describe the image."

// maxPrompt bounds the prompt: it is an instruction, not a document.
const maxPrompt = 16 << 10

// ErrSandboxedURL is OpenClaw's refusal of a remote URL in a sandbox.
var ErrSandboxedURL = errors.New("Sandboxed image tool does not allow remote URLs.")

// ErrNoModel is the answer when the run has no model to show images to.
var ErrNoModel = errors.New("image: no image-capable model configured (set agents.defaults.imageModel)")

type imageTool struct{}

var _ tools.Tool = (*imageTool)(nil)

// New returns the image tool.
func New() tools.Tool { return &imageTool{} }

var schema = tools.Object(
	tools.Prop{Name: "image", Type: tools.TypeString, Required: true,
		Description: `Path of a PNG, JPEG, GIF or WebP file, relative to the workspace, e.g. "screenshots/home.png".`},
	tools.Prop{Name: "prompt", Type: tools.TypeString,
		Description: `What to ask about the image; default "` + DefaultPrompt + `".`},
)

func (*imageTool) Name() string { return "image" }

func (*imageTool) Description() string {
	return "Analyse a PNG, JPEG, GIF or WebP file (up to 20 MiB) in the workspace with the image model: " +
		"it answers the prompt about the picture. Remote URLs are not fetched."
}

func (*imageTool) Schema() json.RawMessage { return schema }

func (*imageTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (tools.Result, error) {
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
	prompt, err := a.String("prompt", false)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	if prompt = strings.TrimSpace(prompt); prompt == "" {
		prompt = DefaultPrompt
	} else if len(prompt) > maxPrompt {
		return tools.ErrorResult(fmt.Errorf(`argument "prompt" is %d bytes; the limit is %d`, len(prompt), maxPrompt)), nil
	}
	p, err := localPath(env, ref)
	if err != nil {
		return tools.ErrorResult(err), nil
	}
	info, err := read(env.Workspace, p)
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("image %q: %w", ref, err)), nil
	}
	// The file is checked first, so a bad path is reported as such even
	// where no model is configured.
	if env.Vision == nil {
		return tools.ErrorResult(ErrNoModel), nil
	}
	text, err := env.Vision(ctx, prompt, llm.Image{MIME: info.mime, Data: info.data})
	if err != nil {
		return tools.ErrorResult(fmt.Errorf("image %q: asking the image model: %w", p, err)), nil
	}
	if text = strings.TrimSpace(text); text == "" {
		text = "(the image model answered with no text)"
	}
	return tools.Result{Text: fmt.Sprintf("Image %q: %s, %d×%d pixels, %d bytes.\n\n%s",
		p, info.format, info.width, info.height, info.size, text)}, nil
}

// localPath turns the model's reference into a path relative to the
// workspace (tools.FilePath), refusing remote URLs with the image tool's
// own words.
func localPath(env *tools.Env, ref string) (string, error) {
	lower := strings.ToLower(strings.TrimSpace(ref))
	if strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") {
		if env.Sandboxed {
			return "", ErrSandboxedURL
		}
		return "", errors.New("remote image URLs are not fetched: the image tool reads files in the workspace; download the image into the workspace first and pass its path")
	}
	return tools.FilePath(env, "image", ref)
}

// facts are what the tool reports about an image, and the image.
type facts struct {
	format        string
	mime          string // as sniffed; what the model is told
	width, height int
	size          int64
	data          []byte
}

// read opens p in root and reads the facts of the image in it.
func read(root *os.Root, p string) (facts, error) {
	data, err := tools.ReadFile(root, p, MaxBytes)
	if err != nil {
		return facts{}, err
	}
	info, err := Sniff(data)
	if err != nil {
		return facts{}, err
	}
	return facts{format: info.Format, mime: info.MIME, width: info.Width, height: info.Height,
		size: int64(len(data)), data: data}, nil
}

// Info is what Sniff reads from an image's bytes.
type Info struct {
	Format        string // "PNG", "JPEG", "GIF" or "WebP"
	MIME          string // as sniffed from the content
	Width, Height int
}

// Sniff identifies a PNG, JPEG, GIF or WebP image by its content, not its
// name, and reads its dimensions from its header. Other content, or a
// header that cannot be read, is an error worded for the model. The
// image-gen plugin checks generated images with it too.
func Sniff(data []byte) (Info, error) {
	ct := http.DetectContentType(data)
	out := Info{MIME: ct}
	switch ct {
	case "image/png", "image/jpeg", "image/gif":
		cfg, name, err := goimage.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return Info{}, fmt.Errorf("looks like %s but its header cannot be read: %v", ct, err)
		}
		out.Format, out.Width, out.Height = strings.ToUpper(name), cfg.Width, cfg.Height
	case "image/webp":
		w, h, err := webpSize(data)
		if err != nil {
			return Info{}, fmt.Errorf("looks like image/webp but its header cannot be read: %v", err)
		}
		out.Format, out.Width, out.Height = "WebP", w, h
	default:
		return Info{}, fmt.Errorf("not a PNG, JPEG, GIF or WebP image (its content looks like %s)", ct)
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
