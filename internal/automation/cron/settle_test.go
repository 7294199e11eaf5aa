package cron

import (
	"strings"
	"testing"
	"time"

	"talon/internal/automation"
)

var t0 = time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC)

func atJob(deleteAfter bool) automation.Job {
	return automation.Job{
		ID: "once", Name: "once", Enabled: true, DeleteAfterRun: deleteAfter, CreatedAtMs: ms(t0.Add(-time.Hour)),
		Schedule: automation.Schedule{Kind: automation.KindAt, At: "2027-03-01T10:00:00"},
		Payload:  automation.Payload{Kind: automation.PayloadAgentTurn, Message: "x"},
		State:    automation.JobState{NextRunAtMs: ptr(ms(t0))},
	}
}

func withErrors(j automation.Job, n int) automation.Job {
	j.State.ConsecutiveErrors = n
	return j
}

// TestSettle is the state transition after a run (R5.3–R5.6).
func TestSettle(t *testing.T) {
	end := t0.Add(20 * time.Second)
	every := everyJob("e", t0.Add(-time.Hour), 10*time.Minute)
	minutely := everyJob("m", t0.Add(-time.Hour), time.Minute)
	fail := Outcome{Status: automation.StatusError, Error: "tool exec failed"}
	transient := Outcome{Status: automation.StatusError, Error: "429 rate limit exceeded"}
	ok := Outcome{Status: automation.StatusOK, DeliveryStatus: automation.Delivered}
	cases := []struct {
		name       string
		job        automation.Job
		out        Outcome
		manual     bool
		wantNext   *time.Time // nil: no next run
		wantOff    bool
		wantRemove bool
		wantErrs   int
		wantDone   string
	}{
		{"ok: next slot from now", every, ok, false, ptr(t0.Add(10 * time.Minute)), false, false, 0, automation.CompletionSucceeded},
		{"first error: natural slot beats 30 s backoff", every, fail, false, ptr(t0.Add(10 * time.Minute)), false, false, 1, automation.CompletionFailed},
		{"second error: 60 s backoff from the end", withErrors(minutely, 1), fail, false, ptr(end.Add(time.Minute)), false, false, 2, automation.CompletionFailed},
		{"third error: 5 min backoff from the end", withErrors(minutely, 2), fail, false, ptr(end.Add(5 * time.Minute)), false, false, 3, automation.CompletionFailed},
		{"fifth error: 60 min backoff", withErrors(minutely, 4), fail, false, ptr(end.Add(time.Hour)), false, false, 5, automation.CompletionFailed},
		{"tenth error disables", withErrors(every, 9), fail, false, nil, true, false, 10, automation.CompletionFailed},
		{"success resets errors", withErrors(every, 7), ok, false, ptr(t0.Add(10 * time.Minute)), false, false, 0, automation.CompletionSucceeded},
		{"manual run keeps the slot", withErrors(every, 2), fail, true, ptr(time.UnixMilli(*every.State.NextRunAtMs)), false, false, 3, automation.CompletionFailed},
		{"one-shot ok deletes", atJob(true), ok, false, nil, false, true, 0, automation.CompletionSucceeded},
		{"one-shot ok kept disables", atJob(false), ok, false, nil, true, false, 0, automation.CompletionSucceeded},
		{"one-shot failed delivery stays for inspection", atJob(true), Outcome{Status: automation.StatusOK, DeliveryStatus: automation.NotDelivered}, false, nil, true, false, 0, automation.CompletionFailed},
		{"one-shot unknown delivery stays", atJob(true), Outcome{Status: automation.StatusOK, DeliveryStatus: automation.DeliveryUnknown}, false, nil, true, false, 0, automation.CompletionUnknown},
		{"one-shot transient retries in 60 s", atJob(true), transient, false, ptr(end.Add(time.Minute)), false, false, 1, automation.CompletionFailed},
		{"one-shot third transient retries in 300 s", withErrors(atJob(true), 2), transient, false, ptr(end.Add(5 * time.Minute)), false, false, 3, automation.CompletionFailed},
		{"one-shot retries exhausted disables", withErrors(atJob(true), 3), transient, false, nil, true, false, 4, automation.CompletionFailed},
		{"one-shot permanent error disables", atJob(true), fail, false, nil, true, false, 1, automation.CompletionFailed},
		{"invalid status is an error", every, Outcome{Status: "great"}, false, ptr(t0.Add(10 * time.Minute)), false, false, 1, automation.CompletionFailed},
	}
	t.Run("an every job counts from its last run", func(t *testing.T) {
		start := t0.Add(3 * time.Minute) // a catch-up, off the anchor
		res := settle(finish{job: every, out: ok, slotMs: ms(t0), startMs: ms(start), endMs: ms(start.Add(time.Second))})
		if got := *res.state.NextRunAtMs; got != ms(start.Add(10*time.Minute)) {
			t.Errorf("next %v, want 10 min after the run's start", time.UnixMilli(got).UTC())
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := settle(finish{job: c.job, out: c.out, runID: "r", manual: c.manual, slotMs: ms(t0), startMs: ms(t0), endMs: ms(end)})
			next := res.state.NextRunAtMs
			switch {
			case c.wantNext == nil && next != nil:
				t.Errorf("next %v, want none", time.UnixMilli(*next).UTC())
			case c.wantNext != nil && (next == nil || *next != ms(*c.wantNext)):
				t.Errorf("next %v, want %v", next, c.wantNext.UTC())
			}
			if res.disable != c.wantOff || res.remove != c.wantRemove {
				t.Errorf("disable %v remove %v, want %v %v", res.disable, res.remove, c.wantOff, c.wantRemove)
			}
			if res.state.ConsecutiveErrors != c.wantErrs || res.run.CompletionStatus != c.wantDone {
				t.Errorf("errors %d completion %q, want %d %q", res.state.ConsecutiveErrors, res.run.CompletionStatus, c.wantErrs, c.wantDone)
			}
			if res.state.RunningAtMs != nil || *res.state.LastRunAtMs != ms(t0) || *res.state.LastDurationMs != 20_000 {
				t.Errorf("state %+v: want running cleared, last run at the start, 20 s", res.state)
			}
			if res.run.RunID != "r" || res.run.Action != "finished" || res.run.DurationMs != 20_000 {
				t.Errorf("run entry %+v", res.run)
			}
			if c.wantErrs >= automation.MaxConsecutiveFailures && c.job.Schedule.Kind != automation.KindAt &&
				(res.state.AutoDisabled == nil || res.state.AutoDisabled.Reason != automation.ReasonConsecutiveFailures) {
				t.Errorf("autoDisabled %+v", res.state.AutoDisabled)
			}
		})
	}
}

