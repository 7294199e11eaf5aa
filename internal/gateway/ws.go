package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"talon/internal/authlimit"
	"talon/internal/config"
	"talon/protocol"
)

// WebSocket limits. The pre-auth cap and the policy values are upstream's
// [9.6] figures, so clients tuned for OpenClaw behave the same here.
const (
	preAuthMaxBytes        = 64 << 10
	defaultMaxPayload      = 25 << 20
	defaultMaxBuffered     = 50 << 20
	defaultHandshakeWait   = 15 * time.Second
	defaultTickInterval    = 30 * time.Second
	writeTimeout           = 10 * time.Second
	closeDrainTime         = time.Second
	sendQueueFrames        = 512
	slowConsumerCloseText  = "slow consumer"
	shutdownCloseText      = "gateway stopping"
	handshakeTimeoutReason = "handshake timeout"
)

// isWebSocket reports whether r asks to upgrade; the upgrade is served on
// any path, as upstream does.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// conn is one authenticated (or authenticating) WebSocket client. Reads
// happen on the serve goroutine; every write goes through the send queue
// and its one writer goroutine, so a slow reader never blocks a
// broadcaster: when its queue is full it is dropped (closed 1008).
type conn struct {
	s      *Server
	t      *tenant
	ws     *websocket.Conn
	id     string
	ctx    context.Context
	cancel context.CancelFunc

	// Set once by the handshake, read-only afterwards.
	release   func() // unpins t, which the connection keeps warm
	role      string
	scopes    map[string]bool
	client    protocol.ClientInfo
	connected time.Time

	mu          sync.Mutex // guards seq, closed and the order of enqueued events
	seq         int64
	closed      bool
	closing     chan struct{} // closed by close; the writer then finishes
	closeCode   websocket.StatusCode
	closeReason string
	// queue holds the frames waiting for the writer (guarded by mu); it
	// grows only while a client lags, so an idle connection holds no
	// buffer. wake tells the writer there is something to send.
	queue [][]byte
	// queued and buffered count the frames and bytes not yet written,
	// including those the writer has taken from queue: the limits hold
	// however the writer batches.
	queued   int
	buffered int64
	dropped  bool // a slow consumer: the writer stops sending
	wake     chan struct{}
}

func newConnID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// handleWS upgrades r and serves the connection until it closes.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	// The tenant is named on the upgrade request; an unknown one is only
	// refused at connect, with the same message as a bad token.
	tenantID := strings.TrimSpace(r.Header.Get("X-Tenant-ID"))
	if !s.originOK(r) {
		origin := r.Header.Get("Origin")
		s.log.Debug("websocket origin refused", "origin", origin, "host", r.Host, "remote", r.RemoteAddr)
		writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{
			"message": fmt.Sprintf("Origin %q may not open this gateway's WebSocket: a browser page may when it is served by the gateway itself or its origin is in gateway.controlUi.allowedOrigins of the operator's config", origin),
			"type":    "forbidden", "code": "origin_not_allowed",
		}})
		return
	}
	// originOK is the one Origin rule; the library's own check (the
	// Origin's host equal to the Host, scheme ignored) would only repeat
	// part of it.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.log.Debug("websocket upgrade", "err", err)
		return
	}
	ws.SetReadLimit(preAuthMaxBytes)
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{s: s, ws: ws, id: newConnID(), ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), closing: make(chan struct{})}
	defer c.close(websocket.StatusNormalClosure, "")
	go c.writeLoop()

	nonce := newConnID()
	c.sendEvent(protocol.EventChallenge, protocol.Challenge{Nonce: nonce, Ts: time.Now().UnixMilli()}, false)
	// A timer rather than a read deadline: a cancelled read would drop the
	// connection without the 1008 close the client should see.
	timer := time.AfterFunc(s.handshakeWait(), func() { c.close(protocol.ClosePolicy, handshakeTimeoutReason) })
	_, data, err := ws.Read(ctx)
	if !timer.Stop() || err != nil {
		return
	}
	if !s.handshake(c, tenantID, nonce, r, data) {
		return
	}
	ws.SetReadLimit(defaultMaxPayload)
	defer c.release()
	defer s.hubs.remove(c)
	s.startTicker()
	c.readLoop()
}

