package gateway

import (
	"errors"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"talon/internal/authlimit"
	"talon/internal/tools"
	"talon/internal/warm"
	"talon/protocol"
)

// A tenant's handles (store, memory index, plugins and MCP servers,
// sandboxes, approvals, compiled runtime) open on its first use and close
// again when it has been idle for Options.TenantIdle, or sooner when a
// cold tenant needs the room: at most Options.MaxWarmTenants are warm at
// once, and a warm one opens only while the process keeps a reserve of
// descriptors free (package warm decides which). What survives a close
// is the tenant's small record in s.tenants: its id, directory, budget
// gate, queued system events, its heartbeats' schedule and, when it has
// cron jobs, a timer that opens it again before the next is due. The
// operator's own tenant is never closed.
//
// A tenant stays warm while it is pinned (enter: an HTTP request, a
// WebSocket client, a cron run, a heartbeat), has channel connections, a
// run, a pending approval, a background command or an active subagent,
// or a cron job or heartbeat due within the horizon.

// filesPerTenant is the descriptors a tenant holds once it has talked,
// measured: its store's two connections (talon.db, -wal, -shm and the
// second's talon.db, -wal) and the memory index (memory.sqlite, -wal,
// -shm).
const filesPerTenant = 8

// admitWait bounds how long a cold tenant waits for room when every warm
// one is busy; then its request is refused with errUnavailable.
const admitWait = 2 * time.Second

// retryAfter is what a refused client is told to wait.
const retryAfter = time.Second

// dueLead is how far ahead due cron work or a heartbeat keeps a tenant
// warm (the idle timeout when that is shorter). Opening a tenant takes
// milliseconds and a closed one's wake timer opens it half a lead before
// its next job, so a minute is margin enough; as long as the idle
// timeout, it kept a tenant with a heartbeat every 30 minutes warm two
// thirds of the time (10 minutes before each, 10 after), and a few
// hundred such tenants held every warm place.
const dueLead = time.Minute

// errUnavailable is a tenant that cannot open now for want of room or
// descriptors; nothing of it was left half open and the client retries.
var errUnavailable = errors.New("the gateway has no room to open this tenant now; retry shortly")

// warmSet is the tenants whose handles are open, other than the
// operator's.
type warmSet struct {
	mu      sync.Mutex
	members map[*tenant]struct{}
	waiting int           // admissions waiting for room
	changed chan struct{} // closed and remade when room may have come
	files   warm.Files
	max     int
	wait    time.Duration // admitWait; shorter in tests
	stop    chan struct{} // ends the sweeper
	stopped bool
}

// init sets the bounds: maxWarm, or what the file limit allows.
func (w *warmSet) init(maxWarm int) {
	w.members, w.changed, w.stop = map[*tenant]struct{}{}, make(chan struct{}), make(chan struct{})
	w.wait = admitWait
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		w.files = warm.Files{Limit: int(min(lim.Cur, 1<<30)), PerTenant: filesPerTenant}
	}
	switch {
	case maxWarm > 0:
		w.max = maxWarm
	case w.files.Limit > 0:
		w.max = w.files.Max()
	default: // no known limit: only idleness closes tenants
		w.max = math.MaxInt
	}
}

// join makes t a member when it is one or there is room; otherwise it
// counts the caller as waiting (unwait) and returns the channel closed
// when room may have come.
func (w *warmSet) join(t *tenant) (bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.members[t]; ok {
		return true, nil
	}
	if len(w.members) == 0 || len(w.members) < w.max && w.roomForFiles() {
		w.members[t] = struct{}{}
		return true, nil
	}
	w.waiting++
	return false, w.changed
}

// unwait counts out an admission that join counted as waiting.
func (w *warmSet) unwait() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting--
}

// roomForFiles says one more tenant leaves the reserve of descriptors
// free; without a known limit only the count bounds.
func (w *warmSet) roomForFiles() bool {
	if w.files.Limit == 0 {
		return true
	}
	n, err := openFiles()
	return err == nil && w.files.Room(n)
}

func (w *warmSet) has(t *tenant) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.members[t]
	return ok
}

// leave drops t and wakes the admissions waiting for room.
func (w *warmSet) leave(t *tenant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.members, t)
	w.signalLocked()
}

// signal wakes the admissions waiting for room: a pin was released.
func (w *warmSet) signal() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.signalLocked()
}

func (w *warmSet) signalLocked() {
	if w.waiting > 0 {
		close(w.changed)
		w.changed = make(chan struct{})
	}
}

func (w *warmSet) snapshot() []*tenant {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*tenant, 0, len(w.members))
	for t := range w.members {
		out = append(out, t)
	}
	return out
}

func (w *warmSet) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.members)
}

// openFiles counts the process's open descriptors.
func openFiles() (int, error) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return len(names) - 1, err // less the one reading it
}

