package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"talon/internal/automation"
	"talon/internal/llm"
	"talon/internal/session"

	"github.com/google/go-cmp/cmp"
)

func i64(v int64) *int64 { return &v }

// cronJob is a job as automation would make it, named and scheduled.
func cronJob(id, name string) automation.Job {
	return automation.Job{
		ID: id, Name: name, Enabled: true, SessionTarget: "isolated", WakeMode: "now",
		Schedule:    automation.Schedule{Kind: automation.KindCron, Expr: "0 7 * * 1-5", TZ: "Europe/Vienna", StaggerMs: i64(0)},
		Payload:     automation.Payload{Kind: automation.PayloadAgentTurn, Message: "Summarize overnight updates."},
		CreatedAtMs: 1_000, UpdatedAtMs: 1_000, ConfigRevision: 1,
	}
}

func TestCronJobRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	full := cronJob("a", "Morning brief")
	full.Description, full.AgentID, full.DeleteAfterRun, full.Creator = "weekday digest", "ops", true, "operator"
	full.Payload.Fallbacks, full.Payload.ToolsAllow, full.Payload.TimeoutSeconds = []string{"m2"}, []string{}, new(int)
	full.Delivery = &automation.Delivery{Mode: automation.DeliverAnnounce, Channel: "telegram", To: "-100:topic:42",
		ThreadID: json.RawMessage(`42`), FailureDestination: &automation.Destination{Channel: "telegram", To: "111"}}
	full.FailureAlert = &automation.FailureAlert{After: 2, CooldownMs: 3_600_000}
	full.State = automation.JobState{NextRunAtMs: i64(5_000), LastRunStatus: "error", ConsecutiveErrors: 2,
		AutoDisabled: &automation.AutoDisabled{Reason: "schedule-errors", AtMs: 9}}
	off := cronJob("b", "Alerts off")
	off.FailureAlert = &automation.FailureAlert{Disabled: true}
	off.Enabled = false
	cases := []struct {
		name string
		job  automation.Job
	}{
		{"every field", full},
		{"failureAlert false survives", off},
		{"bare job", cronJob("c", "Bare")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := db.AddCronJob(ctx, tc.job); err != nil {
				t.Fatal(err)
			}
			got, err := db.CronJob(ctx, tc.job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.job, got); d != "" {
				t.Errorf("CronJob (-added +read):\n%s", d)
			}
		})
	}
	all, err := db.CronJobs(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("CronJobs = %d jobs, %v; want 3", len(all), err)
	}
	if _, err := db.CronJob(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("CronJob(unknown) = %v, want ErrNotFound", err)
	}
}

