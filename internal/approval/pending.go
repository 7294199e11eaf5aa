package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long a pending approval waits for an operator.
// Talon uses OpenClaw's older 2 minutes rather than the current 30
// (spec §4.2): the model's turn and the user wait on the outcome, and a
// command approved half an hour later runs in a context that has moved on.
// Operators who want longer set Manager.Timeout.
const DefaultTimeout = 2 * time.Minute

// Decisions an operator may give.
const (
	DecisionAllowOnce   = "allow-once"
	DecisionAllowAlways = "allow-always"
	DecisionDeny        = "deny"
)

// Event names the Manager emits for the gateway to broadcast.
const (
	EventRequested = "exec.approval.requested"
	EventResolved  = "exec.approval.resolved"
)

// Request is what an exec call asks approval for.
type Request struct {
	Command     string   `json:"command"`
	CommandArgv []string `json:"commandArgv,omitempty"`
	Cwd         string   `json:"cwd"`
	Host        Host     `json:"host"`
	NodeID      string   `json:"nodeId"`
	Security    Security `json:"security"`
	Ask         Ask      `json:"ask"`
	AgentID     string   `json:"agentId"`
	// ResolvedPath is the first segment's executable, as OpenClaw reports.
	ResolvedPath string   `json:"resolvedPath"`
	SessionKey   string   `json:"sessionKey"`
	EnvKeys      []string `json:"envKeys,omitempty"`
	// UnavailableDecisions are decisions an operator may not give for
	// this command (OpenClaw's field): allow-always for a command whose
	// program is configured by files the agent can write, since the
	// entries it would store cannot make the next run safe.
	UnavailableDecisions []string `json:"unavailableDecisions,omitempty"`
	// UnavailableWhy says why, for the error a refused decision gets.
	UnavailableWhy string `json:"-"`

	// Not sent: what the fallback and allow-always need.
	ResolvedPaths []string `json:"-"`
	Hit           bool     `json:"-"`
	AskFallback   Security `json:"-"`
	// Timeout overrides Manager.Timeout for this request when > 0 (the
	// config's tools.exec.approvalTimeoutMs).
	Timeout time.Duration `json:"-"`
}

// RequestedPayload is the payload of exec.approval.requested.
type RequestedPayload struct {
	ID          string  `json:"id"`
	Request     Request `json:"request"`
	CreatedAtMs int64   `json:"createdAtMs"`
	ExpiresAtMs int64   `json:"expiresAtMs"`
}

// ResolvedPayload is the payload of exec.approval.resolved. Decision is
// nil when the approval expired (or nobody could be asked).
type ResolvedPayload struct {
	ID         string   `json:"id"`
	Decision   *string  `json:"decision"`
	ResolvedBy string   `json:"resolvedBy,omitempty"`
	Ts         int64    `json:"ts"`
	Request    *Request `json:"request,omitempty"`
}

// Event is one event for the gateway to broadcast to approval-scoped
// operators.
type Event struct {
	Name    string
	Payload any
}

// Result is how a pending approval ended.
type Result struct {
	ID string
	// Decision is the operator's, or "" on timeout / no approver.
	Decision string
	Run      bool
	// Reason explains a denial in OpenClaw's words ("user-denied",
	// "approval-timeout", "approval-timeout (allowlist-miss)").
	Reason string
	// PersistErr is set when allow-always could not be written to the
	// approvals file; the command still runs once, as the operator allowed.
	PersistErr error
}

// SlugLen is how many leading characters of an approval id make its slug,
// the short form operators type (any unique prefix resolves).
const SlugLen = 8

// Slug is the short form of an approval id.
func Slug(id string) string {
	if len(id) > SlugLen {
		return id[:SlugLen]
	}
	return id
}

// Pending is a registered approval.
type Pending struct {
	ID          string
	CreatedAtMs int64
	ExpiresAtMs int64
	done        chan struct{}
	result      Result
}

// Wait blocks until the approval ends or ctx is done. An approval that
// has ended wins over a ctx that is done too.
func (p *Pending) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.done:
		return p.result, nil
	case <-ctx.Done():
		select {
		case <-p.done:
			return p.result, nil
		default:
			return Result{}, ctx.Err()
		}
	}
}

// Done is closed when the approval has ended; Result is then valid.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Result returns the outcome; call it after Done is closed.
func (p *Pending) Result() Result { return p.result }