// TestCleanBoundsExecutorText: an executor's texts are bounded and
// shaped before they reach the store.
func TestCleanBoundsExecutorText(t *testing.T) {
	cases := []struct {
		name string
		in   Outcome
		want func(Outcome) bool
	}{
		{"long error cut on a rune", Outcome{Status: automation.StatusError, Error: strings.Repeat("é", maxErrorBytes)},
			func(o Outcome) bool { return len(o.Error) <= maxErrorBytes && strings.HasSuffix(o.Error, "é") }},
		{"long summary cut", Outcome{Status: automation.StatusOK, Summary: strings.Repeat("x", 1<<20)},
			func(o Outcome) bool { return len(o.Summary) == maxSummaryBytes }},
		{"empty error named", Outcome{Status: automation.StatusError},
			func(o Outcome) bool { return o.Error != "" }},
		{"unknown delivery status", Outcome{Status: automation.StatusOK, DeliveryStatus: "maybe"},
			func(o Outcome) bool { return o.DeliveryStatus == automation.DeliveryUnknown }},
		{"no delivery status", Outcome{Status: automation.StatusOK},
			func(o Outcome) bool { return o.DeliveryStatus == automation.DeliveryNotAsked }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := clean(c.in); !c.want(got) {
				t.Errorf("clean gave %+v", got)
			}
		})
	}
}

