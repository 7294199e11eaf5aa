package cron

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"talon/internal/automation"
)

// Inside a synctest bubble time is fake: it starts at 2000-01-01 00:00
// UTC and moves only when every goroutine of the bubble is blocked, so
// the scheduler's real clock and timers are exact and instant.

// TestMissedDailyJob is conformance vector 5: a daily 08:00 job, the
// gateway down 07:55–09:30.
func TestMissedDailyJob(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skipMissedJobs=%v", skip), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				day0 := time.Now()
				job := automation.Job{
					ID: "daily", Name: "Morning brief", Enabled: true, CreatedAtMs: ms(day0),
					Schedule:      automation.Schedule{Kind: automation.KindCron, Expr: "0 8 * * *", TZ: "UTC"},
					SessionTarget: "isolated", Payload: automation.Payload{Kind: automation.PayloadAgentTurn, Message: "brief"},
					State: automation.JobState{NextRunAtMs: ptr(ms(day0.Add(8 * time.Hour)))},
				}
				st := newMemStore(job)
				time.Sleep(9*time.Hour + 30*time.Minute) // the gateway is down
				start := time.Now()
				ex := newExecutor(nil)
				s := newScheduler(t, ex, Options{})
				defer closeScheduler(t, s)
				if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true, SkipMissed: skip}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				tomorrow := ms(day0.Add(32 * time.Hour))
				calls, runs := ex.seen(), st.runLog()
				if got := *st.job(t, "daily").State.NextRunAtMs; got != tomorrow {
					t.Errorf("next run %v, want tomorrow 08:00", time.UnixMilli(got).UTC())
				}
				if len(runs) != 1 {
					t.Fatalf("run log %+v, want one entry", runs)
				}
				r := runs[0]
				if r.RunAtMs != ms(day0.Add(8*time.Hour)) {
					t.Errorf("runAtMs %v, want the missed 08:00 slot", time.UnixMilli(r.RunAtMs).UTC())
				}
				if skip {
					if len(calls) != 0 || r.Status != automation.StatusSkipped || r.Reason != automation.SkipReasonMissed {
						t.Errorf("calls %d, run %+v: want no run and one skipped/missed row", len(calls), r)
					}
					return
				}
				if len(calls) != 1 || calls[0].at.Sub(start) > 5*time.Second || r.Status != automation.StatusOK {
					t.Errorf("calls %+v, run %+v: want exactly one run at startup", calls, r)
				}
			})
		})
	}
}

// TestErrorBackoffAndAutoDisable is conformance vector 6: a recurring
// job that keeps failing backs off (the third retry waits ≥ 5 min after
// the end of the third failure) and is disabled after 10 failures.
func TestErrorBackoffAndAutoDisable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const took = 10 * time.Second
		ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
			sleep(ctx, took)
			return Outcome{Status: automation.StatusError, Error: "model refused the request"}
		})
		ev := &events{}
		st := newMemStore(everyJob("j", time.Now(), time.Minute))
		s := newScheduler(t, ex, Options{OnEvent: ev.on})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(48 * time.Hour)
		synctest.Wait()
		calls := ex.seen()
		if len(calls) != automation.MaxConsecutiveFailures {
			t.Fatalf("%d runs, want %d then disabled", len(calls), automation.MaxConsecutiveFailures)
		}
		for n := 1; n < len(calls); n++ {
			end := calls[n-1].at.Add(took)
			if want := automation.ErrorBackoff(n); calls[n].at.Sub(end) < want {
				t.Errorf("retry %d started %s after the failure, want ≥ %s", n, calls[n].at.Sub(end), want)
			}
		}
		if gap := calls[3].at.Sub(calls[2].at.Add(took)); gap < 5*time.Minute {
			t.Errorf("third retry %s after the third failure, want ≥ 5m", gap)
		}
		j := st.job(t, "j")
		if j.Enabled || j.State.AutoDisabled == nil || j.State.AutoDisabled.Reason != automation.ReasonConsecutiveFailures || j.State.NextRunAtMs != nil {
			t.Errorf("job after 10 failures: enabled %v, state %+v", j.Enabled, j.State)
		}
		alerts := map[string]int{}
		for _, e := range ev.got {
			if e.Alert != nil {
				alerts[e.Alert.Kind]++
			}
		}
		// after 2 failures, then the same incident is in cooldown (1 h)
		// until the 9th run, past it; the auto-disable notice once.
		if alerts[AlertAutoDisabled] != 1 || alerts[AlertFailure] < 1 {
			t.Errorf("alerts %v, want failure alerts and one auto-disable notice", alerts)
		}
	})
}

