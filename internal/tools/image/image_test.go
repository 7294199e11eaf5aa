package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	goimage "image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/llm"
	"talon/internal/tools"
)

func encode(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	img := goimage.NewPaletted(goimage.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&b, img)
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// webp builds the first bytes of a WebP file whose first chunk is kind,
// laid out as RFC 9649 says. The parser was also checked against real
// files (VP8 and VP8X) when it was written.
func webp(kind string, w, h int) []byte {
	b := make([]byte, 40)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], 32)
	copy(b[8:], "WEBP")
	copy(b[12:], kind)
	binary.LittleEndian.PutUint32(b[16:], 20)
	switch kind {
	case "VP8X":
		put24 := func(p []byte, v int) { p[0], p[1], p[2] = byte(v), byte(v>>8), byte(v>>16) }
		put24(b[24:], w-1)
		put24(b[27:], h-1)
	case "VP8L":
		b[20] = 0x2f
		binary.LittleEndian.PutUint32(b[21:], uint32(w-1)|uint32(h-1)<<14)
	case "VP8 ":
		b[23], b[24], b[25] = 0x9d, 0x01, 0x2a
		binary.LittleEndian.PutUint16(b[26:], uint16(w))
		binary.LittleEndian.PutUint16(b[28:], uint16(h))
	}
	return b
}

