package image

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	goimage "image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRead reads any file in the workspace as an image: the facts of a
// PNG, JPEG, GIF or WebP header, or an error that says something. The
// reported size is the file's and no dimension is negative.
func FuzzRead(f *testing.F) {
	ihdr := []byte("IHDR\x00\x00\x00\x02\x00\x00\x00\x03\x08\x02\x00\x00\x00")
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d"), ihdr...)
	png = binary.BigEndian.AppendUint32(png, crc32.ChecksumIEEE(ihdr))
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, goimage.NewGray(goimage.Rect(0, 0, 2, 3)), nil); err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		webp("VP8X", 3, 4), webp("VP8L", 16384, 1), webp("VP8 ", 5, 6), webp("VP8 ", 0, 0), webp("ALPH", 1, 1),
		png, []byte("GIF89a\x02\x00\x03\x00\x00\x00\x00;"),
		jpg.Bytes(), jpg.Bytes()[:jpg.Len()/2],
		[]byte("RIFF\x00\x00\x00\x00WEBPVP8X"), []byte("plain text"), {},
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { root.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := read(root, "f")
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		switch got.format {
		case "PNG", "JPEG", "GIF", "WebP":
		default:
			t.Fatalf("format %q", got.format)
		}
		if got.size != int64(len(data)) || got.width < 0 || got.height < 0 {
			t.Fatalf("facts %+v for %d bytes", got, len(data))
		}
	})
}
