// Package client is a Go client of the gateway WebSocket protocol: it
// dials, answers the connect challenge, and then makes calls and
// receives events. The platform, `talon gateway call` and the tests use
// it.
//
// A Client is safe for concurrent use: calls from many goroutines share
// one connection; events arrive on one channel in the order sent.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"

	"talon/protocol"
)

// Options configure Dial.
type Options struct {
	// Token or Password is the gateway's shared secret.
	Token    string
	Password string
	// Tenant is sent as X-Tenant-ID on the upgrade request.
	Tenant string
	// Scopes requested; nil means read, write, admin and approvals.
	Scopes []string
	// ClientID and Mode name this client; defaults "cli" and "cli".
	ClientID string
	Mode     string
	// Version is reported as client.version; default "talon".
	Version string
	// EventBuffer is how many events may wait unread before more are
	// dropped (Dropped counts them); 0 means 4096.
	EventBuffer int
	// MaxMessage bounds a received frame; 0 means 32 MiB.
	MaxMessage int64
}

// Client is one connection.
type Client struct {
	ws     *websocket.Conn
	hello  protocol.HelloOK
	ctx    context.Context
	cancel context.CancelFunc
	events chan protocol.Frame
	drops  atomic.Int64
	nextID atomic.Int64

	writeMu sync.Mutex
	mu      sync.Mutex
	waiting map[string]chan protocol.Frame
	err     error // why the connection ended
}

// Dial connects to url (ws://host:port) and completes the handshake.
func Dial(ctx context.Context, url string, o Options) (*Client, error) {
	h := http.Header{}
	if o.Tenant != "" {
		h.Set("X-Tenant-ID", o.Tenant)
	}
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", url, err)
	}
	maxMsg := o.MaxMessage
	if maxMsg <= 0 {
		maxMsg = 32 << 20
	}
	ws.SetReadLimit(maxMsg)
	buf := o.EventBuffer
	if buf <= 0 {
		buf = 4096
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{ws: ws, ctx: cctx, cancel: cancel, events: make(chan protocol.Frame, buf), waiting: map[string]chan protocol.Frame{}}
	if err := c.handshake(ctx, o); err != nil {
		cancel()
		_ = ws.CloseNow()
		return nil, err
	}
	go c.readLoop()
	return c, nil
}

func (c *Client) handshake(ctx context.Context, o Options) error {
	var ch protocol.Frame
	if err := c.read(ctx, &ch); err != nil {
		return fmt.Errorf("waiting for connect.challenge: %w", err)
	}
	if ch.Type != protocol.TypeEvent || ch.Event != protocol.EventChallenge {
		return fmt.Errorf("waiting for connect.challenge: got %s %s%s", ch.Type, ch.Event, ch.Method)
	}
	scopes := o.Scopes
	if scopes == nil {
		scopes = []string{protocol.ScopeRead, protocol.ScopeWrite, protocol.ScopeAdmin, protocol.ScopeApprovals}
	}
	p := protocol.ConnectParams{
		MinProtocol: protocol.MinVersion, MaxProtocol: protocol.MaxVersion,
		Client: protocol.ClientInfo{ID: def(o.ClientID, "cli"), Mode: def(o.Mode, "cli"), Version: def(o.Version, "talon"), Platform: "go"},
		Role:   protocol.RoleOperator, Scopes: scopes,
	}
	if o.Token != "" || o.Password != "" {
		p.Auth = &protocol.ConnectAuth{Token: o.Token, Password: o.Password}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding connect: %w", err)
	}
	if err := c.write(ctx, protocol.Request{Type: protocol.TypeReq, ID: "connect", Method: "connect", Params: raw}); err != nil {
		return fmt.Errorf("sending connect: %w", err)
	}
	var res protocol.Frame
	if err := c.read(ctx, &res); err != nil {
		return fmt.Errorf("waiting for hello-ok: %w", err)
	}
	if res.Type != protocol.TypeRes || res.ID != "connect" {
		return fmt.Errorf("waiting for hello-ok: got %s %s", res.Type, res.Event)
	}
	if !res.OK {
		if res.Error != nil {
			return fmt.Errorf("connect refused: %w", res.Error)
		}
		return errors.New("connect refused")
	}
	if err := json.Unmarshal(res.Payload, &c.hello); err != nil || c.hello.Type != "hello-ok" {
		return fmt.Errorf("connect: the response is not a hello-ok: %s", res.Payload)
	}
	return nil
}

