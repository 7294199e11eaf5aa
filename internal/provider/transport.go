package provider

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"talon/internal/netguard"
)

// Defaults shared by the HTTP clients.
const (
	DefaultMaxRetries  = 2
	DefaultTimeout     = 10 * time.Minute
	DefaultIdleTimeout = 120 * time.Second

	backoffBase   = 500 * time.Millisecond
	backoffCap    = 8 * time.Second
	retryAfterCap = 30 * time.Second

	maxBody    = 32 << 20 // a non-streamed response body
	maxSSELine = 4 << 20  // one SSE line, and one event's data
)

// sharedHTTPClient is the http.Client every client uses unless given one:
// one connection pool for all providers, so that constructing a client per
// run costs nothing. It has no overall timeout; calls are bounded by their
// context, Timeout and IdleTimeout.
var sharedHTTPClient = sync.OnceValue(func() *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A request body longer than the write buffer (4 KB by default)
		// goes out in two writes, its rest through a new buffer of up to
		// 32 KB per request (net/http reads it through an io.LimitReader).
		// A buffer that holds a typical request (10–30 KB: the system
		// prompt and the tool schemas) sends it in one write without that
		// copy. HTTP/2 connections do not use it.
		WriteBufferSize: 32 << 10,
	}}
})

// guardedClients are the clients of guardedClient, one per set of
// exceptions (in practice one: the operator's), so that tenants share a
// connection pool as unguarded providers do.
var guardedClients sync.Map // string -> *http.Client

// guardedClient is sharedHTTPClient with every connection made through
// netguard with opts and no proxy (a proxy would dial for us, unchecked).
func guardedClient(opts netguard.Options) *http.Client {
	key := fmt.Sprint(opts.Allow, opts.AllowLoopback)
	if c, ok := guardedClients.Load(key); ok {
		return c.(*http.Client)
	}
	tr := sharedHTTPClient().Transport.(*http.Transport).Clone()
	tr.Proxy, tr.DialContext = nil, netguard.NewDialer(opts).DialContext
	c, _ := guardedClients.LoadOrStore(key, &http.Client{Transport: tr, CheckRedirect: netguard.NewDialer(opts).CheckRedirect})
	return c.(*http.Client)
}

var (
	errAttemptTimeout = errors.New("request timed out")
	errIdle           = errors.New("stream idle")
	errTruncated      = errors.New("connection closed in the middle of a line")
	errLineTooLong    = fmt.Errorf("SSE line longer than %d bytes", maxSSELine)
)

// transport is what the HTTP clients share: headers, timeouts, retries.
type transport struct {
	name        string
	client      *http.Client
	header      http.Header // sent with every request
	timeout     time.Duration
	idleTimeout time.Duration
	maxRetries  int

	// Backoff tuning; tests shorten these.
	base, cap time.Duration
	sleep     func(ctx context.Context, d time.Duration) error
}

func newTransport(name string, client *http.Client, timeout, idle time.Duration, retries int) transport {
	if client == nil {
		client = sharedHTTPClient()
	}
	switch {
	case timeout == 0:
		timeout = DefaultTimeout
	case timeout < 0:
		timeout = 0
	}
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0
	}
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	return transport{
		name: name, client: client, header: http.Header{},
		timeout: timeout, idleTimeout: idle, maxRetries: retries,
		base: backoffBase, cap: backoffCap, sleep: sleepCtx,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is the wait before retry number attempt+1: the server's
// Retry-After (capped), else exponential backoff with equal jitter.
func (t *transport) backoff(attempt int, err error) time.Duration {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return min(e.RetryAfter, retryAfterCap)
	}
	d := t.cap
	if attempt < 30 && t.base<<attempt < t.cap {
		d = t.base << attempt
	}
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(half+1)
}

// parser turns a successful response into a Response. For a stream, events
// yields SSE events (io.EOF at the end; other errors are already mapped to
// the provider's errors) and emit passes text fragments to the caller.
type parser struct {
	body   func(data []byte) (*Response, error)
	stream func(events func() (sseEvent, error), emit func(string)) (*Response, error)
}

// do POSTs the JSON body to url, retrying temporary failures while nothing
// has been passed to onDelta and ctx is live.
func (t *transport) do(ctx context.Context, url string, body []byte, stream bool, onDelta func(string), p parser) (*Response, error) {
	streamed := false
	emit := func(s string) {
		if s == "" {
			return
		}
		streamed = true
		if onDelta != nil {
			onDelta(s)
		}
	}
	for attempt := 0; ; attempt++ {
		resp, err := t.attempt(ctx, url, body, stream, emit, p)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, networkError(ctx, t.name, err, false)
		}
		if streamed || attempt >= t.maxRetries || !isTemporary(err) {
			return nil, err
		}
		if serr := t.sleep(ctx, t.backoff(attempt, err)); serr != nil {
			return nil, networkError(ctx, t.name, serr, false)
		}
	}
}

