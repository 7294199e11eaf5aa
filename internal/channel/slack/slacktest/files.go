package slacktest

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
)

// File is a file a person shares with a message.
type File struct {
	Name string
	MIME string // default application/octet-stream
	Data []byte
	// Size is what the event announces: 0 means len(Data), -1 none.
	Size int64
	// Chunked serves the bytes without a Content-Length, so only
	// counting while reading finds their length.
	Chunked bool
	// Subtype is Slack's file subtype, "slack_audio" for an audio clip.
	Subtype string
	// Mode is Slack's file mode; "hidden_by_limit" withholds the URL.
	Mode string
	// RedirectTo answers the download with a 302 to this URL, as a
	// CDN in front of the files host would.
	RedirectTo string
}

// hosted is a file the fake serves at its url_private.
type hosted struct {
	File
	id        string
	downloads int
}

// share hosts f and returns its Slack file object; s.mu is held.
func (s *Server) share(f File) map[string]any {
	s.seq++
	id := fmt.Sprintf("F%07dTEST", s.seq)
	h := &hosted{File: f, id: id}
	h.MIME = cmp.Or(h.MIME, "application/octet-stream")
	s.files[id] = h
	obj := map[string]any{
		"id": id, "name": f.Name, "title": f.Name, "mimetype": h.MIME, "filetype": "binary",
		"mode": cmp.Or(f.Mode, "hosted"), "is_external": false, "user": "U0ALICE",
	}
	switch {
	case f.Size == 0:
		obj["size"] = len(f.Data)
	case f.Size > 0:
		obj["size"] = f.Size
	}
	if f.Subtype != "" {
		obj["subtype"] = f.Subtype
	}
	if f.Mode != "hidden_by_limit" {
		base := s.srv.URL + "/files-pri/" + TeamID + "-" + id + "/"
		obj["url_private"] = base + f.Name
		obj["url_private_download"] = base + "download/" + f.Name
		obj["permalink"] = "https://talon-test.slack.com/files/U0ALICE/" + id + "/" + f.Name
	}
	return obj
}

// Downloads is how many times the file named name was downloaded.
func (s *Server) Downloads(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.files {
		if h.Name == name {
			n += h.downloads
		}
	}
	return n
}

// download serves url_private and url_private_download. Without the bot
// token Slack answers its sign-in page with 200, not an error status.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	ok := tok == BotToken && !s.revoked[tok]
	team, id, _ := strings.Cut(r.PathValue("file"), "-")
	h := s.files[id]
	if ok && h != nil && team == TeamID {
		h.downloads++
		s.notify()
	}
	s.mu.Unlock()
	switch {
	case !ok:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Talon Test</body></html>")
		return
	case h == nil || team != TeamID || (r.PathValue("name") != h.Name):
		http.NotFound(w, r)
		return
	}
	if h.RedirectTo != "" {
		http.Redirect(w, r, h.RedirectTo, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", h.MIME)
	if h.Chunked {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
	}
	w.Write(h.Data)
}
