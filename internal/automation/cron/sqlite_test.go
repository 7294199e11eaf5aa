package cron

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"talon/internal/automation"
	"talon/internal/store"
)

// TestWithTheSQLiteStore runs the scheduler on a tenant's real database:
// a one-shot that deletes itself, a recurring job, and a job a previous
// process left running.
func TestWithTheSQLiteStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, err := store.Open(filepath.Join(t.TempDir(), "tenant.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		now := time.Now()
		once := automation.Job{
			ID: "once", Name: "reminder", Enabled: true, DeleteAfterRun: true, CreatedAtMs: ms(now), UpdatedAtMs: ms(now),
			Schedule:      automation.Schedule{Kind: automation.KindAt, At: now.Add(5 * time.Minute).UTC().Format("2006-01-02T15:04:05")},
			SessionTarget: "main", Payload: automation.Payload{Kind: automation.PayloadSystemEvent, Text: "stand up"},
			ConfigRevision: 1,
		}
		every := everyJob("every", now, 10*time.Minute)
		every.ConfigRevision = 1
		stale := everyJob("stale", now.Add(-time.Hour), time.Hour)
		stale.ConfigRevision = 1
		stale.State = automation.JobState{NextRunAtMs: ptr(ms(now)), RunningAtMs: ptr(ms(now.Add(-time.Minute)))}
		for _, j := range []automation.Job{once, every, stale} {
			if err := db.AddCronJob(t.Context(), j); err != nil {
				t.Fatal(err)
			}
		}
		ex := newExecutor(func(_ context.Context, _ string, j automation.Job) Outcome {
			return Outcome{Status: automation.StatusOK, Summary: "done " + j.ID}
		})
		s := newScheduler(t, ex, Options{})
		defer closeScheduler(t, s)
		if err := s.AddTenant(t.Context(), "acme", db, TenantConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(35 * time.Minute)
		synctest.Wait()
		if _, err := db.CronJob(t.Context(), "once"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the one-shot with deleteAfterRun is still stored: %v", err)
		}
		count := func(job string, statuses ...string) int {
			_, n, err := db.CronRuns(t.Context(), store.CronRunQuery{JobID: job, Statuses: statuses})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count("every", automation.StatusOK); n != 3 {
			t.Errorf("%d ok runs of the 10-minute job in 35 min, want 3", n)
		}
		if lost, ok := count("stale", automation.StatusLost), count("stale", automation.StatusOK); lost != 1 || ok != 1 {
			t.Errorf("stale job: %d lost and %d ok runs, want 1 and 1 (the catch-up)", lost, ok)
		}
		if n := count("once"); n != 1 {
			t.Errorf("%d runs of the one-shot, want 1 (runs outlive their job)", n)
		}
		j, err := db.CronJob(t.Context(), "every")
		if err != nil {
			t.Fatal(err)
		}
		if j.State.RunningAtMs != nil || j.State.LastRunStatus != automation.StatusOK || *j.State.NextRunAtMs != ms(now.Add(40*time.Minute)) {
			t.Errorf("stored state %+v", j.State)
		}
	})
}
