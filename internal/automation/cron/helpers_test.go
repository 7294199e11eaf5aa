package cron

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/automation"
	"talon/internal/store"
)

var errNotFound = fmt.Errorf("memory store: %w", store.ErrNotFound)

// memStore is a tenant's store in memory (the real one is SQLite, in
// internal/store): it keeps jobs and runs as the store would.
type memStore struct {
	mu   sync.Mutex
	jobs map[string]automation.Job
	runs []automation.Run
	// refuse makes SetCronState of these jobs fail, as a full disk would.
	refuse map[string]bool
	// beforeSet, when set, runs in SetCronState before the state is
	// written, with the lock held: an edit that lands just then.
	beforeSet func(id string)
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
	if m.refuse[id] {
		return errors.New("memory store: disk full")
	}
	if m.beforeSet != nil {
		m.beforeSet(id)
		j = m.jobs[id]
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

func (m *memStore) job(t testing.TB, id string) automation.Job {
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