// TestConcurrencyCaps runs many due jobs at once under the global and
// per-tenant limits.
func TestConcurrencyCaps(t *testing.T) {
	cases := []struct {
		name               string
		global, perTenant  int
		tenants, jobs      int
		wantPeak, wantPerT int
	}{
		{"global cap", 3, 0, 2, 5, 3, 3},
		{"tenant cap", 8, 2, 3, 5, 6, 2},
		{"both", 4, 3, 3, 5, 4, 3},
		{"default 8", 0, 0, 4, 5, 8, 5},
		{"a tenant cannot raise the global cap", 3, 100, 2, 5, 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
					sleep(ctx, time.Minute)
					return Outcome{Status: automation.StatusOK}
				})
				s := newScheduler(t, ex, Options{MaxConcurrent: c.global})
				defer closeScheduler(t, s)
				now := time.Now()
				for i := range c.tenants {
					var jobs []automation.Job
					for k := range c.jobs {
						jobs = append(jobs, everyJob(fmt.Sprintf("j%d", k), now, time.Hour))
					}
					cfg := TenantConfig{Enabled: true, MaxConcurrent: c.perTenant}
					if err := s.AddTenant(t.Context(), fmt.Sprint("t", i), newMemStore(jobs...), cfg); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Hour + 30*time.Minute)
				synctest.Wait()
				if got := len(ex.seen()); got != c.tenants*c.jobs {
					t.Errorf("%d runs, want every job once (%d)", got, c.tenants*c.jobs)
				}
				if ex.peak != c.wantPeak {
					t.Errorf("peak %d concurrent runs, want %d", ex.peak, c.wantPeak)
				}
				for tn, p := range ex.peakTenant {
					if p > c.wantPerT {
						t.Errorf("tenant %s peaked at %d runs, want ≤ %d", tn, p, c.wantPerT)
					}
				}
			})
		})
	}
}

// TestNoSelfOverlap: a job slower than its interval never runs twice at
// once, and manual runs while it runs queue one pending run at most.
func TestNoSelfOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
			sleep(ctx, 5*time.Minute)
			return Outcome{Status: automation.StatusOK}
		})
		st := newMemStore(everyJob("slow", time.Now(), time.Minute))
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Second) // the first run is in progress
		synctest.Wait()
		if len(ex.seen()) != 1 {
			t.Fatalf("%d runs started, want 1", len(ex.seen()))
		}
		running, err := s.Running("acme")
		if err != nil || len(running) != 1 || running[0].JobID != "slow" || running[0].RunID != ex.seen()[0].runID {
			t.Errorf("running %+v, %v: want the slow job's run", running, err)
		}
		a, err := s.Run(t.Context(), "acme", "slow", ModeForce)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Run(t.Context(), "acme", "slow", ModeForce)
		if err != nil || b != a {
			t.Errorf("second manual run while one waits: %q, %v; want the waiting run %q", b, err, a)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if ex.peak != 1 {
			t.Errorf("peak %d concurrent runs of one job, want 1", ex.peak)
		}
		s.JobRemoved("acme", "slow") // cancels the run in progress
		synctest.Wait()
		if running, _ := s.Running("acme"); len(running) != 0 {
			t.Errorf("running after the job was removed: %+v", running)
		}
		calls := ex.seen()
		if len(calls) < 2 || calls[1].runID != a {
			t.Errorf("the pending manual run did not run next: %+v", calls[:min(3, len(calls))])
		}
	})
}

