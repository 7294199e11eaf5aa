// Package relay carries the platform's chat to the gateway over the
// OpenClaw WebSocket protocol: one connection per tenant (its upgrade
// request names the tenant with X-Tenant-ID), opened on first use,
// opened again after it drops, shared by every chat of the tenant, whose
// events it hands to the chat that started each run, and closed once
// unused for Idle: a connected client keeps a tenant open in the gateway
// (docs/scaling.md), so an idle relay must not.
//
// A Relay is safe for concurrent use. The platform reaches a gateway only
// through it, also inside `talon serve` (over loopback), so the split
// deployment is the path that is tested.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"talon/protocol"
	"talon/protocol/client"
)

// Dial opens a connection to the gateway for one tenant; the relay calls
// it on first use and after a connection dropped.
type Dial func(ctx context.Context, tenant string) (*client.Client, error)

// Relay holds the tenants' connections.
type Relay struct {
	dial Dial
	// idle is how long a connection no chat or call uses stays open.
	idle time.Duration

	mu      sync.Mutex
	conns   map[string]*conn
	closed  bool
	sweeper bool          // the goroutine that closes idle connections runs
	stop    chan struct{} // closed by Close
}

// Idle is how long a tenant's connection stays open with no chat or call
// on it: well under the gateway's default --tenant-idle (10 minutes).
const Idle = 2 * time.Minute

// New returns a Relay that connects with dial.
func New(dial Dial) *Relay {
	return &Relay{dial: dial, idle: Idle, conns: map[string]*conn{}, stop: make(chan struct{})}
}

// redialWait is the shortest time between two dials of one tenant: a
// gateway that refuses must not be hammered by every chat.
const redialWait = time.Second

// conn is one tenant's connection and the runs waiting for its events.
type conn struct {
	// users counts the chats and calls holding it and lastUse is when
	// the last let go; both guarded by the Relay's mu.
	users   int
	lastUse time.Time

	mu       sync.Mutex
	c        *client.Client
	runs     map[string]*run
	lastDial time.Time
	lastErr  error
}