// TestFailureAlerts is §6.4's bookkeeping: threshold, cooldown per
// incident, a new cause is a new incident, one recovery notice,
// failureAlert false, bestEffort.
func TestFailureAlerts(t *testing.T) {
	announce := &automation.Delivery{Mode: automation.DeliverAnnounce, Channel: "telegram", To: "111"}
	base := func() automation.Job { j := everyJob("a", t0, time.Hour); j.Delivery = announce; return j }
	off := func() automation.Job {
		j := base()
		j.FailureAlert = &automation.FailureAlert{Disabled: true}
		return j
	}
	best := func() automation.Job {
		j := base()
		j.Delivery = &automation.Delivery{Mode: automation.DeliverAnnounce, To: "111", BestEffort: true}
		return j
	}
	errA := Outcome{Status: automation.StatusError, Error: "boom A\ndetail"}
	errB := Outcome{Status: automation.StatusError, Error: "boom B"}
	ok := Outcome{Status: automation.StatusOK}
	type step struct {
		out   Outcome
		after time.Duration
		want  string // alert kind, "" none
	}
	cases := []struct {
		name  string
		job   func() automation.Job
		steps []step
	}{
		{"after 2, then cooldown, then recovery", base, []step{
			{errA, 0, ""}, {errA, time.Minute, AlertFailure}, {errA, 2 * time.Minute, ""},
			{errA, 30 * time.Minute, ""}, {errA, 63 * time.Minute, AlertFailure}, {ok, 64 * time.Minute, AlertRecovery}, {ok, 65 * time.Minute, ""}}},
		{"a new cause is a new incident", base, []step{
			{errA, 0, ""}, {errA, time.Minute, AlertFailure}, {errB, 2 * time.Minute, AlertFailure}}},
		{"failureAlert false", off, []step{{errA, 0, ""}, {errA, time.Minute, ""}, {errA, 2 * time.Minute, ""}}},
		{"bestEffort suppresses inherited alerts", best, []step{{errA, 0, ""}, {errA, time.Minute, ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := c.job()
			for i, s := range c.steps {
				at := ms(t0.Add(s.after))
				res := settle(finish{job: j, out: s.out, runID: "r", slotMs: at, startMs: at, endMs: at})
				got := ""
				if res.alert != nil {
					got = res.alert.Kind
				}
				if got != s.want {
					t.Fatalf("step %d (%s at +%s): alert %q, want %q", i, s.out.Error, s.after, got, s.want)
				}
				if got == AlertFailure && res.alert.Settings.Destination.To != "111" {
					t.Errorf("alert route %+v, want the announce target", res.alert.Settings.Destination)
				}
				j.State = res.state
			}
		})
	}
	t.Run("auto-disable notice even with failureAlert false", func(t *testing.T) {
		res := settle(finish{job: withErrors(off(), 9), out: errA, startMs: ms(t0), endMs: ms(t0)})
		if res.alert == nil || res.alert.Kind != AlertAutoDisabled || !res.disable {
			t.Errorf("alert %+v disable %v", res.alert, res.disable)
		}
	})
	t.Run("route order", func(t *testing.T) {
		j := base()
		j.Delivery = &automation.Delivery{Mode: automation.DeliverAnnounce, To: "111",
			FailureDestination: &automation.Destination{Channel: "slack", To: "C1"}}
		global := &automation.FailureAlert{Destination: automation.Destination{Channel: "discord", To: "9"}}
		if got, _ := alertSettings(j, global); got.Destination.To != "C1" {
			t.Errorf("failureDestination should win over the global one: %+v", got.Destination)
		}
		j.FailureAlert = &automation.FailureAlert{Destination: automation.Destination{To: "own"}, After: 5}
		got, on := alertSettings(j, global)
		if got.Destination.To != "own" || got.After != 5 || !on {
			t.Errorf("the job's own settings should win: %+v", got)
		}
	})
}