// TestManualRun covers cron.run's modes (R5.8).
func TestManualRun(t *testing.T) {
	future := func() automation.Job { return everyJob("j", time.Now(), time.Hour) }
	disabled := func() automation.Job { j := future(); j.Enabled = false; return j }
	cases := []struct {
		name     string
		job      func() automation.Job
		mode     string
		id       string
		wantErr  error
		wantRun  bool
		keepNext bool
	}{
		{"force future keeps slot", future, ModeForce, "j", nil, true, true},
		{"default is force", disabled, "", "j", nil, true, true},
		{"force disabled stays disabled", disabled, ModeForce, "j", nil, true, true},
		{"due when not due", future, ModeDue, "j", ErrNotDue, false, true},
		{"if-enabled on disabled", disabled, ModeIfEnabled, "j", ErrJobDisabled, false, true},
		{"if-enabled on enabled", future, ModeIfEnabled, "j", nil, true, true},
		{"unknown job", future, ModeForce, "nope", ErrUnknownJob, false, true},
		{"bad mode", future, "later", "j", errAny, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := newExecutor(nil)
				j := c.job()
				st := newMemStore(j)
				s := newScheduler(t, ex, Options{})
				defer closeScheduler(t, s)
				if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
					t.Fatal(err)
				}
				before := st.job(t, "j")
				time.Sleep(time.Second)
				id, err := s.Run(t.Context(), "acme", c.id, c.mode)
				switch {
				case c.wantErr == errAny && err == nil, c.wantErr != errAny && !errors.Is(err, c.wantErr):
					t.Fatalf("run: %v, want %v", err, c.wantErr)
				}
				synctest.Wait()
				calls := ex.seen()
				if ran := len(calls) == 1 && calls[0].runID == id; ran != c.wantRun {
					t.Fatalf("ran %v (%+v), want %v", ran, calls, c.wantRun)
				}
				after := st.job(t, "j")
				if after.Enabled != before.Enabled {
					t.Errorf("enabled %v → %v", before.Enabled, after.Enabled)
				}
				same := (after.State.NextRunAtMs == nil) == (before.State.NextRunAtMs == nil) &&
					(after.State.NextRunAtMs == nil || *after.State.NextRunAtMs == *before.State.NextRunAtMs)
				if same != c.keepNext {
					t.Errorf("next run %v → %v, keep %v", before.State.NextRunAtMs, after.State.NextRunAtMs, c.keepNext)
				}
				if c.wantRun {
					runs := st.runLog()
					if len(runs) == 0 || runs[len(runs)-1].RunID != id {
						t.Errorf("no run-log entry for run %s: %+v", id, runs)
					}
				}
			})
		})
	}
}

var errAny = errors.New("any error")

// TestManualDueRun: a "due" run of a due job is its scheduled run: it
// joins the run already waiting for a free slot and moves the slot.
func TestManualDueRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		ex := newExecutor(func(ctx context.Context, _ string, j automation.Job) Outcome {
			if j.ID == "blocker" {
				<-release
			}
			return Outcome{Status: automation.StatusOK}
		})
		blocker := everyJob("blocker", time.Now(), time.Hour)
		blocker.State.NextRunAtMs = ptr(ms(time.Now().Add(time.Minute)))
		due := everyJob("due", time.Now(), time.Hour)
		due.State.NextRunAtMs = ptr(ms(time.Now().Add(2 * time.Minute)))
		st := newMemStore(blocker, due)
		s := newScheduler(t, ex, Options{MaxConcurrent: 1})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Minute) // blocker runs; "due" waits for the one slot
		synctest.Wait()
		id, err := s.Run(t.Context(), "acme", "due", ModeDue)
		if err != nil {
			t.Fatal(err)
		}
		close(release)
		synctest.Wait()
		calls := ex.seen()
		if len(calls) != 2 || calls[1].job != "due" || calls[1].runID != id {
			t.Fatalf("calls %+v: want the due job once, as run %s", calls, id)
		}
		// every hour (R3.2: from the last run): the run at 00:03 moves the
		// 00:02 slot to 01:03.
		if next := *st.job(t, "due").State.NextRunAtMs; next != ms(time.Now().Add(time.Hour)) {
			t.Errorf("next run %v, want 01:03", time.UnixMilli(next).UTC())
		}
	})
}

