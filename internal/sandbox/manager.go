package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"talon/internal/contain"
)

// DefaultCheckTTL is how long a Manager trusts a backend's Check result.
// Short, so that fixing a backend (starting dockerd) takes effect soon, yet
// long enough that a busy gateway does not probe it on every run.
const DefaultCheckTTL = 10 * time.Second

// DefaultIdleTimeout is how long an unused sandbox stays open. Sessions
// come and go (every stateless request is a session of its own), so a
// sandbox per session must not live as long as the gateway.
const DefaultIdleTimeout = 15 * time.Minute

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
	// IdleTimeout closes a sandbox no command has used for that long (a
	// docker container, bwrap's files); the next command opens it again,
	// its workspace intact. 0 means DefaultIdleTimeout; negative, as soon
	// as no command uses it. Idle sandboxes are closed when a command
	// opens any sandbox of the manager: no timer runs.
	IdleTimeout time.Duration
	// Confine, when set, is the directory every path of the manager must
	// really be in: a tenant's. Each Prepare resolves the agent
	// workspace, the sandbox root and every mount source, symbolic links
	// followed, and refuses one that leads out (a link a sandboxed
	// command planted, a workspace the config put there); the sandbox
	// then uses the resolved paths, and Workspace opens through an
	// os.Root of this directory. A confined manager never runs commands
	// on the host.
	Confine string
	// Checks, when set, shares backends' passed checks with the other
	// managers given it (nil: this manager's own).
	Checks *Checks

	mu       sync.Mutex
	backends map[string]*backendState // by name and settings
	boxes    map[string]*box          // by Spec.ID
	seeded   map[string]bool          // sandbox workspaces seeded, by root
	// hostSpecs are HostSpec's results by agent and workspace: every
	// unsandboxed turn needs one, and its ID is a SHA-256.
	hostSpecs map[[2]string]Spec
	closed    bool
}

// Checks remembers which backends passed their Check, and when, for
// every Manager given it: a process whose managers come and go (a
// gateway's tenants, opened on demand) probes a backend once per
// CheckTTL, not once per manager. Only passes are shared: a failure may
// be one moment's (no descriptor left to spawn the probe) and the next
// manager checks again. Safe for concurrent use; nil shares nothing.
type Checks struct {
	mu sync.Mutex
	at map[string]time.Time // by backend name and settings
}

// NewChecks returns an empty set of shared checks.
func NewChecks() *Checks { return &Checks{at: map[string]time.Time{}} }

// passed says the backend key passed a check less than ttl ago.
func (c *Checks) passed(key string, ttl time.Duration) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[key]
	return ok && time.Since(at) < ttl
}

// pass records that the backend key passed its check now.
func (c *Checks) pass(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[key] = time.Now()
}

type backendState struct {
	key       string // the backend's name and settings
	b         Backend
	checkedAt time.Time
	checkErr  error
}

// box is one sandbox, open or opening; ready closes when Open returned.
// active and lastUsed are guarded by the manager's mutex.
type box struct {
	ready    chan struct{}
	sb       Sandbox
	err      error
	active   int // commands started and not yet waited for, and Starts under way
	lastUsed time.Time
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
	// Confined first: making the directories would follow a link out.
	plan := *p
	if err := m.confine(&plan); err != nil {
		return fail(err)
	}
	if err := m.layout(&plan); err != nil {
		return fail(err)
	}
	return &Session{plan: plan, backend: b, m: m}, nil
}