// handshake checks the first frame and answers hello-ok or an error and
// a close; it reports whether the connection may go on.
func (s *Server) handshake(c *conn, tenantID, nonce string, r *http.Request, data []byte) bool {
	var f protocol.Frame
	if err := json.Unmarshal(data, &f); err != nil || f.Type != protocol.TypeReq || f.ID == "" {
		c.close(protocol.ClosePolicy, "invalid handshake: first frame must be a connect request")
		return false
	}
	fail := func(code websocket.StatusCode, e *protocol.Error) bool {
		c.sendResponse(f.ID, nil, e)
		c.close(code, e.Message)
		return false
	}
	if f.Method != "connect" {
		return fail(protocol.ClosePolicy, protocol.Errorf("invalid handshake: first request must be connect"))
	}
	var p protocol.ConnectParams
	if e := decodeParams("connect", f.Params, &p); e != nil {
		return fail(protocol.ClosePolicy, e)
	}
	if e := checkConnect(&p); e != nil {
		return fail(protocol.ClosePolicy, e)
	}
	version, ok := negotiate(p.MinProtocol, p.MaxProtocol)
	if !ok {
		e := protocol.Errorf("protocol mismatch")
		e.Details = map[string]any{"expectedProtocol": protocol.MaxVersion, "clientMinProtocol": p.MinProtocol, "clientMaxProtocol": p.MaxProtocol}
		return fail(protocol.CloseProtocol, e)
	}
	if p.Role != "" && p.Role != protocol.RoleOperator {
		return fail(protocol.ClosePolicy, protocol.Errorf("unauthorized role: %s (Talon serves operator clients only; it has no node hosts)", p.Role))
	}
	t, rt, release, e := s.authorizeWS(authlimit.Addr(r), tenantID, &p)
	if e != nil {
		return fail(protocol.ClosePolicy, e)
	}
	if p.Device != nil {
		if e := verifyDevice(p.Device, &p, nonce, time.Now()); e != nil {
			release()
			return fail(protocol.ClosePolicy, e)
		}
	}
	c.release = release
	c.t = t
	c.role = protocol.RoleOperator
	c.client = p.Client
	c.connected = time.Now()
	c.scopes = grantScopes(p.Scopes)
	c.admit(f.ID, s.hello(c, rt, version))
	s.log.Debug("ws connected", "conn", c.id, "tenant", t.id, "client", p.Client.ID, "mode", p.Client.Mode, "protocol", version)
	return true
}

// checkConnect validates the fields upstream requires.
func checkConnect(p *protocol.ConnectParams) *protocol.Error {
	switch {
	case p.MinProtocol < 1 || p.MaxProtocol < 1:
		return protocol.Errorf("invalid connect params: minProtocol and maxProtocol must be integers >= 1")
	case p.MinProtocol > p.MaxProtocol:
		return protocol.Errorf("invalid connect params: minProtocol %d is above maxProtocol %d", p.MinProtocol, p.MaxProtocol)
	case strings.TrimSpace(p.Client.ID) == "":
		return protocol.Errorf("invalid connect params: client.id is required")
	case strings.TrimSpace(p.Client.Mode) == "":
		return protocol.Errorf("invalid connect params: client.mode is required")
	}
	return nil
}

// negotiate picks the highest version both sides speak.
func negotiate(lo, hi int) (int, bool) {
	v := min(hi, protocol.MaxVersion)
	if v < max(lo, protocol.MinVersion) {
		return 0, false
	}
	return v, true
}

// grantScopes grants the known scopes a shared-secret client asks for.
func grantScopes(asked []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range asked {
		for _, k := range protocol.Scopes {
			if a == k {
				out[a] = true
			}
		}
	}
	return out
}

