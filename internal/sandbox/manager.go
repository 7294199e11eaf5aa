package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// DefaultCheckTTL is how long a Manager trusts a backend's Check result.
// Short, so that fixing a backend (starting dockerd) takes effect soon, yet
// long enough that a busy gateway does not probe it on every run.
const DefaultCheckTTL = 10 * time.Second

// Error is a sandboxed run that cannot start: its sandbox config does not
// resolve, or its backend cannot run here. The message names the backend,
// the reason and the fix; it is meant for the operator and the client.
type Error struct {
	SessionKey string
	Backend    string // "" when the config failed before a backend was chosen
	Err        error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Manager opens and keeps the sandboxes of one gateway tenant. Sandboxes
// open lazily, on the first command, one per Spec.ID: runs of the same
// scope share one. Close closes them all. A Manager is safe for concurrent
// use.
type Manager struct {
	// CheckTTL is how long a Check result is trusted; 0 means
	// DefaultCheckTTL.
	CheckTTL time.Duration

	mu       sync.Mutex
	backends map[string]*backendState // by name and settings
	boxes    map[string]*box          // by Spec.ID
	seeded   map[string]bool          // sandbox workspaces seeded, by root
	closed   bool
}

type backendState struct {
	b         Backend
	checkedAt time.Time
	checkErr  error
}

// box is one sandbox, open or opening; ready closes when Open returned.
type box struct {
	ready chan struct{}
	sb    Sandbox
	err   error
}

// NewManager returns an empty manager.
func NewManager() *Manager {
	return &Manager{backends: map[string]*backendState{}, boxes: map[string]*box{}, seeded: map[string]bool{}}
}

// Prepare makes a sandboxed plan's session ready to run: its backend passes
// Check (or the run fails with an *Error saying which backend, why and how
// to fix it; never a fall back to the host), its workspace exists and, on
// first use, is seeded from the agent workspace. The sandbox itself opens
// on the first command started through the returned Session.
func (m *Manager) Prepare(ctx context.Context, p *Plan) (*Session, error) {
	fail := func(err error) (*Session, error) {
		return nil, &Error{SessionKey: p.SessionKey, Backend: p.Backend.Value, Err: err}
	}
	if !p.Sandboxed {
		return fail(fmt.Errorf("preparing sandbox: session %s is not sandboxed", p.SessionKey))
	}
	b, err := m.backend(ctx, p)
	if err != nil {
		return fail(fmt.Errorf("session %s is sandboxed (%s), but sandbox backend %q cannot run here: %w; "+
			"Talon does not fall back to running on the host: fix the backend, or choose another with %s",
			p.SessionKey, p.Reason, p.Backend.Value, err, backendKeyOf(p.Backend.Key)))
	}
	if err := m.layout(p); err != nil {
		return fail(err)
	}
	return &Session{plan: *p, backend: b, m: m}, nil
}

// Host prepares an unsandboxed run: its commands run on the host, in the
// agent workspace, through the host backend, whose Sandbox reports it is
// not isolated (tools decide what they allow there).
func (m *Manager) Host(p *Plan) (*Session, error) {
	if p.Sandboxed {
		return nil, &Error{SessionKey: p.SessionKey, Backend: BackendHost, Err: fmt.Errorf("session %s is sandboxed: it must not run on the host", p.SessionKey)}
	}
	hp := *p
	hp.Backend, hp.BackendSettings, hp.Spec = Setting{Value: BackendHost}, nil, p.HostSpec()
	b, err := m.build(&hp)
	if err != nil {
		return nil, &Error{SessionKey: p.SessionKey, Backend: BackendHost, Err: err}
	}
	if err := os.MkdirAll(hp.Spec.Root, 0o700); err != nil {
		return nil, fmt.Errorf("creating the agent workspace of %s: %w", p.AgentID, err)
	}
	return &Session{plan: hp, backend: b, m: m}, nil
}

func backendKeyOf(key string) string {
	if key == "" {
		return "agents.defaults.sandbox.backend"
	}
	return key
}

// build returns the plan's backend, built once per name and settings.
func (m *Manager) build(p *Plan) (Backend, error) {
	st, err := m.state(p)
	if err != nil {
		return nil, err
	}
	return st.b, nil
}

func (m *Manager) state(p *Plan) (*backendState, error) {
	settings, err := json.Marshal(p.BackendSettings)
	if err != nil {
		return nil, fmt.Errorf("encoding its settings: %w", err)
	}
	key := p.Backend.Value + "\x00" + string(settings)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("the gateway is shutting down")
	}
	st := m.backends[key]
	if st == nil {
		b, err := New(p.Backend.Value, p.BackendSettings)
		if err != nil {
			return nil, err
		}
		st = &backendState{b: b}
		m.backends[key] = st
	}
	return st, nil
}

