package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"talon/internal/gateway"
	"talon/internal/store"
)

// writeLegacyCron lays out an OpenClaw cron directory: two jobs (one
// malformed row between them), a state file, a run log with a bad line,
// and an archived log that must be skipped.
func writeLegacyCron(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cron")
	files := map[string]string{
		"jobs.json": `{"version":1,"jobs":[
			{"id":"a","name":"Morning","createdAtMs":1,"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},
			 "payload":{"kind":"agentTurn","message":"brief me"}},
			{"id":"broken"},
			{"id":"b","name":"Ping","createdAtMs":2,"schedule":{"kind":"every","everyMs":60000},"payload":{"kind":"systemEvent","text":"ping"}}]}`,
		"jobs-state.json":       `{"version":1,"jobs":{"b":{"updatedAtMs":5,"state":{"nextRunAtMs":60002,"lastRunStatus":"ok"}}}}`,
		"runs/a.jsonl":          `{"ts":10,"jobId":"a","action":"finished","status":"ok","runId":"r1"}` + "\n" + "{oops\n",
		"runs/a.jsonl.migrated": `{"ts":1,"jobId":"a","action":"finished","status":"ok","runId":"old"}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCronImportCmd(args ...string) (string, error) {
	cmd := newCronImportCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestCronImport(t *testing.T) {
	src := writeLegacyCron(t)
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "tenants", "acme"), 0o700); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		args []string
		want string
	}{
		{"first import", []string{src, "--state-dir", state},
			"imported 2 jobs (0 already there) and 1 run from " + src + " into " + filepath.Join(state, gateway.StoreFile) + "\n" +
				"2 rows could not be imported and are kept in the database's cron_quarantine table for review\n"},
		{"second import adds nothing", []string{src, "--state-dir", state},
			"imported 0 jobs (2 already there) and 0 runs from " + src + " into " + filepath.Join(state, gateway.StoreFile) + "\n"},
		{"a tenant's database, as JSON", []string{src, "--state-dir", state, "--tenant", "acme", "--json"},
			`{"database":"` + filepath.Join(state, "tenants", "acme", gateway.StoreFile) + `","jobs":2,"jobsPresent":0,"quarantined":2,"runs":1,"source":"` + src + `"}` + "\n"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, err := runCronImportCmd(s.args...)
			if err != nil || out != s.want {
				t.Fatalf("output %q, %v\nwant %q", out, err, s.want)
			}
		})
	}
	db, err := store.Open(filepath.Join(state, gateway.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	b, err := db.CronJob(ctx, "b")
	if err != nil || b.Name != "Ping" || *b.State.NextRunAtMs != 60_002 || b.UpdatedAtMs != 5 {
		t.Errorf("job b = %+v, %v", b, err)
	}
	runs, _, err := db.CronRuns(ctx, store.CronRunQuery{})
	if err != nil || len(runs) != 1 || runs[0].RunID != "r1" {
		t.Errorf("runs = %+v, %v; want r1 only (the archived log skipped)", runs, err)
	}
	q, err := db.CronQuarantine(ctx)
	if err != nil || len(q) != 2 || q[0].Source != "jobs.json[1]" || q[1].Source != "runs/a.jsonl:2" {
		t.Errorf("quarantine = %+v, %v", q, err)
	}
	if _, err := os.Stat(filepath.Join(src, "jobs.json")); err != nil {
		t.Errorf("the source was changed: %v", err)
	}
}

func TestCronImportRefuses(t *testing.T) {
	src := writeLegacyCron(t)
	state := t.TempDir()
	empty := t.TempDir()
	big := t.TempDir()
	if err := os.WriteFile(filepath.Join(big, "jobs.json"), bytes.Repeat([]byte(" "), maxLegacyStoreFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no store in the directory", []string{empty, "--state-dir", state}, "no OpenClaw cron store in " + empty},
		{"a store file too large", []string{big, "--state-dir", state}, "larger than 32 MiB"},
		{"no state directory", []string{src, "--state-dir", filepath.Join(state, "typo")}, "no state directory"},
		{"an unknown tenant", []string{src, "--state-dir", state, "--tenant", "nobody"}, "no state directory"},
		{"a bad tenant id", []string{src, "--state-dir", state, "--tenant", "../x"}, "is not a tenant id"},
		{"two directories", []string{src, empty}, "accepts at most 1 arg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCronImportCmd(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(state, gateway.StoreFile)); !os.IsNotExist(err) {
		t.Errorf("a refused import created the database: %v", err)
	}
}
