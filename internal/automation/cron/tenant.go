package cron

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"talon/internal/automation"
	"talon/internal/store"
)

// Catch-up after downtime (R5.7.4): this many missed jobs start at once,
// the rest catchUpGapMs apart.
const (
	catchUpBurst = 5
	catchUpGapMs = 5_000
)

func newID() string { return store.NewID() }

// gone says a store error means the job no longer exists.
func gone(err error) bool { return errors.Is(err, store.ErrNotFound) }

// AddTenant loads a tenant's jobs and, when its cron is enabled, applies
// the startup rules (R5.7) and arms them.
func (s *Scheduler) AddTenant(ctx context.Context, id string, st Store, cfg TenantConfig) error {
	if id == "" || st == nil {
		return errors.New("cron: add tenant: a tenant id and a store are required")
	}
	if err := checkConfig(cfg); err != nil {
		return fmt.Errorf("cron: add tenant %q: %w", id, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if _, dup := s.tenants[id]; dup {
		s.mu.Unlock()
		return fmt.Errorf("cron: add tenant %q: already added", id)
	}
	tctx, cancel := context.WithCancelCause(context.Background())
	t := &tenant{id: id, store: st, cfg: cfg, jobs: map[string]*slot{}, ctx: tctx, cancel: cancel}
	s.tenants[id] = t
	s.mu.Unlock()
	if err := s.activate(ctx, t); err != nil {
		s.mu.Lock()
		s.drop(t, errTenantRemoved)
		s.mu.Unlock()
		return fmt.Errorf("cron: add tenant %q: %w", id, err)
	}
	return nil
}

func checkConfig(cfg TenantConfig) error {
	if cfg.MaxConcurrent < 0 {
		return fmt.Errorf("max concurrent runs %d is negative", cfg.MaxConcurrent)
	}
	return nil
}

// UpdateTenant applies a tenant's new cron settings: pausing disarms its
// jobs (runs in progress finish); resuming applies the startup rules
// again, so slots passed while paused are caught up or skipped.
func (s *Scheduler) UpdateTenant(ctx context.Context, id string, cfg TenantConfig) error {
	if err := checkConfig(cfg); err != nil {
		return fmt.Errorf("cron: update tenant %q: %w", id, err)
	}
	s.mu.Lock()
	t, err := s.tenant(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	was := t.cfg.Enabled
	t.cfg = cfg
	if was && !cfg.Enabled {
		s.pause(t)
	}
	s.offer(t)
	s.dispatch()
	s.mu.Unlock()
	if !was && cfg.Enabled {
		return s.activate(ctx, t)
	}
	return nil
}

// RemoveTenant stops a tenant's jobs, cancels its runs and waits for
// them to return (or ctx); the store is not used after it returns nil.
func (s *Scheduler) RemoveTenant(ctx context.Context, id string) error {
	s.mu.Lock()
	t, err := s.tenant(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.drop(t, errTenantRemoved)
	s.mu.Unlock()
	return wait(ctx, &t.runs)
}

// drop forgets t and cancels its runs. Called with s.mu held.
func (s *Scheduler) drop(t *tenant, cause error) {
	s.pause(t)
	t.removed = true
	t.cancel(cause)
	delete(s.tenants, t.id)
}

// pause disarms t's jobs and drops its waiting requests. Called with
// s.mu held.
func (s *Scheduler) pause(t *tenant) {
	for _, sl := range t.jobs {
		s.heap.disarm(sl)
		sl.wait, sl.queued = nil, false
	}
	clear(t.ready)
	t.ready = t.ready[:0]
}

func (s *Scheduler) tenant(id string) (*tenant, error) {
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.tenants[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTenant, id)
	}
	return t, nil
}

// plan is one job's place after activation.
type plan struct {
	id    string
	at    int64
	armed bool
}

// activate is R5.7 when t's cron is enabled (a paused tenant's jobs are
// only listed, for Status): record and clear stale runningAtMs markers, compute
// missing slots, then run each missed job once (5 at once, the rest 5 s
// apart, in slot order) or, with skipMissedJobs, advance recurring ones
// and record a skipped "missed" row.
func (s *Scheduler) activate(ctx context.Context, t *tenant) error {
	s.mu.Lock()
	enabled, skip := t.cfg.Enabled, t.cfg.SkipMissed
	busy := map[string]bool{}
	for id, sl := range t.jobs {
		if sl.run != nil {
			busy[id] = true
		}
	}
	s.mu.Unlock()
	jobs, err := t.store.CronJobs(ctx)
	if err != nil {
		return fmt.Errorf("loading cron jobs: %w", err)
	}
	now := s.nowMs()
	plans := make([]plan, 0, len(jobs))
	if !enabled {
		for _, j := range jobs {
			plans = append(plans, plan{id: j.ID})
		}
		s.install(t, plans)
		return nil
	}
	var missed []automation.Job
	for _, j := range jobs {
		if busy[j.ID] {
			plans = append(plans, plan{id: j.ID})
			continue
		}
		j, err := s.recover(ctx, t, j, now)
		if err != nil {
			// The store refuses writes: the job is tried again later on
			// the run path, rather than holding back the tenant's others.
			s.log.Warn("cron: starting a job", "tenant", t.id, "job", j.ID, "err", err)
			plans = append(plans, plan{id: j.ID, armed: j.Enabled, at: now + storeRetry.Milliseconds()})
			continue
		}
		p := plan{id: j.ID}
		if next := j.State.NextRunAtMs; j.Enabled && next != nil {
			if *next <= now {
				missed = append(missed, j)
				continue
			}
			p.at, p.armed = *next, true
		}
		plans = append(plans, p)
	}
	slices.SortFunc(missed, func(a, b automation.Job) int {
		return cmp.Or(cmp.Compare(*a.State.NextRunAtMs, *b.State.NextRunAtMs), cmp.Compare(a.ID, b.ID))
	})
	catchUps := 0
	for _, j := range missed {
		p := plan{id: j.ID, armed: true, at: now}
		if skip && j.Schedule.Kind != automation.KindAt {
			next, ok, err := s.skipMissed(ctx, t, j, now)
			if err != nil {
				s.log.Warn("cron: skipping a missed job", "tenant", t.id, "job", j.ID, "err", err)
				next, ok = now+storeRetry.Milliseconds(), true
			}
			p.at, p.armed = next, ok
		} else {
			if catchUps >= catchUpBurst {
				p.at = now + int64(catchUps-catchUpBurst+1)*catchUpGapMs
			}
			catchUps++
		}
		plans = append(plans, p)
	}
	s.install(t, plans)
	return nil
}

// recover is R5.7.1–2 for one job: a stale runningAtMs is recorded once
// as an interrupted run and cleared; an enabled job without a slot gets
// one computed from its last run (or creation), so a slot missed while
// down is still seen as missed.
func (s *Scheduler) recover(ctx context.Context, t *tenant, j automation.Job, now int64) (automation.Job, error) {
	st := j.State
	var row *automation.Run
	if st.RunningAtMs != nil {
		started := *st.RunningAtMs
		row = &automation.Run{
			Ts: now, JobID: j.ID, JobName: j.Name, Action: "finished", Status: automation.StatusLost,
			CompletionStatus: automation.CompletionUnknown, Error: "interrupted: the gateway stopped during the run",
			DeliveryStatus: automation.DeliveryUnknown, RunID: newID(), RunAtMs: started,
		}
		st.RunningAtMs = nil
		st.LastRunAtMs = ptr(started)
		st.LastRunStatus, st.LastError = automation.StatusError, row.Error
	}
	var disable *bool
	computed := j.Enabled && st.NextRunAtMs == nil
	if computed {
		after := j.CreatedAtMs - 1
		if st.LastRunAtMs != nil {
			after = *st.LastRunAtMs
		}
		if !schedule(j, &st, after, now) {
			disable = ptr(false)
		}
	}
	if row == nil && !computed {
		return j, nil
	}
	if err := t.store.SetCronState(ctx, j.ID, st, disable); err != nil {
		return j, fmt.Errorf("recovering cron job %s: %w", j.ID, err)
	}
	if row != nil {
		row.NextRunAtMs = st.NextRunAtMs
		if err := t.store.AppendCronRun(ctx, *row); err != nil {
			return j, fmt.Errorf("recording interrupted run of cron job %s: %w", j.ID, err)
		}
	}
	j.State = st
	if disable != nil {
		j.Enabled = false
	}
	return j, nil
}

// skipMissed advances a missed recurring job to its next future slot and
// records the skip, so no missed slot goes unrecorded (better-item 1).
func (s *Scheduler) skipMissed(ctx context.Context, t *tenant, j automation.Job, now int64) (int64, bool, error) {
	st := j.State
	slot := *st.NextRunAtMs
	keep := schedule(j, &st, now, now)
	st.LastRunStatus = automation.StatusSkipped
	st.ConsecutiveSkipped++
	var disable *bool
	if !keep {
		disable = ptr(false)
	}
	if err := t.store.SetCronState(ctx, j.ID, st, disable); err != nil {
		return 0, false, fmt.Errorf("skipping missed cron job %s: %w", j.ID, err)
	}
	row := automation.Run{
		Ts: now, JobID: j.ID, JobName: j.Name, Action: "finished", Status: automation.StatusSkipped,
		Reason: automation.SkipReasonMissed, DeliveryStatus: automation.DeliveryNotAsked,
		RunID: newID(), RunAtMs: slot, NextRunAtMs: st.NextRunAtMs,
	}
	if err := t.store.AppendCronRun(ctx, row); err != nil {
		return 0, false, fmt.Errorf("recording missed run of cron job %s: %w", j.ID, err)
	}
	s.emit(t.id, Event{JobID: j.ID, Action: "finished", RunAtMs: slot, Status: automation.StatusSkipped, NextRunAtMs: st.NextRunAtMs, RunID: row.RunID})
	if !keep || st.NextRunAtMs == nil {
		return 0, false, nil
	}
	return *st.NextRunAtMs, true, nil
}

// install replaces t's slots with plans, keeping the slots of runs in
// progress.
func (s *Scheduler) install(t *tenant, plans []plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.removed {
		return
	}
	jobs := make(map[string]*slot, len(plans))
	for _, p := range plans {
		sl := t.jobs[p.id]
		if sl == nil {
			sl = &slot{t: t, id: p.id, idx: -1}
		}
		jobs[p.id] = sl
		if p.armed && sl.run == nil && t.cfg.Enabled {
			s.arm(sl, p.at)
		}
	}
	for id, sl := range t.jobs {
		if jobs[id] == nil {
			if sl.run == nil {
				s.heap.disarm(sl)
				continue
			}
			jobs[id] = sl
		}
	}
	t.jobs = jobs
}

// JobChanged re-arms a job after the gateway added or edited it: at its
// stored nextRunAtMs, computed from now and stored when unset (R5.9); a
// disabled job is disarmed. A running job is re-armed when its run ends.
func (s *Scheduler) JobChanged(ctx context.Context, tenantID, jobID string) error {
	s.mu.Lock()
	t, err := s.tenant(tenantID)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	j, err := t.store.CronJob(ctx, jobID)
	if err != nil {
		if gone(err) {
			return s.JobRemoved(tenantID, jobID)
		}
		return fmt.Errorf("cron: loading job %s: %w", jobID, err)
	}
	now := s.nowMs()
	if j.Enabled && j.State.NextRunAtMs == nil && j.State.RunningAtMs == nil {
		st := j.State
		var disable *bool
		if !schedule(j, &st, now, now) {
			disable = ptr(false)
		}
		if err := t.store.SetCronState(ctx, j.ID, st, disable); err != nil {
			return fmt.Errorf("cron: storing the next run of job %s: %w", jobID, err)
		}
		j.State = st
		j.Enabled = disable == nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.removed {
		return nil
	}
	sl := t.slot(jobID)
	if sl.run != nil {
		return nil
	}
	if next := j.State.NextRunAtMs; j.Enabled && next != nil && t.cfg.Enabled {
		s.arm(sl, *next)
		return nil
	}
	s.heap.disarm(sl)
	return nil
}

// slot is t's slot of a job, made when missing. Called with s.mu held.
func (t *tenant) slot(id string) *slot {
	sl := t.jobs[id]
	if sl == nil {
		sl = &slot{t: t, id: id, idx: -1}
		t.jobs[id] = sl
	}
	return sl
}

// JobRemoved forgets a job the gateway deleted; a run of it in progress
// is cancelled and its outcome dropped.
func (s *Scheduler) JobRemoved(tenantID, jobID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tenant(tenantID)
	if err != nil {
		return err
	}
	sl := t.jobs[jobID]
	if sl == nil {
		return nil
	}
	delete(t.jobs, jobID)
	s.heap.disarm(sl)
	sl.wait = nil
	if sl.queued {
		sl.queued = false
		t.ready = slices.DeleteFunc(t.ready, func(x *slot) bool { return x == sl })
	}
	if sl.cancel != nil {
		sl.cancel(errJobRemoved)
	}
	return nil
}

// Status is cron.status of a tenant: whether cron is enabled, how many
// jobs it has and when its next one wakes.
func (s *Scheduler) Status(tenantID string) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tenant(tenantID)
	if err != nil {
		return Status{}, err
	}
	st := Status{Enabled: t.cfg.Enabled, Jobs: len(t.jobs)}
	for _, sl := range t.jobs {
		if sl.idx >= 0 && (st.NextWakeAtMs == nil || sl.at < *st.NextWakeAtMs) {
			st.NextWakeAtMs = ptr(sl.at)
		}
	}
	return st, nil
}

// Running is a run in progress.
type Running struct {
	JobID       string `json:"jobId"`
	AgentID     string `json:"agentId,omitempty"` // the job's; "" is the default agent
	RunID       string `json:"runId"`
	StartedAtMs int64  `json:"startedAtMs"`
}

// Running lists a tenant's runs in progress, for R9.2 (a heartbeat skips
// while cron work of its agent runs) and for showing them.
func (s *Scheduler) Running(tenantID string) ([]Running, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tenant(tenantID)
	if err != nil {
		return nil, err
	}
	var out []Running
	for id, sl := range t.jobs {
		if r := sl.run; r != nil && r.startedAtMs != 0 {
			out = append(out, Running{JobID: id, AgentID: r.agentID, RunID: r.id, StartedAtMs: r.startedAtMs})
		}
	}
	slices.SortFunc(out, func(a, b Running) int { return cmp.Compare(a.StartedAtMs, b.StartedAtMs) })
	return out, nil
}
