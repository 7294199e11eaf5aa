package mcp

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Bounds on what one server process may put in our log: a chatty or
// hostile server must not fill the disk or drown other messages.
const (
	maxStderrLine  = 1024 // bytes per logged line; longer ones are cut
	maxStderrLines = 1000 // lines logged per process; the rest are counted
	stderrTail     = 5    // last lines kept for error messages
)

// stderrLog is a stdio server's stderr: each line goes to the log with the
// server's name, up to maxStderrLines, and the last few lines are kept so a
// crash or failed start can quote them.
type stderrLog struct {
	log     *slog.Logger
	server  string
	mu      sync.Mutex
	partial []byte
	logged  int
	dropped int
	tail    []string
}

func newStderrLog(log *slog.Logger, server string) *stderrLog {
	return &stderrLog{log: log, server: server}
}

func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(s.partial); len(chunk) > room {
			// A line longer than the bound is logged in pieces.
			s.partial = append(s.partial, chunk[:room]...)
			p = p[room:]
			s.line()
			continue
		}
		s.partial = append(s.partial, chunk...)
		if i < 0 {
			break
		}
		p = p[i+1:]
		s.line()
	}
	return n, nil
}

// line logs the buffered line; s.mu is held.
func (s *stderrLog) line() {
	text := strings.TrimRight(string(s.partial), "\r")
	s.partial = s.partial[:0]
	if strings.TrimSpace(text) == "" {
		return
	}
	s.tail = append(s.tail, text)
	if len(s.tail) > stderrTail {
		s.tail = s.tail[1:]
	}
	if s.logged >= maxStderrLines {
		s.dropped++
		return
	}
	s.logged++
	s.log.Info("mcp server stderr", "server", s.server, "line", text)
}

// flush logs a last unterminated line and how many lines were dropped;
// called once the process has exited.
func (s *stderrLog) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) > 0 {
		s.line()
	}
	if s.dropped > 0 {
		s.log.Warn("mcp server stderr: lines not logged", "server", s.server, "dropped", s.dropped, "limit", maxStderrLines)
	}
}

// tailText is the last lines of stderr, for error messages.
func (s *stderrLog) tailText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, " | ")
}
