package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"talon/internal/automation"
	"talon/internal/store"
)

var _ Store = (*store.DB)(nil)

// Defaults and fixed waits.
const (
	defaultMaxConcurrent = 8
	// maxSleep caps one wait of the timer loop so a wall-clock jump is
	// noticed within a minute (R5.1).
	maxSleep = time.Minute
	// defaultWatchdog is R3.12's timeout of a run without timeoutSeconds.
	defaultWatchdog = time.Hour
	// drain is how long a timed-out or cancelled run may take to return.
	drain = 10 * time.Second
	// storeRetry is the wait before a job whose store write failed is
	// tried again.
	storeRetry = 30 * time.Second
)

// Errors of the API, for the gateway to map onto protocol errors.
var (
	ErrClosed        = errors.New("cron: scheduler closed")
	ErrUnknownTenant = errors.New("cron: unknown tenant")
	ErrUnknownJob    = errors.New("unknown cron job id")
	ErrPaused        = errors.New("cron: cron is disabled for this tenant")
	ErrNotDue        = errors.New("cron run: the job is not due")
	ErrJobDisabled   = errors.New("cron run: the job is disabled")
)

// Why a run's context was cancelled; such a run's outcome is dropped
// (its runningAtMs stays, so the next start records it as interrupted).
var (
	errTenantRemoved = errors.New("cron: tenant removed")
	errJobRemoved    = errors.New("cron: job removed")
)

// Store is one tenant's cron storage: the method set of *store.DB this
// package uses (store.ErrNotFound for a job that is gone). Times are
// Unix ms.
type Store interface {
	CronJobs(ctx context.Context) ([]automation.Job, error)
	CronJob(ctx context.Context, id string) (automation.Job, error)
	SetCronState(ctx context.Context, id string, st automation.JobState, enabled *bool) error
	AppendCronRun(ctx context.Context, r automation.Run) error
	RemoveCronJob(ctx context.Context, id string) (bool, error)
}

// Executor runs one job's payload for a tenant: it enqueues a system
// event or runs the agent turn and delivers its result. ctx ends at the
// run's timeout or when the run is cancelled; Execute should return
// promptly then.
type Executor interface {
	Execute(ctx context.Context, tenant string, job automation.Job, runID string) Outcome
}

// Outcome is what a run did. Status is ok, error or skipped; the
// delivery fields are §6.3's. The scheduler derives completionStatus.
type Outcome struct {
	Status                    string
	Error                     string
	Summary                   string
	Delivered                 *bool
	DeliveryStatus            string
	DeliveryError             string
	DeliverySuppressionReason string
	SessionID                 string
	SessionKey                string
	Model                     string
	Provider                  string
	Usage                     *automation.Usage
}

// Options configure a Scheduler.
type Options struct {
	Clock Clock // nil: System()
	// MaxConcurrent caps runs across all tenants (0: 8).
	MaxConcurrent int
	Exec          Executor
	Log           *slog.Logger // nil: discard
	// OnEvent receives every cron event (§6.1) and alert; it is called
	// from the run's goroutine with no lock held and must not block long.
	OnEvent func(tenant string, ev Event)
	// Watchdog is the timeout of a run without timeoutSeconds (0: 60 min).
	Watchdog time.Duration
}

// TenantConfig is a tenant's cron.* settings the scheduler applies.
type TenantConfig struct {
	Enabled    bool // cron.enabled (false also under TALON_SKIP_CRON=1)
	SkipMissed bool // cron.skipMissedJobs
	// MaxConcurrent caps the tenant's runs (cron.maxConcurrentRuns); 0
	// leaves only the global cap.
	MaxConcurrent int
	FailureAlert  *automation.FailureAlert // cron.failureAlert
}

// Event is a §6.1 cron event; Alert (not on the wire) asks the gateway
// to send a failure, recovery or auto-disable notice.
type Event struct {
	JobID       string          `json:"jobId"`
	Action      string          `json:"action"`
	Job         *automation.Job `json:"job,omitempty"`
	RunAtMs     int64           `json:"runAtMs,omitempty"`
	DurationMs  int64           `json:"durationMs,omitempty"`
	Status      string          `json:"status,omitempty"`
	Error       string          `json:"error,omitempty"`
	Summary     string          `json:"summary,omitempty"`
	NextRunAtMs *int64          `json:"nextRunAtMs,omitempty"`
	SessionKey  string          `json:"sessionKey,omitempty"`
	RunID       string          `json:"runId,omitempty"`
	Alert       *Alert          `json:"-"`
}

