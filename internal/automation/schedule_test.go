package automation

import (
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ms(s string) *int64 { v := utc(s).UnixMilli(); return &v }

func i64(v int64) *int64 { return &v }

func cronJob(id, expr, tz string, stagger *int64) Job {
	return Job{ID: id, Schedule: Schedule{Kind: KindCron, Expr: expr, TZ: tz, StaggerMs: stagger}}
}

// runs lists the first n runs after start, each searched after the last.
func runs(t *testing.T, j Job, start time.Time, n int) []string {
	t.Helper()
	var out []string
	after := start
	for range n {
		next, ok, err := Next(j, after)
		if err != nil || !ok {
			t.Fatalf("Next(%s) = %v, %v, %v", after.Format(time.RFC3339), next, ok, err)
		}
		out = append(out, next.UTC().Format(time.RFC3339))
		after = next
	}
	return out
}

// TestConformanceSchedules is spec §13's vectors 1–4.
func TestConformanceSchedules(t *testing.T) {
	tests := []struct {
		name  string
		job   Job
		after time.Time
		want  []string
	}{
		{"1: at without an offset is UTC",
			Job{Schedule: Schedule{Kind: KindAt, At: "2027-02-01T16:00:00"}},
			utc("2027-01-01T00:00:00Z"), []string{"2027-02-01T16:00:00Z"}},
		{"2: day of month OR day of week",
			cronJob("j", "0 9 15 * 1", "UTC", nil),
			utc("2027-02-28T00:00:00Z"),
			[]string{"2027-03-01T09:00:00Z", "2027-03-08T09:00:00Z", "2027-03-15T09:00:00Z", "2027-03-22T09:00:00Z",
				"2027-03-29T09:00:00Z", "2027-04-05T09:00:00Z", "2027-04-12T09:00:00Z", "2027-04-15T09:00:00Z"}},
		{"2: + forces AND",
			cronJob("j", "0 9 15 * +1", "UTC", nil),
			utc("2027-02-28T00:00:00Z"), []string{"2027-03-15T09:00:00Z", "2027-11-15T09:00:00Z"}},
		{"3: every from the last run",
			Job{CreatedAtMs: *ms("2027-01-01T10:00:00Z"), Schedule: Schedule{Kind: KindEvery, EveryMs: 600000},
				State: JobState{LastRunAtMs: ms("2027-01-01T10:20:00Z")}},
			utc("2027-01-01T10:25:00Z"), []string{"2027-01-01T10:30:00Z", "2027-01-01T10:40:00Z"}},
		{"4: top of the hour, default stagger",
			cronJob("job-1", "0 * * * *", "UTC", nil),
			utc("2027-01-01T10:00:00Z"), []string{"2027-01-01T10:00:47Z", "2027-01-01T11:00:47Z"}},
		{"4: staggerMs 0 is exact",
			cronJob("job-1", "0 * * * *", "UTC", i64(0)),
			utc("2027-01-01T10:00:00Z"), []string{"2027-01-01T11:00:00Z", "2027-01-01T12:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runs(t, tc.job, tc.after, len(tc.want))
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("runs = %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestStagger: the offset is OpenClaw's (sha256 of the id, computed
// independently), stable, within the window, and a slot whose shifted
// time is still ahead is the next run.
func TestStagger(t *testing.T) {
	window := 5 * time.Minute
	for _, tc := range []struct {
		id   string
		want time.Duration
	}{
		{"job-1", 47897 * time.Millisecond},
		{"3f1c2a9e-0d4b-4d8e-9a51-7b2f0c6e1d11", 53619 * time.Millisecond},
		{"x", StaggerOffset("x", window)},
	} {
		t.Run(tc.id, func(t *testing.T) {
			got := StaggerOffset(tc.id, window)
			if got != tc.want || got < 0 || got >= window {
				t.Errorf("StaggerOffset = %v, want %v within [0, %v)", got, tc.want, window)
			}
		})
	}
	if got := StaggerOffset("job-1", time.Millisecond); got != 0 {
		t.Errorf("a 1 ms window gives %v, want 0", got)
	}
	j := cronJob("job-1", "0 * * * *", "UTC", nil)
	slot := utc("2027-01-01T10:00:00Z").Add(47897 * time.Millisecond)
	for _, tc := range []struct {
		name  string
		after time.Time
		want  time.Time
	}{
		{"just before the shifted slot", slot.Add(-time.Millisecond), slot},
		{"between the slot and its shifted time", utc("2027-01-01T10:00:10Z"), slot},
		{"at the shifted slot", slot, slot.Add(time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Next(j, tc.after)
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("Next = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestStaggerWindow(t *testing.T) {
	tests := []struct {
		expr    string
		stagger *int64
		want    time.Duration
	}{
		{"0 * * * *", nil, DefaultStagger},
		{"0 */2 * * *", nil, DefaultStagger},
		{"0 9-17,*/4 * * *", nil, DefaultStagger},
		{"0 0 * * * *", nil, DefaultStagger},
		{"0 9 * * *", nil, 0},
		{"0 9-17 * * *", nil, 0},
		{"5 * * * *", nil, 0},
		{"30 0 * * * *", nil, 0},
		{"@hourly", nil, 0},
		{"0 * * * *", i64(0), 0},
		{"0 9 * * *", i64(30000), 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			if got := StaggerWindow(Schedule{Kind: KindCron, Expr: tc.expr, StaggerMs: tc.stagger}); got != tc.want {
				t.Errorf("StaggerWindow = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDST: R3.3 — a local time the zone skips does not fire that day; one
// it repeats fires once, at its first occurrence.
func TestDST(t *testing.T) {
	tests := []struct {
		name  string
		job   Job
		after string
		want  []string
	}{
		{"Vienna spring forward skips 02:30",
			cronJob("j", "30 2 * * *", "Europe/Vienna", nil), "2027-03-27T00:00:00Z",
			[]string{"2027-03-27T01:30:00Z", "2027-03-29T00:30:00Z"}},
		{"Vienna spring forward hourly",
			cronJob("j", "0 * * * *", "Europe/Vienna", i64(0)), "2027-03-28T00:30:00Z",
			[]string{"2027-03-28T01:00:00Z", "2027-03-28T02:00:00Z"}},
		{"Vienna fall back fires 02:30 once",
			cronJob("j", "30 2 * * *", "Europe/Vienna", nil), "2027-10-30T12:00:00Z",
			[]string{"2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"}},
		{"Vienna fall back inside the repeated hour",
			cronJob("j", "30 2 * * *", "Europe/Vienna", nil), "2027-10-31T01:10:00Z",
			[]string{"2027-11-01T01:30:00Z"}},
		{"Vienna fall back every 30 minutes",
			cronJob("j", "*/30 * * * *", "Europe/Vienna", nil), "2027-10-30T23:45:00Z",
			[]string{"2027-10-31T00:00:00Z", "2027-10-31T00:30:00Z", "2027-10-31T02:00:00Z", "2027-10-31T02:30:00Z"}},
		{"New York keeps 09:00 local across spring forward",
			cronJob("j", "0 9 * * *", "America/New_York", nil), "2027-03-13T00:00:00Z",
			[]string{"2027-03-13T14:00:00Z", "2027-03-14T13:00:00Z"}},
		{"New York spring forward skips 02:15",
			cronJob("j", "15 2 * * *", "America/New_York", nil), "2027-03-13T12:00:00Z",
			[]string{"2027-03-15T06:15:00Z"}},
		{"New York fall back fires 01:30 once",
			cronJob("j", "30 1 * * *", "America/New_York", nil), "2027-11-07T00:00:00Z",
			[]string{"2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"}},
		{"six fields with seconds",
			cronJob("j", "*/20 0 9 * * *", "America/New_York", nil), "2027-03-13T13:59:59Z",
			[]string{"2027-03-13T14:00:00Z", "2027-03-13T14:00:20Z", "2027-03-13T14:00:40Z", "2027-03-14T13:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runs(t, tc.job, utc(tc.after), len(tc.want))
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("runs = %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestNextEvery(t *testing.T) {
	created := *ms("2027-01-01T10:00:00Z")
	tests := []struct {
		name   string
		anchor *int64
		last   *int64
		after  string
		want   string
	}{
		{"no run yet: the anchor's grid", nil, nil, "2027-01-01T10:25:00Z", "2027-01-01T10:30:00Z"},
		{"on a grid point: strictly after", nil, nil, "2027-01-01T10:30:00Z", "2027-01-01T10:40:00Z"},
		{"a late last run counts from itself", nil, ms("2027-01-01T10:23:00Z"), "2027-01-01T10:25:00Z", "2027-01-01T10:33:00Z"},
		{"a last run long past: the grid", nil, ms("2027-01-01T10:03:00Z"), "2027-01-01T10:25:00Z", "2027-01-01T10:30:00Z"},
		{"anchor ahead", ms("2027-01-02T00:00:00Z"), nil, "2027-01-01T10:25:00Z", "2027-01-02T00:00:00Z"},
		{"a run before the anchor is ignored", ms("2027-01-01T10:05:00Z"), ms("2027-01-01T10:01:00Z"), "2027-01-01T10:06:00Z", "2027-01-01T10:15:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := Job{CreatedAtMs: created, Schedule: Schedule{Kind: KindEvery, EveryMs: 600000, AnchorMs: tc.anchor},
				State: JobState{LastRunAtMs: tc.last}}
			got, ok, err := Next(j, utc(tc.after))
			if err != nil || !ok || !got.Equal(utc(tc.want)) {
				t.Errorf("Next = %v, %v, %v; want %s", got.UTC(), ok, err, tc.want)
			}
		})
	}
}

func TestNextAt(t *testing.T) {
	at := "2027-02-01T16:00:00+01:00"
	tests := []struct {
		name   string
		state  JobState
		ok     bool
		wantAt string
	}{
		{"not run: due", JobState{}, true, "2027-02-01T15:00:00Z"},
		{"failed run: still due (retry or disable is the scheduler's)",
			JobState{LastRunAtMs: ms("2027-02-01T15:00:00Z"), LastRunStatus: StatusError}, true, "2027-02-01T15:00:00Z"},
		{"ran: none", JobState{LastRunAtMs: ms("2027-02-01T15:00:01Z"), LastRunStatus: StatusOK}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := Job{Schedule: Schedule{Kind: KindAt, At: at}, State: tc.state}
			// Asked after the time: a one-shot catches up.
			got, ok, err := Next(j, utc("2027-03-01T00:00:00Z"))
			if err != nil || ok != tc.ok || (ok && !got.Equal(utc(tc.wantAt))) {
				t.Errorf("Next = %v, %v, %v; want %v %s", got, ok, err, tc.ok, tc.wantAt)
			}
		})
	}
}

func TestParseAt(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"2027-02-01T16:00:00", "2027-02-01T16:00:00Z", ""},
		{"2027-02-01T16:00", "2027-02-01T16:00:00Z", ""},
		{"2027-02-01", "2027-02-01T00:00:00Z", ""},
		{"2027-02-01T16:00:00.250Z", "2027-02-01T16:00:00.25Z", ""},
		{"2027-02-01T16:00:00+02:00", "2027-02-01T14:00:00Z", ""},
		{"2027-02-01T16:00:00-0530", "2027-02-01T21:30:00Z", ""},
		{"1801152000000", "2027-01-28T16:00:00Z", ""},
		{"", "", "empty time"},
		{"tomorrow", "", "expected an ISO-8601 time"},
		{"2027-02-30T10:00:00", "", "not a valid date"},
		{"2027-02-01T25:00:00", "", "not a valid date"},
		{"2027-02-01T10:00:00+25:00", "", "out of range"},
		{"99999999999999999", "", "Unix milliseconds"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAt(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseAt = %v, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !got.Equal(utc(tc.want)) {
				t.Errorf("ParseAt = %v, %v; want %s", got.UTC(), err, tc.want)
			}
		})
	}
}

func TestParseCron(t *testing.T) {
	tests := []struct{ expr, err string }{
		{"* * * * *", ""},
		{"0 9 * * mon-fri", ""},
		{"0 0 1 jan,jul *", ""},
		{"0 0 * * 7", ""},
		{"? * * * ?", ""},
		{"5-59/15 * * * *", ""},
		{"5/15 * * * *", "a step needs * or a range"},
		{"@daily", ""},
		{"", "empty expression"},
		{"* * * *", "expected 5 fields"},
		{"* * * * * * *", "expected 5 fields"},
		{"60 * * * *", "minute field"},
		{"* 24 * * *", "hour field"},
		{"* * 0 * *", "day of month field"},
		{"* * * 13 *", "month field"},
		{"* * * * 8", "day of week field"},
		{"5-1 * * * *", "runs backwards"},
		{"*/0 * * * *", "step"},
		{"* * L * *", "not supported"},
		{"* * * * 5#2", "not supported"},
		{"a * * * *", "not a number"},
		{"1,,2 * * * *", "empty value"},
		{strings.Repeat("1,", 200) + "1 * * * *", "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := parseCron(tc.expr)
			if tc.err == "" && err != nil {
				t.Fatalf("parseCron = %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("parseCron = %v; want an error with %q", err, tc.err)
			}
		})
	}
}

// TestCronNames: names, 7 as Sunday and nicknames mean what numbers do.
func TestCronNames(t *testing.T) {
	after := utc("2027-01-01T00:00:00Z") // a Friday
	tests := []struct{ a, b string }{
		{"0 9 * * mon-fri", "0 9 * * 1-5"},
		{"0 9 * * 7", "0 9 * * 0"},
		{"0 0 1 JAN,jul *", "0 0 1 1,7 *"},
		{"@weekly", "0 0 * * 0"},
		{"5-59/15 * * * *", "5,20,35,50 * * * *"},
		{"0 9 * * fri-sun", "0 9 * * 5,6,0"},
		{"0 9 ? * mon", "0 9 * * 1"},
	}
	for _, tc := range tests {
		t.Run(tc.a, func(t *testing.T) {
			a := runs(t, cronJob("j", tc.a, "UTC", i64(0)), after, 6)
			b := runs(t, cronJob("j", tc.b, "UTC", i64(0)), after, 6)
			if strings.Join(a, " ") != strings.Join(b, " ") {
				t.Errorf("%q runs %v\n%q runs %v", tc.a, a, tc.b, b)
			}
		})
	}
}

func TestNextErrors(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		err  string
	}{
		{"never matches", cronJob("j", "0 0 30 2 *", "UTC", nil), "matches no time"},
		{"bad zone", cronJob("j", "0 9 * * *", "Mars/Olympus", nil), "schedule.tz"},
		{"bad expr", cronJob("j", "0 9 * *", "UTC", nil), "schedule.expr"},
		{"bad at", Job{Schedule: Schedule{Kind: KindAt, At: "soon"}}, "schedule.at"},
		{"zero every", Job{Schedule: Schedule{Kind: KindEvery}}, "schedule.everyMs"},
		{"unknown kind", Job{Schedule: Schedule{Kind: "on-exit"}}, "unsupported schedule kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := Next(tc.job, utc("2027-01-01T00:00:00Z")); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Next error = %v; want %q", err, tc.err)
			}
		})
	}
	// 29 February on a Monday is rare but real.
	got := runs(t, cronJob("j", "0 0 29 2 +1", "UTC", nil), utc("2027-01-01T00:00:00Z"), 1)
	if got[0] != "2044-02-29T00:00:00Z" {
		t.Errorf("29 February on a Monday = %v", got)
	}
}