// TestRemoveTenantWhileRunning: removing a tenant cancels its runs and
// waits for them; the next start records the run once as interrupted and
// catches it up.
func TestRemoveTenantWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan error, 4)
		ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return Outcome{Status: automation.StatusError, Error: "cancelled"}
		})
		st := newMemStore(everyJob("j", time.Now(), time.Minute))
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Second)
		synctest.Wait()
		if len(ex.seen()) != 1 {
			t.Fatalf("%d runs, want 1 in progress", len(ex.seen()))
		}
		if err := s.RemoveTenant(t.Context(), "acme"); err != nil {
			t.Fatal(err)
		}
		if cause := <-cancelled; !errors.Is(cause, errTenantRemoved) {
			t.Errorf("run cancelled by %v", cause)
		}
		if _, err := s.Status("acme"); !errors.Is(err, ErrUnknownTenant) {
			t.Errorf("status of a removed tenant: %v", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(ex.seen()); n != 1 || len(st.runLog()) != 0 {
			t.Fatalf("after removal: %d runs, log %+v", n, st.runLog())
		}
		if st.job(t, "j").State.RunningAtMs == nil {
			t.Fatal("the cancelled run's runningAtMs was cleared: a restart could not see it")
		}
		// Back again: one interrupted row, and the job runs once now.
		ex.fn = nil
		for range 2 {
			if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if err := s.RemoveTenant(t.Context(), "acme"); err != nil {
				t.Fatal(err)
			}
		}
		runs := st.runLog()
		interrupted := 0
		for _, r := range runs {
			if r.Status == automation.StatusLost && r.Error == "interrupted: the gateway stopped during the run" {
				interrupted++
			}
		}
		if interrupted != 1 || len(ex.seen()) != 2 {
			t.Errorf("interrupted rows %d, runs %d (log %+v): want 1 and a catch-up run", interrupted, len(ex.seen()), runs)
		}
	})
}

// TestJobRemovedWhileRunning: the run is cancelled and nothing re-arms.
func TestJobRemovedWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
			<-ctx.Done()
			return Outcome{Status: automation.StatusOK}
		})
		st := newMemStore(everyJob("j", time.Now(), time.Minute))
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Second)
		st.RemoveCronJob(t.Context(), "j")
		if err := s.JobRemoved("acme", "j"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		status, _ := s.Status("acme")
		if len(ex.seen()) != 1 || status.Jobs != 0 || status.NextWakeAtMs != nil {
			t.Errorf("runs %d, status %+v: want one cancelled run and nothing armed", len(ex.seen()), status)
		}
	})
}

// TestTimeout: a run past its timeoutSeconds is cancelled and recorded
// as a timeout error (R3.12), also when the executor ignores the cancel.
func TestTimeout(t *testing.T) {
	for _, obeys := range []bool{true, false} {
		t.Run(fmt.Sprintf("executor obeys %v", obeys), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
					if obeys {
						<-ctx.Done()
					} else {
						<-release
					}
					return Outcome{Status: automation.StatusOK}
				})
				j := everyJob("j", time.Now(), time.Hour)
				j.Payload.TimeoutSeconds = ptr(30)
				st := newMemStore(j)
				s := newScheduler(t, ex, Options{})
				defer closeScheduler(t, s)
				defer close(release)
				if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Hour + 2*time.Minute)
				synctest.Wait()
				runs := st.runLog()
				if len(runs) != 1 || runs[0].Status != automation.StatusError || runs[0].Error != "timeout: the run exceeded 30s" {
					t.Fatalf("run log %+v, want one timeout", runs)
				}
				if st.job(t, "j").State.RunningAtMs != nil {
					t.Error("runningAtMs not cleared after the timeout")
				}
			})
		})
	}
}

