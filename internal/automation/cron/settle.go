package cron

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/automation"
)

// Limits of the scheduler's own rules.
const (
	// scheduleRetry is the wait before a slot that could not be
	// computed is computed again (R3.5).
	scheduleRetry = time.Minute
	// An executor's texts are bounded before they are stored.
	maxErrorBytes   = 4 << 10
	maxSummaryBytes = 16 << 10
	maxCauseRunes   = 200
)

// Alert kinds.
const (
	AlertFailure      = "failure"
	AlertRecovery     = "recovery"
	AlertAutoDisabled = "auto-disabled"
)

// finish is everything settle needs to close a run.
type finish struct {
	job     automation.Job // the definition and state as stored now
	out     Outcome
	runID   string
	manual  bool  // force/if-enabled: the natural slot stays (R5.8)
	slotMs  int64 // the slot the run was for (runAtMs, R5.7.5)
	startMs int64
	endMs   int64
	global  *automation.FailureAlert
}

// settled is settle's decision: the job's new state, whether it is now
// disabled or removed, its run-log entry and the alert to send.
type settled struct {
	state   automation.JobState
	disable bool
	remove  bool
	run     automation.Run
	alert   *Alert
}

// settle applies one finished run to its job (R5.3–R5.6, §6.4). It is
// pure: every time is given.
func settle(f finish) settled {
	o := clean(f.out)
	j := f.job
	st := j.State
	st.RunningAtMs = nil
	st.LastRunAtMs = ptr(f.startMs)
	st.LastDurationMs = ptr(f.endMs - f.startMs)
	st.LastRunStatus = o.Status
	st.LastError = o.Error
	st.LastDelivered = o.Delivered
	st.LastDeliveryStatus = o.DeliveryStatus
	st.LastDeliveryError = o.DeliveryError
	switch o.Status {
	case automation.StatusOK:
		st.ConsecutiveErrors, st.ConsecutiveSkipped = 0, 0
	case automation.StatusError:
		st.ConsecutiveErrors++
	case automation.StatusSkipped:
		st.ConsecutiveSkipped++
	}
	done := completion(o, j.Delivery)
	res := settled{}
	switch {
	case f.manual:
		// The natural slot stays; a disabled job stays disabled.
		if st.ConsecutiveErrors >= automation.MaxConsecutiveFailures && j.Schedule.Kind != automation.KindAt && j.Enabled {
			res.disable = true
		}
	case j.Schedule.Kind == automation.KindAt:
		res.disable, res.remove = oneShot(j, &st, o, done, f.endMs)
	default:
		res.disable = recurring(j, &st, o, f.endMs)
	}
	if res.disable && j.Enabled {
		st.NextRunAtMs = nil
		if st.ConsecutiveErrors >= automation.MaxConsecutiveFailures && j.Schedule.Kind != automation.KindAt {
			st.AutoDisabled = &automation.AutoDisabled{Reason: automation.ReasonConsecutiveFailures, AtMs: f.endMs, ConsecutiveErrors: st.ConsecutiveErrors}
		}
	}
	res.alert = alert(j, &st, o, f.endMs, f.global, res.disable && st.AutoDisabled != nil && j.State.AutoDisabled == nil)
	res.state = st
	res.run = automation.Run{
		Ts: f.endMs, JobID: j.ID, JobName: j.Name, Action: "finished",
		Status: o.Status, CompletionStatus: done, Error: o.Error, Summary: o.Summary,
		Delivered: o.Delivered, DeliveryStatus: o.DeliveryStatus, DeliveryError: o.DeliveryError,
		DeliverySuppressionReason: o.DeliverySuppressionReason,
		SessionID:                 o.SessionID, SessionKey: o.SessionKey,
		RunID: f.runID, RunAtMs: f.slotMs, DurationMs: f.endMs - f.startMs,
		NextRunAtMs: st.NextRunAtMs, Model: o.Model, Provider: o.Provider, Usage: o.Usage,
	}
	return res
}

