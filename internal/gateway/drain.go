package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"talon/internal/atomicfile"
	"talon/internal/authlimit"
	"talon/internal/config"
	"talon/internal/tenantid"
	"talon/internal/tools"
	"talon/protocol"
)

// A tenant moving to another node is drained here: its new work refused,
// its runs finished (or aborted at a bound), its handles closed, so that
// its directory is a consistent copy (package node exports it). It stays
// drained — every way in answers "the tenant is moving" — until it is
// resumed (the move failed) or deleted (the move succeeded), across a
// restart of the gateway too (DrainMarker): a tenant that served again
// after its copy was taken would take turns its new node never sees.

// errMoving is a drained tenant's lookup.
var errMoving = errors.New("the tenant is moving")

// movingText is what a drained tenant's clients are told.
const movingText = "the tenant is moving to another node; retry shortly"

// movingRetry is the Retry-After of a drained tenant: a move takes the
// time to copy its directory.
const movingRetry = 5 * time.Second

// drainPoll is how often a drain looks whether the tenant's runs ended.
const drainPoll = 20 * time.Millisecond

// DrainMarker is the file in a drained tenant's directory that keeps it
// drained when the gateway starts again; an export leaves it out.
const DrainMarker = ".draining"

// drains are the tenants drained or being drained, by id.
type drains struct {
	once sync.Once // the markers read (loadDrains)
	mu   sync.Mutex
	m    map[string]*drain
}

// drain is one tenant's.
type drain struct {
	// secrets are the tenant's gateway secrets when the drain began: a
	// client is told that the tenant is moving only once it proves it is
	// the tenant's, as it would be told anything else.
	secrets []string
	// Hooks and Channels say the tenant served HTTP hooks and channel
	// accounts: only then do their paths answer 503 while it moves, as
	// only then did they answer anything but 404 before. They are
	// DrainMarker's content.
	Hooks    bool          `json:"hooks"`
	Channels bool          `json:"channels"`
	done     chan struct{} // closed when the handles are closed
}

func (d *drains) get(id string) *drain {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[id]
}

// put marks id drained unless it is; it returns the drain in force.
func (d *drains) put(id string, dr *drain) (*drain, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.m[id]; old != nil {
		return old, false
	}
	if d.m == nil {
		d.m = map[string]*drain{}
	}
	d.m[id] = dr
	return dr, true
}

func (d *drains) forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, id)
}

// drainOf is tenant id's drain, nil when it has none; the first call
// reads the markers a previous run of the gateway left.
func (s *Server) drainOf(id string) *drain {
	s.drains.once.Do(s.loadDrains)
	return s.drains.get(id)
}

// Draining reports whether tenant id is drained or being drained.
func (s *Server) Draining(id string) bool { return id != "" && s.drainOf(id) != nil }