// TestCatchUpStagger: after downtime each missed job runs once, 5 at
// once and the rest 5 s apart, in the order of their slots (R5.7.4).
func TestCatchUpStagger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var jobs []automation.Job
		for i := range 8 {
			j := everyJob(fmt.Sprintf("j%d", i), time.Now(), time.Minute)
			j.State.NextRunAtMs = ptr(ms(time.Now().Add(time.Duration(8-i) * time.Minute))) // j7 earliest
			jobs = append(jobs, j)
		}
		st := newMemStore(jobs...)
		time.Sleep(3 * time.Hour)
		start := time.Now()
		ex := newExecutor(nil)
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		calls := ex.seen()
		if len(calls) != 8 {
			t.Fatalf("%d catch-up runs, want 8 (once each)", len(calls))
		}
		// j7 has the earliest slot: j7–j3 start at once, then j2, j1, j0.
		want := map[string]time.Duration{"j7": 0, "j6": 0, "j5": 0, "j4": 0, "j3": 0,
			"j2": 5 * time.Second, "j1": 10 * time.Second, "j0": 15 * time.Second}
		for _, c := range calls {
			if d := c.at.Sub(start); d != want[c.job] {
				t.Errorf("catch-up of %s at +%s, want +%s", c.job, d, want[c.job])
			}
		}
	})
}

// TestPauseResumeAndStatus: cron.enabled false stops runs and manual
// runs; turning it back on catches up once.
func TestPauseResumeAndStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(nil)
		st := newMemStore(everyJob("a", time.Now(), time.Hour), everyJob("b", time.Now(), 2*time.Hour))
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{}); err != nil {
			t.Fatal(err)
		}
		status, err := s.Status("acme")
		if err != nil || status.Enabled || status.Jobs != 2 || status.NextWakeAtMs != nil {
			t.Fatalf("paused status %+v, %v", status, err)
		}
		if _, err := s.Run(t.Context(), "acme", "a", ModeForce); !errors.Is(err, ErrPaused) {
			t.Errorf("manual run while paused: %v", err)
		}
		time.Sleep(5 * time.Hour)
		synctest.Wait()
		if len(ex.seen()) != 0 {
			t.Fatalf("%d runs while paused", len(ex.seen()))
		}
		if err := s.UpdateTenant(t.Context(), "acme", TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(ex.seen()) != 2 {
			t.Fatalf("%d catch-up runs after resuming, want 2", len(ex.seen()))
		}
		status, _ = s.Status("acme")
		if want := ms(time.Now().Add(time.Hour)); status.NextWakeAtMs == nil || *status.NextWakeAtMs != want || !status.Enabled {
			t.Errorf("status %+v, want next wake in an hour", status)
		}
	})
}

// TestJobChanged arms a new job from now and disarms a disabled one.
func TestJobChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(nil)
		st := newMemStore()
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		j := everyJob("n", time.Now(), 10*time.Minute)
		j.State = automation.JobState{}
		st.jobs["n"] = j
		if err := s.JobChanged(t.Context(), "acme", "n"); err != nil {
			t.Fatal(err)
		}
		if next := st.job(t, "n").State.NextRunAtMs; next == nil || *next != ms(time.Now().Add(10*time.Minute)) {
			t.Fatalf("next run %v, want now+10m", next)
		}
		time.Sleep(25 * time.Minute)
		synctest.Wait()
		if len(ex.seen()) != 2 {
			t.Fatalf("%d runs in 25 min, want 2", len(ex.seen()))
		}
		st.SetCronState(t.Context(), "n", st.job(t, "n").State, ptr(false))
		if err := s.JobChanged(t.Context(), "acme", "n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if len(ex.seen()) != 2 {
			t.Errorf("a disabled job ran: %d runs", len(ex.seen()))
		}
		if err := s.JobChanged(t.Context(), "nobody", "n"); !errors.Is(err, ErrUnknownTenant) {
			t.Errorf("unknown tenant: %v", err)
		}
	})
}

