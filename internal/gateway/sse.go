package gateway

import (
	"encoding/json"
	"net/http"
)

// sse writes server-sent events: `data: <json>` lines, flushed one by one.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// send writes one event; after a write error (the client left) it does
// nothing, and err says why.
func (s *sse) send(v any) {
	if s.err != nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.write(append(append([]byte("data: "), data...), '\n', '\n'))
}

func (s *sse) done() { s.write([]byte("data: [DONE]\n\n")) }

func (s *sse) write(b []byte) {
	if s.err != nil {
		return
	}
	if _, s.err = s.w.Write(b); s.err == nil {
		s.err = s.rc.Flush()
	}
}