// enter pins t for a use (a request, a connection, a run): it is not
// closed until release, which is safe to call more than once.
func (s *Server) enter(t *tenant) (release func()) {
	t.mu.Lock()
	t.waitCooled()
	t.pins++
	t.gen++
	t.used = time.Now()
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			t.pins--
			t.used = time.Now()
			t.mu.Unlock()
			s.warm.signal()
		})
	}
}

// waitCooled waits, t.mu held, until a close of t's handles in progress
// has ended.
func (t *tenant) waitCooled() {
	for t.cooling != nil {
		ch := t.cooling
		t.mu.Unlock()
		<-ch
		t.mu.Lock()
	}
}

// lockWarm admits t among the warm tenants (the operator's needs no
// room) and returns with t.mu held and no close of t in progress. A
// tenant closed between its admission and the lock is admitted again.
func (s *Server) lockWarm(t *tenant) error {
	for {
		if t.id != "" {
			if err := s.admit(t); err != nil {
				return err
			}
		}
		t.mu.Lock()
		t.waitCooled()
		if t.id == "" || t.closed || s.warm.has(t) {
			return nil
		}
		t.mu.Unlock()
	}
}

// admit makes room for t's handles before they open: at the bound it
// closes the least recently used warm tenant that is not busy, or waits
// up to admitWait for one, then refuses with errUnavailable.
func (s *Server) admit(t *tenant) error {
	var deadline time.Time
	for {
		ok, changed := s.warm.join(t)
		if ok {
			return nil
		}
		if s.makeRoom(t, changed, &deadline) {
			continue
		}
		s.log.Warn("tenant refused: every warm tenant is busy", "tenant", t.id, "warm", s.warm.len())
		return errUnavailable
	}
}

// makeRoom closes the least recently used warm tenant but t that is not
// busy, or waits for room to come (changed) until deadline, set on the
// first wait; false is the deadline passed. join counted the caller as
// waiting, so that no release between join and the wait is missed.
func (s *Server) makeRoom(t *tenant, changed <-chan struct{}, deadline *time.Time) bool {
	defer s.warm.unwait()
	if v, found := warm.LRU(s.warmEntries(time.Now(), t)); found && s.cool(v, "making room for another tenant") {
		return true
	}
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(s.warm.wait)
	}
	if !now.Before(*deadline) {
		return false
	}
	timer := time.NewTimer(deadline.Sub(now))
	defer timer.Stop()
	select {
	case <-changed:
	case <-timer.C:
	}
	return true
}

// warmEntries are the warm tenants but skip as the policy sees them.
func (s *Server) warmEntries(now time.Time, skip *tenant) []warm.Entry[*tenant] {
	var out []warm.Entry[*tenant]
	for _, t := range s.warm.snapshot() {
		if t == skip {
			continue
		}
		busy, _ := s.holds(t, now)
		t.mu.Lock()
		used := t.used
		t.mu.Unlock()
		out = append(out, warm.Entry[*tenant]{Key: t, Used: used, Busy: busy})
	}
	return out
}

// horizon is how soon due cron work or a heartbeat keeps a tenant warm.
func (s *Server) horizon() time.Duration {
	if idle := s.opts.TenantIdle; idle > 0 && idle < dueLead {
		return idle
	}
	return dueLead
}

// holds says whether t must stay warm now, and when its next cron job is
// due, zero when it has none: the scheduler forgets a closed tenant's
// jobs, so a timer must open it again. (Its heartbeats stay scheduled
// and open it when due.)
func (s *Server) holds(t *tenant, now time.Time) (busy bool, wake time.Time) {
	t.mu.Lock()
	pinned := t.pins > 0 || t.channels != nil || t.cooling != nil
	approvals, subs := t.approvals, t.subagents
	t.mu.Unlock()
	switch {
	case pinned, approvals != nil && approvals.Busy(), subs != nil && subs.anyActive(),
		s.runs.active(t), len(s.hubs.of(t)) > 0, s.toolsHold(t):
		return true, time.Time{}
	}
	cronAt, beatAt, running := s.nextWork(t)
	soon := func(at time.Time) bool { return !at.IsZero() && at.Sub(now) < s.horizon() }
	return running || soon(cronAt) || soon(beatAt), cronAt
}

// toolsHold says a tool has work of t's running (a background command).
func (s *Server) toolsHold(t *tenant) bool {
	for _, tool := range s.tools.All() {
		if f, ok := tool.(tools.Forgetter); ok && f.Holds(t.dir) {
			return true
		}
	}
	return false
}

// nextWork is when t's next cron job and next heartbeat are due (zero:
// none), and whether one runs now.
func (s *Server) nextWork(t *tenant) (cronAt, beatAt time.Time, running bool) {
	key := cronKey(t)
	if s.cron != nil {
		if st, err := s.cron.Status(key); err == nil && st.Enabled && st.NextWakeAtMs != nil {
			cronAt = time.UnixMilli(*st.NextWakeAtMs)
		}
		if runs, err := s.cron.Running(key); err == nil && len(runs) > 0 {
			running = true
		}
	}
	s.beats.mu.Lock()
	if !s.beats.off[key] {
		for _, b := range s.beats.m[key] {
			if beatAt.IsZero() || b.next.Before(beatAt) {
				beatAt = b.next
			}
			running = running || b.busy
		}
	}
	s.beats.mu.Unlock()
	return cronAt, beatAt, running
}

