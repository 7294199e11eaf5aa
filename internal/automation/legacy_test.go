package automation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const nowMs = 1_800_000_000_000

func i64p(v int64) *int64 { return &v }

// TestParseLegacyJobs reads one jobs.json row per case, in OpenClaw's
// current and older spellings, and the rows it must quarantine.
func TestParseLegacyJobs(t *testing.T) {
	base := func(mod func(*Job)) Job {
		j := Job{ID: "j1", Name: "Brief", Enabled: true, SessionTarget: "isolated", WakeMode: "now",
			Schedule:    Schedule{Kind: KindCron, Expr: "0 7 * * *", TZ: "UTC"},
			Payload:     Payload{Kind: PayloadAgentTurn, Message: "hi"},
			CreatedAtMs: 5, UpdatedAtMs: 6, ConfigRevision: 1}
		if mod != nil {
			mod(&j)
		}
		return j
	}
	cases := []struct {
		name   string
		row    string
		want   *Job
		reason string // of the quarantined row
	}{
		{"current shape", `{"id":"j1","name":"Brief","enabled":true,"createdAtMs":5,"updatedAtMs":6,
			"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},"sessionTarget":"isolated","wakeMode":"now",
			"payload":{"kind":"agentTurn","message":"hi"}}`, ptrTo(base(nil)), ""},
		{"jobId alias, kind in any case, enabled absent", `{"jobId":"j1","name":"Brief","createdAtMs":5,"updatedAtMs":6,
			"schedule":{"kind":"CRON","cron":"0 7 * * *","tz":"UTC"},"payload":{"kind":"AGENTTURN","message":"hi"}}`, ptrTo(base(nil)), ""},
		{"top-level schedule and message, settings moved into the payload", `{"id":"j1","name":"Brief","createdAtMs":5,
			"updatedAtMs":6,"expr":"0 7 * * *","tz":"UTC","message":"hi","model":"m1","timeoutSeconds":30}`,
			ptrTo(base(func(j *Job) {
				j.Payload.Model, j.Payload.TimeoutSeconds = "m1", new(int)
				*j.Payload.TimeoutSeconds = 30
			})), ""},
		{"system event from a top-level command goes to main", `{"id":"j1","name":"Brief","createdAtMs":5,"updatedAtMs":6,
			"schedule":{"kind":"every","everyMs":60000,"anchorMs":5},"command":"check mail"}`,
			ptrTo(base(func(j *Job) {
				j.Schedule = Schedule{Kind: KindEvery, EveryMs: 60_000, AnchorMs: i64p(5)}
				j.Payload, j.SessionTarget = Payload{Kind: PayloadSystemEvent, Text: "check mail"}, "main"
			})), ""},
		{"atMs becomes an ISO time", `{"id":"j1","name":"Brief","createdAtMs":5,"updatedAtMs":6,"schedule":{"atMs":1800000000000},
			"payload":{"kind":"agentTurn","message":"hi"},"deleteAfterRun":true}`,
			ptrTo(base(func(j *Job) {
				j.Schedule, j.DeleteAfterRun = Schedule{Kind: KindAt, At: "2027-01-15T08:00:00Z"}, true
			})), ""},
		{"legacy delivery hints in the payload", `{"id":"j1","name":"Brief","createdAtMs":5,"updatedAtMs":6,
			"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},
			"payload":{"kind":"agentTurn","message":"hi","deliver":true,"provider":"Telegram","to":"123","threadId":42,"bestEffortDeliver":true}}`,
			ptrTo(base(func(j *Job) {
				j.Delivery = &Delivery{Mode: DeliverAnnounce, Channel: "telegram", To: "123", ThreadID: json.RawMessage(`"42"`), BestEffort: true}
			})), ""},
		{"deliver false turns delivery off", `{"id":"j1","name":"Brief","createdAtMs":5,"updatedAtMs":6,
			"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},"deliver":false,
			"payload":{"kind":"agentTurn","message":"hi"},"delivery":{"mode":"announce","channel":"slack","to":"C1"}}`,
			ptrTo(base(func(j *Job) { j.Delivery = &Delivery{Mode: DeliverNone, Channel: "slack", To: "C1"} })), ""},
		{"disabled", `{"id":"j1","name":"Brief","enabled":false,"createdAtMs":5,"updatedAtMs":6,
			"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},"payload":{"kind":"agentTurn","message":"hi"}}`,
			ptrTo(base(func(j *Job) { j.Enabled = false })), ""},
		{"failureAlert false", `{"id":"j1","name":"Brief","createdAtMs":5,"updatedAtMs":6,"failureAlert":false,
			"schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},"payload":{"kind":"agentTurn","message":"hi"}}`,
			ptrTo(base(func(j *Job) { j.FailureAlert = &FailureAlert{Disabled: true} })), ""},
		{"no name: the id names it, no dates: now", `{"id":"j1","schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},
			"payload":{"kind":"agentTurn","message":"hi"}}`,
			ptrTo(base(func(j *Job) { j.Name, j.CreatedAtMs, j.UpdatedAtMs = "j1", nowMs, nowMs })), ""},
		{"not an object", `[1,2]`, nil, "not a JSON object"},
		{"no id", `{"name":"x","schedule":{"kind":"every","everyMs":5},"payload":{"kind":"systemEvent","text":"t"}}`, nil, "id"},
		{"id with a slash", `{"id":"../x","schedule":{"kind":"every","everyMs":5},"payload":{"kind":"systemEvent","text":"t"}}`, nil, "id"},
		{"no schedule", `{"id":"j1","payload":{"kind":"systemEvent","text":"t"}}`, nil, "schedule: none"},
		{"unsupported schedule kind", `{"id":"j1","schedule":{"kind":"on-exit"},"payload":{"kind":"systemEvent","text":"t"}}`, nil,
			"unsupported schedule kind"},
		{"every without a whole interval", `{"id":"j1","schedule":{"kind":"every","everyMs":0.5},"payload":{"kind":"systemEvent","text":"t"}}`,
			nil, "everyMs"},
		{"cron without expr", `{"id":"j1","schedule":{"kind":"cron"},"payload":{"kind":"systemEvent","text":"t"}}`, nil, "without expr"},
		{"unsupported payload kind", `{"id":"j1","schedule":{"kind":"every","everyMs":5},"payload":{"kind":"script","source":"x"}}`, nil,
			"unsupported payload kind"},
		{"no payload", `{"id":"j1","schedule":{"kind":"every","everyMs":5}}`, nil, "payload: none"},
		{"a field of the wrong type", `{"id":"j1","name":7,"schedule":{"kind":"every","everyMs":5},"payload":{"kind":"systemEvent","text":"t"}}`,
			nil, "job fields"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseLegacy(LegacyFiles{Jobs: []byte(`[` + tc.row + `]`)}, LegacyOptions{NowMs: nowMs})
			if tc.want != nil {
				if len(got.Jobs) != 1 || len(got.Quarantine) != 0 {
					t.Fatalf("got %d jobs, quarantine %+v; want one job", len(got.Jobs), got.Quarantine)
				}
				if d := cmp.Diff(*tc.want, got.Jobs[0]); d != "" {
					t.Errorf("job (-want +got):\n%s", d)
				}
				return
			}
			if len(got.Jobs) != 0 || len(got.Quarantine) != 1 {
				t.Fatalf("got %d jobs, quarantine %+v; want the row quarantined", len(got.Jobs), got.Quarantine)
			}
			q := got.Quarantine[0]
			if q.Source != "jobs.json[0]" || !strings.Contains(q.Reason, tc.reason) || q.Raw != tc.row || q.AtMs != nowMs {
				t.Errorf("quarantined %+v; want source jobs.json[0], reason with %q, the row as it was", q, tc.reason)
			}
		})
	}
}

