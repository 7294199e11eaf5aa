package slacktest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// maxUpload is Slack's limit on one file.
const maxUpload = 1 << 30

// Uploaded is one file the bot shared with files.completeUploadExternal.
type Uploaded struct {
	FileID   string
	Name     string // the filename given to files.getUploadURLExternal
	Title    string
	MIME     string // the Content-Type of the upload
	Data     []byte
	Channel  string // channel_id
	ThreadTS string
	Comment  string // initial_comment
	TS       string // the message that shares it
}

// pendingUpload is an upload URL handed out and not completed yet.
type pendingUpload struct {
	name   string
	length int
	mime   string
	data   []byte
	done   bool // the bytes arrived
}

// Uploads is every file the bot shared, in order.
func (s *Server) Uploads() []Uploaded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.uploads)
}

func (s *Server) getUploadURL(w http.ResponseWriter, r *http.Request) {
	a, _, ok := s.begin(w, r, "files.getUploadURLExternal")
	if !ok {
		return
	}
	name, _ := a["filename"].(string)
	length, err := strconv.Atoi(fmt.Sprint(a["length"]))
	switch {
	case name == "" || err != nil || length < 1:
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_arguments"})
		return
	case length > maxUpload:
		writeJSON(w, map[string]any{"ok": false, "error": "file_size_exceeded"})
		return
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("F%07dTEST", s.seq)
	s.pendingUploads[id] = &pendingUpload{name: name, length: length}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"ok": true, "upload_url": s.srv.URL + "/upload/v1/" + id, "file_id": id})
}

// upload takes the bytes POSTed to an upload URL; Slack answers
// "OK - <length>" as text.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUpload+1))
	if err != nil {
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pendingUploads[r.PathValue("id")]
	switch {
	case p == nil:
		http.NotFound(w, r)
		return
	case len(body) != p.length:
		http.Error(w, fmt.Sprintf("length mismatch: %d bytes, %d announced", len(body), p.length), http.StatusBadRequest)
		return
	}
	p.data, p.mime, p.done = body, r.Header.Get("Content-Type"), true
	fmt.Fprintf(w, "OK - %d", len(body))
}

func (s *Server) completeUpload(w http.ResponseWriter, r *http.Request) {
	a, drop, ok := s.begin(w, r, "files.completeUploadExternal")
	if !ok {
		return
	}
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	raw, _ := a["files"].(string)
	channel, _ := a["channel_id"].(string)
	thread, _ := a["thread_ts"].(string)
	comment, _ := a["initial_comment"].(string)
	if json.Unmarshal([]byte(raw), &files) != nil || len(files) == 0 {
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_arguments"})
		return
	}
	s.mu.Lock()
	code := ""
	if _, known := s.kinds[channel]; channel != "" && !known {
		code = "channel_not_found"
	}
	for _, f := range files {
		if p := s.pendingUploads[f.ID]; p == nil || !p.done {
			code = "file_not_found"
		}
	}
	if code != "" {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": code})
		return
	}
	var out, objs []map[string]any
	ts := s.nextTS()
	for _, f := range files {
		p := s.pendingUploads[f.ID]
		delete(s.pendingUploads, f.ID)
		s.uploads = append(s.uploads, Uploaded{FileID: f.ID, Name: p.name, Title: cmp.Or(f.Title, p.name), MIME: p.mime,
			Data: p.data, Channel: channel, ThreadTS: thread, Comment: comment, TS: ts})
		out = append(out, map[string]any{"id": f.ID, "title": cmp.Or(f.Title, p.name)})
		objs = append(objs, map[string]any{"id": f.ID, "name": p.name, "title": cmp.Or(f.Title, p.name),
			"mimetype": p.mime, "size": len(p.data), "mode": "hosted"})
	}
	s.record(channel, &stored{ts: ts, user: BotUserID, botID: BotID, text: comment, threadTS: thread, files: objs})
	s.authors[ts] = BotUserID
	s.messages[channel+"/"+ts] = BotUserID
	s.notify()
	s.mu.Unlock()
	answer(w, drop, map[string]any{"files": out})
}