// Manager holds pending approvals. Set the fields before first use.
type Manager struct {
	// Timeout is how long an approval waits; DefaultTimeout when zero.
	Timeout time.Duration
	// Approvers returns how many can answer req: the approval-scoped
	// operators connected, and the people of the chat a channel's run
	// came from who may approve; with none, a request ends at once with
	// askFallback (spec §4.5). A nil Approvers counts as none: nobody can
	// answer.
	Approvers func(req Request) int
	// Emit receives events; it is called without the Manager's lock held
	// and must not block for long.
	Emit func(Event)
	// Store receives allow-always entries; nil disables persisting (the
	// result then carries PersistErr).
	Store *Store
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	pending map[string]*record
	closed  bool
}

type record struct {
	p     *Pending
	req   Request
	timer *time.Timer
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Manager) emit(e Event) {
	if m.Emit != nil {
		m.Emit(e)
	}
}

// Request registers an approval for req and returns at once. Wait on the
// result. req.Security, Ask and AskFallback must come from Resolve.
func (m *Manager) Request(req Request) (*Pending, error) {
	if strings.TrimSpace(req.Command) == "" {
		return nil, errors.New("requesting exec approval: empty command")
	}
	if !req.Security.Valid() || !req.Ask.Valid() || !req.AskFallback.Valid() {
		return nil, fmt.Errorf("requesting exec approval: security %q, ask %q, askFallback %q: use the values Resolve returned", req.Security, req.Ask, req.AskFallback)
	}
	timeout := m.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	now := m.now()
	p := &Pending{ID: newUUID(), CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(timeout).UnixMilli(), done: make(chan struct{})}
	if m.Approvers == nil || m.Approvers(req) <= 0 {
		// Nobody can answer: expire at once (decision null) and fall back.
		p.result = fallback(p.ID, req)
		close(p.done)
		return p, nil
	}
	r := &record{p: p, req: req}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if m.pending == nil {
		m.pending = map[string]*record{}
	}
	m.pending[p.ID] = r
	// The timer is armed under the lock so expire cannot miss the record.
	r.timer = time.AfterFunc(timeout, func() { m.expire(p.ID) })
	m.mu.Unlock()
	m.emit(Event{Name: EventRequested, Payload: RequestedPayload{ID: p.ID, Request: req, CreatedAtMs: p.CreatedAtMs, ExpiresAtMs: p.ExpiresAtMs}})
	return p, nil
}

// fallback applies askFallback to a request nobody answered (spec §4.5).
func fallback(id string, req Request) Result {
	switch req.AskFallback {
	case SecurityFull:
		return Result{ID: id, Run: true}
	case SecurityAllowlist:
		if req.Hit {
			return Result{ID: id, Run: true}
		}
		return Result{ID: id, Reason: "approval-timeout (allowlist-miss)"}
	default:
		return Result{ID: id, Reason: "approval-timeout"}
	}
}

func (m *Manager) expire(id string) {
	m.mu.Lock()
	r, ok := m.pending[id]
	if ok {
		delete(m.pending, id)
	}
	m.mu.Unlock()
	if !ok {
		return // resolved first
	}
	r.p.result = fallback(id, r.req)
	// The event goes out before the waiter is told: whoever sees the
	// request end has seen it resolved too.
	req := r.req
	m.emit(Event{Name: EventResolved, Payload: ResolvedPayload{ID: id, Ts: m.now().UnixMilli(), Request: &req}})
	close(r.p.done)
}

// shutdown ends every pending approval with reason "gateway-shutdown"
// (nothing runs) and refuses new ones. No event is emitted: the clients
// that would receive it are being disconnected.
func (m *Manager) shutdown() {
	m.mu.Lock()
	m.closed = true
	all := m.pending
	m.pending = nil
	m.mu.Unlock()
	for id, r := range all {
		r.timer.Stop()
		r.p.result = Result{ID: id, Reason: "gateway-shutdown"}
		close(r.p.done)
	}
}