func ptrTo(j Job) *Job { return &j }

// TestParseLegacyStore reads a whole legacy directory's files: the
// store's two shapes, the state file, duplicates, OpenClaw's quarantine,
// run logs, and a Check that refuses a job.
func TestParseLegacyStore(t *testing.T) {
	job := func(id string) string {
		return `{"id":"` + id + `","name":"` + id + `","createdAtMs":1,"schedule":{"kind":"every","everyMs":60000},` +
			`"payload":{"kind":"systemEvent","text":"t"},"state":{"nextRunAtMs":99,"lastStatus":"ok"}}`
	}
	identity := `{"version":1,"enabled":true,"schedule":{"kind":"every","everyMs":60000}}`
	cases := []struct {
		name       string
		files      LegacyFiles
		check      func(*Job) error
		jobs       []string
		states     map[string]JobState
		runs       []string
		quarantine []string // sources
	}{
		{"versioned store with inline state, no state file",
			LegacyFiles{Jobs: []byte(`{"version":1,"jobs":[` + job("a") + `]}`)}, nil,
			[]string{"a"}, map[string]JobState{"a": {NextRunAtMs: i64p(99), LastRunStatus: "ok"}}, nil, nil},
		{"the state file wins over inline state; matching identity keeps the next run",
			LegacyFiles{Jobs: []byte(`[` + job("a") + `,` + job("b") + `]`), State: []byte(`{"version":1,"jobs":{
				"a":{"updatedAtMs":7,"scheduleIdentity":` + jsonString(identity) + `,"state":{"nextRunAtMs":500,"runningAtMs":400,"consecutiveErrors":2}},
				"b":{"scheduleIdentity":"{\"other\":1}","state":{"nextRunAtMs":600,"lastRunStatus":"error"}}}}`)}, nil,
			[]string{"a", "b"}, map[string]JobState{"a": {NextRunAtMs: i64p(500), ConsecutiveErrors: 2}, "b": {LastRunStatus: "error"}},
			nil, nil},
		{"a broken state entry is kept, the job starts afresh",
			LegacyFiles{Jobs: []byte(`[` + job("a") + `]`), State: []byte(`{"version":1,"jobs":{"a":{"state":{"nextRunAtMs":"soon"}}}}`)}, nil,
			[]string{"a"}, map[string]JobState{"a": {}}, nil, []string{"jobs-state.json[a]"}},
		{"a state file of another shape is kept whole",
			LegacyFiles{Jobs: []byte(`[` + job("a") + `]`), State: []byte(`{"version":2}`)}, nil,
			[]string{"a"}, map[string]JobState{"a": {NextRunAtMs: i64p(99), LastRunStatus: "ok"}}, nil, []string{"jobs-state.json"}},
		{"a duplicate id is quarantined, the first kept",
			LegacyFiles{Jobs: []byte(`[` + job("a") + `,` + job("a") + `,` + job("c") + `]`)}, nil,
			[]string{"a", "c"}, nil, nil, []string{"jobs.json[1]"}},
		{"Check completes one job and refuses another; the next still counts",
			LegacyFiles{Jobs: []byte(`[` + job("bad") + `,` + job("c") + `]`)},
			func(j *Job) error {
				if j.ID == "bad" {
					return errors.New("schedule.expr: invalid")
				}
				j.State.ScheduleErrors = 1
				return nil
			},
			[]string{"c"}, map[string]JobState{"c": {NextRunAtMs: i64p(99), LastRunStatus: "ok", ScheduleErrors: 1}},
			nil, []string{"jobs.json[0]"}},
		{"a file that is not JSON is kept whole",
			LegacyFiles{Jobs: []byte(`{jobs: [ // json5`)}, nil, nil, nil, nil, []string{"jobs.json"}},
		{"OpenClaw's quarantine is carried over",
			LegacyFiles{Quarantine: []byte(`{"version":1,"jobs":[{"reason":"invalid-schedule","job":{"id":"q"},"quarantinedAtMs":3},{"raw":1}]}`)},
			nil, nil, nil, nil, []string{"jobs-quarantine.json[0]", "jobs-quarantine.json[1]"}},
		{"run logs: good lines in, bad lines kept",
			LegacyFiles{Runs: map[string][]byte{
				"a": []byte(`{"ts":10,"jobId":"a","action":"finished","status":"ok","runId":"r1","summary":"done"}` + "\n\n" +
					`{"ts":20,"action":"finished","status":"error","error":"boom"}` + "\n" +
					`not json` + "\n" +
					`{"ts":30,"jobId":"zz","action":"finished","status":"ok"}` + "\n" +
					`{"ts":40,"jobId":"a","action":"started","status":"ok"}` + "\n" +
					`{"ts":50,"jobId":"a","action":"finished","status":"weird"}` + "\n"),
				"x/y": []byte(`{}`),
			}}, nil, nil, nil, []string{"a/r1", "a/legacy-20-3"},
			[]string{"runs/a.jsonl:4", "runs/a.jsonl:5", "runs/a.jsonl:6", "runs/a.jsonl:7", "runs/x/y.jsonl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseLegacy(tc.files, LegacyOptions{NowMs: nowMs, Check: tc.check})
			var ids, runs, sources []string
			for _, j := range got.Jobs {
				ids = append(ids, j.ID)
				if want, ok := tc.states[j.ID]; ok {
					if d := cmp.Diff(want, j.State); d != "" {
						t.Errorf("state of %s (-want +got):\n%s", j.ID, d)
					}
				}
			}
			for _, r := range got.Runs {
				runs = append(runs, r.JobID+"/"+r.RunID)
			}
			for _, q := range got.Quarantine {
				sources = append(sources, q.Source)
				if q.Reason == "" || q.Raw == "" {
					t.Errorf("quarantined row without reason or text: %+v", q)
				}
			}
			if d := cmp.Diff(tc.jobs, ids); d != "" {
				t.Errorf("jobs (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.runs, runs); d != "" {
				t.Errorf("runs (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.quarantine, sources); d != "" {
				t.Errorf("quarantined (-want +got):\n%s", d)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestLegacyQuarantineKeepsReasonAndTime(t *testing.T) {
	got := ParseLegacy(LegacyFiles{Quarantine: []byte(`{"version":1,"jobs":[{"reason":"bad-cron","raw":{"id":"q"},"quarantinedAtMs":3}]}`)},
		LegacyOptions{NowMs: nowMs})
	want := []Quarantined{{Source: "jobs-quarantine.json[0]", Reason: "quarantined by OpenClaw: bad-cron",
		Raw: `{"reason":"bad-cron","raw":{"id":"q"},"quarantinedAtMs":3}`, AtMs: 3}}
	if d := cmp.Diff(want, got.Quarantine); d != "" {
		t.Errorf("quarantine (-want +got):\n%s", d)
	}
}