// DrainTenant drains tenant id: from now on its HTTP requests, WebSocket
// connects and methods, channel webhooks and hooks are refused (503 with
// Retry-After, UNAVAILABLE), its channels and cron jobs stop; its runs
// in flight get until Options.DrainTimeout (or ctx's end) to finish, then
// are aborted; then its WebSocket clients are closed (1012, "the tenant
// is moving"), its background commands stopped and its handles closed —
// the store checkpointed on close. A tenant drained already is left as it
// is (a drain under way is waited for).
func (s *Server) DrainTenant(ctx context.Context, id string) error {
	if !tenantid.Valid(id) {
		return fmt.Errorf("draining: %q is not a tenant id", id)
	}
	if dr := s.drainOf(id); dr != nil {
		return waitDrain(ctx, dr)
	}
	t, err := s.lookup(id)
	if err != nil {
		return fmt.Errorf("draining tenant %q: %w", id, err)
	}
	dr := &drain{done: make(chan struct{})}
	if rt, err := t.current(s); err == nil {
		dr.secrets = t.token(rt.file.Config)
		dr.Hooks = rt.file.Config.Hooks.Active()
	}
	t.mu.Lock()
	dr.Channels = t.channels != nil
	t.mu.Unlock()
	if got, ok := s.drains.put(id, dr); !ok {
		return waitDrain(ctx, got)
	}
	if err := writeMarker(t.dir, dr); err != nil {
		s.drains.forget(id)
		close(dr.done)
		return fmt.Errorf("draining tenant %q: %w", id, err)
	}
	s.log.Info("draining tenant", "tenant", id)
	// No new work from the sources that need no client: a channel's
	// message not taken now is taken on the tenant's new node.
	s.closeChannels(t)
	s.closeCron(t)
	wait, cancel := context.WithTimeout(ctx, s.opts.DrainTimeout)
	idle := s.waitIdle(wait, t)
	cancel()
	s.tenants.mu.Lock()
	if s.tenants.m[id] == t {
		delete(s.tenants.m, id)
	}
	s.tenants.mu.Unlock()
	if !idle {
		s.log.Warn("draining tenant: aborting the runs still going", "tenant", id)
	}
	s.closeMoved(t)
	close(dr.done)
	s.log.Info("tenant drained", "tenant", id)
	return nil
}

// writeMarker records the drain in dir, durably.
func writeMarker(dir string, dr *drain) error {
	b, err := json.Marshal(dr)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, DrainMarker), b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", DrainMarker, err)
	}
	return nil
}

// loadDrains drains again the tenants whose directories have
// DrainMarker, at the first look at any drain (a tenant's first lookup,
// before its channels and cron jobs start): a gateway restarted in the
// middle of a move keeps them drained. Their secrets are read from their
// configs.
func (s *Server) loadDrains() {
	dirs, _ := os.ReadDir(filepath.Join(s.opts.StateDir, "tenants"))
	for _, d := range dirs {
		id := d.Name()
		if !d.IsDir() || !tenantid.Valid(id) {
			continue
		}
		dir := filepath.Join(s.opts.StateDir, "tenants", id)
		b, err := os.ReadFile(filepath.Join(dir, DrainMarker))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dr := &drain{done: make(chan struct{})}
		close(dr.done)
		if err != nil || json.Unmarshal(b, dr) != nil {
			// Unreadable: drained all the same, every path refused.
			s.log.Error("reading a drained tenant's marker", "tenant", id, "err", err)
		}
		if path, ok := config.Find(dir); ok {
			if f, err := config.Load(path); err == nil {
				dr.secrets = (&tenant{id: id}).token(f.Config)
			}
		}
		s.drains.put(id, dr)
		s.log.Info("tenant still drained (a move was under way)", "tenant", id)
	}
}

func waitDrain(ctx context.Context, dr *drain) error {
	select {
	case <-dr.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the drain under way: %w", ctx.Err())
	}
}

// closeMoved ends what t still runs and closes its handles, as a deleted
// tenant's are (dropTenant), telling its clients it moves.
func (s *Server) closeMoved(t *tenant) {
	t.kill(errMoving)
	abortRuns(context.Background(), s.runs.forget(t), errMoving)
	// The HTTP runs, hooks and heartbeats bound to t end with t.life:
	// their session locks go when they have.
	wait, cancel := context.WithTimeout(context.Background(), abortWait)
	s.waitIdle(wait, t)
	cancel()
	for _, c := range s.hubs.of(t) {
		c.close(protocol.CloseRestart, "the tenant is moving")
	}
	for _, tool := range s.tools.All() {
		if f, ok := tool.(tools.Forgetter); ok {
			f.Forget(t.dir)
		}
	}
	s.closeTenant(t)
}

// waitIdle waits until no run of t holds or waits for a session lock
// (every run does: HTTP, WebSocket, channel, cron, hook), or ctx ends;
// it reports whether t went idle.
func (s *Server) waitIdle(ctx context.Context, t *tenant) bool {
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for s.locks.busy(t.id) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// busy reports whether a session of tenant id has a lock.
func (l *sessionLocks) busy(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if k.tenant == id {
			return true
		}
	}
	return false
}