// Hello is the server's hello-ok.
func (c *Client) Hello() protocol.HelloOK { return c.hello }

// Events delivers every event after the handshake. It is closed when the
// connection ends.
func (c *Client) Events() <-chan protocol.Frame { return c.events }

// Dropped is how many events were dropped because Events was not read.
func (c *Client) Dropped() int64 { return c.drops.Load() }

// Done is closed when the connection has ended; Err says why.
func (c *Client) Done() <-chan struct{} { return c.ctx.Done() }

// Err is why the connection ended, or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection.
func (c *Client) Close() error {
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	c.cancel()
	return err
}

// Call sends a request and decodes the payload of its final response
// into out (when out is not nil). A first response with status
// "accepted" (the two-phase methods) is skipped: Call waits for the
// second. A failed response is returned as a *protocol.Error.
func (c *Client) Call(ctx context.Context, method string, params, out any) error {
	f, err := c.call(ctx, method, params, true)
	if err != nil {
		return err
	}
	if out != nil && len(f.Payload) > 0 {
		if err := json.Unmarshal(f.Payload, out); err != nil {
			return fmt.Errorf("%s: decoding the response: %w", method, err)
		}
	}
	return nil
}

// CallRaw is Call returning the final response's payload undecoded.
func (c *Client) CallRaw(ctx context.Context, method string, params any) (json.RawMessage, error) {
	f, err := c.call(ctx, method, params, true)
	if err != nil {
		return nil, err
	}
	return f.Payload, nil
}

func (c *Client) call(ctx context.Context, method string, params any, skipAccepted bool) (protocol.Frame, error) {
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	raw, err := json.Marshal(params)
	if err != nil {
		return protocol.Frame{}, fmt.Errorf("%s: encoding params: %w", method, err)
	}
	if params == nil {
		raw = nil
	}
	ch := make(chan protocol.Frame, 2)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return protocol.Frame{}, c.err
	}
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	if err := c.write(ctx, protocol.Request{Type: protocol.TypeReq, ID: id, Method: method, Params: raw}); err != nil {
		return protocol.Frame{}, fmt.Errorf("%s: sending: %w", method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return protocol.Frame{}, ctx.Err()
		case <-c.ctx.Done():
			return protocol.Frame{}, fmt.Errorf("%s: %w", method, c.Err())
		case f := <-ch:
			if !f.OK {
				if f.Error != nil {
					return f, f.Error
				}
				return f, fmt.Errorf("%s failed without an error", method)
			}
			if skipAccepted && accepted(f.Payload) {
				continue
			}
			return f, nil
		}
	}
}

func accepted(payload json.RawMessage) bool {
	var p struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(payload, &p) == nil && p.Status == "accepted"
}

func (c *Client) readLoop() {
	defer close(c.events)
	for {
		var f protocol.Frame
		if err := c.read(c.ctx, &f); err != nil {
			c.mu.Lock()
			if c.err == nil {
				c.err = fmt.Errorf("connection closed: %w", err)
			}
			c.mu.Unlock()
			c.cancel()
			return
		}
		switch f.Type {
		case protocol.TypeRes:
			c.mu.Lock()
			ch := c.waiting[f.ID]
			c.mu.Unlock()
			if ch != nil {
				select {
				case ch <- f:
				default: // more responses than a call waits for
				}
			}
		case protocol.TypeEvent:
			select {
			case c.events <- f:
			default:
				c.drops.Add(1)
			}
		}
	}
}

func (c *Client) read(ctx context.Context, f *protocol.Frame) error {
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, f); err != nil {
		return fmt.Errorf("decoding a frame: %w", err)
	}
	return nil
}

func (c *Client) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

func def(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