// oneShot is R5.5 for an "at" job: delete it only when its completion
// succeeded and it asks to be deleted, retry transient errors on the
// retry schedule, and otherwise disable it (for inspection).
func oneShot(j automation.Job, st *automation.JobState, o Outcome, done string, endMs int64) (disable, remove bool) {
	switch {
	case o.Status == automation.StatusOK && done == automation.CompletionSucceeded:
		st.NextRunAtMs = nil
		return !j.DeleteAfterRun, j.DeleteAfterRun
	case o.Status == automation.StatusError && automation.Transient(o.Error):
		if d, ok := automation.RetryDelay(st.ConsecutiveErrors); ok {
			st.NextRunAtMs = ptr(endMs + d.Milliseconds())
			return false, false
		}
	}
	st.NextRunAtMs = nil
	return true, false
}

// recurring is R5.3/R5.4/R5.6 for an "every" or "cron" job: the next
// slot from now, pushed back by the error backoff, or disabled after
// too many failures.
func recurring(j automation.Job, st *automation.JobState, o Outcome, endMs int64) (disable bool) {
	if o.Status == automation.StatusError && st.ConsecutiveErrors >= automation.MaxConsecutiveFailures {
		return true
	}
	if !schedule(j, st, endMs, endMs) {
		return true
	}
	if back, ok := automation.BackoffUntil(*st); ok && st.NextRunAtMs != nil && back.UnixMilli() > *st.NextRunAtMs {
		st.NextRunAtMs = ptr(back.UnixMilli())
	}
	return false
}

// schedule sets st.NextRunAtMs to j's first slot after afterMs, as st
// now stands (an "every" job counts from its last run, R3.2), counting
// schedule errors (R3.5): after MaxScheduleErrors in a row it records the
// auto-disable and reports false.
func schedule(j automation.Job, st *automation.JobState, afterMs, nowMs int64) bool {
	j.State = *st
	t, ok, err := automation.Next(j, time.UnixMilli(afterMs))
	if err != nil {
		st.ScheduleErrors++
		if st.ScheduleErrors >= automation.MaxScheduleErrors {
			st.NextRunAtMs = nil
			st.AutoDisabled = &automation.AutoDisabled{Reason: automation.ReasonScheduleErrors, AtMs: nowMs}
			return false
		}
		st.NextRunAtMs = ptr(nowMs + scheduleRetry.Milliseconds())
		return true
	}
	st.ScheduleErrors = 0
	st.NextRunAtMs = nil
	if ok {
		st.NextRunAtMs = ptr(t.UnixMilli())
	}
	return true
}

// completion is §6.3's completionStatus: an execution error fails the
// run; a required delivery that failed or may have failed fails it or
// leaves it unknown (R3.16); bestEffort forgives delivery.
func completion(o Outcome, d *automation.Delivery) string {
	if o.Status == automation.StatusError {
		return automation.CompletionFailed
	}
	best := d != nil && d.BestEffort
	switch {
	case best:
	case o.DeliveryStatus == automation.NotDelivered:
		return automation.CompletionFailed
	case o.DeliveryStatus == automation.DeliveryUnknown:
		return automation.CompletionUnknown
	}
	return automation.CompletionSucceeded
}

// clean holds an executor's outcome to the shapes the run log accepts.
func clean(o Outcome) Outcome {
	switch o.Status {
	case automation.StatusOK, automation.StatusError, automation.StatusSkipped:
	default:
		o.Error = fmt.Sprintf("executor: invalid run status %q", truncate(o.Status, 64))
		o.Status = automation.StatusError
	}
	if o.Status == automation.StatusError && strings.TrimSpace(o.Error) == "" {
		o.Error = "run failed without an error message"
	}
	switch o.DeliveryStatus {
	case automation.Delivered, automation.NotDelivered, automation.DeliveryUnknown, automation.DeliveryNotAsked:
	case "":
		o.DeliveryStatus = automation.DeliveryNotAsked
	default:
		o.DeliveryStatus = automation.DeliveryUnknown
	}
	o.Error = truncate(o.Error, maxErrorBytes)
	o.Summary = truncate(o.Summary, maxSummaryBytes)
	o.DeliveryError = truncate(o.DeliveryError, maxErrorBytes)
	return o
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func ptr[T any](v T) *T { return &v }
