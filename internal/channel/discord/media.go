package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"talon/internal/channel"
)

var _ channel.Fetcher = (*Bot)(nil)

// maxAttachments is Discord's most files on one message; a payload with
// more is cut, so a hostile gateway cannot grow an envelope.
const maxAttachments = 10

// maxMediaText bounds a file name or MIME type taken from the wire (a
// Discord file name is at most a few hundred bytes).
const maxMediaText = 512

// mediaOf maps a message's attachments to the envelope's media (spec
// R8.9). An attachment without a usable URL is left out: it could never
// be fetched.
func mediaOf(m *message) []channel.Media {
	var out []channel.Media
	for _, a := range m.Attachments {
		if len(out) == maxAttachments {
			break
		}
		if checkURL(a.URL, "http", "https") != nil {
			continue
		}
		mime := clip(a.ContentType)
		out = append(out, channel.Media{
			Ref:  a.URL,
			Name: clip(a.Filename),
			MIME: mime,
			Size: max(a.Size, 0),
			Kind: kindOf(mime, m.Flags&flagVoiceMessage != 0),
		})
	}
	return out
}

func clip(s string) string {
	if len(s) > maxMediaText {
		return s[:maxMediaText]
	}
	return s
}

// kindOf is a Media.Kind from the MIME type Discord guessed; a voice
// message is an audio file flagged as one.
func kindOf(mime string, voice bool) string {
	major, _, _ := strings.Cut(strings.ToLower(mime), "/")
	switch {
	case major == "audio" && voice:
		return "voice"
	case major == "image", major == "audio", major == "video":
		return major
	}
	return "document"
}

// Fetch downloads an attachment (channel.Fetcher). Discord's CDN URLs
// are signed, so no token is sent: the bot token never leaves for a file
// host. A file announced or counted over limit is refused with
// channel.ErrTooLarge, having read at most limit+1 bytes.
func (b *Bot) Fetch(ctx context.Context, m channel.Media, limit int64) ([]byte, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("discord fetch %q: the size limit %d is not positive", m.Name, limit)
	}
	if m.Size > limit {
		return nil, fmt.Errorf("discord fetch %q: announced %d bytes, over %d: %w", m.Name, m.Size, limit, channel.ErrTooLarge)
	}
	if err := b.mediaURL(m.Ref); err != nil {
		return nil, fmt.Errorf("discord fetch %q: %w", m.Name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Ref, nil)
	if err != nil {
		return nil, fmt.Errorf("discord fetch %q: building the request: %w", m.Name, err)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord fetch %q: %w", m.Name, stripURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("discord fetch %q: the file host answered %d", m.Name, resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("discord fetch %q: the file host sends %d bytes, over %d: %w", m.Name, resp.ContentLength, limit, channel.ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("discord fetch %q: reading: %w", m.Name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("discord fetch %q: more than %d bytes: %w", m.Name, limit, channel.ErrTooLarge)
	}
	return data, nil
}

// mediaURL checks a Ref before it is fetched: an https URL (Discord's
// CDN), or a URL on the configured apiUrl's own scheme and host (a
// loopback fake, a proxy the operator set). A Ref comes from the
// adapter's own envelope, but it went through storage: it is checked
// again rather than trusted.
func (b *Bot) mediaURL(ref string) error {
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" || u.User != nil {
		return errors.New("the file reference is not a plain http(s) URL")
	}
	if u.Scheme == "https" {
		return nil
	}
	api, err := url.Parse(b.apiURL)
	if err == nil && u.Scheme == api.Scheme && u.Host == api.Host {
		return nil
	}
	return fmt.Errorf("the file reference is %s on %s, not https", u.Scheme, u.Host)
}

// stripURL keeps a transport error without the signed URL it names.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
