// Package sse writes server-sent events (the WHATWG EventSource format)
// on an HTTP response: the OpenAI-compatible stream of the gateway (bare
// "data:" lines ending with "data: [DONE]"), and the named events of the
// platform's and Studio's chat. It is a leaf: any layer may use it.
//
// A Stream is not safe for concurrent use: one handler goroutine writes it.
package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// Start writes the status line and headers of an event stream and returns
// the stream.
//
// Cache-Control is no-store rather than the no-cache of the spec's
// examples: a stream is one caller's private reply, which no browser or
// proxy cache should keep, and no-cache would let it store the body as
// long as it revalidates before reuse. X-Accel-Buffering: no keeps nginx
// (and proxies that honour it) from holding events back until a buffer
// fills. No Connection header: keep-alive is HTTP/1.1's default and the
// header is forbidden in HTTP/2.
func Start(w http.ResponseWriter) *Stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &Stream{w: w, rc: http.NewResponseController(w)}
}

// Stream is one response's events.
type Stream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

// Send writes one event and flushes it: an "event: name" line unless name
// is empty, then data as "data: " lines, then a blank line. Data holding
// line ends (CR, LF or CRLF) goes as one data line per line, which the
// client joins back with LF. The first error (a bad name, the client gone)
// ends the stream: Send does nothing after it and returns it again.
func (s *Stream) Send(name string, data []byte) error {
	if s.err != nil {
		return s.err
	}
	if strings.ContainsAny(name, "\r\n") {
		s.err = errors.New("sse: an event name cannot hold a line end")
		return s.err
	}
	s.write(frame(name, data))
	return s.err
}

// JSON writes v, marshalled, as the data of an event named name ("" for
// none). A value that does not marshal ends the stream as a write error
// does: nothing of it was written.
func (s *Stream) JSON(name string, v any) error {
	if s.err != nil {
		return s.err
	}
	data, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return err
	}
	return s.Send(name, data)
}

// Err is what ended the stream; nil while it goes on.
func (s *Stream) Err() error { return s.err }

func (s *Stream) write(b []byte) {
	if _, s.err = s.w.Write(b); s.err == nil {
		s.err = s.rc.Flush()
	}
}

// frame is one event on the wire.
func frame(name string, data []byte) []byte {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	for {
		line, rest, found := cutLine(data)
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
		if !found {
			break
		}
		data = rest
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// cutLine splits data at its first line end, CRLF, CR or LF: the three an
// EventSource parser ends a line at.
func cutLine(data []byte) (line, rest []byte, found bool) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		return data, nil, false
	}
	if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
		return data[:i], data[i+2:], true
	}
	return data[:i], data[i+1:], true
}