func TestAddCronJobRefuses(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.AddCronJob(ctx, cronJob("taken", "x")); err != nil {
		t.Fatal(err)
	}
	huge := cronJob("huge", "x")
	huge.Payload.Message = strings.Repeat("m", maxCronDefinition)
	cases := []struct {
		name string
		job  automation.Job
		want string
		is   error
	}{
		{"no id", cronJob("", "x"), "job id", nil},
		{"id with a slash", cronJob("a/b", "x"), "job id", nil},
		{"id too long", cronJob(strings.Repeat("i", automation.MaxJobIDLen+1), "x"), "job id", nil},
		{"no schedule", func() automation.Job { j := cronJob("s", "x"); j.Schedule = automation.Schedule{}; return j }(), "no schedule kind", nil},
		{"definition too large", huge, "job definition is", nil},
		{"id taken", cronJob("taken", "y"), "taken", ErrCronJobExists},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := db.AddCronJob(ctx, tc.job)
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("AddCronJob = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if all, _ := db.CronJobs(ctx); len(all) != 1 {
		t.Errorf("%d jobs stored, want only the first", len(all))
	}
}

// TestCronJobCap fills a tenant to MaxCronJobs (one import, one
// transaction) and checks the next add is refused and the next import
// quarantines what does not fit.
func TestCronJobCap(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var imp automation.LegacyImport
	for i := range MaxCronJobs - 1 {
		imp.Jobs = append(imp.Jobs, cronJob(fmt.Sprintf("j%04d", i), "n"))
	}
	if got, err := db.ImportCron(ctx, imp); err != nil || got.Jobs != MaxCronJobs-1 {
		t.Fatalf("ImportCron = %+v, %v", got, err)
	}
	if err := db.AddCronJob(ctx, cronJob("last", "n")); err != nil {
		t.Fatalf("the %dth job: %v", MaxCronJobs, err)
	}
	if err := db.AddCronJob(ctx, cronJob("over", "n")); !errors.Is(err, ErrTooManyCronJobs) {
		t.Fatalf("the job over the cap: %v, want ErrTooManyCronJobs", err)
	}
	got, err := db.ImportCron(ctx, automation.LegacyImport{Jobs: []automation.Job{cronJob("j0000", "n"), cronJob("over", "n")}})
	if err != nil || got != (CronImported{JobsPresent: 1, Quarantined: 1}) {
		t.Fatalf("import over the cap = %+v, %v; want one present, one quarantined", got, err)
	}
	q, err := db.CronQuarantine(ctx)
	if err != nil || len(q) != 1 || q[0].Source != "job over" || !strings.Contains(q[0].Reason, "at most 1000") {
		t.Errorf("CronQuarantine = %+v, %v", q, err)
	}
}

func TestUpdateCronJob(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	j := cronJob("a", "Before")
	j.State = automation.JobState{NextRunAtMs: i64(100), ConsecutiveErrors: 3}
	if err := db.AddCronJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	edit := j
	edit.Name, edit.UpdatedAtMs, edit.Enabled = "After", 2_000, false
	edit.State = automation.JobState{NextRunAtMs: i64(200)}
	cases := []struct {
		name     string
		job      automation.Job
		expected int64
		is       error
		wantRev  int64
	}{
		{"current revision: applied", edit, 1, nil, 2},
		{"stale revision: refused", func() automation.Job { e := edit; e.Name = "Lost"; return e }(), 1, ErrStateChanged, 2},
		{"next revision: applied", func() automation.Job { e := edit; e.Name = "Again"; return e }(), 2, nil, 3},
		{"unknown job", cronJob("gone", "x"), 1, ErrNotFound, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := db.UpdateCronJob(ctx, tc.job, tc.expected)
			if !errors.Is(err, tc.is) {
				t.Fatalf("UpdateCronJob = %v, want %v", err, tc.is)
			}
			if err != nil {
				return
			}
			read, err := db.CronJob(ctx, tc.job.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.ConfigRevision != tc.wantRev || read.ConfigRevision != tc.wantRev {
				t.Errorf("revision returned %d, stored %d; want %d", got.ConfigRevision, read.ConfigRevision, tc.wantRev)
			}
			if d := cmp.Diff(got, read); d != "" {
				t.Errorf("stored job differs from the returned one:\n%s", d)
			}
		})
	}
	read, _ := db.CronJob(ctx, "a")
	if read.Name != "Again" || read.Enabled || *read.State.NextRunAtMs != 200 || read.State.ConsecutiveErrors != 0 {
		t.Errorf("after the edits: %+v", read)
	}
}

func TestSetCronState(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.AddCronJob(ctx, cronJob("a", "x")); err != nil {
		t.Fatal(err)
	}
	off, on := false, true
	cases := []struct {
		name    string
		id      string
		st      automation.JobState
		enabled *bool
		is      error
		want    bool // enabled after
	}{
		{"state only", "a", automation.JobState{NextRunAtMs: i64(7), LastRunStatus: "ok"}, nil, nil, true},
		{"auto-disable", "a", automation.JobState{ConsecutiveErrors: 5,
			AutoDisabled: &automation.AutoDisabled{Reason: "consecutive-failures", AtMs: 8, ConsecutiveErrors: 5}}, &off, nil, false},
		{"enable again", "a", automation.JobState{}, &on, nil, true},
		{"unknown job", "gone", automation.JobState{}, &off, ErrNotFound, false},
		{"disable", "a", automation.JobState{LastRunStatus: "ok"}, &off, nil, false},
		// A run that ends after its job was disabled does not arm it.
		{"a next run for a disabled job", "a", automation.JobState{LastRunStatus: "ok", NextRunAtMs: i64(9)}, nil, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := db.SetCronState(ctx, tc.id, tc.st, tc.enabled)
			if !errors.Is(err, tc.is) {
				t.Fatalf("SetCronState = %v, want %v", err, tc.is)
			}
			if err != nil {
				return
			}
			got, err := db.CronJob(ctx, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.st
			if !tc.want {
				want.NextRunAtMs = nil
			}
			if d := cmp.Diff(want, got.State); d != "" || got.Enabled != tc.want || got.ConfigRevision != 1 {
				t.Errorf("state (-set +read):\n%s\nenabled %v (want %v), revision %d (want 1)", d, got.Enabled, tc.want, got.ConfigRevision)
			}
		})
	}
}

func TestRemoveCronJob(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.AddCronJob(ctx, cronJob("a", "x")); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendCronRun(ctx, cronRun("a", "r1", 10, "ok", "delivered", "")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if got, err := db.RemoveCronJob(ctx, "a"); err != nil || got != want {
			t.Errorf("remove %d = %v, %v; want %v", i+1, got, err, want)
		}
	}
	if _, err := db.CronJob(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("CronJob after remove = %v", err)
	}
	if err := db.SetCronState(ctx, "a", automation.JobState{}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetCronState after remove = %v, want ErrNotFound (the state row went with the job)", err)
	}
	if runs, n, err := db.CronRuns(ctx, CronRunQuery{JobID: "a"}); err != nil || n != 1 || len(runs) != 1 {
		t.Errorf("runs after remove = %d/%d, %v; want the run kept", len(runs), n, err)
	}
}

func TestListCronJobs(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	mk := func(id, name, agent, kind string, enabled bool, next *int64, status string, updated int64) automation.Job {
		j := cronJob(id, name)
		j.AgentID, j.Enabled, j.UpdatedAtMs = agent, enabled, updated
		j.Schedule = automation.Schedule{Kind: kind, EveryMs: 60_000, At: "2026-01-01T00:00:00Z", Expr: "* * * * *"}
		j.State = automation.JobState{NextRunAtMs: next, LastRunStatus: status}
		return j
	}
	for _, j := range []automation.Job{
		mk("j1", "beta report", "", automation.KindCron, true, i64(300), "ok", 10),
		mk("j2", "Alpha digest", "ops", automation.KindEvery, true, i64(100), "error", 30),
		mk("j3", "gamma", "ops", automation.KindAt, false, nil, "", 20),
		func() automation.Job {
			j := mk("j4", "delta", "sales", automation.KindCron, true, nil, "skipped", 40)
			j.Description = "Wöchentlicher ÄRGER"
			return j
		}(),
		mk("j5", "Epsilon", "", automation.KindEvery, false, i64(200), "ok", 50),
	} {
		if err := db.AddCronJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		q     CronListQuery
		ids   []string
		total int
	}{
		{"default: enabled, by next run, none last", CronListQuery{}, []string{"j2", "j1", "j4"}, 3},
		{"include disabled", CronListQuery{IncludeDisabled: true}, []string{"j2", "j5", "j1", "j3", "j4"}, 5},
		{"enabled=all", CronListQuery{Enabled: "all"}, []string{"j2", "j5", "j1", "j3", "j4"}, 5},
		{"enabled=disabled wins over includeDisabled", CronListQuery{Enabled: "disabled", IncludeDisabled: true}, []string{"j5", "j3"}, 2},
		{"next run desc keeps none last", CronListQuery{Enabled: "all", SortDir: "desc"}, []string{"j1", "j5", "j2", "j3", "j4"}, 5},
		{"query matches name, any case", CronListQuery{Enabled: "all", Query: "ALPHA"}, []string{"j2"}, 1},
		{"query matches agent id", CronListQuery{Enabled: "all", Query: "sales"}, []string{"j4"}, 1},
		{"query matches description, case folded beyond ASCII", CronListQuery{Enabled: "all", Query: "ärger"}, []string{"j4"}, 1},
		{"query matches id", CronListQuery{Enabled: "all", Query: "j3"}, []string{"j3"}, 1},
		{"schedule kind", CronListQuery{Enabled: "all", ScheduleKind: "every"}, []string{"j2", "j5"}, 2},
		{"last run status", CronListQuery{Enabled: "all", LastRunStatus: "ok"}, []string{"j5", "j1"}, 2},
		{"last run status unknown", CronListQuery{Enabled: "all", LastRunStatus: "unknown"}, []string{"j3"}, 1},
		{"agent", CronListQuery{Enabled: "all", AgentID: "ops", DefaultAgentID: "main"}, []string{"j2", "j3"}, 2},
		{"default agent takes jobs without one", CronListQuery{Enabled: "all", AgentID: "main", DefaultAgentID: "main"}, []string{"j5", "j1"}, 2},
		{"by name, case-insensitive", CronListQuery{Enabled: "all", SortBy: "name"}, []string{"j2", "j1", "j4", "j5", "j3"}, 5},
		{"by updatedAtMs desc", CronListQuery{Enabled: "all", SortBy: "updatedAtMs", SortDir: "desc"}, []string{"j5", "j4", "j2", "j3", "j1"}, 5},
		{"page", CronListQuery{Enabled: "all", SortBy: "name", Limit: 2, Offset: 2}, []string{"j4", "j5"}, 5},
		{"page past the end", CronListQuery{Enabled: "all", Offset: 9}, nil, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			jobs, total, err := db.ListCronJobs(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
			if d := cmp.Diff(tc.ids, ids); d != "" || total != tc.total {
				t.Errorf("ids (-want +got):\n%s\ntotal %d, want %d", d, total, tc.total)
			}
		})
	}
	bad := []struct {
		name string
		q    CronListQuery
		want string
	}{
		{"enabled", CronListQuery{Enabled: "some"}, "enabled"},
		{"schedule kind", CronListQuery{ScheduleKind: "stream"}, "scheduleKind"},
		{"status", CronListQuery{LastRunStatus: "great"}, "lastRunStatus"},
		{"sort by", CronListQuery{SortBy: "id"}, "sortBy"},
		{"sort dir", CronListQuery{SortDir: "up"}, "sortDir"},
		{"limit", CronListQuery{Limit: 201}, "limit"},
		{"offset", CronListQuery{Offset: -1}, "offset"},
		{"query", CronListQuery{Query: strings.Repeat("q", 201)}, "query"},
	}
	for _, tc := range bad {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			if _, _, err := db.ListCronJobs(ctx, tc.q); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ListCronJobs = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func cronRun(job, run string, ts int64, status, delivery, summary string) automation.Run {
	return automation.Run{Ts: ts, JobID: job, JobName: "name of " + job, Action: "finished", Status: status,
		DeliveryStatus: delivery, Summary: summary, RunID: run, RunAtMs: ts - 5, DurationMs: 5}
}

func TestCronRuns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	runs := []automation.Run{
		cronRun("a", "r1", 10, "ok", "delivered", "All quiet"),
		cronRun("a", "r2", 20, "error", "not-delivered", ""),
		cronRun("b", "r3", 30, "ok", "not-requested", "Three NEW tickets"),
		cronRun("a", "r4", 40, "skipped", "", ""),
		cronRun("b", "r5", 50, "error", "unknown", ""),
	}
	runs[1].Error = "model timeout"
	runs[3].Reason = "missed"
	for _, r := range runs {
		if err := db.AppendCronRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		q     CronRunQuery
		ids   []string
		total int
	}{
		{"all, newest first", CronRunQuery{}, []string{"r5", "r4", "r3", "r2", "r1"}, 5},
		{"oldest first", CronRunQuery{SortDir: "asc"}, []string{"r1", "r2", "r3", "r4", "r5"}, 5},
		{"one job", CronRunQuery{JobID: "a"}, []string{"r4", "r2", "r1"}, 3},
		{"one run", CronRunQuery{RunID: "r3"}, []string{"r3"}, 1},
		{"statuses", CronRunQuery{Statuses: []string{"error", "skipped"}}, []string{"r5", "r4", "r2"}, 3},
		{"delivery statuses", CronRunQuery{DeliveryStatuses: []string{"delivered", "unknown"}}, []string{"r5", "r1"}, 2},
		{"query in summary, any case", CronRunQuery{Query: "new tickets"}, []string{"r3"}, 1},
		{"query in error", CronRunQuery{Query: "timeout"}, []string{"r2"}, 1},
		{"query in job name", CronRunQuery{Query: "name of b"}, []string{"r5", "r3"}, 2},
		{"job and status", CronRunQuery{JobID: "b", Statuses: []string{"ok"}}, []string{"r3"}, 1},
		{"page", CronRunQuery{Limit: 2, Offset: 1}, []string{"r4", "r3"}, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, total, err := db.CronRuns(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.RunID)
			}
			if d := cmp.Diff(tc.ids, ids); d != "" || total != tc.total {
				t.Errorf("runs (-want +got):\n%s\ntotal %d, want %d", d, total, tc.total)
			}
		})
	}
	got, _, _ := db.CronRuns(ctx, CronRunQuery{RunID: "r2"})
	if d := cmp.Diff(runs[1], got[0]); d != "" {
		t.Errorf("a run read back (-appended +read):\n%s", d)
	}
	bad := []struct {
		name string
		r    automation.Run
		want string
	}{
		{"same run id again", cronRun("a", "r1", 60, "ok", "", ""), "a run with this id already"},
		{"no run id", cronRun("a", "", 60, "ok", "", ""), "run id"},
		{"no job id", cronRun("", "r9", 60, "ok", "", ""), "job id"},
		{"not finished", func() automation.Run { r := cronRun("a", "r9", 60, "ok", "", ""); r.Action = "started"; return r }(), "action"},
		{"unknown status", cronRun("a", "r9", 60, "fine", "", ""), "status"},
		{"too large", cronRun("a", "r9", 60, "ok", "", strings.Repeat("s", maxCronRun)), "shorten its summary"},
	}
	for _, tc := range bad {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			if err := db.AppendCronRun(ctx, tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("AppendCronRun = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, _, err := db.CronRuns(ctx, CronRunQuery{Limit: 500}); err == nil {
		t.Error("CronRuns with limit 500 succeeded")
	}
}

func TestPruneCronRuns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.UnixMilli(1_800_000_000_000)
	at := func(d time.Duration) int64 { return ms(now.Add(-d)) }
	cases := []struct {
		run  automation.Run
		kept bool
	}{
		{cronRun("a", "fresh", at(time.Hour), "ok", "", ""), true},
		{cronRun("a", "six-days", at(6*24*time.Hour), "error", "", ""), true},
		{cronRun("a", "eight-days", at(8*24*time.Hour), "ok", "", ""), false},
		{cronRun("b", "lost-23h", at(23*time.Hour), automation.StatusLost, "", ""), true},
		{cronRun("b", "lost-25h", at(25*time.Hour), automation.StatusLost, "", ""), false},
		{cronRun("b", "skipped-2d", at(48*time.Hour), "skipped", "", ""), true},
	}
	for _, tc := range cases {
		if err := db.AppendCronRun(ctx, tc.run); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.PruneCronRuns(ctx, now)
	if err != nil || n != 2 {
		t.Fatalf("PruneCronRuns = %d, %v; want 2", n, err)
	}
	for _, tc := range cases {
		t.Run(tc.run.RunID, func(t *testing.T) {
			_, total, err := db.CronRuns(ctx, CronRunQuery{JobID: tc.run.JobID, RunID: tc.run.RunID})
			if err != nil || (total == 1) != tc.kept {
				t.Errorf("found %d, %v; want kept %v", total, err, tc.kept)
			}
		})
	}
}

// TestCronRunsPerJobCap checks R4.3's 2000 rows per job on each path a
// run comes in by, and the prune's own pass over rows put there by hand.
func TestCronRunsPerJobCap(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.UnixMilli(1_800_000_000_000)
	var imp automation.LegacyImport
	for i := range MaxCronRunsPerJob + 5 {
		imp.Runs = append(imp.Runs, cronRun("a", fmt.Sprintf("r%05d", i), ms(now)-int64(10_000-i), "ok", "", ""))
	}
	imp.Runs = append(imp.Runs, cronRun("b", "other", ms(now), "ok", "", ""))
	if got, err := db.ImportCron(ctx, imp); err != nil || got.Runs != MaxCronRunsPerJob+6 {
		t.Fatalf("ImportCron = %+v, %v", got, err)
	}
	count := func() (oldest string, total int) {
		runs, total, err := db.CronRuns(ctx, CronRunQuery{JobID: "a", SortDir: "asc", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return runs[0].RunID, total
	}
	steps := []struct {
		name   string
		do     func() error
		oldest string
	}{
		{"import keeps the newest 2000", func() error { return nil }, "r00005"},
		{"append drops the oldest", func() error { return db.AppendCronRun(ctx, cronRun("a", "new", ms(now), "ok", "", "")) }, "r00006"},
		{"prune caps rows added behind the store's back", func() error {
			for i := range 3 {
				if _, err := db.w.Exec(`INSERT INTO cron_runs (job_id, run_id, ts, status, entry) VALUES ('a', ?, ?, 'ok', '{}')`,
					fmt.Sprintf("x%d", i), ms(now)); err != nil {
					return err
				}
			}
			_, err := db.PruneCronRuns(ctx, now)
			return err
		}, "r00009"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := s.do(); err != nil {
				t.Fatal(err)
			}
			if oldest, total := count(); oldest != s.oldest || total != MaxCronRunsPerJob {
				t.Errorf("oldest %s of %d; want %s of %d", oldest, total, s.oldest, MaxCronRunsPerJob)
			}
		})
	}
	if _, total, _ := db.CronRuns(ctx, CronRunQuery{JobID: "b"}); total != 1 {
		t.Errorf("job b has %d runs, want its 1 untouched", total)
	}
}

// TestPruneCronSessions: isolated run sessions older than the cut go with
// their transcripts; newer ones, other cron sessions and every other
// session stay.
func TestPruneCronSessions(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-48*time.Hour), now.Add(-time.Hour)
	rows := []struct {
		agent, key string
		at         time.Time
		pruned     bool
	}{
		{"main", "agent:main:cron:job1:run:r1", old, true},
		{"ops", "agent:ops:cron:job2:run:r2", old, true},
		{"main", "agent:main:cron:job1:run:r3", fresh, false},
		{"main", "agent:main:cron:job1", old, false}, // legacy per-job session: not a run's
		{"main", "agent:main:main", old, false},
		{"main", "agent:main:telegram:dm:cron:run:x", old, false}, // chats' keys that look alike
		{"main", "agent:main:hook:cron:x:run:y", old, false},
	}
	for i, r := range rows {
		id := fmt.Sprintf("s%d", i)
		if err := db.PutSession(ctx, r.agent, r.key, session.Entry{SessionID: id, UpdatedAt: r.at.UnixMilli()}); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendMessages(ctx, id, llm.Message{Role: llm.RoleUser, Content: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.PruneCronSessions(ctx, now.Add(-24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneCronSessions = %d, %v; want 2", n, err)
	}
	for i, r := range rows {
		_, err := db.GetSession(ctx, r.agent, r.key)
		msgs, terr := db.Transcript(ctx, fmt.Sprintf("s%d", i), 0)
		if terr != nil {
			t.Fatal(terr)
		}
		if gone := errors.Is(err, ErrNotFound); gone != r.pruned || (len(msgs) == 0) != r.pruned {
			t.Errorf("%s: session gone %v (%v), transcript %d messages; want pruned %v", r.key, gone, err, len(msgs), r.pruned)
		}
	}
}