// Event is what a chat hears while its run goes.
type Event struct {
	// Kind is "delta" (Text is the reply so far, Delta what is new),
	// "tool" (Tool says which tool started or returned), "compaction"
	// (the session's context is being or was compacted), "approval" or
	// "approval-resolved" (only for a Message with Approvals), or the
	// end: "final", "aborted" or "error" (Text the reply, or Error).
	Kind       string      `json:"kind"`
	Text       string      `json:"text,omitempty"`
	Delta      string      `json:"delta,omitempty"`
	Tool       *Tool       `json:"tool,omitempty"`
	Compaction *Compaction `json:"compaction,omitempty"`
	Approval   *Approval   `json:"approval,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// Compaction is a compaction of the chat's session as the gateway reports
// it (the agent event stream "compaction"): its start, and its end with
// the outcome and the estimated context before and after.
type Compaction struct {
	Phase        string `json:"phase"`  // start or end
	Reason       string `json:"reason"` // manual, threshold or overflow
	Completed    bool   `json:"completed,omitempty"`
	Outcome      string `json:"outcome,omitempty"` // compacted, hard-trim or failed
	TokensBefore int64  `json:"tokensBefore,omitempty"`
	TokensAfter  int64  `json:"tokensAfter,omitempty"`
	Window       int64  `json:"contextWindow,omitempty"`
	Notice       string `json:"notice,omitempty"`
}

// Approval is an exec approval of the chat's session: asked
// (exec.approval.requested) or ended (exec.approval.resolved, Decision
// "allow-once", "allow-always" or "deny", or "" when it expired).
type Approval struct {
	ID           string `json:"id"`
	Command      string `json:"command,omitempty"`
	Cwd          string `json:"cwd,omitempty"`
	Host         string `json:"host,omitempty"`
	Security     string `json:"security,omitempty"`
	Ask          string `json:"ask,omitempty"`
	AgentID      string `json:"agentId,omitempty"`
	ResolvedPath string `json:"resolvedPath,omitempty"`
	SessionKey   string `json:"sessionKey,omitempty"`
	ExpiresAtMs  int64  `json:"expiresAtMs,omitempty"`
	Decision     string `json:"decision,omitempty"`
}

// Tool is a tool call as a chat sees it.
type Tool struct {
	Phase   string          `json:"phase"` // start or result
	Name    string          `json:"name"`
	CallID  string          `json:"callId"`
	Args    json.RawMessage `json:"args,omitempty"`
	Result  string          `json:"result,omitempty"`
	IsError bool            `json:"isError,omitempty"`
}

// Message is one chat turn asked of a tenant's agent.
type Message struct {
	Tenant     string
	AgentID    string
	SessionKey string
	Text       string
	// Approvals asks for the session's exec approvals while the run goes,
	// as "approval" and "approval-resolved" events: a chat that shows
	// them can have a person answer (exec.approval.resolve, by Call).
	Approvals bool
}

// ErrClosed is returned once the relay is closed.
var ErrClosed = errors.New("relay: closed")

// Chat sends m through chat.send and reports the run's events to on (which
// may be nil) until its end, which it returns. The connection dropping
// before the end is an error: the run goes on in the gateway, and its
// reply lands in the session's history.
func (r *Relay) Chat(ctx context.Context, m Message, on func(Event)) (Event, error) {
	tc, err := r.conn(ctx, m.Tenant)
	if err != nil {
		return Event{}, err
	}
	defer r.release(tc)
	runID := newRunID()
	ch := tc.subscribe(runID, m)
	defer tc.unsubscribe(runID)
	params := map[string]any{"sessionKey": m.SessionKey, "message": m.Text, "idempotencyKey": runID}
	if m.AgentID != "" {
		params["agentId"] = m.AgentID
	}
	if err := tc.client().Call(ctx, "chat.send", params, nil); err != nil {
		return Event{}, fmt.Errorf("chat.send to tenant %q: %w", m.Tenant, err)
	}
	done := tc.client().Done()
	for {
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-done:
			return Event{}, fmt.Errorf("the gateway connection of tenant %q dropped before run %s ended; its reply will be in the session history", m.Tenant, runID)
		case f := <-ch:
			ev, end := decode(f)
			if ev.Kind == "" {
				continue
			}
			if on != nil {
				on(ev)
			}
			if end {
				return ev, nil
			}
		}
	}
}

// decode turns a gateway event of the run into an Event; end says it is
// the run's last.
func decode(f protocol.Frame) (ev Event, end bool) {
	switch f.Event {
	case protocol.EventChat:
		var p struct {
			State   string `json:"state"`
			Message *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
			DeltaText    string `json:"deltaText"`
			ErrorMessage string `json:"errorMessage"`
		}
		if json.Unmarshal(f.Payload, &p) != nil {
			return Event{}, false
		}
		var text string
		if p.Message != nil {
			for _, c := range p.Message.Content {
				text += c.Text
			}
		}
		switch p.State {
		case "delta":
			return Event{Kind: "delta", Text: text, Delta: p.DeltaText}, false
		case "final", "aborted":
			return Event{Kind: p.State, Text: text}, true
		case "error":
			return Event{Kind: "error", Error: p.ErrorMessage}, true
		}
	case protocol.EventAgent:
		var p struct {
			Stream string `json:"stream"`
			Data   struct {
				Phase      string          `json:"phase"`
				Name       string          `json:"name"`
				ToolCallID string          `json:"toolCallId"`
				Args       json.RawMessage `json:"args"`
				IsError    bool            `json:"isError"`
				Result     *struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			} `json:"data"`
		}
		var c struct {
			Stream string     `json:"stream"`
			Data   Compaction `json:"data"`
		}
		if json.Unmarshal(f.Payload, &c) == nil && c.Stream == "compaction" {
			return Event{Kind: "compaction", Compaction: &c.Data}, false
		}
		if json.Unmarshal(f.Payload, &p) != nil || p.Stream != "tool" {
			return Event{}, false
		}
		t := &Tool{Phase: p.Data.Phase, Name: p.Data.Name, CallID: p.Data.ToolCallID, Args: p.Data.Args, IsError: p.Data.IsError}
		if p.Data.Result != nil {
			for _, c := range p.Data.Result.Content {
				t.Result += c.Text
			}
		}
		return Event{Kind: "tool", Tool: t}, false
	case protocol.EventApprovalRequest:
		var p struct {
			ID          string   `json:"id"`
			Request     Approval `json:"request"`
			ExpiresAtMs int64    `json:"expiresAtMs"`
		}
		if json.Unmarshal(f.Payload, &p) != nil || p.ID == "" {
			return Event{}, false
		}
		a := p.Request
		a.ID, a.ExpiresAtMs, a.Decision = p.ID, p.ExpiresAtMs, ""
		return Event{Kind: "approval", Approval: &a}, false
	case protocol.EventApprovalResolved:
		var p struct {
			ID       string  `json:"id"`
			Decision *string `json:"decision"`
		}
		if json.Unmarshal(f.Payload, &p) != nil || p.ID == "" {
			return Event{}, false
		}
		a := &Approval{ID: p.ID}
		if p.Decision != nil {
			a.Decision = *p.Decision
		}
		return Event{Kind: "approval-resolved", Approval: a}, false
	}
	return Event{}, false
}

// Call makes one request of the tenant's gateway on the tenant's shared
// connection and decodes its payload into out (nil: ignored). A refused
// call's error is a *protocol.Error with the gateway's message.
func (r *Relay) Call(ctx context.Context, tenant, method string, params, out any) error {
	tc, err := r.conn(ctx, tenant)
	if err != nil {
		return err
	}
	defer r.release(tc)
	return tc.client().Call(ctx, method, params, out)
}

// conn returns the tenant's open connection, dialling when there is none
// or the last one dropped, held for the caller until release.
func (r *Relay) conn(ctx context.Context, tenant string) (*conn, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	tc := r.conns[tenant]
	if tc == nil {
		tc = &conn{runs: map[string]*run{}}
		r.conns[tenant] = tc
	}
	// Held under r.mu, so the sweeper never closes a connection between
	// a caller finding it and using it.
	tc.users++
	if !r.sweeper {
		r.sweeper = true
		go r.sweep()
	}
	r.mu.Unlock()
	if err := r.connect(ctx, tc, tenant); err != nil {
		r.release(tc)
		return nil, err
	}
	return tc, nil
}

// connect dials tc's tenant unless tc has an open connection.
func (r *Relay) connect(ctx context.Context, tc *conn, tenant string) error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.c != nil {
		select {
		case <-tc.c.Done():
		default:
			return nil
		}
	}
	if wait := time.Until(tc.lastDial.Add(redialWait)); wait > 0 && tc.lastErr != nil {
		return fmt.Errorf("connecting to the gateway for tenant %q failed %s ago (%v); retrying in %s",
			tenant, time.Since(tc.lastDial).Round(time.Millisecond), tc.lastErr, wait.Round(time.Millisecond))
	}
	tc.lastDial = time.Now()
	c, err := r.dial(ctx, tenant)
	if err != nil {
		tc.lastErr = err
		return fmt.Errorf("connecting to the gateway for tenant %q: %w", tenant, err)
	}
	tc.c, tc.lastErr = c, nil
	go tc.route(c)
	return nil
}

// release lets go of a connection conn returned.
func (r *Relay) release(tc *conn) {
	r.mu.Lock()
	tc.users--
	tc.lastUse = time.Now()
	r.mu.Unlock()
}

// sweep closes, every half Idle until the relay closes, the connections
// nobody has used for Idle. The tenant's next chat dials again.
func (r *Relay) sweep() {
	t := time.NewTicker(r.idle / 2)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.closeIdle(time.Now())
		}
	}
}

// closeIdle closes the connections unused since now − Idle.
func (r *Relay) closeIdle(now time.Time) {
	var idle []*conn
	r.mu.Lock()
	for tenant, tc := range r.conns {
		if tc.users == 0 && now.Sub(tc.lastUse) >= r.idle {
			delete(r.conns, tenant)
			idle = append(idle, tc)
		}
	}
	r.mu.Unlock()
	for _, tc := range idle {
		if c := tc.client(); c != nil {
			_ = c.Close()
		}
	}
}

// route hands each event of c to the runs it belongs to until c closes:
// a run's own events by their runId, an exec approval to the runs of its
// session that asked for approvals.
func (tc *conn) route(c *client.Client) {
	for f := range c.Events() {
		for _, ch := range tc.targets(f) {
			deliver(ch, f)
		}
	}
}

// targets are the channels of the runs f belongs to.
func (tc *conn) targets(f protocol.Frame) []chan protocol.Frame {
	var p struct {
		RunID   string `json:"runId"`
		Request struct {
			SessionKey string `json:"sessionKey"`
		} `json:"request"`
	}
	if json.Unmarshal(f.Payload, &p) != nil {
		return nil
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	switch f.Event {
	case protocol.EventApprovalRequest, protocol.EventApprovalResolved:
		// A resolved event may come without its request: every run that
		// watches approvals hears it, and knows the ids it was shown.
		var out []chan protocol.Frame
		for _, r := range tc.runs {
			if r.approvals && (p.Request.SessionKey == "" || p.Request.SessionKey == r.session) {
				out = append(out, r.ch)
			}
		}
		return out
	}
	if r := tc.runs[p.RunID]; p.RunID != "" && r != nil {
		return []chan protocol.Frame{r.ch}
	}
	return nil
}

// deliver hands f to a run. A chat that stopped reading loses deltas,
// not its end or an approval, and does not hold up the tenant's other
// runs.
func deliver(ch chan protocol.Frame, f protocol.Frame) {
	select {
	case ch <- f:
		return
	default:
	}
	if ev, end := decode(f); end || ev.Approval != nil {
		go func() {
			select {
			case ch <- f:
			case <-time.After(time.Minute):
			}
		}()
	}
}

// run is one chat waiting for its events.
type run struct {
	ch        chan protocol.Frame
	session   string
	approvals bool
}

// runBuffer is how many events of one run wait unread.
const runBuffer = 256

func (tc *conn) subscribe(runID string, m Message) chan protocol.Frame {
	r := &run{ch: make(chan protocol.Frame, runBuffer), session: m.SessionKey, approvals: m.Approvals}
	tc.mu.Lock()
	tc.runs[runID] = r
	tc.mu.Unlock()
	return r.ch
}

func (tc *conn) unsubscribe(runID string) {
	tc.mu.Lock()
	delete(tc.runs, runID)
	tc.mu.Unlock()
}

func (tc *conn) client() *client.Client {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.c
}

// Forget closes the tenant's connection, so its next use dials again:
// the tenant moved to another gateway. Its chats in flight end with an
// error.
func (r *Relay) Forget(tenant string) {
	r.mu.Lock()
	tc := r.conns[tenant]
	delete(r.conns, tenant)
	r.mu.Unlock()
	if tc == nil {
		return
	}
	if c := tc.client(); c != nil {
		_ = c.Close()
	}
}

// Close closes every connection; chats in flight end with an error.
func (r *Relay) Close() {
	r.mu.Lock()
	if !r.closed {
		close(r.stop)
	}
	r.closed = true
	conns := r.conns
	r.conns = map[string]*conn{}
	r.mu.Unlock()
	for _, tc := range conns {
		if c := tc.client(); c != nil {
			_ = c.Close()
		}
	}
}

func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
