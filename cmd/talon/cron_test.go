package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/gateway"
	"talon/internal/store"
)

// cronConfig is a gateway whose default agent answers with the offline
// inspect model, with two agents and no channel.
const cronConfig = `{
  gateway: {port: %d, auth: {token: %q}},
  agents: {list: [{id: "main", default: true}, {id: "ops"}]},
}`

// TestCronCLI drives talon cron and talon system against a running
// gateway, step by step: each step may read the ids earlier ones made.
func TestCronCLI(t *testing.T) {
	state, _ := startGatewayConfig(t, cronConfig)
	t.Setenv(envToken, "")
	t.Setenv(envPassword, "")
	ids := map[string]string{} // step name → job id it made
	id := func(name string) string { return ids[name] }
	type step struct {
		name string
		args func() []string
		code int
		// out: substrings of stdout; errHas: of stderr; json: members of
		// the JSON object printed (dotted paths).
		out, errHas []string
		json        map[string]any
		check       func(t *testing.T, out string)
	}
	fixed := func(a ...string) func() []string { return func() []string { return a } }
	steps := []step{
		{name: "add at, relative", args: fixed("cron", "add", "--name", "reminder", "--at", "20m", "--system-event", "stand up"),
			json: map[string]any{"schedule.kind": "at", "sessionTarget": "main", "payload.text": "stand up", "deleteAfterRun": true, "deliveryPreview.label": "system event"},
			check: func(t *testing.T, out string) {
				at, err := time.Parse(time.RFC3339, member(t, out, "schedule.at").(string))
				if err != nil || !strings.HasSuffix(member(t, out, "schedule.at").(string), "Z") {
					t.Fatalf("schedule.at %v is not an absolute UTC time: %v", member(t, out, "schedule.at"), err)
				}
				if d := time.Until(at); d < 15*time.Minute || d > 21*time.Minute {
					t.Errorf("--at 20m stored %v, %v from now", at, d)
				}
			}},
		{name: "add at, in a zone", args: fixed("cron", "create", "--name", "new year", "--at", "2031-01-01T00:00:00", "--tz", "Europe/Vienna",
			"--message", "happy new year", "--no-deliver", "--keep-after-run"),
			json: map[string]any{"schedule.at": "2030-12-31T23:00:00Z", "deleteAfterRun": nil, "delivery.mode": "none"}},
		{name: "add every", args: fixed("cron", "add", "--name", "status", "--every", "10m", "--message", "status report please", "--no-deliver", "--agent", "ops"),
			json: map[string]any{"schedule.kind": "every", "schedule.everyMs": 600000.0, "sessionTarget": "isolated", "agentId": "ops", "payload.kind": "agentTurn"}},
		{name: "add cron", args: fixed("automations", "add", "--name", "morning brief", "--cron", "0 7 * * 1-5", "--tz", "Europe/Vienna", "--exact",
			"--message", "brief me", "--webhook", "https://example.com/hook", "--best-effort-deliver", "--model", "inspect", "--thinking", "low",
			"--tools", "read, web_search", "--timeout-seconds", "120"),
			json: map[string]any{"schedule.expr": "0 7 * * 1-5", "schedule.tz": "Europe/Vienna", "schedule.staggerMs": 0.0, "delivery.mode": "webhook",
				"delivery.to": "https://example.com/hook", "delivery.bestEffort": true, "payload.model": "inspect", "payload.timeoutSeconds": 120.0,
				"payload.toolsAllow": []any{"read", "web_search"}}},
		{name: "refused: a bad expression", args: fixed("cron", "add", "--name", "x", "--cron", "61 * * * *", "--message", "hi"),
			code: 1, errHas: []string{"INVALID_REQUEST: invalid cron.add params: schedule.expr"}},
		{name: "refused: an unknown agent", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--message", "hi", "--agent", "ghost"),
			code: 1, errHas: []string{"INVALID_REQUEST: invalid cron.add params", "ghost"}},
		{name: "refused: announce on main", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--system-event", "hi", "--announce", "--to", "123"),
			code: 1, errHas: []string{"INVALID_REQUEST: invalid cron.add params: delivery.mode"}},
		{name: "no name", args: fixed("cron", "add", "--every", "1h", "--message", "hi"), code: 2, errHas: []string{"talon: cron add: --name is required"}},
		{name: "two schedules", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--cron", "* * * * *", "--message", "hi"),
			code: 2, errHas: []string{"--every and --cron: give one schedule"}},
		{name: "no schedule", args: fixed("cron", "add", "--name", "x", "--message", "hi"), code: 2, errHas: []string{"a schedule is required"}},
		{name: "no payload", args: fixed("cron", "add", "--name", "x", "--every", "1h"), code: 2, errHas: []string{"a payload is required"}},
		{name: "bad every", args: fixed("cron", "add", "--name", "x", "--every", "soon", "--message", "hi"), code: 2, errHas: []string{`--every "soon"`}},
		{name: "bad at", args: fixed("cron", "add", "--name", "x", "--at", "tomorrow", "--message", "hi"), code: 2, errHas: []string{"--at:", "ISO-8601"}},
		{name: "bad zone", args: fixed("cron", "add", "--name", "x", "--cron", "0 7 * * *", "--tz", "Mars/Base", "--message", "hi"), code: 2, errHas: []string{`--tz "Mars/Base"`}},
		{name: "tz with every", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--tz", "UTC", "--message", "hi"), code: 2, errHas: []string{"not --every"}},
		{name: "bad session", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--message", "hi", "--session", "elsewhere"), code: 2, errHas: []string{`--session "elsewhere"`}},
		{name: "webhook and announce", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--message", "hi", "--webhook", "https://e.com", "--channel", "telegram"),
			code: 2, errHas: []string{"--webhook excludes"}},
		{name: "model of a system event", args: fixed("cron", "add", "--name", "x", "--every", "1h", "--system-event", "hi", "--model", "m"),
			code: 2, errHas: []string{"--model applies to --message"}},
		{name: "list", args: fixed("cron", "list", "--state-dir", state),
			out: []string{"ID ", "NAME", "SCHEDULE", "NEXT RUN", "reminder", "every 10m", "cron 0 7 * * 1-5 (Europe/Vienna)", "at 2030-12-31T23:00:00Z", " (in "}},
		{name: "list as JSON", args: fixed("cron", "list", "--json"), json: map[string]any{"total": 4.0}},
		{name: "get", args: func() []string { return []string{"cron", "get", id("add every")} }, json: map[string]any{"name": "status", "enabled": true}},
		{name: "show", args: func() []string { return []string{"cron", "show", id("add cron")} },
			out: []string{"name:", "morning brief", "schedule:", "cron 0 7 * * 1-5 (Europe/Vienna)", "agent turn \"brief me\" (model inspect, thinking low, tools read,web_search, timeout 120s)",
				"webhook https://example.com/hook (best effort)", "next run:"}},
		{name: "edit", args: func() []string {
			return []string{"cron", "edit", id("add cron"), "--name", "brief", "--clear-model", "--stagger", "30s", "--no-deliver", "--tools", ""}
		},
			json: map[string]any{"name": "brief", "payload.model": nil, "schedule.staggerMs": 30000.0, "schedule.expr": "0 7 * * 1-5", "delivery.mode": "none",
				"payload.toolsAllow": []any{}, "payload.message": "brief me"}},
		{name: "edit nothing", args: func() []string { return []string{"cron", "edit", id("add cron")} }, code: 2, errHas: []string{"nothing to change"}},
		{name: "edit refused", args: func() []string { return []string{"cron", "edit", id("add cron"), "--agent", "ghost"} },
			code: 1, errHas: []string{"INVALID_REQUEST: invalid cron.update params", "ghost"}},
		{name: "model and clear-model", args: func() []string { return []string{"cron", "edit", id("add cron"), "--model", "a", "--clear-model"} },
			code: 2, errHas: []string{"--model and --clear-model exclude each other"}},
		{name: "disable", args: func() []string { return []string{"cron", "disable", id("add cron")} }, json: map[string]any{"enabled": false}},
		{name: "list leaves out the disabled", args: fixed("cron", "list"), check: func(t *testing.T, out string) {
			if strings.Contains(out, "Europe/Vienna") || !strings.Contains(out, "every 10m") {
				t.Errorf("list:\n%s", out)
			}
		}},
		{name: "list --all shows it", args: fixed("cron", "list", "--all"), out: []string{"Europe/Vienna", "disabled"}},
		{name: "enable", args: func() []string { return []string{"cron", "enable", id("add cron")} }, json: map[string]any{"enabled": true}},
		{name: "status", args: fixed("cron", "status"), json: map[string]any{"enabled": true, "jobs": 4.0}},
		{name: "run and wait", args: func() []string {
			return []string{"cron", "run", id("add every"), "--wait", "--wait-timeout", "2m", "--poll-interval", "100ms"}
		},
			json: map[string]any{"status": "ok", "completionStatus": "succeeded", "jobId": "@add every"},
			check: func(t *testing.T, out string) {
				if s, _ := member(t, out, "summary").(string); !strings.Contains(s, "inspect") {
					t.Errorf("the run's summary %q is not the inspect model's answer", s)
				}
			}},
		{name: "add a job whose model does not exist", args: fixed("cron", "add", "--name", "doomed", "--every", "1d", "--message", "hi", "--no-deliver",
			"--model", "nowhere/nothing"), json: map[string]any{"payload.model": "nowhere/nothing"}},
		{name: "run and wait, failing", args: func() []string {
			return []string{"cron", "run", id("add a job whose model does not exist"), "--wait", "--poll-interval", "100ms"}
		},
			code: 1, json: map[string]any{"status": "error", "completionStatus": "failed"}, errHas: []string{"talon: cron run: run ", " ended error, completion failed: "}},
		{name: "run without waiting", args: func() []string { return []string{"cron", "run", id("add at, in a zone")} }, json: map[string]any{"ok": true, "enqueued": true}},
		{name: "run, not due", args: func() []string { return []string{"cron", "run", id("add cron"), "--due", "--wait"} },
			code: 1, json: map[string]any{"enqueued": false}, errHas: []string{"talon: cron run: not run: the job is not due\n"}},
		{name: "bad poll interval", args: func() []string { return []string{"cron", "run", id("add every"), "--wait", "--poll-interval", "0s"} },
			code: 2, errHas: []string{"--poll-interval"}},
		{name: "runs", args: func() []string { return []string{"cron", "runs", id("add every")} }, check: func(t *testing.T, out string) {
			if n := member(t, out, "total").(float64); n < 1 {
				t.Errorf("runs: total %v", n)
			}
		}},
		{name: "runs by --id and --run-id", args: func() []string {
			return []string{"cron", "runs", "--id", id("add every"), "--run-id", ids["run and wait"], "--limit", "1"}
		},
			json: map[string]any{"total": 1.0}},
		{name: "runs of nothing", args: fixed("cron", "runs"), code: 2, errHas: []string{"name the job"}},
		{name: "runs, bad limit", args: fixed("cron", "runs", "x", "--limit", "0"), code: 2, errHas: []string{"--limit 0"}},
		{name: "remove", args: func() []string { return []string{"cron", "remove", id("add every")} }, json: map[string]any{"removed": true}},
		{name: "remove again", args: func() []string { return []string{"cron", "rm", id("add every")} },
			code: 1, json: map[string]any{"removed": false}, errHas: []string{"unknown cron job id"}},
		{name: "get unknown", args: fixed("cron", "get", "nope"), code: 1, errHas: []string{"INVALID_REQUEST: unknown cron job id: nope"}},
		{name: "system event", args: fixed("system", "event", "--text", "deploy finished"), out: []string{"ok\n"}},
		{name: "system event now", args: fixed("system", "event", "--text", "look now", "--mode", "now", "--json"),
			json: map[string]any{"ok": true, "sessionKey": "agent:main:main"}},
		{name: "system event to a session", args: fixed("system", "event", "--text", "hi", "--session-key", "agent:ops:main", "--json"),
			json: map[string]any{"sessionKey": "agent:ops:main"}},
		{name: "system event without text", args: fixed("system", "event"), code: 2, errHas: []string{"--text is required"}},
		{name: "system event, bad mode", args: fixed("system", "event", "--text", "x", "--mode", "later"), code: 2, errHas: []string{`--mode "later"`}},
		{name: "system event refused", args: fixed("system", "event", "--text", "x", "--session-key", "agent:ghost:main"), code: 1, errHas: []string{"INVALID_REQUEST"}},
		{name: "heartbeat last", args: fixed("system", "heartbeat", "last"), check: func(t *testing.T, out string) {
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("heartbeat last printed %q: %v", out, err)
			}
		}},
		{name: "heartbeat disable", args: fixed("system", "heartbeat", "disable"), out: []string{"heartbeats disabled\n"}},
		{name: "heartbeat enable", args: fixed("system", "heartbeat", "enable", "--json"), json: map[string]any{"ok": true, "enabled": true}},
		{name: "wrong token", args: fixed("cron", "list", "--token", "nope"), code: 1, errHas: []string{"gateway token mismatch"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			args := s.args()
			if !strings.Contains(strings.Join(args, " "), "--state-dir") {
				args = append(args, "--state-dir", state)
			}
			out, errOut, code := talon(t, "", args...)
			if code != s.code {
				t.Fatalf("talon %v: exit %d, want %d\nstdout %s\nstderr %s", args, code, s.code, out, errOut)
			}
			for _, h := range s.out {
				if !strings.Contains(out, h) {
					t.Errorf("stdout lacks %q:\n%s", h, out)
				}
			}
			for _, h := range s.errHas {
				if !strings.Contains(errOut, h) {
					t.Errorf("stderr %q lacks %q", errOut, h)
				}
			}
			for k, want := range s.json {
				if w, ok := want.(string); ok && strings.HasPrefix(w, "@") {
					want = ids[w[1:]]
				}
				if got := member(t, out, k); !jsonEqual(got, want) {
					t.Errorf("%s = %#v, want %#v\n%s", k, got, want, out)
				}
			}
			if s.check != nil {
				s.check(t, out)
			}
			if code == 0 && strings.HasPrefix(out, "{") {
				if v, ok := member(t, out, "id").(string); ok {
					ids[s.name] = v
				} else if v, ok := member(t, out, "runId").(string); ok {
					ids[s.name] = v
				}
			}
		})
	}
}

// member reads a dotted path of the JSON object out; nil when absent.
func member(t *testing.T, out, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, out)
	}
	for k := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestParseAtFlag: a delay is from now, an offset-less time is UTC or in
