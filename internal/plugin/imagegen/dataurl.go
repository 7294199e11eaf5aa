package imagegen

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"talon/internal/tools/image"
)

// MaxImageBytes is the largest image saved.
const MaxImageBytes = 20 << 20

// extByMIME is the file extension of each accepted MIME type.
var extByMIME = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/webp": ".webp",
}

// picture is a decoded, checked image.
type picture struct {
	mime          string
	data          []byte
	width, height int
}

// decodeDataURL decodes "data:image/png;base64,..." strictly: the MIME type
// must be one of extByMIME with no other parameter than base64, the base64
// standard and canonical, the bytes at most MaxImageBytes and their content
// the declared type. Errors say which of these failed.
func decodeDataURL(s string) (picture, error) {
	if len(s) < 5 || !strings.EqualFold(s[:5], "data:") {
		return picture{}, errors.New("not a data: URL")
	}
	header, payload, ok := strings.Cut(s[5:], ",")
	if !ok {
		return picture{}, errors.New("data URL without a comma before its data")
	}
	mime, enc, _ := strings.Cut(header, ";")
	mime = strings.ToLower(strings.TrimSpace(mime))
	if !strings.EqualFold(enc, "base64") {
		return picture{}, fmt.Errorf("data URL header %q: only \"<type>;base64\" is accepted", truncate(header, 80))
	}
	if _, ok := extByMIME[mime]; !ok {
		return picture{}, fmt.Errorf("data URL type %q is not image/png, image/jpeg or image/webp", truncate(mime, 80))
	}
	// Check the size before decoding, so an oversized answer costs no
	// second copy.
	if base64.StdEncoding.DecodedLen(len(payload)) > MaxImageBytes+2 {
		return picture{}, fmt.Errorf("image is larger than %d MiB", MaxImageBytes>>20)
	}
	data, err := base64.StdEncoding.Strict().DecodeString(payload)
	if err != nil {
		return picture{}, fmt.Errorf("data URL's base64 is invalid: %v", err)
	}
	if len(data) > MaxImageBytes {
		return picture{}, fmt.Errorf("image is %d bytes, larger than %d MiB", len(data), MaxImageBytes>>20)
	}
	if len(data) == 0 {
		return picture{}, errors.New("data URL holds no data")
	}
	info, err := image.Sniff(data)
	if err != nil {
		return picture{}, fmt.Errorf("declared %s but %v", mime, err)
	}
	if info.MIME != mime {
		return picture{}, fmt.Errorf("declared %s but the content is %s", mime, info.MIME)
	}
	return picture{mime: mime, data: data, width: info.Width, height: info.Height}, nil
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