// cool closes t's handles unless it must stay warm, and reports whether
// it did. Its cron jobs leave the scheduler and a timer opens it again
// before the next is due; its heartbeats stay scheduled, and open it.
func (s *Server) cool(t *tenant, why string) bool {
	t.mu.Lock()
	gen := t.gen
	t.mu.Unlock()
	busy, wake := s.holds(t, time.Now())
	if busy {
		return false
	}
	t.mu.Lock()
	if t.closed { // dropped: only its place among the warm is left
		t.mu.Unlock()
		s.warm.leave(t)
		return true
	}
	// Nothing pinned it since holds looked; a run started by something
	// that holds no pin is looked for again under the lock.
	if t.pins > 0 || t.gen != gen || t.cooling != nil || s.runs.active(t) {
		t.mu.Unlock()
		return false
	}
	done := make(chan struct{})
	t.cooling = done
	t.mu.Unlock()
	s.removeCron(t)
	t.mu.Lock()
	s.closeHandles(t)
	t.cooldowns = nil // may be dropped: a closed tenant's model calls are long past
	t.stamp = fileStamp{}
	t.cooling = nil
	close(done)
	t.mu.Unlock()
	s.runs.release(t)
	s.armWake(t, wake)
	s.warm.leave(t)
	s.log.Debug("tenant closed", "tenant", t.id, "why", why)
	return true
}

// armWake sets t's timer to open it before its next cron job, so that
// the scheduler has it again in time.
func (s *Server) armWake(t *tenant, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wake != nil {
		t.wake.Stop()
		t.wake = nil
	}
	if at.IsZero() || t.closed {
		return
	}
	t.wake = time.AfterFunc(max(0, time.Until(at)-s.horizon()/2), func() { s.wakeTenant(t) })
}

// wakeTenant opens t for its scheduled work.
func (s *Server) wakeTenant(t *tenant) {
	s.srvMu.Lock()
	shut := s.shut
	s.srvMu.Unlock()
	if shut {
		return
	}
	release := s.enter(t)
	defer release()
	if _, err := t.current(s); err != nil {
		s.log.Error("opening a tenant for its scheduled work", "tenant", t.id, "err", err)
	}
}

// sweep closes the tenants idle for Options.TenantIdle at now.
func (s *Server) sweep(now time.Time) {
	for _, t := range warm.Idle(s.warmEntries(now, nil), now, s.opts.TenantIdle) {
		s.cool(t, "idle")
	}
}

// sweepEvery is how often the sweeper looks for idle tenants: a quarter
// of the idle timeout, within bounds.
func sweepEvery(idle time.Duration) time.Duration {
	return min(max(idle/4, 100*time.Millisecond), 30*time.Second)
}

// startSweeper closes idle tenants until the gateway shuts down.
func (s *Server) startSweeper() {
	if s.opts.TenantIdle <= 0 {
		return
	}
	go func() {
		tick := time.NewTicker(sweepEvery(s.opts.TenantIdle))
		defer tick.Stop()
		for {
			select {
			case <-s.warm.stop:
				return
			case now := <-tick.C:
				s.sweep(now)
			}
		}
	}()
}

// stopSweeper ends the sweeper; the shutdown closes every tenant after.
func (s *Server) stopSweeper() {
	s.warm.mu.Lock()
	defer s.warm.mu.Unlock()
	if !s.warm.stopped {
		s.warm.stopped = true
		close(s.warm.stop)
	}
}

// outOfFiles says err, a failed open, came from the process's or the
// system's descriptor limit. SQLite reports a failed open as its own
// code, not the errno, so the descriptors left are counted too.
func (s *Server) outOfFiles(err error) bool {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || strings.Contains(err.Error(), "too many open files") {
		return true
	}
	n, ferr := openFiles()
	if ferr != nil {
		return errors.Is(ferr, syscall.EMFILE) || errors.Is(ferr, syscall.ENFILE)
	}
	var lim syscall.Rlimit
	return syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && uint64(n+filesPerTenant) >= lim.Cur
}

// noRoom answers a request refused for want of room: 503 with
// Retry-After.
func noRoom(w http.ResponseWriter) {
	w.Header().Set("Retry-After", authlimit.RetryAfter(retryAfter))
	writeError(w, http.StatusServiceUnavailable, errAPI, errUnavailable.Error())
}

// noRoomWS is the WebSocket error of a connect refused for want of
// room.
func noRoomWS() *protocol.Error {
	return &protocol.Error{Code: protocol.CodeUnavailable, Message: errUnavailable.Error(), Retryable: true, RetryAfterMs: retryAfter.Milliseconds()}
}