// backend builds the plan's backend and checks it, at most once per
// CheckTTL.
func (m *Manager) backend(ctx context.Context, p *Plan) (Backend, error) {
	st, err := m.state(p)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	ttl := m.CheckTTL
	if ttl <= 0 {
		ttl = DefaultCheckTTL
	}
	fresh := !st.checkedAt.IsZero() && time.Since(st.checkedAt) < ttl
	b, cached := st.b, st.checkErr
	m.mu.Unlock()
	if !b.Isolated() {
		return nil, errors.New("it does not isolate commands; only sandbox mode \"off\" may use it")
	}
	if fresh {
		return b, cached
	}
	// Checked without the lock: a check may take a while (a daemon to
	// reach), and two runs checking at once is harmless.
	err = b.Check(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err() // a run that went away proves nothing about the backend
	}
	m.mu.Lock()
	st.checkedAt, st.checkErr = time.Now(), err
	m.mu.Unlock()
	return b, err
}

// layout creates the sandbox workspace (and the agent workspace a mount
// needs) and seeds the sandbox workspace the first time this manager uses
// it.
func (m *Manager) layout(p *Plan) error {
	if err := os.MkdirAll(p.AgentWorkspace, 0o700); err != nil {
		return fmt.Errorf("creating the agent workspace of %s: %w", p.AgentID, err)
	}
	if err := os.MkdirAll(p.Spec.Root, 0o700); err != nil {
		return fmt.Errorf("creating sandbox workspace %s: %w", p.Spec.Root, err)
	}
	if !p.Seed {
		return nil
	}
	m.mu.Lock()
	done := m.seeded[p.Spec.Root]
	m.mu.Unlock()
	if done {
		return nil
	}
	if _, err := Seed(p.AgentWorkspace, p.Spec.Root); err != nil {
		return err
	}
	m.mu.Lock()
	m.seeded[p.Spec.Root] = true
	m.mu.Unlock()
	return nil
}

// open returns the open sandbox of spec, opening it on first use. A failed
// open is not kept: the next command tries again.
func (m *Manager) open(ctx context.Context, b Backend, spec Spec) (Sandbox, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the gateway is shutting down")
	}
	bx, ok := m.boxes[spec.ID]
	if !ok {
		bx = &box{ready: make(chan struct{})}
		m.boxes[spec.ID] = bx
	}
	m.mu.Unlock()
	if ok {
		select {
		case <-bx.ready:
			if bx.err != nil {
				return nil, bx.err
			}
			return bx.sb, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	bx.sb, bx.err = b.Open(ctx, spec)
	if bx.err != nil {
		bx.err = fmt.Errorf("opening %s sandbox %s: %w", b.Name(), spec.ID, bx.err)
	}
	m.mu.Lock()
	if bx.err != nil {
		delete(m.boxes, spec.ID)
	} else if m.closed {
		// Close ran while this one opened: it is not in the list Close
		// closed, so close it here.
		bx.sb.Close()
		bx.sb, bx.err = nil, errors.New("the gateway is shutting down")
		delete(m.boxes, spec.ID)
	}
	m.mu.Unlock()
	close(bx.ready)
	return bx.sb, bx.err
}

// Open reports the sandboxes open now, by Spec.ID.
func (m *Manager) Open() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for id, bx := range m.boxes {
		select {
		case <-bx.ready:
			if bx.err == nil {
				ids = append(ids, id)
			}
		default:
		}
	}
	return ids
}

// Close closes every open sandbox and refuses new ones. Sandboxes still
// opening are closed when their Open returns.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	boxes := m.boxes
	m.boxes = map[string]*box{}
	m.mu.Unlock()
	var errs []error
	for id, bx := range boxes {
		select {
		case <-bx.ready:
		default:
			continue // still opening: open sees m.closed and closes it
		}
		if bx.err == nil && bx.sb != nil {
			if err := bx.sb.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing sandbox %s: %w", id, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Session is a prepared sandbox of one run: the plan it came from and a
// Sandbox that opens the real one on its first command. It is safe for
// concurrent use.
type Session struct {
	plan    Plan
	backend Backend
	m       *Manager
}

var _ Sandbox = (*Session)(nil)

// Plan is the resolved plan of this sandbox.
func (s *Session) Plan() *Plan { return &s.plan }

// Isolated is the backend's Isolated: false only for the host.
func (s *Session) Isolated() bool { return s.backend.Isolated() }

// Start runs cmd in the session's sandbox, opening it first if no run of
// the same scope has.
func (s *Session) Start(ctx context.Context, cmd Command) (Process, error) {
	sb, err := s.m.open(ctx, s.backend, s.plan.Spec)
	if err != nil {
		return nil, err
	}
	return sb.Start(ctx, cmd)
}

// Close releases nothing: the manager owns the sandbox, which other runs
// of the scope share, and closes it on shutdown.
func (s *Session) Close() error { return nil }