// TestEditWhileSettling: a schedule edit that lands between the run's
// reading of the job and the saving of its outcome is not undone: the
// next slot is the new schedule's, and the outcome is kept.
func TestEditWhileSettling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(nil)
		j := everyJob("n", time.Now(), time.Hour)
		j.ConfigRevision = 1
		st := newMemStore(j)
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		sets := 0
		st.beforeSet = func(id string) {
			// The first write marks the run as running, the second saves
			// its outcome: the edit comes just before that one.
			if sets++; sets == 2 {
				e := st.jobs[id]
				e.Schedule.EveryMs, e.ConfigRevision = (10 * time.Minute).Milliseconds(), 2
				e.State.NextRunAtMs = ptr(ms(time.Now().Add(10 * time.Minute)))
				st.jobs[id] = e
			}
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		got := st.job(t, "n")
		if got.State.LastRunStatus != automation.StatusOK {
			t.Errorf("the outcome was lost: %+v", got.State)
		}
		if next := got.State.NextRunAtMs; next == nil || *next != ms(time.Now().Add(10*time.Minute)) {
			t.Fatalf("next run %v, want the edited schedule's, now+10m (%d)", next, ms(time.Now().Add(10*time.Minute)))
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := len(ex.seen()); n != 2 {
			t.Errorf("%d runs, want the second on the new schedule", n)
		}
	})
}

// TestScheduleErrorsDisable is R3.5: three schedule errors in a row turn
// the job off.
func TestScheduleErrorsDisable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(nil)
		j := everyJob("bad", time.Now(), time.Minute)
		// a zone this host no longer has: no slot can be computed
		j.Schedule = automation.Schedule{Kind: automation.KindCron, Expr: "*/5 * * * *", TZ: "Mars/Olympus_Mons"}
		st := newMemStore(j)
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		got := st.job(t, "bad")
		if got.Enabled || got.State.AutoDisabled == nil || got.State.AutoDisabled.Reason != automation.ReasonScheduleErrors {
			t.Errorf("job %+v: want disabled for schedule errors", got.State)
		}
	})
}

