package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"talon/internal/config"
	"talon/internal/tools"
)

const (
	defaultStartupTimeout = 30 * time.Second
	defaultToolTimeout    = 60 * time.Second
	// After the first failure a server may start again at once (a crash
	// is often a one-off); each further consecutive failure doubles the
	// wait from firstBackoff, up to maxBackoff.
	firstBackoff = 2 * time.Second
	maxBackoff   = 2 * time.Minute
	// maxListed bounds how many tools are read from one server's
	// (paginated) list, so a server paging forever cannot hold a start.
	maxListed = 4 * maxTools
)

// server is one configured MCP server and its current session, if any.
type server struct {
	name string
	cfg  config.MCPServer
	m    *Manager

	life   context.Context // ends when the server is removed; aborts a start
	remove context.CancelFunc

	startMu sync.Mutex // serialises starts; held for a whole start

	mu       sync.Mutex
	removed  bool
	cur      *session
	failures int // consecutive failed starts, crashes and broken connections
	lastErr  string
	failedAt time.Time
	retryAt  time.Time
}

// session is one connection to a server, and its process for stdio.
type session struct {
	cs       *sdk.ClientSession
	proc     *proc           // nil for HTTP
	httpTr   *http.Transport // nil for stdio
	ctx      context.Context // ends with the session; calls are bound to it
	cancel   context.CancelFunc
	kill     chan struct{} // closed (by end) to make the watcher end the session
	killOnce sync.Once
	done     chan struct{} // closed once the session and its process are gone
	stale    atomic.Bool   // the server said its tool list changed
	listMu   sync.Mutex    // one tools/list at a time

	// Guarded by server.mu.
	over     bool // the session's end has been accounted for
	stopping bool // ended on purpose, so not a failure
	tools    []tools.Tool
}

func (r *session) end() { r.killOnce.Do(func() { close(r.kill) }) }

func newServer(m *Manager, name string, cfg config.MCPServer) *server {
	s := &server{name: name, cfg: cfg, m: m}
	s.life, s.remove = context.WithCancel(context.Background())
	return s
}

func (s *server) transport() string {
	if strings.TrimSpace(s.cfg.URL) != "" {
		return "http"
	}
	return "stdio"
}

func millis(v *int, def time.Duration) time.Duration {
	if v == nil || *v <= 0 {
		return def
	}
	return time.Duration(*v) * time.Millisecond
}

func (s *server) startupTimeout() time.Duration {
	return millis(s.cfg.StartupTimeoutMs, defaultStartupTimeout)
}

func (s *server) toolTimeout() time.Duration { return millis(s.cfg.ToolTimeoutMs, defaultToolTimeout) }

func backoff(failures int) time.Duration {
	if failures <= 1 {
		return 0
	}
	d := firstBackoff
	for i := 2; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// failed records a failure; s.mu is held.
func (s *server) failed(msg string) {
	s.failures++
	s.lastErr = msg
	s.failedAt = time.Now()
	s.retryAt = s.failedAt.Add(backoff(s.failures))
	s.m.log.Warn("mcp: server failed", "server", s.name, "error", msg, "failures", s.failures, "retryAt", s.retryAt)
}

func (s *server) succeeded() {
	s.mu.Lock()
	s.failures, s.retryAt = 0, time.Time{}
	s.mu.Unlock()
}

func errRemoved(name string) error {
	return fmt.Errorf("MCP server %q is no longer configured (removed, disabled, reconfigured or shut down)", name)
}

// ensure returns the live session, starting one when there is none and
// the backoff allows it.
func (s *server) ensure(ctx context.Context) (*session, error) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	switch {
	case s.removed:
		s.mu.Unlock()
		return nil, errRemoved(s.name)
	case s.cur != nil:
		rec := s.cur
		s.mu.Unlock()
		return rec, nil
	case time.Now().Before(s.retryAt):
		err := fmt.Errorf("MCP server %q %s (at %s); it will be retried after %s (%d failures in a row)",
			s.name, s.lastErr, s.failedAt.Format(time.TimeOnly), s.retryAt.Format(time.TimeOnly), s.failures)
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()

	rec, err := s.start(ctx)
	s.mu.Lock()
	if err != nil {
		defer s.mu.Unlock()
		if s.removed {
			return nil, errRemoved(s.name)
		}
		if ctx.Err() != nil { // the caller gave up; the server did nothing wrong
			return nil, fmt.Errorf("starting MCP server %q: %w", s.name, ctx.Err())
		}
		s.failed("failed to start: " + err.Error())
		return nil, fmt.Errorf("starting MCP server %q: %w", s.name, err)
	}
	if s.removed || rec.over {
		removed, msg := s.removed, s.lastErr
		rec.stopping = !rec.over
		s.mu.Unlock()
		rec.end()
		<-rec.done
		if removed {
			return nil, errRemoved(s.name)
		}
		return nil, fmt.Errorf("MCP server %q %s right after starting", s.name, msg)
	}
	s.cur = rec
	s.mu.Unlock()
	return rec, nil
}

// start connects to the server and lists its tools, within the startup
// timeout.
func (s *server) start(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	defer context.AfterFunc(s.life, cancel)()
	rec := &session{kill: make(chan struct{}), done: make(chan struct{})}
	rec.ctx, rec.cancel = context.WithCancel(context.Background())
	var tr sdk.Transport
	if s.transport() == "http" {
		t, base, err := httpTransport(s.cfg, s.m.guard)
		if err != nil {
			return nil, err
		}
		tr, rec.httpTr = t, base
	} else {
		p, err := startProc(s.name, s.cfg, s.m.log)
		if err != nil {
			return nil, err
		}
		rec.proc = p
		tr = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "talon", Title: "Talon gateway"}, &sdk.ClientOptions{
		// No roots: Talon offers MCP servers no host directories.
		Capabilities:           &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { rec.stale.Store(true) },
	})
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		rec.cancel()
		rec.release()
		return nil, s.startErr("connecting", ctx, err, rec)
	}
	rec.cs = cs
	s.m.wg.Add(1)
	go s.watch(rec)
	list, err := s.list(ctx, rec)
	if err != nil {
		s.mu.Lock()
		rec.stopping = true
		s.mu.Unlock()
		rec.end()
		<-rec.done
		return nil, s.startErr("listing tools", ctx, err, rec)
	}
	s.mu.Lock()
	rec.tools = list
	s.mu.Unlock()
	return rec, nil
}

