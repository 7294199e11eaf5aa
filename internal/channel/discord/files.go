package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"unicode"
	"unicode/utf8"

	"talon/internal/channel"
)

var _ channel.Attacher = (*Bot)(nil)

// MaxUpload is the largest file SendFile posts: Discord's default limit
// for a bot's upload (a boosted server allows more, which Talon does not
// ask about). Discord's own 413 is reported as channel.ErrTooLarge too.
const MaxUpload = 25 << 20

// maxContent is Discord's longest message content, in characters.
const maxContent = 2000

// maxFileName bounds a file name; Discord cuts longer ones anyway.
const maxFileName = 255

// codeTooLarge is Discord's JSON error code for an upload over the limit.
const codeTooLarge = 40005

// SendFile posts f into t as a message with one attachment
// (channel.Attacher): POST /channels/{id}/messages as multipart/form-data
// with payload_json and files[0]. The caption is the message's content,
// under the same mention and embed rules as Send; Discord does not
// refuse markdown, so CaptionPlain is not needed. Having no key, a post
// whose outcome is unknown is not repeated: it is ErrUnconfirmed.
func (b *Bot) SendFile(ctx context.Context, t channel.Target, f channel.File, replyTo string) (channel.Sent, error) {
	const step = "discord send file"
	if err := checkFile(f); err != nil {
		return channel.Sent{}, fmt.Errorf("%s: %w", step, err)
	}
	ref, err := replyRef(replyTo)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("%s: %w", step, err)
	}
	chID, err := b.channelFor(ctx, t)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("%s: %w", step, err)
	}
	payload := createMessage{messageText: b.textOf(f.Caption), MessageReference: ref,
		Attachments: []attachmentRef{{ID: 0, Filename: f.Name}}}
	body, contentType, err := fileForm(payload, f)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("%s: %w", step, err)
	}
	sent, err := b.post(ctx, step, chID, body, contentType, false)
	if api := (*APIError)(nil); errors.As(err, &api) && (api.Status == http.StatusRequestEntityTooLarge || api.Code == codeTooLarge) {
		return channel.Sent{}, fmt.Errorf("%w: %w", err, channel.ErrTooLarge)
	}
	return sent, err
}

// checkFile refuses what Discord would, before anything is sent.
func checkFile(f channel.File) error {
	switch {
	case len(f.Data) > MaxUpload:
		return fmt.Errorf("file %q is %d bytes, over Discord's %d: %w", f.Name, len(f.Data), MaxUpload, channel.ErrTooLarge)
	case f.Name == "" || len(f.Name) > maxFileName || !utf8.ValidString(f.Name):
		return fmt.Errorf("file name %q: 1–%d bytes of UTF-8", f.Name, maxFileName)
	case strings.ContainsFunc(f.Name, func(r rune) bool { return unicode.IsControl(r) || r == '/' || r == '\\' }):
		return fmt.Errorf("file name %q has a control character or a slash", f.Name)
	case utf8.RuneCountInString(f.Caption) > maxContent:
		return fmt.Errorf("caption of %d characters, over Discord's %d", utf8.RuneCountInString(f.Caption), maxContent)
	}
	if f.MIME != "" {
		if _, _, err := mime.ParseMediaType(f.MIME); err != nil {
			return fmt.Errorf("file MIME type %q: %w", f.MIME, err)
		}
	}
	return nil
}

// fileForm is the multipart body of a post with one file.
func fileForm(payload createMessage, f channel.File) ([]byte, string, error) {
	pj, err := json.Marshal(payload)
	if err != nil {
		return nil, "", fmt.Errorf("encoding payload_json: %w", err)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="payload_json"`)
	h.Set("Content-Type", "application/json")
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = part.Write(pj)
	}
	if err != nil {
		return nil, "", fmt.Errorf("writing payload_json: %w", err)
	}
	typ := f.MIME
	if typ == "" {
		typ = "application/octet-stream"
	}
	h = textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="files[0]"; filename="`+quoteEscaper.Replace(f.Name)+`"`)
	h.Set("Content-Type", typ)
	if part, err = w.CreatePart(h); err == nil {
		_, err = part.Write(f.Data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, "", fmt.Errorf("writing the file part: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// quoteEscaper escapes a quoted header parameter as mime/multipart's
// CreateFormFile does.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)