// authorizeWS finds the tenant and checks the shared secret of a client
// at addr, under the failed-auth throttle. Every failure reads the same,
// so a client cannot probe which tenants exist.
//
// The tenant is pinned open until release: a connection keeps it warm
// while it lasts (warm.go).
func (s *Server) authorizeWS(addr, tenantID string, p *protocol.ConnectParams) (_ *tenant, _ *runtime, release func(), e *protocol.Error) {
	t, err := s.lookup(tenantID)
	var cfg *config.Config
	if err == nil {
		cfg, err = s.authConfig(t) // the secret first: see authenticate
	}
	if err != nil && !errors.Is(err, errNoTenant) && !errors.Is(err, errMoving) {
		s.log.Error("tenant load", "tenant", tenantID, "err", err)
		return nil, nil, nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: "tenant configuration cannot be loaded", Retryable: true, RetryAfterMs: 1000}
	}
	secret := ""
	if p.Auth != nil {
		secret = p.Auth.Token
		if secret == "" {
			secret = p.Auth.Password
		}
		if secret == "" {
			secret = p.Auth.DeviceToken
		}
	}
	var ok bool
	var wait time.Duration
	if errors.Is(err, errMoving) {
		ok, wait = s.movingAuthorized(addr, tenantID, secret)
		if ok {
			return nil, nil, nil, movingWS()
		}
	} else {
		ok, wait = s.checkSecret(addr, tenantID, t, cfg, secret) // cfg is nil for a tenant not found
	}
	if wait > 0 {
		return nil, nil, nil, rateLimitedWS(wait)
	}
	if !ok {
		code, msg := "AUTH_TOKEN_MISMATCH", "unauthorized: gateway token mismatch (set auth.token to the gateway's token)"
		if secret == "" {
			code, msg = "AUTH_TOKEN_MISSING", "unauthorized: gateway token missing (set auth.token or auth.password)"
		}
		e = protocol.Errorf("%s", msg)
		e.Details = map[string]any{"code": code, "canRetryWithDeviceToken": false}
		return nil, nil, nil, e
	}
	release = s.enter(t)
	rt, err := t.current(s)
	if err != nil {
		release()
		if errors.Is(err, errUnavailable) {
			return nil, nil, nil, noRoomWS()
		}
		s.log.Error("tenant load", "tenant", tenantID, "err", err)
		return nil, nil, nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: "tenant configuration cannot be loaded", Retryable: true, RetryAfterMs: 1000}
	}
	return t, rt, release, nil
}

// readLoop reads requests until the connection ends; each runs on its own
// goroutine, as upstream handles requests concurrently.
func (c *conn) readLoop() {
	for {
		_, data, err := c.ws.Read(c.ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusMessageTooBig {
				c.s.log.Debug("ws frame too big", "conn", c.id)
			}
			return
		}
		var f protocol.Frame
		if err := json.Unmarshal(data, &f); err != nil {
			c.sendResponse("", nil, protocol.Errorf("invalid frame: %v", err))
			continue
		}
		if f.Type != protocol.TypeReq || f.ID == "" || f.Method == "" {
			c.sendResponse(f.ID, nil, protocol.Errorf("invalid frame: expected {type:\"req\", id, method}"))
			continue
		}
		go c.s.dispatch(c, protocol.Request{Type: f.Type, ID: f.ID, Method: f.Method, Params: f.Params})
	}
}

// writeLoop sends queued frames in order until the connection closes;
// on close it sends what is still queued (an error response before a
// policy close) for at most closeDrainTime, then the close frame.
func (c *conn) writeLoop() {
	defer c.cancel()
	for {
		select {
		case <-c.ctx.Done():
			_ = c.ws.CloseNow()
			return
		case <-c.closing:
			ctx, cancel := context.WithTimeout(c.ctx, closeDrainTime)
			defer cancel()
			for _, b := range c.take() {
				if c.ws.Write(ctx, websocket.MessageText, b) != nil {
					break
				}
			}
			if c.closeCode == 0 || ctx.Err() != nil {
				_ = c.ws.CloseNow()
				return
			}
			_ = c.ws.Close(c.closeCode, c.closeReason)
			return
		case <-c.wake:
			for _, b := range c.take() {
				ctx, cancel := context.WithTimeout(c.ctx, writeTimeout)
				err := c.ws.Write(ctx, websocket.MessageText, b)
				cancel()
				if err != nil {
					// The peer stopped reading for writeTimeout, or left.
					c.abort()
					_ = c.ws.CloseNow()
					return
				}
				if c.sent(len(b)) {
					break // dropped as a slow consumer: on to the close
				}
			}
		}
	}
}

// take empties the queue and returns what was in it; the frames count
// against the limits until sent says they are written.
func (c *conn) take() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

// sent counts a frame of n bytes as written and reports whether the
// connection has been dropped as a slow consumer meanwhile.
func (c *conn) sent(n int) (dropped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queued--
	c.buffered -= int64(n)
	return c.dropped
}

