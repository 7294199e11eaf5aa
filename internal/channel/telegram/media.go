package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"

	"talon/internal/channel"
)

var _ channel.Fetcher = (*Bot)(nil)

// The kinds of media (channel.Media.Kind).
const (
	kindImage    = "image"
	kindAudio    = "audio"
	kindVoice    = "voice"
	kindVideo    = "video"
	kindSticker  = "sticker"
	kindDocument = "document"
)

// mediaOf lists the files of m. Telegram puts at most one kind of media
// on a message (an album is several messages), but the loop takes what
// is there rather than assume it. An animation also comes as document,
// so it is read once, as that.
func mediaOf(m *message) []channel.Media {
	var out []channel.Media
	if p, ok := largestPhoto(m.Photo); ok {
		// Telegram re-encodes every photo as JPEG and gives it no name.
		out = append(out, channel.Media{Ref: p.FileID, MIME: "image/jpeg", Size: p.FileSize, Kind: kindImage})
	}
	for _, f := range []struct {
		f    *file
		kind string
	}{
		{m.Document, kindDocument}, {m.Audio, kindAudio}, {m.Voice, kindVoice},
		{m.Video, kindVideo}, {m.VideoNote, kindVideo}, {m.Sticker, kindSticker},
	} {
		if f.f == nil || f.f.FileID == "" {
			continue
		}
		out = append(out, channel.Media{Ref: f.f.FileID, Name: f.f.FileName, MIME: mimeOf(f.kind, f.f),
			Size: max(f.f.FileSize, 0), Kind: f.kind})
	}
	return out
}

// largestPhoto is the biggest of a photo's sizes: the one with the most
// pixels, the larger file among equals.
func largestPhoto(sizes []file) (file, bool) {
	var best file
	for _, p := range sizes {
		if p.FileID == "" {
			continue
		}
		a, b := p.Width*p.Height, best.Width*best.Height
		if best.FileID == "" || a > b || a == b && p.FileSize > best.FileSize {
			best = p
		}
	}
	best.FileSize = max(best.FileSize, 0)
	return best, best.FileID != ""
}

// mimeOf is the type Telegram gave, or the one it uses for the kinds it
// does not label: a voice note is Opus in Ogg, a video note MPEG-4, a
// sticker WebP, TGS or WebM.
func mimeOf(kind string, f *file) string {
	if f.MIMEType != "" {
		return f.MIMEType
	}
	switch {
	case kind == kindVoice:
		return "audio/ogg"
	case kind == kindSticker && f.IsAnimated:
		return "application/x-tgsticker"
	case kind == kindSticker && f.IsVideo:
		return "video/webm"
	case kind == kindSticker:
		return "image/webp"
	case kind == kindVideo:
		return "video/mp4"
	}
	return ""
}

// Fetch implements channel.Fetcher: getFile for the path, then a GET of
// <apiRoot>/file/bot<token>/<path>. Telegram's cloud API serves files up
// to 20 MB and answers getFile "file is too big" above: that too is
// ErrTooLarge.
func (b *Bot) Fetch(ctx context.Context, m channel.Media, limit int64) ([]byte, error) {
	if m.Ref == "" {
		return nil, errors.New("telegram: fetch: media without a file id")
	}
	if limit < 0 {
		return nil, fmt.Errorf("telegram: fetch: negative size limit %d", limit)
	}
	if m.Size > limit {
		return nil, fmt.Errorf("telegram: fetch: %w: Telegram announced %d bytes, the limit is %d", channel.ErrTooLarge, m.Size, limit)
	}
	var fi fileInfo
	if err := b.api.call(ctx, "getFile", map[string]any{"file_id": m.Ref}, &fi); err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == 400 && strings.Contains(strings.ToLower(ae.Description), "file is too big") {
			return nil, fmt.Errorf("telegram: fetch: %w: %w", channel.ErrTooLarge, err)
		}
		return nil, fmt.Errorf("telegram: fetch: %w", err)
	}
	if fi.FileSize > limit {
		return nil, fmt.Errorf("telegram: fetch: %w: getFile says %d bytes, the limit is %d", channel.ErrTooLarge, fi.FileSize, limit)
	}
	u, err := b.api.fileURL(fi.FilePath)
	if err != nil {
		return nil, fmt.Errorf("telegram: fetch: %w", err)
	}
	return b.api.download(ctx, u, limit)
}

// fileURL is where the file at path (getFile's file_path) is served.
// The path is Telegram's, but it is put in a URL with the token, so it
// must stay a relative path under the file root.
func (c *client) fileURL(path string) (string, error) {
	if path == "" {
		return "", errors.New("getFile gave no file_path (the file is no longer available)")
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("getFile gave file_path %q, which is not a relative path", path)
		}
		segs[i] = url.PathEscape(s)
	}
	return c.files + strings.Join(segs, "/"), nil
}

// download GETs u and reads at most limit+1 bytes of it.
func (c *client) download(ctx context.Context, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("telegram: fetch: build request: %w", c.scrub(err))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram: fetch: download: %w", c.scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("telegram: fetch: download: HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("telegram: fetch: %w: the server sends %d bytes, the limit is %d", channel.ErrTooLarge, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, min(limit, math.MaxInt64-1)+1))
	if err != nil {
		return nil, fmt.Errorf("telegram: fetch: download: %w", c.scrub(err))
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("telegram: fetch: %w: more than %d bytes", channel.ErrTooLarge, limit)
	}
	return data, nil
}