// startErr names the step, says when the startup timeout was the cause,
// and quotes a stdio server's last stderr lines.
func (s *server) startErr(step string, ctx context.Context, err error, rec *session) error {
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	if timedOut {
		err = fmt.Errorf("no answer within the startup timeout of %s (%w)", s.startupTimeout(), err)
	}
	err = fmt.Errorf("%s: %w", step, err)
	switch {
	case rec.proc == nil:
	case timedOut: // we stopped it; how it ended says nothing
		if tail := rec.proc.stderr.tailText(); tail != "" {
			err = fmt.Errorf("%w; stderr: %s", err, tail)
		}
	default: // released (reaped) already: how it ended is known
		err = fmt.Errorf("%w; process: %s", err, rec.proc.exitText())
	}
	return err
}

// release ends what a session holds outside the SDK: the process (reaped)
// and idle HTTP connections.
func (r *session) release() {
	if r.proc != nil {
		r.proc.stop()
		r.proc.stdout.Close()
	}
	if r.httpTr != nil {
		r.httpTr.CloseIdleConnections()
	}
}

// watch waits for the session to end — the server closed it, its process
// exited, or end was called — then tears it down and accounts for it.
func (s *server) watch(rec *session) {
	defer s.m.wg.Done()
	defer close(rec.done)
	waitErr := make(chan error, 1)
	go func() { waitErr <- rec.cs.Wait() }()
	var exited <-chan struct{}
	if rec.proc != nil {
		exited = rec.proc.exited
	}
	var err error
	select {
	case err = <-waitErr:
		rec.cancel()
		_ = rec.cs.Close()
	case <-exited:
		err = closeSession(rec, waitErr)
	case <-rec.kill:
		err = closeSession(rec, waitErr)
	}
	rec.release()
	s.ended(rec, err)
}

// closeSession closes a session that is still open and returns its end.
// In-flight calls are cancelled first, so Close does not wait for them.
func closeSession(rec *session, waitErr <-chan error) error {
	rec.cancel()
	_ = rec.cs.Close()
	return <-waitErr
}

// ended accounts for a session's end, unless that was done already (a
// broken connection) or the end was on purpose.
func (s *server) ended(rec *session, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec.over {
		return
	}
	rec.over = true
	if s.cur == rec {
		s.cur = nil
	}
	if rec.stopping {
		return
	}
	reason := "crashed: the connection ended"
	if rec.proc != nil {
		reason = "crashed: process exited (" + rec.proc.exitText() + ")"
	} else if err != nil {
		reason += " (" + err.Error() + ")"
	}
	s.failed(reason)
}

// broken marks a session whose connection failed during a request: it is
// ended, and the next use starts a new one.
func (s *server) broken(rec *session, err error) {
	s.mu.Lock()
	if !rec.over {
		rec.over = true
		if s.cur == rec {
			s.cur = nil
		}
		s.failed("connection failed: " + err.Error())
	}
	s.mu.Unlock()
	rec.end()
}

// shutdown stops the server for good: a start in progress is aborted and
// the session, if any, ended; it returns once the process is gone.
func (s *server) shutdown() {
	s.mu.Lock()
	s.removed = true
	s.mu.Unlock()
	s.remove()
	s.startMu.Lock() // wait out a start in progress; it sees removed
	s.startMu.Unlock()
	s.mu.Lock()
	rec := s.cur
	s.cur = nil
	if rec != nil {
		rec.stopping = true
	}
	s.mu.Unlock()
	if rec != nil {
		rec.end()
		<-rec.done
	}
}
