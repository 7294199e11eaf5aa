package cron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"talon/internal/automation"
)

// Manual run modes (R5.8).
const (
	ModeForce     = "force"
	ModeDue       = "due"
	ModeIfEnabled = "if-enabled"
)

// Run is cron.run: it enqueues a run of the job and returns its runId
// at once (the outcome is read from the run log). "force" (the default
// for "") runs even a disabled job, "due" only a due one, "if-enabled"
// only an enabled one. A force or if-enabled run keeps the job's natural
// slot; a due run is the scheduled run and moves it. When the job
// already has a run waiting, its runId is returned instead (one pending
// run at most, R5.2).
func (s *Scheduler) Run(ctx context.Context, tenantID, jobID, mode string) (string, error) {
	switch mode {
	case "":
		mode = ModeForce
	case ModeForce, ModeDue, ModeIfEnabled:
	default:
		return "", fmt.Errorf("cron run: mode %q: want force, due or if-enabled", mode)
	}
	t, err := s.live(tenantID)
	if err != nil {
		return "", err
	}
	j, err := t.store.CronJob(ctx, jobID)
	if err != nil {
		if gone(err) {
			return "", fmt.Errorf("%w: %s", ErrUnknownJob, jobID)
		}
		return "", fmt.Errorf("cron run: loading job %s: %w", jobID, err)
	}
	switch next := j.State.NextRunAtMs; {
	case mode == ModeDue && (!j.Enabled || next == nil || *next > s.nowMs()):
		return "", ErrNotDue
	case mode == ModeIfEnabled && (!j.Enabled || j.State.AutoDisabled != nil):
		return "", ErrJobDisabled
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.tenant(tenantID); err != nil || t.removed {
		return "", fmt.Errorf("%w %q", ErrUnknownTenant, tenantID)
	}
	if !t.cfg.Enabled {
		return "", ErrPaused
	}
	id := s.enqueue(t.slot(jobID), &request{id: newID(), mode: mode})
	s.dispatch()
	return id, nil
}

// live is an enabled tenant.
func (s *Scheduler) live(id string) (*tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tenant(id)
	if err != nil {
		return nil, err
	}
	if !t.cfg.Enabled {
		return nil, ErrPaused
	}
	return t, nil
}

// execute is one run of a job: check it is (still) due, mark it running,
// execute it under its timeout, settle the outcome into its state and
// run log, and say where to arm it next (ok false: not at all).
func (s *Scheduler) execute(ctx context.Context, sl *slot, req *request) (next int64, ok bool) {
	t := sl.t
	j, err := t.store.CronJob(ctx, sl.id)
	if err != nil {
		return s.storeFailed(ctx, t, sl.id, "loading", err)
	}
	now := s.nowMs()
	scheduled := req.mode == "" || req.mode == ModeDue
	if scheduled {
		switch n := j.State.NextRunAtMs; {
		case !j.Enabled:
			return 0, false
		case n == nil:
			return s.rearm(ctx, t, j, now)
		case *n > now:
			return *n, true
		}
	}
	slotMs := now
	if scheduled {
		slotMs = *j.State.NextRunAtMs
	}
	j.State.RunningAtMs = ptr(now)
	if err := t.store.SetCronState(ctx, j.ID, j.State, nil); err != nil {
		return s.storeFailed(ctx, t, j.ID, "marking running", err)
	}
	s.mu.Lock()
	req.startedAtMs, req.agentID = now, j.AgentID
	s.mu.Unlock()
	s.emit(t.id, Event{JobID: j.ID, Action: "started", RunAtMs: slotMs, RunID: req.id})
	out := s.call(ctx, t.id, j, req.id)
	if context.Cause(ctx) != nil {
		s.log.Info("cron run cancelled", "tenant", t.id, "job", j.ID, "run", req.id, "cause", context.Cause(ctx))
		return 0, false
	}
	return s.record(context.WithoutCancel(ctx), t, j, finish{
		out: out, runID: req.id, manual: !scheduled, slotMs: slotMs, startMs: now, endMs: s.nowMs(),
	})
}

// record settles a finished run into the store and reports it.
func (s *Scheduler) record(ctx context.Context, t *tenant, ran automation.Job, f finish) (int64, bool) {
	s.mu.Lock()
	f.global = t.cfg.FailureAlert
	s.mu.Unlock()
	fresh, err := t.store.CronJob(ctx, ran.ID)
	removed := err != nil && gone(err)
	if err != nil {
		if !removed {
			s.log.Warn("cron: reloading job after its run", "tenant", t.id, "job", ran.ID, "err", err)
		}
		fresh = ran
	}
	f.job = fresh
	res := settle(f)
	edited := false
	if !removed {
		if err := s.save(ctx, t, fresh, res); err != nil {
			s.log.Warn("cron: storing a run's outcome", "tenant", t.id, "job", ran.ID, "err", err)
		}
		// An edit that landed between reading the job and saving its
		// outcome had its next slot overwritten by one of the old
		// schedule: the edit's schedule decides it again.
		if again, err := t.store.CronJob(ctx, ran.ID); err == nil && again.ConfigRevision != fresh.ConfigRevision && !res.remove {
			fresh, edited = again, true
		}
	}
	if err := t.store.AppendCronRun(ctx, res.run); err != nil {
		s.log.Warn("cron: appending a run", "tenant", t.id, "job", ran.ID, "err", err)
	}
	if removed || res.remove {
		s.forget(t, ran.ID) // a one-shot that ran, or a job removed meanwhile
	}
	r := res.run
	s.emit(t.id, Event{JobID: r.JobID, Action: "finished", RunAtMs: r.RunAtMs, DurationMs: r.DurationMs,
		Status: r.Status, Error: r.Error, Summary: r.Summary, NextRunAtMs: r.NextRunAtMs,
		SessionKey: r.SessionKey, RunID: r.RunID, Alert: res.alert})
	switch {
	case removed:
		return 0, false
	case res.remove:
		s.emit(t.id, Event{JobID: r.JobID, Action: "removed"})
		return 0, false
	case res.disable && fresh.Enabled:
		job := fresh
		job.Enabled, job.State = false, res.state
		s.emit(t.id, Event{JobID: r.JobID, Action: "updated", Job: &job})
		return 0, false
	case !fresh.Enabled:
		return 0, false
	case edited:
		fresh.State.NextRunAtMs = nil
		return s.rearm(ctx, t, fresh, s.nowMs())
	case res.state.NextRunAtMs == nil:
		return 0, false
	}
	return *res.state.NextRunAtMs, true
}

// save writes settle's decision: delete the job, or its new state.
func (s *Scheduler) save(ctx context.Context, t *tenant, j automation.Job, res settled) error {
	if res.remove {
		_, err := t.store.RemoveCronJob(ctx, j.ID)
		return err
	}
	var enabled *bool
	if res.disable && j.Enabled {
		enabled = ptr(false)
	}
	return t.store.SetCronState(ctx, j.ID, res.state, enabled)
}

// rearm computes and stores the slot of an enabled job that has none.
func (s *Scheduler) rearm(ctx context.Context, t *tenant, j automation.Job, now int64) (int64, bool) {
	st := j.State
	var disable *bool
	if !schedule(j, &st, now, now) {
		disable = ptr(false)
	}
	if err := t.store.SetCronState(ctx, j.ID, st, disable); err != nil {
		return s.storeFailed(ctx, t, j.ID, "storing the next run of", err)
	}
	if disable != nil || st.NextRunAtMs == nil {
		return 0, false
	}
	return *st.NextRunAtMs, true
}

// storeFailed logs a store error before a run and arms the job to try
// again later, unless it is gone or the run was cancelled.
func (s *Scheduler) storeFailed(ctx context.Context, t *tenant, id, step string, err error) (int64, bool) {
	if gone(err) {
		s.forget(t, id)
		return 0, false
	}
	if ctx.Err() != nil {
		return 0, false
	}
	s.log.Warn("cron: "+step+" job", "tenant", t.id, "job", id, "err", err)
	return s.nowMs() + storeRetry.Milliseconds(), true
}

// errTimeout is the cause a run's context ends with at its timeout.
var errTimeout = errors.New("cron: run timed out")

// call runs the executor under the job's timeout (R3.12): at the
// timeout the run is cancelled and given drain to return; a run that
// does not is abandoned and recorded as timed out all the same.
func (s *Scheduler) call(ctx context.Context, tenantID string, j automation.Job, runID string) Outcome {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	res := make(chan Outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("cron: executor panicked", "tenant", tenantID, "job", j.ID, "panic", p)
				res <- Outcome{Status: automation.StatusError, Error: "run failed: internal error"}
			}
		}()
		res <- s.exec.Execute(runCtx, tenantID, j, runID)
	}()
	var deadline <-chan time.Time
	limit := timeout(j, s.watchdog)
	if limit > 0 {
		tm := s.clock.NewTimer(limit)
		defer tm.Stop()
		deadline = tm.C()
	}
	select {
	case o := <-res:
		return o
	case <-ctx.Done():
		cancel(context.Cause(ctx))
		s.drain(res)
		return Outcome{Status: automation.StatusError, Error: "cancelled"}
	case <-deadline:
		cancel(errTimeout)
		s.drain(res)
		return Outcome{Status: automation.StatusError, Error: fmt.Sprintf("timeout: the run exceeded %s", limit)}
	}
}

// drain waits a little for a cancelled executor to return.
func (s *Scheduler) drain(res <-chan Outcome) {
	tm := s.clock.NewTimer(drain)
	defer tm.Stop()
	select {
	case <-res:
	case <-tm.C():
	}
}

// timeout is R3.12: timeoutSeconds when set (0: none), else the watchdog.
func timeout(j automation.Job, watchdog time.Duration) time.Duration {
	if ts := j.Payload.TimeoutSeconds; ts != nil && *ts >= 0 {
		return time.Duration(*ts) * time.Second
	}
	return watchdog
}

// forget drops the slot of a job the store no longer has (removed
// without JobRemoved, or while the tenant was being loaded), unless a
// run of it waits.
func (s *Scheduler) forget(t *tenant, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl := t.jobs[id]; sl != nil && sl.wait == nil && sl.idx < 0 {
		delete(t.jobs, id)
	}
}
