package telegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
)

// upload is a file parameter of a Bot API request: a request with one
// is sent as multipart/form-data, the others as JSON.
type upload struct {
	name, mime string
	data       []byte
}

// encode is a request body and its Content-Type.
func encode(params any) ([]byte, string, error) {
	p, ok := params.(map[string]any)
	if !ok || !hasUpload(p) {
		body, err := json.Marshal(params)
		return body, "application/json", err
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range p {
		if err := writeField(w, k, v); err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func hasUpload(p map[string]any) bool {
	for _, v := range p {
		if _, ok := v.(upload); ok {
			return true
		}
	}
	return false
}

// writeField writes one parameter: a file, a string as is, anything else
// as JSON (as the Bot API reads a form's objects and numbers).
func writeField(w *multipart.Writer, k string, v any) error {
	switch v := v.(type) {
	case upload:
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, k, quoteEscaper.Replace(v.name)))
		h.Set("Content-Type", v.mime)
		part, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		_, err = part.Write(v.data)
		return err
	case string:
		return w.WriteField(k, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("parameter %s: %w", k, err)
	}
	return w.WriteField(k, string(raw))
}

// quoteEscaper is mime/multipart's own for quoted header values.
var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

// checkUpload validates what a file's name and type put into a part's
// header: no control characters (a line break would end the header) and
// a type that is one.
func checkUpload(name, mimeType string) (string, error) {
	if name == "" || len(name) > 255 {
		return "", fmt.Errorf("file name must be 1-255 bytes, not %d", len(name))
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("file name %q has a control character", name)
		}
	}
	if mimeType == "" {
		return "application/octet-stream", nil
	}
	mt, params, err := mime.ParseMediaType(mimeType)
	if err != nil || !strings.Contains(mt, "/") {
		return "", fmt.Errorf("MIME type %q is not a media type", mimeType)
	}
	return mime.FormatMediaType(mt, params), nil
}