// TestNewRefusesBadOptions: a scheduler without its parts is an error.
func TestNewRefusesBadOptions(t *testing.T) {
	cases := []struct {
		name string
		o    Options
	}{
		{"no executor", Options{}},
		{"negative limit", Options{Exec: newExecutor(nil), MaxConcurrent: -1}},
		{"negative watchdog", Options{Exec: newExecutor(nil), Watchdog: -time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := New(c.o); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

// TestTenantsShareFairly: a tenant with a backlog of due jobs cannot
// starve another; starts alternate between tenants.
func TestTenantsShareFairly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(func(ctx context.Context, _ string, _ automation.Job) Outcome {
			sleep(ctx, time.Minute)
			return Outcome{Status: automation.StatusOK}
		})
		s := newScheduler(t, ex, Options{MaxConcurrent: 1})
		defer closeScheduler(t, s)
		now := time.Now()
		var noisy []automation.Job
		for i := range 50 {
			noisy = append(noisy, everyJob(fmt.Sprintf("n%02d", i), now, time.Hour))
		}
		quiet := everyJob("q", now, time.Hour)
		quiet.State.NextRunAtMs = ptr(ms(now.Add(time.Hour + time.Second))) // due after the backlog formed
		for name, st := range map[string]*memStore{"noisy": newMemStore(noisy...), "quiet": newMemStore(quiet)} {
			if err := s.AddTenant(t.Context(), name, st, TenantConfig{Enabled: true}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		calls := ex.seen()
		for i, c := range calls {
			if c.tenant == "quiet" {
				if i > 2 {
					t.Errorf("the quiet tenant's job started %dth, behind the other tenant's backlog", i+1)
				}
				return
			}
		}
		t.Fatalf("the quiet tenant's job never ran (%d runs)", len(calls))
	})
}

// TestCronSlots is conformance vector 4 through the scheduler, and a
// zone: a top-of-hour job runs at its stable stagger offset in
// [HH:00, HH:05), an exact one at HH:00, and a daily 08:00 Vienna job at
// 07:00 UTC in winter.
func TestCronSlots(t *testing.T) {
	cases := []struct {
		name     string
		sched    automation.Schedule
		firstRun func(id string, day0 time.Time) time.Time
	}{
		{"top of hour staggered", automation.Schedule{Kind: automation.KindCron, Expr: "0 * * * *", TZ: "UTC"},
			func(id string, day0 time.Time) time.Time {
				return day0.Add(time.Hour + automation.StaggerOffset(id, automation.DefaultStagger))
			}},
		{"top of hour exact", automation.Schedule{Kind: automation.KindCron, Expr: "0 * * * *", TZ: "UTC", StaggerMs: ptr(int64(0))},
			func(_ string, day0 time.Time) time.Time { return day0.Add(time.Hour) }},
		{"daily in Vienna", automation.Schedule{Kind: automation.KindCron, Expr: "0 8 * * *", TZ: "Europe/Vienna"},
			func(_ string, day0 time.Time) time.Time { return day0.Add(7 * time.Hour) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				day0 := time.Now()
				time.Sleep(30 * time.Minute) // made at 00:30
				j := everyJob("3f2b", time.Now(), time.Hour)
				j.Schedule, j.State = c.sched, automation.JobState{}
				st := newMemStore(j)
				ex := newExecutor(nil)
				s := newScheduler(t, ex, Options{})
				defer closeScheduler(t, s)
				if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(12 * time.Hour)
				synctest.Wait()
				calls := ex.seen()
				want := c.firstRun(j.ID, day0)
				if len(calls) == 0 || !calls[0].at.Equal(want) {
					t.Fatalf("runs %+v, want the first at %v", calls, want.UTC())
				}
				if d := want.Sub(day0.Add(time.Hour)); c.sched.Expr == "0 * * * *" && (d < 0 || d >= 5*time.Minute) {
					t.Errorf("stagger %s outside [0, 5m)", d)
				}
			})
		})
	}
}

// TestJobGoneFromTheStore: a job deleted behind the scheduler's back is
// forgotten at its next wake, not retried.
func TestJobGoneFromTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(nil)
		st := newMemStore(everyJob("a", time.Now(), time.Hour), everyJob("b", time.Now(), time.Hour))
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		st.RemoveCronJob(t.Context(), "a")
		time.Sleep(90 * time.Minute)
		synctest.Wait()
		status, _ := s.Status("acme")
		if calls := ex.seen(); len(calls) != 1 || calls[0].job != "b" || status.Jobs != 1 {
			t.Errorf("runs %+v, status %+v: want only b, and a forgotten", calls, status)
		}
	})
}

// TestStoreRefusesOneJob: a job whose state cannot be written does not
// hold back the tenant's other jobs; it is tried again every 30 s and
// never runs unrecorded.
func TestStoreRefusesOneJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := newExecutor(nil)
		bad := everyJob("bad", time.Now(), time.Hour)
		bad.State.RunningAtMs = ptr(ms(time.Now())) // left running: recovery must write
		st := newMemStore(bad, everyJob("good", time.Now(), time.Hour))
		st.refuse = map[string]bool{"bad": true}
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", st, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Minute)
		synctest.Wait()
		if calls := ex.seen(); len(calls) != 1 || calls[0].job != "good" {
			t.Errorf("runs %+v: want only the good job", calls)
		}
	})
}