func TestImage(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	files := map[string][]byte{
		"a.png":          encode(t, "png", 3, 2),
		"b.jpg":          encode(t, "jpeg", 5, 4),
		"c.gif":          encode(t, "gif", 7, 1),
		"lying.jpg":      encode(t, "png", 2, 9),
		"x.webp":         webp("VP8X", 640, 480),
		"l.webp":         webp("VP8L", 16383, 2),
		"y.webp":         webp("VP8 ", 640, 349),
		"bad.webp":       webp("VP8Z", 1, 1),
		"notes.txt":      []byte("just text\n"),
		"broken.png":     append([]byte("\x89PNG\r\n\x1a\n"), "garbage"...),
		"sub/deep.png":   encode(t, "png", 1, 1),
		"../outside.png": encode(t, "png", 1, 1),
	}
	for name, data := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big, err := os.Create(filepath.Join(ws, "big.png"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(MaxBytes + 1) // sparse: costs no disk
	big.Close()
	if err := os.Symlink("../outside.png", filepath.Join(ws, "link.png")); err != nil {
		t.Fatal(err)
	}
	// A second name of a file outside the workspace.
	if err := os.Link(filepath.Join(dir, "outside.png"), filepath.Join(ws, "linked.png")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	cases := []struct {
		name      string
		sandboxed bool
		args      string
		want      string
		isError   bool
	}{
		{"png", false, `{"image":"a.png"}`, `Image "a.png": PNG, 3×2 pixels, `, false},
		{"jpeg", false, `{"image":"b.jpg"}`, `Image "b.jpg": JPEG, 5×4 pixels, `, false},
		{"gif", false, `{"image":"c.gif"}`, `Image "c.gif": GIF, 7×1 pixels, `, false},
		{"sniffed, not named", false, `{"image":"lying.jpg"}`, `Image "lying.jpg": PNG, 2×9 pixels, `, false},
		{"webp extended", false, `{"image":"x.webp"}`, `Image "x.webp": WebP, 640×480 pixels, 40 bytes.`, false},
		{"webp lossless", false, `{"image":"l.webp"}`, `Image "l.webp": WebP, 16383×2 pixels`, false},
		{"webp lossy", false, `{"image":"y.webp"}`, `Image "y.webp": WebP, 640×349 pixels`, false},
		{"model answer", false, `{"image":"a.png"}`, fmt.Sprintf("PNG, 3×2 pixels, %[1]d bytes.\n\nsaw image/png %[1]d bytes: \"Describe the image.\"", len(files["a.png"])), false},
		{"prompt", false, `{"image":"x.webp","prompt":"  what is it  "}`, "\n\nsaw image/webp 40 bytes: \"what is it\"", false},
		{"blank prompt is the default", false, `{"image":"c.gif","prompt":" "}`, `saw image/gif `, false},
		{"model error", false, `{"image":"a.png","prompt":"fail"}`, `image "a.png": asking the image model: openai: 400 invalid image`, true},
		{"empty answer", false, `{"image":"a.png","prompt":"silent"}`, `(the image model answered with no text)`, false},
		{"hard link", false, `{"image":"linked.png"}`, `image "linked.png": "linked.png" has 2 hard links`, true},
		{"subdirectory", false, `{"image":"sub/../sub/deep.png"}`, `Image "sub/deep.png": PNG, 1×1`, false},
		{"at prefix", false, `{"image":"@a.png"}`, `Image "a.png": PNG`, false},
		{"file URL", false, `{"image":"file:///workspace/a.png"}`, `Image "a.png": PNG`, false},
		{"sandbox path", true, `{"image":"/workspace/sub/deep.png"}`, `Image "sub/deep.png": PNG`, false},
		{"host path inside", false, `{"image":"` + filepath.Join(ws, "a.png") + `"}`, `Image "a.png": PNG`, false},
		{"webp unknown chunk", false, `{"image":"bad.webp"}`, `image "bad.webp": looks like image/webp but its header cannot be read: unknown first chunk "VP8Z"`, true},
		{"text", false, `{"image":"notes.txt"}`, `image "notes.txt": not a PNG, JPEG, GIF or WebP image (its content looks like text/plain; charset=utf-8)`, true},
		{"broken", false, `{"image":"broken.png"}`, `image "broken.png": looks like image/png but its header cannot be read`, true},
		{"too big", false, `{"image":"big.png"}`, `image "big.png": 20971521 bytes; the limit is 20 MiB`, true},
		{"missing", false, `{"image":"nope.png"}`, `image "nope.png": does not exist`, true},
		{"directory", false, `{"image":"sub"}`, `image "sub": not a regular file`, true},
		{"symlink out", false, `{"image":"link.png"}`, `image "link.png": is outside the workspace`, true},
		{"dot dot", false, `{"image":"../outside.png"}`, `path "../outside.png" is outside the workspace`, true},
		{"absolute elsewhere", false, `{"image":"/etc/passwd"}`, `path "/etc/passwd" is outside the workspace`, true},
		{"remote in sandbox", true, `{"image":"https://example.com/cat.png"}`, `Sandboxed image tool does not allow remote URLs.`, true},
		{"remote on host", false, `{"image":"HTTP://example.com/cat.png"}`, `remote image URLs are not fetched`, true},
		{"other scheme", false, `{"image":"ftp://example.com/cat.png"}`, `unsupported reference "ftp://example.com/cat.png"`, true},
		{"data URL", false, `{"image":"data:image/png;base64,AAAA"}`, `unsupported reference`, true},
		{"empty", false, `{"image":" "}`, `argument "image" must not be empty`, true},
		{"missing argument", false, `{}`, `missing required argument "image"`, true},
		{"prompt not a string", false, `{"image":"a.png","prompt":3}`, `"prompt"`, true},
		{"prompt too long", false, `{"image":"a.png","prompt":"` + strings.Repeat("x", maxPrompt+1) + `"}`, `argument "prompt" is 16385 bytes; the limit is 16384`, true},
		{"unknown argument", false, `{"image":"a.png","model":"x/y"}`, `unknown argument "model"`, true},
	}
	// vision stands in for the model: it says what it was given.
	vision := func(_ context.Context, prompt string, img llm.Image) (string, error) {
		switch prompt {
		case "fail":
			return "", errors.New("openai: 400 invalid image")
		case "silent":
			return " ", nil
		}
		return fmt.Sprintf("saw %s %d bytes: %q", img.MIME, len(img.Data), prompt), nil
	}
	tool := New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := &tools.Env{AgentID: "main", SessionKey: "k", Workspace: root, Sandboxed: c.sandboxed, Vision: vision}
			res, err := tool.Run(context.Background(), env, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != c.isError || !strings.Contains(res.Text, c.want) {
				t.Errorf("result %+v, want IsError %v and %q", res, c.isError, c.want)
			}
		})
	}
	t.Run("no model", func(t *testing.T) {
		env := &tools.Env{Workspace: root}
		res, err := tool.Run(context.Background(), env, json.RawMessage(`{"image":"a.png"}`))
		if err != nil || !res.IsError || res.Text != ErrNoModel.Error() {
			t.Errorf("result %+v, %v; want %q", res, err, ErrNoModel)
		}
		// A bad path is still reported as such.
		res, _ = tool.Run(context.Background(), env, json.RawMessage(`{"image":"nope.png"}`))
		if !strings.Contains(res.Text, "does not exist") {
			t.Errorf("missing file without a model: %+v", res)
		}
	})
	if _, err := tool.Run(context.Background(), &tools.Env{}, json.RawMessage(`{"image":"a.png"}`)); err == nil {
		t.Error("no workspace: no error")
	}
	if err := tools.LintSchema(tool.Schema()); err != nil {
		t.Error(err)
	}
}