// confine replaces p's host paths by where they really are, refusing one
// outside m.Confine; a manager without Confine leaves p as it is.
func (m *Manager) confine(p *Plan) error {
	if m.Confine == "" {
		return nil
	}
	real := func(what, path string) (string, error) {
		r, err := contain.Resolved(m.Confine, path)
		if err != nil {
			return "", fmt.Errorf("%s of agent %s: %w; Talon refuses a workspace that leads out of the tenant directory", what, p.AgentID, err)
		}
		return r, nil
	}
	var err error
	if p.AgentWorkspace, err = real("the workspace", p.AgentWorkspace); err != nil {
		return err
	}
	if p.Spec.Root, err = real("the sandbox workspace", p.Spec.Root); err != nil {
		return err
	}
	p.Spec.Mounts = slices.Clone(p.Spec.Mounts)
	for i := range p.Spec.Mounts {
		if p.Spec.Mounts[i].Source, err = real("mount "+p.Spec.Mounts[i].Target, p.Spec.Mounts[i].Source); err != nil {
			return err
		}
	}
	p.Spec.Real = true
	return nil
}

// Workspace opens dir, creating it (0700) when it does not exist, as the
// root of a run's file tools. A confined manager opens it through an
// os.Root of Confine, so that no symbolic link on the way, now or later,
// leads out of the tenant directory.
func (m *Manager) Workspace(dir string) (*os.Root, error) {
	if m == nil || m.Confine == "" {
		// The workspace exists but on a first run: try it before
		// creating it, a stat fewer per turn.
		root, err := os.OpenRoot(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			root, err = os.OpenRoot(dir)
		}
		return root, err
	}
	rel, ok := contain.Within(m.Confine, dir)
	if !ok || rel == "." {
		return nil, &contain.OutsideError{Dir: m.Confine, Path: dir}
	}
	tenant, err := os.OpenRoot(m.Confine)
	if err != nil {
		return nil, err
	}
	defer tenant.Close()
	root, err := tenant.OpenRoot(rel)
	if errors.Is(err, fs.ErrNotExist) {
		if err := tenant.MkdirAll(rel, 0o700); err != nil {
			return nil, err
		}
		root, err = tenant.OpenRoot(rel)
	}
	return root, err
}

// Host prepares an unsandboxed run: its commands run on the host, in the
// agent workspace, through the host backend, whose Sandbox reports it is
// not isolated (tools decide what they allow there).
func (m *Manager) Host(p *Plan) (*Session, error) {
	if p.Sandboxed {
		return nil, &Error{SessionKey: p.SessionKey, Backend: BackendHost, Err: fmt.Errorf("session %s is sandboxed: it must not run on the host", p.SessionKey)}
	}
	if m.Confine != "" {
		return nil, &Error{SessionKey: p.SessionKey, Backend: BackendHost, Err: fmt.Errorf("session %s of a tenant is not sandboxed (%s): a tenant's commands never run on the host", p.SessionKey, p.Reason)}
	}
	hp := *p
	hp.Backend, hp.BackendSettings, hp.Spec = Setting{Value: BackendHost}, nil, m.hostSpec(p)
	b, err := m.build(&hp)
	if err != nil {
		return nil, &Error{SessionKey: p.SessionKey, Backend: BackendHost, Err: err}
	}
	if err := os.MkdirAll(hp.Spec.Root, 0o700); err != nil {
		return nil, fmt.Errorf("creating the agent workspace of %s: %w", p.AgentID, err)
	}
	return &Session{plan: hp, backend: b, m: m}, nil
}

// hostSpec is p.HostSpec(), computed once per agent and workspace. The
// spec has no mounts, so the copies handed out share no memory.
func (m *Manager) hostSpec(p *Plan) Spec {
	k := [2]string{p.AgentID, p.AgentWorkspace}
	m.mu.Lock()
	s, ok := m.hostSpecs[k]
	m.mu.Unlock()
	if ok {
		return s
	}
	s = p.HostSpec()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hostSpecs == nil || len(m.hostSpecs) >= maxHostSpecs {
		m.hostSpecs = map[[2]string]Spec{} // agents come and go with the config: start over
	}
	m.hostSpecs[k] = s
	return s
}

