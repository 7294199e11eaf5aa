package discordtest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// File is an attachment: one a user sends (Say.Files) or one the bot
// posted (Sent.Files).
type File struct {
	Name string
	MIME string // "" leaves content_type out, as Discord does when it cannot tell
	Data []byte
	// Announce, when not 0, is the size the attachment object claims
	// instead of len(Data); the CDN then streams the bytes without a
	// Content-Length, as a host that lies about a file would.
	Announce int64
}

// attachment is Discord's attachment object.
type attachment struct {
	ID           string  `json:"id"`
	Filename     string  `json:"filename"`
	Size         int64   `json:"size"`
	URL          string  `json:"url"`
	ProxyURL     string  `json:"proxy_url"`
	ContentType  string  `json:"content_type,omitempty"`
	DurationSecs float64 `json:"duration_secs,omitempty"`
	Waveform     string  `json:"waveform,omitempty"`
}

// Download is one GET of an attachment from the fake's CDN.
type Download struct {
	Path string
	// Authorization is the header the client sent; a bot must send none
	// (Discord's CDN URLs are signed).
	Authorization string
}

// cdnFile is a file the CDN serves, with the signature its URL carries.
type cdnFile struct {
	File
	hm string
}

// Downloads is every attachment GET so far.
func (s *Server) Downloads() []Download {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Download(nil), s.downloads...)
}

// attach stores f as an attachment of a message in chID, served at
// Discord's CDN path /attachments/{channel}/{attachment}/{name} with the
// ex/is/hm signature parameters. Call with s.mu held.
func (s *Server) attach(chID string, f File) attachment {
	id := s.id()
	name := f.Name
	if name == "" {
		name = "unknown"
	}
	path := "/attachments/" + chID + "/" + id + "/" + url.PathEscape(name)
	sig := make([]byte, 16)
	rand.Read(sig)
	hm := hex.EncodeToString(sig)
	s.files[path] = cdnFile{File: f, hm: hm}
	size := int64(len(f.Data))
	if f.Announce != 0 {
		size = f.Announce
	}
	u := s.hs.URL + path + "?ex=67c0ffee&is=67bfffee&hm=" + hm + "&"
	return attachment{ID: id, Filename: name, Size: size, URL: u, ProxyURL: u, ContentType: f.MIME}
}

// cdn serves an attachment; a URL whose signature does not match is a
// 404, as Discord's CDN answers an expired or forged link.
func (s *Server) cdn(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.URL.EscapedPath()]
	s.downloads = append(s.downloads, Download{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")})
	s.change()
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("hm") != f.hm {
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	if f.MIME != "" {
		w.Header().Set("Content-Type", f.MIME)
	}
	if f.Announce == 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
	} else if fl, ok := w.(http.Flusher); ok {
		fl.Flush() // headers out now: no Content-Length
	}
	w.Write(f.Data)
}

// voiceWaveform is a voice message's waveform (base64 of amplitudes).
var voiceWaveform = strings.Repeat("AAAA", 8)
