package cron

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/automation"
	"talon/internal/store"
)

// testRules stand in for package automation's Next, ErrorBackoff,
// RetryDelay and Transient until they are merged (they are written in
// parallel): only what these tests schedule — "at", "every" (R3.2, from
// the last run), and daily "M H * * *" cron expressions in UTC.
var testRules = Rules{Next: testNext, ErrorBackoff: testBackoff, RetryDelay: testRetry, Transient: testTransient}

func testNext(j automation.Job, after time.Time) (time.Time, bool, error) {
	s := j.Schedule
	switch s.Kind {
	case automation.KindAt:
		at, err := time.Parse("2006-01-02T15:04:05", s.At)
		if err != nil {
			return time.Time{}, false, err
		}
		return at, at.After(after), nil
	case automation.KindEvery:
		anchor := j.CreatedAtMs
		if s.AnchorMs != nil {
			anchor = *s.AnchorMs
		}
		a := after.UnixMilli()
		if last := j.State.LastRunAtMs; last != nil && *last >= anchor && *last+s.EveryMs > a {
			return time.UnixMilli(*last + s.EveryMs), true, nil
		}
		if a < anchor {
			return time.UnixMilli(anchor), true, nil
		}
		return time.UnixMilli(anchor + ((a-anchor)/s.EveryMs+1)*s.EveryMs), true, nil
	case automation.KindCron:
		var m, h int
		if _, err := fmt.Sscanf(s.Expr, "%d %d * * *", &m, &h); err != nil {
			return time.Time{}, false, fmt.Errorf("schedule.expr: test rules parse only daily expressions: %w", err)
		}
		after = after.UTC()
		t := time.Date(after.Year(), after.Month(), after.Day(), h, m, 0, 0, time.UTC)
		if !t.After(after) {
			t = t.AddDate(0, 0, 1)
		}
		return t, true, nil
	}
	return time.Time{}, false, fmt.Errorf("schedule.kind: unsupported schedule kind %q", s.Kind)
}

func testBackoff(n int) time.Duration {
	steps := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
	return steps[min(max(n, 1), len(steps))-1]
}

func testRetry(attempt int) (time.Duration, bool) {
	steps := []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute}
	if attempt < 1 || attempt > len(steps) {
		return 0, false
	}
	return steps[attempt-1], true
}

func testTransient(errText string) bool {
	l := strings.ToLower(errText)
	for _, w := range []string{"rate limit", "overloaded", "network", "timeout", "503"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

var errNotFound = fmt.Errorf("memory store: %w", store.ErrNotFound)

// memStore is a tenant's store in memory (the real one is SQLite, in
// internal/store): it keeps jobs and runs as the store would.
type memStore struct {
	mu   sync.Mutex
	jobs map[string]automation.Job
	runs []automation.Run
}

func newMemStore(jobs ...automation.Job) *memStore {
	m := &memStore{jobs: map[string]automation.Job{}}
	for _, j := range jobs {
		m.jobs[j.ID] = j
	}
	return m
}

func (m *memStore) CronJobs(context.Context) ([]automation.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]automation.Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b automation.Job) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (m *memStore) CronJob(_ context.Context, id string) (automation.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return j, errNotFound
	}
	return j, nil
}

func (m *memStore) SetCronState(_ context.Context, id string, st automation.JobState, enabled *bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return errNotFound
	}
	j.State = st
	if enabled != nil {
		j.Enabled = *enabled
	}
	m.jobs[id] = j
	return nil
}

func (m *memStore) AppendCronRun(_ context.Context, r automation.Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs = append(m.runs, r)
	return nil
}

func (m *memStore) RemoveCronJob(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.jobs[id]
	delete(m.jobs, id)
	return ok, nil
}

func (m *memStore) job(t *testing.T, id string) automation.Job {
	t.Helper()
	j, err := m.CronJob(context.Background(), id)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return j
}

func (m *memStore) runLog() []automation.Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.runs)
}

// call is one Execute the fake executor saw.
type call struct {
	tenant, job, runID string
	at                 time.Time
}

// executor is the fake at the outside edge (the agent run): it records
// calls and answers with fn.
type executor struct {
	mu    sync.Mutex
	calls []call
	now   func() time.Time
	fn    func(ctx context.Context, tenant string, j automation.Job) Outcome
	// running and peak count concurrent runs, in total and per tenant.
	running, peak         int
	perTenant, peakTenant map[string]int
}

func newExecutor(fn func(ctx context.Context, tenant string, j automation.Job) Outcome) *executor {
	return &executor{fn: fn, now: time.Now, perTenant: map[string]int{}, peakTenant: map[string]int{}}
}

func (e *executor) Execute(ctx context.Context, tenant string, j automation.Job, runID string) Outcome {
	e.mu.Lock()
	e.calls = append(e.calls, call{tenant: tenant, job: j.ID, runID: runID, at: e.now()})
	e.running++
	e.peak = max(e.peak, e.running)
	e.perTenant[tenant]++
	e.peakTenant[tenant] = max(e.peakTenant[tenant], e.perTenant[tenant])
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running--
		e.perTenant[tenant]--
		e.mu.Unlock()
	}()
	if e.fn == nil {
		return Outcome{Status: automation.StatusOK}
	}
	return e.fn(ctx, tenant, j)
}

func (e *executor) seen() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// events collects OnEvent calls.
type events struct {
	mu  sync.Mutex
	got []Event
}

func (ev *events) on(_ string, e Event) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.got = append(ev.got, e)
}

func (ev *events) actions() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []string
	for _, e := range ev.got {
		out = append(out, e.Action)
	}
	return out
}

func newScheduler(t *testing.T, e Executor, o Options) *Scheduler {
	t.Helper()
	o.Exec = e
	o.Rules = testRules
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func closeScheduler(t *testing.T, s *Scheduler) {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// everyJob is a recurring job every d from created.
func everyJob(id string, created time.Time, d time.Duration) automation.Job {
	return automation.Job{
		ID: id, Name: "job " + id, Enabled: true, CreatedAtMs: ms(created),
		Schedule:      automation.Schedule{Kind: automation.KindEvery, EveryMs: d.Milliseconds()},
		SessionTarget: "isolated",
		Payload:       automation.Payload{Kind: automation.PayloadAgentTurn, Message: "hi"},
		State:         automation.JobState{NextRunAtMs: ptr(ms(created.Add(d)))},
	}
}

// sleep is an executor's work of d, cut short by ctx.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
