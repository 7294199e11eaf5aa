package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"talon/internal/channel"
)

var _ channel.Fetcher = (*App)(nil)

// filesHost is where Slack serves url_private: the bot token is sent
// there and to the configured apiUrl's host, nowhere else.
const filesHost = "files.slack.com"

// maxFiles bounds the files taken from one message; Slack allows ten.
const maxFiles = 20

// file is a Slack file object as a message event or a history read
// carries it. Every field is untrusted.
type file struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	MIME        string `json:"mimetype"`
	Size        int64  `json:"size"`
	Mode        string `json:"mode"`
	Subtype     string `json:"subtype"`
	URLPrivate  string `json:"url_private"`
	URLDownload string `json:"url_private_download"`
}

// mediaOf maps the files of a message that can be downloaded; a file
// Slack withholds (hidden_by_limit, tombstone) or without a URL is left
// out. Whether the URL may be fetched with the token is Fetch's check.
func mediaOf(files []file) []channel.Media {
	var out []channel.Media
	for _, f := range files {
		if len(out) == maxFiles {
			break
		}
		ref := cmpOr(f.URLDownload, f.URLPrivate)
		if f.Mode == "hidden_by_limit" || f.Mode == "tombstone" || !plausibleURL(ref) {
			continue
		}
		out = append(out, channel.Media{
			Ref:  ref,
			Name: cleanText(cmpOr(f.Name, f.Title), 255),
			MIME: cleanText(f.MIME, 255),
			Size: max(f.Size, 0),
			Kind: fileKind(f),
		})
	}
	return out
}

// plausibleURL reports whether ref is an absolute http(s) URL of a sane
// length: anything else cannot be a file Slack serves.
func plausibleURL(ref string) bool {
	if ref == "" || len(ref) > 2048 {
		return false
	}
	u, err := url.Parse(ref)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil
}

// fileKind is the channel.Media kind of f: Slack's audio clips are voice
// messages; otherwise the MIME type's family decides.
func fileKind(f file) string {
	if f.Subtype == "slack_audio" {
		return "voice"
	}
	family, _, _ := strings.Cut(strings.ToLower(f.MIME), "/")
	switch family {
	case "image", "audio", "video":
		return family
	}
	return "document"
}

// cleanText bounds untrusted text to n bytes of valid UTF-8.
func cleanText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// fileURL parses ref and checks that the bot token may be sent to it: an
// https URL on Slack's files host, or on the configured apiUrl's own
// scheme and host (a proxy, or the fake in tests).
func (a *App) fileURL(ref string) (*url.URL, error) {
	u, err := url.Parse(ref)
	if err != nil || !plausibleURL(ref) {
		return nil, errors.New("the file reference is not a URL")
	}
	if u.Scheme == "https" && strings.EqualFold(u.Hostname(), filesHost) && (u.Port() == "" || u.Port() == "443") {
		return u, nil
	}
	api, _ := url.Parse(a.apiURL)
	if u.Scheme == api.Scheme && strings.EqualFold(u.Host, api.Host) {
		return u, nil
	}
	return nil, fmt.Errorf("the file is on %q, not on %s or the apiUrl's host: the bot token is not sent there", clip(u.Host, 100), filesHost)
}

// Fetch downloads an inbound file with the bot token (scope files:read).
// The token goes only to Slack's files host (see fileURL); Go's client
// drops the Authorization header on a redirect to any other host.
func (a *App) Fetch(ctx context.Context, m channel.Media, max int64) ([]byte, error) {
	if max <= 0 {
		return nil, errors.New("slack fetch: the size limit must be positive")
	}
	u, err := a.fileURL(m.Ref)
	if err != nil {
		return nil, fmt.Errorf("slack fetch: %w", err)
	}
	if m.Size > max {
		return nil, fmt.Errorf("slack fetch: Slack announced %d bytes, over the limit of %d: %w", m.Size, max, channel.ErrTooLarge)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("slack fetch: building the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.botToken)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack fetch: %w", err)
	}
	defer resp.Body.Close()
	if err := checkDownload(resp, m, max); err != nil {
		return nil, fmt.Errorf("slack fetch: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("slack fetch: reading the file: %w", err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("slack fetch: the file is over the limit of %d bytes: %w", max, channel.ErrTooLarge)
	}
	return data, nil
}

// checkDownload refuses an answer that is not the file: an error status,
// Slack's HTML sign-in page (what a token without files:read gets, with
// 200), or a Content-Length over max.
func checkDownload(resp *http.Response, m channel.Media, max int64) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/html" && !strings.HasPrefix(strings.ToLower(m.MIME), "text/html") {
		return errors.New("the answer is a web page, not the file: the bot token lacks the files:read scope or cannot see the file")
	}
	if resp.ContentLength > max {
		return fmt.Errorf("the file is %d bytes, over the limit of %d: %w", resp.ContentLength, max, channel.ErrTooLarge)
	}
	return nil
}