// maxHostSpecs bounds hostSpecs: a config's agents, many times over.
const maxHostSpecs = 1024

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
	settings := []byte("null") // json.Marshal's, without its cost on every host turn
	if p.BackendSettings != nil {
		var err error
		if settings, err = json.Marshal(p.BackendSettings); err != nil {
			return nil, fmt.Errorf("encoding its settings: %w", err)
		}
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
		st = &backendState{key: key, b: b}
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
	if m.Checks.passed(st.key, ttl) {
		m.mu.Lock()
		st.checkedAt, st.checkErr = time.Now(), nil
		m.mu.Unlock()
		return b, nil
	}
	// Checked without the lock: a check may take a while (a daemon to
	// reach), and two runs checking at once is harmless.
	err = b.Check(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err() // a run that went away proves nothing about the backend
	}
	if err == nil {
		m.Checks.pass(st.key)
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

// acquire returns the open box of spec, opening it on first use, and
// counts the caller as active in it until release. A failed open is not
// kept: the next command tries again. It also closes the boxes idle for
// longer than IdleTimeout.
func (m *Manager) acquire(ctx context.Context, b Backend, spec Spec) (*box, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the gateway is shutting down")
	}
	idle := m.idle(time.Now())
	bx, ok := m.boxes[spec.ID]
	if !ok {
		bx = &box{ready: make(chan struct{})}
		m.boxes[spec.ID] = bx
	}
	bx.active++
	m.mu.Unlock()
	for _, old := range idle {
		old.sb.Close() // nobody uses it: an error has no one to tell
	}
	if ok {
		select {
		case <-bx.ready:
			if bx.err != nil {
				m.release(bx)
				return nil, bx.err
			}
			return bx, nil
		case <-ctx.Done():
			m.release(bx)
			return nil, ctx.Err()
		}
	}
	bx.sb, bx.err = b.Open(ctx, spec)
	if bx.err != nil {
		bx.err = fmt.Errorf("opening %s sandbox %s: %w", b.Name(), spec.ID, bx.err)
	}
	m.mu.Lock()
	if bx.err == nil && m.closed {
		// Close ran while this one opened and could not close it.
		bx.sb.Close()
		bx.sb, bx.err = nil, errors.New("the gateway is shutting down")
	}
	if bx.err != nil {
		bx.active--
		if m.boxes[spec.ID] == bx {
			delete(m.boxes, spec.ID)
		}
	}
	m.mu.Unlock()
	close(bx.ready)
	if bx.err != nil {
		return nil, bx.err
	}
	return bx, nil
}

// release ends one use of a box.
func (m *Manager) release(bx *box) {
	m.mu.Lock()
	bx.active--
	bx.lastUsed = time.Now()
	m.mu.Unlock()
}

// idle removes and returns the open boxes nobody has used for longer than
// IdleTimeout. The caller holds m.mu, and closes them after unlocking.
func (m *Manager) idle(now time.Time) []*box {
	limit := m.IdleTimeout
	if limit == 0 {
		limit = DefaultIdleTimeout
	}
	var out []*box
	for id, bx := range m.boxes {
		select {
		case <-bx.ready:
		default:
			continue
		}
		if bx.err == nil && bx.active == 0 && (limit < 0 || now.Sub(bx.lastUsed) > limit) {
			delete(m.boxes, id)
			out = append(out, bx)
		}
	}
	return out
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
// the same scope has. The sandbox stays open at least until the command's
// Wait returns.
func (s *Session) Start(ctx context.Context, cmd Command) (Process, error) {
	bx, err := s.m.acquire(ctx, s.backend, s.plan.Spec)
	if err != nil {
		return nil, err
	}
	p, err := bx.sb.Start(ctx, cmd)
	if err != nil {
		s.m.release(bx)
		return nil, err
	}
	return &process{Process: p, done: func() { s.m.release(bx) }}, nil
}

// process releases its box once, when Wait returns.
type process struct {
	Process
	once sync.Once
	done func()
}

func (p *process) Wait() (Exit, error) {
	exit, err := p.Process.Wait()
	p.once.Do(p.done)
	return exit, err
}

// Close releases nothing: the manager owns the sandbox, which other runs
// of the scope share, and closes it on shutdown.
func (s *Session) Close() error { return nil }