// Status is cron.status for one tenant.
type Status struct {
	Enabled      bool   `json:"enabled"`
	Jobs         int    `json:"jobs"`
	NextWakeAtMs *int64 `json:"nextWakeAtMs,omitempty"`
}

// Scheduler runs the cron jobs of every tenant of the process from one
// timer heap and one loop goroutine; each run has its own goroutine.
type Scheduler struct {
	clock    Clock
	max      int
	exec     Executor
	log      *slog.Logger
	onEvent  func(string, Event)
	watchdog time.Duration

	mu      sync.Mutex
	tenants map[string]*tenant
	heap    slots
	running int
	ring    []*tenant // tenants with a waiting run and room to start it
	closed  bool
	wakeAt  int64 // when the loop's current sleep ends, Unix ms

	kick     chan struct{}
	stop     chan struct{}
	loopDone chan struct{}
	runs     sync.WaitGroup
}

// tenant is one tenant's part of the scheduler.
type tenant struct {
	id      string
	store   Store
	cfg     TenantConfig
	jobs    map[string]*slot
	ready   []*slot // slots with a waiting request and no run, FIFO
	inRing  bool
	running int
	removed bool
	ctx     context.Context
	cancel  context.CancelCauseFunc
	runs    sync.WaitGroup
}

// slot is one job in memory: its wake time and its requests. A job has
// at most one run and one waiting request (R5.2).
type slot struct {
	t      *tenant
	id     string
	at     int64 // Unix ms the heap wakes it at
	idx    int   // heap index, -1 when not armed
	wait   *request
	queued bool // in t.ready
	run    *request
	cancel context.CancelCauseFunc
}

// request is a run asked for: by the timer (mode "") or cron.run. Once
// it runs, startedAtMs and agentID say so (guarded by s.mu).
type request struct {
	id          string
	mode        string
	startedAtMs int64
	agentID     string
}

// New starts a scheduler; Close stops it.
func New(o Options) (*Scheduler, error) {
	switch {
	case o.Exec == nil:
		return nil, errors.New("cron: new: an executor is required")
	case o.MaxConcurrent < 0:
		return nil, fmt.Errorf("cron: new: max concurrent runs %d is negative", o.MaxConcurrent)
	case o.Watchdog < 0:
		return nil, fmt.Errorf("cron: new: watchdog %s is negative", o.Watchdog)
	}
	s := &Scheduler{
		clock: o.Clock, max: o.MaxConcurrent, exec: o.Exec, log: o.Log,
		onEvent: o.OnEvent, watchdog: o.Watchdog,
		tenants: map[string]*tenant{},
		kick:    make(chan struct{}, 1), stop: make(chan struct{}), loopDone: make(chan struct{}),
	}
	if s.clock == nil {
		s.clock = System()
	}
	if s.max == 0 {
		s.max = defaultMaxConcurrent
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.onEvent == nil {
		s.onEvent = func(string, Event) {}
	}
	if s.watchdog == 0 {
		s.watchdog = defaultWatchdog
	}
	go s.loop()
	return s, nil
}

// Close stops the timer loop, cancels every run and waits for them (or
// ctx). Cancelled runs keep their runningAtMs: the next start records
// them as interrupted and catches them up (R5.7).
func (s *Scheduler) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, t := range s.tenants {
		t.cancel(ErrClosed)
	}
	s.mu.Unlock()
	close(s.stop)
	<-s.loopDone
	return wait(ctx, &s.runs)
}

// wait waits for wg or ctx.
func wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cron: waiting for runs to stop: %w", ctx.Err())
	}
}

func (s *Scheduler) nowMs() int64 { return s.clock.Now().UnixMilli() }