func (t *transport) attempt(ctx context.Context, url string, body []byte, stream bool, emit func(string), p parser) (*Response, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var deadline *time.Timer
	if t.timeout > 0 {
		deadline = time.AfterFunc(t.timeout, func() { cancel(errAttemptTimeout) })
		defer deadline.Stop()
	}

	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: building request: %w", t.name, err)
	}
	for k, vs := range t.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}

	// mapErr turns a transport error into the provider's error, naming the
	// timeout that fired, if ours.
	mapErr := func(err error, early bool, what string) error {
		if ctx.Err() != nil {
			return networkError(ctx, t.name, err, false)
		}
		switch context.Cause(actx) {
		case errAttemptTimeout:
			return &Error{Provider: t.name, Message: fmt.Sprintf("%s after %s", errAttemptTimeout, t.timeout), Err: err, early: early}
		case errIdle:
			return &Error{Provider: t.name, Message: fmt.Sprintf("stream idle for longer than %s", t.idleTimeout), Err: err}
		}
		if what != "" {
			return &Error{Provider: t.name, Message: what + ": " + err.Error(), Err: err, early: early}
		}
		return &Error{Provider: t.name, Err: err, early: early}
	}

	resp, err := t.client.Do(req)
	if err != nil {
		return nil, mapErr(err, true, "")
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(t.name, resp)
	}

	ctype, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !stream || ctype == "application/json" {
		// A server may answer a stream request with a plain JSON body; take
		// it and pass its text on as one fragment.
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		if err != nil {
			return nil, mapErr(err, false, "reading response body")
		}
		if len(data) > maxBody {
			return nil, &Error{Provider: t.name, Message: fmt.Sprintf("response body larger than %d MiB", maxBody>>20)}
		}
		r, err := p.body(data)
		if err != nil {
			return nil, t.asError(err)
		}
		if stream {
			emit(r.Content)
		}
		return r, nil
	}

	// Streaming: the idle watchdog replaces the overall deadline.
	if deadline != nil {
		deadline.Stop()
	}
	touch := func() {}
	if t.idleTimeout > 0 {
		idle := time.AfterFunc(t.idleTimeout, func() { cancel(errIdle) })
		defer idle.Stop()
		touch = func() { idle.Reset(t.idleTimeout) }
	}
	sr := newSSEReader(resp.Body, touch)
	events := func() (sseEvent, error) {
		ev, err := sr.Next()
		switch {
		case err == nil, err == io.EOF:
			return ev, err
		case errors.Is(err, errLineTooLong):
			return ev, &Error{Provider: t.name, Message: err.Error()}
		case errors.Is(err, errTruncated):
			return ev, &Error{Provider: t.name, Message: "stream ended early: " + err.Error()}
		}
		return ev, mapErr(err, false, "stream ended early")
	}
	r, err := p.stream(events, emit)
	if err != nil {
		return nil, t.asError(err)
	}
	// Let the connection be reused: drain a little of what may follow.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	return r, nil
}

// asError makes a parser's complaint about a response (malformed JSON, no
// choices) an *Error like every other failed call, so that callers can
// tell the provider's faults from their own by that one type. It is not
// Temporary: the same request would get the same answer.
func (t *transport) asError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Provider: t.name, Message: strings.TrimPrefix(err.Error(), t.name+": "), Err: err}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Event string
	Data  []byte
}

// sseReader reads server-sent events (text/event-stream). Lines longer
// than maxSSELine are an error, as is a connection that closes mid-line.
type sseReader struct {
	r     *bufio.Reader
	line  []byte
	touch func()
}

func newSSEReader(r io.Reader, touch func()) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), touch: touch}
}

func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(chunk) > 0 {
			s.touch()
		}
		if len(s.line)+len(chunk) > maxSSELine+2 {
			return nil, errLineTooLong
		}
		s.line = append(s.line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				return nil, errTruncated
			}
			return nil, err
		}
		line := bytes.TrimSuffix(s.line[:len(s.line)-1], []byte("\r"))
		if len(line) > maxSSELine {
			return nil, errLineTooLong
		}
		return line, nil
	}
}

// Next returns the next event with data, io.EOF at the end of the stream.
// An event left without its closing blank line at a clean end of stream is
// still returned.
func (s *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var data []byte
	hasData := false
	for {
		line, err := s.readLine()
		if err == io.EOF && hasData {
			ev.Data = data
			return ev, nil
		}
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.Data = data
				return ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue // comment, e.g. a keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Event = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > maxSSELine {
				return sseEvent{}, errLineTooLong
			}
			data = append(data, value...)
			hasData = true
		}
	}
}