// --tz, and the result is always an absolute UTC time.
func TestParseAtFlag(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 50, 0, 0, time.UTC)
	cases := []struct{ in, tz, want, err string }{
		{"20m", "", "2026-11-27T07:10:00Z", ""},
		{"+2h", "", "2026-11-27T08:50:00Z", ""},
		{"1h30m", "Europe/Vienna", "2026-11-27T08:20:00Z", ""},
		{"2027-02-01T16:00:00", "", "2027-02-01T16:00:00Z", ""},
		{"2027-07-01T16:00", "Europe/Vienna", "2027-07-01T14:00:00Z", ""},
		{"2027-07-01T16:00:00+02:00", "America/New_York", "2027-07-01T14:00:00Z", ""},
		{"2027-07-01T16:00:00Z", "Europe/Vienna", "2027-07-01T16:00:00Z", ""},
		{"2027-07-01", "", "2027-07-01T00:00:00Z", ""},
		{"1800000000000", "Europe/Vienna", "2027-01-15T08:00:00Z", ""},
		{"0m", "", "", "more than 0"},
		{"next week", "", "", "ISO-8601"},
	}
	for _, c := range cases {
		t.Run(c.in+" "+c.tz, func(t *testing.T) {
			got, err := parseAtFlag(c.in, c.tz, now)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("%q: %v, want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("%q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestCronImportChecks: talon cron import checks each job as cron.add
// would, against the target's config; a job naming an agent the config
// lacks is quarantined, its neighbours imported.
func TestCronImportChecks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "cron")
	state := t.TempDir()
	if err := os.MkdirAll(src, 0o700); err != nil {
		t.Fatal(err)
	}
	jobs := `{"version":1,"jobs":[
		{"id":"good","name":"Ops","agentId":"ops","schedule":{"kind":"cron","expr":"0 7 * * *"},"payload":{"kind":"agentTurn","message":"hi"}},
		{"id":"ghost","name":"Ghost","agentId":"ghost","schedule":{"kind":"every","everyMs":60000},"payload":{"kind":"agentTurn","message":"boo"}},
		{"id":"bad","name":"Bad","schedule":{"kind":"cron","expr":"61 * * * *"},"payload":{"kind":"systemEvent","text":"x"}}]}`
	if err := os.WriteFile(filepath.Join(src, "jobs.json"), []byte(jobs), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{agents: {defaults: {userTimezone: "Europe/Vienna"}, list: [{id: "main"}, {id: "ops"}]}}`
	if err := os.WriteFile(filepath.Join(state, "talon.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := talon(t, "", "cron", "import", src, "--state-dir", state, "--json")
	if code != 0 || !strings.Contains(out, `"jobs":1`) || !strings.Contains(out, `"quarantined":2`) {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	db, err := store.Open(filepath.Join(state, gateway.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := db.CronJob(t.Context(), "good")
	if err != nil || j.Schedule.TZ != "Europe/Vienna" || j.SessionTarget != "isolated" {
		t.Errorf("the good job, normalized with the config's zone: %+v, %v", j, err)
	}
	q, err := db.CronQuarantine(t.Context())
	if err != nil || len(q) != 2 || !strings.Contains(q[0].Reason, "ghost") || !strings.Contains(q[1].Reason, "schedule.expr") {
		t.Errorf("quarantine = %+v, %v", q, err)
	}
}