// enqueue queues one frame; c.mu is held. A frame that does not fit is
// dropped when droppable; otherwise the connection is closed as a slow
// consumer.
func (c *conn) enqueue(b []byte, droppable bool) bool {
	if c.queued >= sendQueueFrames || c.buffered+int64(len(b)) > defaultMaxBuffered {
		if !droppable {
			c.slow()
		}
		return false
	}
	c.queue = append(c.queue, b)
	c.queued++
	c.buffered += int64(len(b))
	select {
	case c.wake <- struct{}{}:
	default: // the writer has been told already
	}
	return true
}

// slow drops a consumer whose queue is full; c.mu is held. The frames
// still queued are not worth waiting for.
func (c *conn) slow() {
	c.s.log.Warn("ws slow consumer dropped", "conn", c.id, "queued", c.queued, "bytes", c.buffered)
	c.closed, c.dropped = true, true
	c.queue = nil
	c.closeCode, c.closeReason = protocol.ClosePolicy, slowConsumerCloseText
	close(c.closing)
}

// sendResponse queues a res frame; responses are never dropped.
func (c *conn) sendResponse(id string, payload any, e *protocol.Error) {
	b := c.encodeResponse(id, payload, e)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.enqueue(b, false)
	}
}

// admit joins the tenant's hub and queues hello-ok in one step: a client
// that has its hello is already listed for the next one's presence, and
// no broadcast can reach it before its hello (hub locks are never held
// while taking c.mu).
func (c *conn) admit(id string, hello *protocol.HelloOK) {
	b := c.encodeResponse(id, hello, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.hubs.add(c)
	if !c.closed {
		c.enqueue(b, false)
	}
}

func (c *conn) encodeResponse(id string, payload any, e *protocol.Error) []byte {
	res := protocol.Response{Type: protocol.TypeRes, ID: id, OK: e == nil, Payload: payload, Error: e}
	b, err := json.Marshal(res)
	if err != nil {
		c.s.log.Error("encoding response", "conn", c.id, "err", err)
		b, _ = json.Marshal(protocol.Response{Type: protocol.TypeRes, ID: id, Error: &protocol.Error{Code: protocol.CodeUnavailable, Message: "response could not be encoded"}})
	}
	return c.t.hide(b)
}

// sendEvent queues a targeted event (no seq) or, with seq, the next of
// this connection's sequence.
func (c *conn) sendEvent(name string, payload any, seq bool) {
	raw, err := json.Marshal(payload)
	if err != nil {
		c.s.log.Error("encoding event", "event", name, "err", err)
		return
	}
	c.sendRaw(name, raw, seq, false)
}

// sendRaw queues an event whose payload is already encoded, so a
// broadcast encodes its payload once for every subscriber.
func (c *conn) sendRaw(name string, payload json.RawMessage, seq, droppable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	payload = c.t.hide(payload)
	b := make([]byte, 0, len(payload)+64)
	b = append(b, `{"type":"event","event":`...)
	b = appendJSONString(b, name)
	if len(payload) > 0 {
		b = append(b, `,"payload":`...)
		b = append(b, payload...)
	}
	if seq {
		c.seq++
		b = fmt.Appendf(b, `,"seq":%d`, c.seq)
	}
	b = append(b, '}')
	c.enqueue(b, droppable)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// close closes the connection once with code and reason, after the
// frames already queued.
func (c *conn) close(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if len(reason) > 120 { // a close reason must fit in a control frame
		reason = reason[:120]
	}
	c.closeCode, c.closeReason = code, reason
	close(c.closing)
}

// abort ends the connection at once, without a close handshake: for a
// peer that stopped reading.
func (c *conn) abort() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
}

// has reports whether the connection holds scope; admin holds every
// scope and write holds read.
func (c *conn) has(scope string) bool {
	switch {
	case scope == "":
		return true
	case c.scopes[protocol.ScopeAdmin]:
		return true
	case c.scopes[scope]:
		return true
	case scope == protocol.ScopeRead:
		return c.scopes[protocol.ScopeWrite]
	}
	return false
}

func (s *Server) handshakeWait() time.Duration {
	if s.opts.HandshakeTimeout > 0 {
		return s.opts.HandshakeTimeout
	}
	return defaultHandshakeWait
}

func (s *Server) tickInterval() time.Duration {
	if s.opts.TickInterval > 0 {
		return s.opts.TickInterval
	}
	return defaultTickInterval
}
