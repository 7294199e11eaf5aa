// Package cron is the one cron scheduler of a Talon process: it runs the
// jobs of every tenant (spec automation.md §5) from a single timer heap
// and one loop goroutine, not a goroutine or timer per job. A job in
// memory is its id and wake time; its definition and state stay in the
// tenant's store and are read when it runs.
//
// Usage (the gateway):
//
//	s, err := cron.New(cron.Options{Exec: exec, OnEvent: broadcast})
//	s.AddTenant(ctx, "acme", db, cron.TenantConfig{Enabled: true}) // startup rules R5.7
//	s.JobChanged(ctx, "acme", id)        // after cron.add / cron.update
//	s.JobRemoved("acme", id)             // after cron.remove
//	runID, err := s.Run(ctx, "acme", id, cron.ModeForce) // cron.run
//	st, err := s.Status("acme")          // cron.status
//	runs, err := s.Running("acme")       // runs in progress (R9.2 busy)
//	s.UpdateTenant(ctx, "acme", cfg)     // cron.* config changed
//	s.RemoveTenant(ctx, "acme")          // tenant deleted or unloaded
//	s.Close(ctx)
//
// Scheduling: the loop sleeps until the earliest armed job, at most a
// minute (R5.1), moves every due job to its tenant's ready queue and
// starts runs round-robin over tenants while the global limit
// (Options.MaxConcurrent, 8) and the tenant's (TenantConfig.MaxConcurrent)
// allow. A job never overlaps itself and has at most one waiting run
// (R5.2): a cron.run while it runs waits behind it, a second one gets the
// first one's runId. After a run the scheduler re-reads the job, applies
// the outcome (R5.3–R5.6: next slot from now, error backoff, one-shot
// retry, deleteAfterRun, auto-disable, §6.4 alert bookkeeping), stores the
// state, appends the run-log entry and emits the cron events; the gateway
// sends the alerts an Event carries. Runs time out per R3.12.
//
// The gateway stores a job on add/update and clears its nextRunAtMs when
// {enabled, schedule} changed (R4.1, R5.9; re-enabling also clears
// autoDisabled and the counters, R5.6); JobChanged then computes the slot
// from now with automation.Next. The schedule rules, backoff, retry and
// error classes are package automation's; this package applies them.
//
// Decisions where the spec is silent: a "due" cron.run is the scheduled
// run (it moves the slot), force and if-enabled runs do not, though their
// failures count toward backoff and auto-disable; an "at" job that
// completed without deleteAfterRun, or whose delivery failed, is
// disabled; a missed slot skipped under skipMissedJobs sets
// lastRunStatus "skipped"; a paused tenant's waiting runs are dropped and
// cron.run answers ErrPaused; executor texts are cut to 4 KiB (errors)
// and 16 KiB (summaries).
//
// A run cancelled by RemoveTenant or Close is dropped: its runningAtMs
// stays in the store, so the next AddTenant records it once as "lost"
// (interrupted) and catches it up. JobRemoved cancels a run of the job.
//
// Safe for concurrent use. Executor, Store and OnEvent are called from
// run goroutines without the scheduler's lock.
package cron