// loop is the one timer: it moves every due slot to its tenant's ready
// queue, starts what the limits allow and sleeps until the next slot,
// at most maxSleep, or until kicked.
func (s *Scheduler) loop() {
	defer close(s.loopDone)
	for {
		s.mu.Lock()
		now := s.nowMs()
		for len(s.heap) > 0 && s.heap[0].at <= now {
			sl := s.heap[0]
			s.heap.disarm(sl)
			s.enqueue(sl, &request{id: newID()})
		}
		s.dispatch()
		sleep := maxSleep
		if len(s.heap) > 0 {
			if d := time.Duration(s.heap[0].at-now) * time.Millisecond; d < sleep {
				sleep = d
			}
		}
		s.wakeAt = now + sleep.Milliseconds()
		s.mu.Unlock()
		tm := s.clock.NewTimer(sleep)
		select {
		case <-tm.C():
		case <-s.kick:
			tm.Stop()
		case <-s.stop:
			tm.Stop()
			return
		}
	}
}

// arm places sl in the heap at ms and wakes the loop when that is before
// its sleep ends. Called with s.mu held.
func (s *Scheduler) arm(sl *slot, ms int64) {
	s.heap.arm(sl, ms)
	if ms < s.wakeAt {
		s.wakeAt = ms
		s.poke()
	}
}

// poke wakes the loop to look at the heap again.
func (s *Scheduler) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// enqueue gives sl a waiting request unless it has one, whose id it
// returns then: a job never has more than one pending run (R5.2).
// Called with s.mu held.
func (s *Scheduler) enqueue(sl *slot, req *request) string {
	if sl.wait != nil {
		return sl.wait.id
	}
	sl.wait = req
	if sl.run == nil {
		sl.queued = true
		sl.t.ready = append(sl.t.ready, sl)
		s.offer(sl.t)
	}
	return req.id
}

// offer puts t in the ring when it has a waiting run it may start.
func (s *Scheduler) offer(t *tenant) {
	if !t.inRing && t.canStart() {
		t.inRing = true
		s.ring = append(s.ring, t)
	}
}

func (t *tenant) canStart() bool {
	return !t.removed && t.cfg.Enabled && len(t.ready) > 0 &&
		(t.cfg.MaxConcurrent == 0 || t.running < t.cfg.MaxConcurrent)
}

// dispatch starts waiting runs while the global limit allows, taking
// tenants round-robin so one tenant's backlog cannot starve another.
// Called with s.mu held.
func (s *Scheduler) dispatch() {
	for s.running < s.max && len(s.ring) > 0 && !s.closed {
		t := s.ring[0]
		s.ring[0] = nil
		s.ring = s.ring[1:]
		t.inRing = false
		if !t.canStart() {
			continue
		}
		sl := t.ready[0]
		t.ready[0] = nil
		t.ready = t.ready[1:]
		sl.queued = false
		s.start(sl)
		s.offer(t)
	}
}

// start runs sl's waiting request in its own goroutine.
func (s *Scheduler) start(sl *slot) {
	req := sl.wait
	sl.wait, sl.run = nil, req
	t := sl.t
	t.running++
	s.running++
	ctx, cancel := context.WithCancelCause(t.ctx)
	sl.cancel = cancel
	t.runs.Add(1)
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer t.runs.Done()
		next, ok := s.execute(ctx, sl, req)
		cancel(nil)
		s.release(sl, next, ok)
	}()
}

// release ends sl's run: it re-arms the job at next (when ok), queues
// its pending request and starts what now fits.
func (s *Scheduler) release(sl *slot, next int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := sl.t
	sl.run, sl.cancel = nil, nil
	t.running--
	s.running--
	live := !t.removed && t.jobs[sl.id] == sl && t.cfg.Enabled && !s.closed
	// A waiting run settles and arms the job itself.
	if live && ok && sl.wait == nil {
		s.arm(sl, next)
	}
	if sl.wait != nil {
		if live {
			sl.queued = true
			t.ready = append(t.ready, sl)
		} else {
			sl.wait = nil
		}
	}
	s.offer(t)
	s.dispatch()
}

// emit sends ev to the consumer.
func (s *Scheduler) emit(tenant string, ev Event) { s.onEvent(tenant, ev) }
