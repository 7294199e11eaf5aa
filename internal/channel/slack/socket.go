package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/coder/websocket"

	"talon/internal/channel"
)

// socketFrame is any message Slack sends on a Socket Mode connection.
type socketFrame struct {
	Type           string          `json:"type"`
	EnvelopeID     string          `json:"envelope_id"`
	Payload        json.RawMessage `json:"payload"`
	NumConnections int             `json:"num_connections"`
	Reason         string          `json:"reason"`
	RetryAttempt   int             `json:"retry_attempt"`
}

var envelopeIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`) // at most 128

var (
	// errRefresh is Slack's disconnect asking for a new connection: not a
	// failure, so no backoff.
	errRefresh = errors.New("slack socket: Slack asked to reconnect")
	// errPongTimeout is a connection that stopped answering pings.
	errPongTimeout = errors.New("slack socket: no pong within the timeout")
)

// stopError is a refusal Run must not retry.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// runSocket keeps one Socket Mode connection open until ctx ends,
// reconnecting with backoff (2 s doubling to 30 s) after a failure and at
// once after Slack's disconnect; a permanent refusal ends it with an error.
func (a *App) runSocket(ctx context.Context, accept channel.Accept) error {
	fails := 0
	for {
		hello, err := a.session(ctx, accept)
		a.mu.Lock()
		a.st.Connected = false
		a.mu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return fmt.Errorf("slack: %w", stop.err)
		}
		if hello {
			fails = 0
		}
		if errors.Is(err, errRefresh) {
			a.log.Info("slack: reconnecting at Slack's request")
			continue
		}
		a.failed(err)
		a.mu.Lock()
		a.st.ReconnectAttempts++
		a.mu.Unlock()
		if werr := a.wait(ctx, retryDelay(err, fails)); werr != nil {
			return nil
		}
		fails++
	}
}

// session opens one connection and reads it until it ends; hello says the
// connection was established (Slack said hello).
func (a *App) session(ctx context.Context, accept channel.Accept) (hello bool, err error) {
	var open struct {
		URL string `json:"url"`
	}
	if err := a.call(ctx, "apps.connections.open", a.appToken, nil, &open); err != nil {
		if isPermanent(err) {
			a.authIssue("appToken", err)
			return false, stopError{err}
		}
		return false, err
	}
	wsURL, err := checkWSURL(open.URL)
	if err != nil {
		return false, err
	}
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: a.client})
	if err != nil {
		// The URL's ticket is a one-time credential: keep it out of logs.
		return false, fmt.Errorf("slack socket: dial: %s", strings.ReplaceAll(err.Error(), wsURL, hideQuery(wsURL)))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxBody)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	go a.keepAlive(sctx, conn, &timedOut, cancel)
	for {
		_, data, err := conn.Read(sctx)
		if err != nil {
			if timedOut.Load() {
				return hello, errPongTimeout
			}
			return hello, fmt.Errorf("slack socket: read: %w", err)
		}
		if err := a.frame(sctx, conn, data, accept, &hello); err != nil {
			return hello, err
		}
	}
}

// keepAlive pings every pingInterval and ends the session when a pong does
// not come within pongTimeout (OpenClaw's fixed 15 s).
func (a *App) keepAlive(ctx context.Context, conn *websocket.Conn, timedOut *atomic.Bool, cancel context.CancelFunc) {
	for {
		if sleep(ctx, a.pingInterval) != nil {
			return
		}
		pctx, done := context.WithTimeout(ctx, a.pongTimeout)
		err := conn.Ping(pctx)
		done()
		if err != nil && ctx.Err() == nil {
			timedOut.Store(true)
			cancel()
			return
		}
	}
}

// frame handles one message from Slack. It returns an error when the
// session must end.
func (a *App) frame(ctx context.Context, conn *websocket.Conn, data []byte, accept channel.Accept, hello *bool) error {
	var f socketFrame
	if err := json.Unmarshal(data, &f); err != nil {
		a.log.Warn("slack socket: ignoring a frame that is not JSON", "err", err)
		return nil
	}
	switch f.Type {
	case "hello":
		*hello = true
		a.helloed(f.NumConnections)
		return nil
	case "disconnect":
		if f.Reason == "link_disabled" {
			err := errors.New("slack socket: Slack disabled Socket Mode for this app (link_disabled)")
			a.setIssue("auth", channel.Issue{Kind: "config", Message: err.Error(),
				Fix: "Enable Socket Mode in the Slack app's settings, or set channels.slack.mode to \"http\"."})
			return stopError{err}
		}
		return errRefresh
	}
	if len(f.EnvelopeID) > 128 || !envelopeIDRE.MatchString(f.EnvelopeID) {
		a.log.Warn("slack socket: ignoring a frame without a valid envelope_id", "type", clip(f.Type, 40))
		return nil
	}
	if f.Type == "events_api" || f.Type == "interactive" {
		handle := a.handleCallback
		if f.Type == "interactive" {
			handle = a.handleInteractive
		}
		err := handle(ctx, f.Payload, accept)
		if err != nil && !errors.Is(err, errMalformed) {
			// Not stored: no ack, so Slack delivers it again.
			a.log.Warn("slack socket: event not taken; leaving it unacknowledged", "err", err, "retry_attempt", f.RetryAttempt)
			a.failed(err)
			return nil
		}
		if err != nil {
			a.log.Warn("slack socket: dropping a malformed event", "err", err)
		}
	} else {
		a.log.Info("slack socket: acknowledging a payload Talon does not handle", "type", clip(f.Type, 40))
	}
	ack, _ := json.Marshal(map[string]string{"envelope_id": f.EnvelopeID})
	if err := conn.Write(ctx, websocket.MessageText, ack); err != nil {
		return fmt.Errorf("slack socket: ack: %w", err)
	}
	return nil
}

// helloed records an established connection.
func (a *App) helloed(n int) {
	a.mu.Lock()
	a.st.Connected = true
	a.st.LastConnectedAt = a.now()
	a.st.ReconnectAttempts = 0
	a.st.LastError = ""
	a.mu.Unlock()
	if n > 1 {
		a.log.Warn("slack socket: the app has several Socket Mode connections; events go to any of them", "num_connections", n)
		a.setIssue("connections", channel.Issue{Kind: "runtime",
			Message: fmt.Sprintf("Slack reports %d Socket Mode connections for this app; each event reaches only one of them, so another gateway may be answering some messages.", n),
			Fix:     "Give each gateway its own Slack app, or use channels.slack.mode \"http\" behind one load balancer."})
		return
	}
	a.clearIssue("connections")
}

// checkWSURL validates the URL apps.connections.open answered.
func checkWSURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" || u.User != nil || len(raw) > 2048 {
		return "", errors.New("slack socket: apps.connections.open answered an invalid WebSocket URL")
	}
	return raw, nil
}

// hideQuery is u without its query string.
func hideQuery(u string) string {
	base, _, _ := strings.Cut(u, "?")
	return base + "?…"
}
