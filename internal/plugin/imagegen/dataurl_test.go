package imagegen

import (
	"encoding/base64"
	"strings"
	"testing"

	"talon/internal/tools/image"
)

func TestDecodeDataURL(t *testing.T) {
	pngData := encodePNG(t, 3, 2)
	b64 := base64.StdEncoding.EncodeToString(pngData)
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"png", "data:image/png;base64," + b64, ""},
		{"upper-case scheme and type", "DATA:Image/PNG;BASE64," + b64, ""},
		{"webp", dataURL("image/webp", webpVP8X(5, 7)), ""},
		{"not a data URL", "https://x/y.png", "not a data: URL"},
		{"no comma", "data:image/png;base64", "without a comma"},
		{"not base64", "data:image/png," + b64, `only "<type>;base64"`},
		{"extra parameter", "data:image/png;name=x.png;base64," + b64, `only "<type>;base64"`},
		{"image/jpg is not a type", "data:image/jpg;base64," + b64, `type "image/jpg"`},
		{"svg refused", "data:image/svg+xml;base64,PHN2Zz4=", `type "image/svg+xml"`},
		{"unpadded base64", "data:image/png;base64,iVBORw0KGgo", "base64 is invalid"},
		{"url-safe base64", "data:image/png;base64,-_-_", "base64 is invalid"},
		{"non-canonical padding bits", "data:image/png;base64,iVBORx==", "base64 is invalid"},
		{"empty", "data:image/png;base64,", "holds no data"},
		{"declared png, is jpeg", dataURL("image/png", encodeJPEG(t, 2, 2)), "declared image/png but the content is image/jpeg"},
		{"truncated png", dataURL("image/png", pngData[:20]), "header cannot be read"},
		{"oversize, refused before decoding", "data:image/png;base64," + strings.Repeat("A", (MaxImageBytes/3+2)*4), "larger than 20 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pic, err := decodeDataURL(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("decodeDataURL error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pic.width == 0 || pic.height == 0 || extByMIME[pic.mime] == "" {
				t.Errorf("picture = %s %dx%d", pic.mime, pic.width, pic.height)
			}
		})
	}
}

// FuzzDecodeDataURL checks that whatever a model or server sends, the
// decoder does not panic and accepts only a supported image whose content
// is what the URL declares.
func FuzzDecodeDataURL(f *testing.F) {
	f.Add(dataURL("image/png", encodePNG(f, 2, 2)))
	f.Add(dataURL("image/jpeg", encodeJPEG(f, 2, 2)))
	f.Add(dataURL("image/webp", webpVP8X(9, 9)))
	f.Add("data:image/png;base64,iVBORw0KGgo=")
	f.Add("data:,")
	f.Add("data:image/gif;base64,R0lGODlh")
	f.Fuzz(func(t *testing.T, s string) {
		pic, err := decodeDataURL(s)
		if err != nil {
			return
		}
		if extByMIME[pic.mime] == "" || len(pic.data) == 0 || len(pic.data) > MaxImageBytes {
			t.Fatalf("accepted %s of %d bytes", pic.mime, len(pic.data))
		}
		info, err := image.Sniff(pic.data)
		if err != nil || info.MIME != pic.mime || info.Width != pic.width || info.Height != pic.height {
			t.Fatalf("accepted %s %dx%d, content is %+v, %v", pic.mime, pic.width, pic.height, info, err)
		}
		again, err := decodeDataURL("data:" + pic.mime + ";base64," + base64.StdEncoding.EncodeToString(pic.data))
		if err != nil || string(again.data) != string(pic.data) {
			t.Fatalf("re-encoded image not accepted: %v", err)
		}
	})
}