// List returns the pending approvals, oldest first.
func (m *Manager) List() []RequestedPayload {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]RequestedPayload, 0, len(m.pending))
	for _, r := range m.pending {
		out = append(out, RequestedPayload{ID: r.p.ID, Request: r.req, CreatedAtMs: r.p.CreatedAtMs, ExpiresAtMs: r.p.ExpiresAtMs})
	}
	slices.SortFunc(out, func(a, b RequestedPayload) int {
		if c := a.CreatedAtMs - b.CreatedAtMs; c != 0 {
			return int(c)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Resolve ends the approval whose id is idOrPrefix or starts with it. The
// error texts are OpenClaw's (spec §2.1, §7.14).
func (m *Manager) Resolve(ctx context.Context, idOrPrefix, decision, resolvedBy string) error {
	switch decision {
	case DecisionAllowOnce, DecisionAllowAlways, DecisionDeny:
	default:
		return fmt.Errorf("invalid decision %q (use allow-once, allow-always or deny)", decision)
	}
	idOrPrefix = strings.ToLower(strings.TrimSpace(idOrPrefix))
	if idOrPrefix == "" {
		return errors.New("unknown or expired approval id: empty id")
	}
	m.mu.Lock()
	r, err := m.find(idOrPrefix)
	switch {
	case err != nil:
	case decision == DecisionAllowAlways && r.req.Ask == AskAlways:
		err = errors.New("allow-always is not offered when ask is always; use allow-once or deny")
	case slices.Contains(r.req.UnavailableDecisions, decision):
		err = fmt.Errorf("%s is not offered for this command (%s); use allow-once or deny", decision, r.req.UnavailableWhy)
	}
	if err != nil {
		m.mu.Unlock()
		return err
	}
	// Removing the record under the lock makes this the only resolve that
	// wins; a second one finds nothing.
	delete(m.pending, r.p.ID)
	r.timer.Stop()
	m.mu.Unlock()

	res := Result{ID: r.p.ID, Decision: decision}
	switch decision {
	case DecisionDeny:
		res.Reason = "user-denied"
	case DecisionAllowOnce:
		res.Run = true
	case DecisionAllowAlways:
		res.Run = true
		if r.req.Security != SecurityDeny {
			res.PersistErr = m.persist(ctx, r.req)
		}
	}
	r.p.result = res
	req := r.req
	m.emit(Event{Name: EventResolved, Payload: ResolvedPayload{ID: r.p.ID, Decision: &decision, ResolvedBy: resolvedBy, Ts: m.now().UnixMilli(), Request: &req}})
	close(r.p.done)
	return nil
}

// find looks an id or unique prefix up; m.mu is held.
func (m *Manager) find(prefix string) (*record, error) {
	if r, ok := m.pending[prefix]; ok {
		return r, nil
	}
	var found []*record
	for id, r := range m.pending {
		if strings.HasPrefix(id, prefix) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("unknown or expired approval id: %s", prefix)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("ambiguous approval id prefix; %s matches %d pending approvals, give more characters", prefix, len(found))
}

// persist writes allow-always entries. Under security allowlist: one per
// resolved executable path not yet in the agent's allowlist, and the
// exact-command marker, so a command whose safety depends on its
// arguments (an interpreter, a wrapper the analyser could not see
// through) is allowed only verbatim. Under security full only the marker:
// there the prompt came from something about this command (obfuscation),
// not from its executables, which full already allows.
func (m *Manager) persist(ctx context.Context, req Request) error {
	if m.Store == nil {
		return errors.New("persisting allow-always: no approvals store")
	}
	agent := req.AgentID
	if agent == "" {
		agent = "main"
	}
	nowMs := m.now().UnixMilli()
	_, err := m.Store.Update(ctx, func(f *File) error {
		a := f.Agents[agent]
		if a == nil {
			a = &Agent{}
			f.Agents[agent] = a
		}
		add := func(pattern, resolved string) {
			for i := range a.Allowlist {
				if a.Allowlist[i].Pattern == pattern {
					a.Allowlist[i].LastUsedAt, a.Allowlist[i].LastUsedCommand, a.Allowlist[i].LastResolvedPath = nowMs, req.Command, resolved
					return
				}
			}
			a.Allowlist = append(a.Allowlist, Entry{Pattern: pattern, Source: DecisionAllowAlways, LastUsedAt: nowMs, LastUsedCommand: req.Command, LastResolvedPath: resolved})
		}
		var paths []string
		if req.Security == SecurityAllowlist {
			paths = req.ResolvedPaths
		}
		for _, p := range paths {
			if !strings.HasPrefix(p, "/") {
				return fmt.Errorf("resolved path %q is not absolute; the analyser must resolve it", p)
			}
			add(p, p)
		}
		add(CommandMarker(req.Command), req.ResolvedPath)
		return nil
	})
	if err != nil {
		return fmt.Errorf("persisting allow-always: %w", err)
	}
	return nil
}
