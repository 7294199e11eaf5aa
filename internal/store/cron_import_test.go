package store

import (
	"context"
	"strings"
	"testing"

	"talon/internal/automation"
)

func TestImportCronTwice(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	files := automation.LegacyFiles{
		Jobs: []byte(`{"version":1,"jobs":[
			{"id":"a","name":"A","createdAtMs":1,"schedule":{"kind":"every","everyMs":60000},"payload":{"kind":"systemEvent","text":"t"}},
			"not a job",
			{"id":"b","name":"B","createdAtMs":2,"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},"payload":{"kind":"agentTurn","message":"m"}}]}`),
		State:      []byte(`{"version":1,"jobs":{"a":{"updatedAtMs":3,"state":{"nextRunAtMs":70000,"consecutiveErrors":1}}}}`),
		Quarantine: []byte(`{"version":1,"jobs":[{"reason":"invalid-schedule","job":{"id":"q"}}]}`),
		Runs: map[string][]byte{
			"a": []byte(`{"ts":10,"jobId":"a","action":"finished","status":"ok","runId":"r1"}` + "\n" +
				`{"ts":20,"jobId":"a","action":"finished","status":"ok"}` + "\n" + `garbage` + "\n"),
			"b": []byte(`{"ts":30,"jobId":"b","action":"finished","status":"error","summary":"` + strings.Repeat("s", maxCronRun) + `"}`),
		},
	}
	imp := automation.ParseLegacy(files, automation.LegacyOptions{NowMs: 1_000})
	steps := []struct {
		name string
		want CronImported
	}{
		// quarantined: jobs.json[1], OpenClaw's row, runs/a.jsonl:3 and
		// b's run, which is too large for the table.
		{"first import", CronImported{Jobs: 2, Runs: 2, Quarantined: 4}},
		{"second import adds nothing", CronImported{JobsPresent: 2}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, err := db.ImportCron(ctx, imp)
			if err != nil || got != s.want {
				t.Fatalf("ImportCron = %+v, %v; want %+v", got, err, s.want)
			}
		})
	}
	a, err := db.CronJob(ctx, "a")
	if err != nil || *a.State.NextRunAtMs != 70_000 || a.State.ConsecutiveErrors != 1 || a.UpdatedAtMs != 3 {
		t.Errorf("job a = %+v, %v", a, err)
	}
	if _, n, _ := db.CronRuns(ctx, CronRunQuery{}); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
	q, err := db.CronQuarantine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, r := range q {
		sources = append(sources, r.Source)
	}
	want := "jobs.json[1] jobs-quarantine.json[0] runs/a.jsonl:3 run b/legacy-30-1"
	if got := strings.Join(sources, " "); got != want {
		t.Errorf("quarantined %q, want %q", got, want)
	}

	// A job edited since the import is not put back by another.
	a.Name = "edited"
	if _, err := db.UpdateCronJob(ctx, a, a.ConfigRevision); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportCron(ctx, imp); err != nil {
		t.Fatal(err)
	}
	if a, _ := db.CronJob(ctx, "a"); a.Name != "edited" {
		t.Errorf("re-import overwrote the edited job: %q", a.Name)
	}
}