// ResumeTenant ends tenant id's drain (a move that failed), or opens a
// tenant that arrived (imported): in both its channels and cron jobs
// start as at the gateway's start, rather than at its first request.
func (s *Server) ResumeTenant(id string) error {
	if !tenantid.Valid(id) {
		return fmt.Errorf("resuming: %q is not a tenant id", id)
	}
	if dr := s.drainOf(id); dr != nil {
		<-dr.done // a drain under way ends first; it is bounded
		err := os.Remove(filepath.Join(s.opts.StateDir, "tenants", id, DrainMarker))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("resuming tenant %q: %w", id, err)
		}
		s.drains.forget(id)
		s.log.Info("tenant resumed", "tenant", id)
	}
	t, err := s.lookup(id)
	if err != nil {
		return fmt.Errorf("resuming tenant %q: %w", id, err)
	}
	s.srvMu.Lock()
	serving := s.httpSrv != nil && !s.shut
	s.srvMu.Unlock()
	if !serving {
		return nil // Serve starts them
	}
	if needsCron(t.dir) {
		s.loadCron(t)
	}
	if needsChannels(t.dir) {
		s.loadChannels(t)
	}
	return nil
}

// WarmTenants is how many tenants have their handles open (warm.go).
func (s *Server) WarmTenants() int { return s.warm.len() }

// movingAuthorized reports whether secret is one of the drained tenant
// id's, under the failed-auth throttle as checkSecret's.
func (s *Server) movingAuthorized(addr, id, secret string) (ok bool, wait time.Duration) {
	scope := authlimit.Tenant(id)
	if wait := s.limit.Wait(addr, scope); wait > 0 {
		return false, wait
	}
	if dr := s.drainOf(id); dr != nil {
		for _, want := range dr.secrets {
			if subtle.ConstantTimeCompare([]byte(want), []byte(secret)) == 1 {
				ok = true
			}
		}
	}
	if !ok && secret != "" {
		s.limit.Fail(addr, scope)
	}
	return ok, 0
}

// refuseMoving answers an HTTP request to a drained tenant: 503 with
// Retry-After for its own clients, the usual 401 (or 429) for anyone
// else, who learns nothing of it.
func (s *Server) refuseMoving(w http.ResponseWriter, r *http.Request, id string) {
	ok, wait := s.movingAuthorized(authlimit.Addr(r), id, bearer(r))
	switch {
	case wait > 0:
		rateLimited(w, wait)
	case !ok:
		writeError(w, http.StatusUnauthorized, errUnauthorized, "Unauthorized")
	default:
		unavailable(w)
	}
}

// movingServes reports whether drained tenant id served hooks (or, with
// channels, channel accounts) when its drain began.
func (s *Server) movingServes(id string, channels bool) bool {
	dr := s.drainOf(id)
	if dr == nil {
		return false
	}
	if channels {
		return dr.Channels
	}
	return dr.Hooks
}

// unavailable is a drained tenant's 503.
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", authlimit.RetryAfter(movingRetry))
	writeError(w, http.StatusServiceUnavailable, errAPI, movingText)
}

// movingWS is the error of a WebSocket request to a drained tenant.
func movingWS() *protocol.Error {
	return &protocol.Error{Code: protocol.CodeUnavailable, Message: movingText, Retryable: true, RetryAfterMs: movingRetry.Milliseconds()}
}

// needsCron says a tenant directory must be handed to the scheduler when
// the gateway starts: it has jobs (cronMarker), a heartbeat block or
// internal hooks.
func needsCron(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, cronMarker)); err == nil {
		return true
	}
	return mentions(dir, "heartbeat", "internal")
}

// needsChannels says a tenant directory's config has a channel block.
func needsChannels(dir string) bool { return mentions(dir, "channels") }
