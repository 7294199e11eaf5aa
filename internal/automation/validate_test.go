package automation

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testNow = utc("2027-01-01T10:00:00Z")

var twoChannels = Checks{Agents: []string{"main", "Ops"}, Channels: []string{"telegram", "slack"}}

// newJob decodes and normalizes a job as cron.add does.
func newJob(t *testing.T, src string) Job {
	t.Helper()
	j, err := DecodeJob([]byte(src))
	if err != nil {
		t.Fatalf("DecodeJob: %v", err)
	}
	Normalize(&j, testNow, "Europe/Vienna")
	return j
}

func TestDecodeJobDefaults(t *testing.T) {
	tests := []struct {
		name                    string
		src                     string
		enabled, deleteAfterRun bool
	}{
		{"at: enabled, deleted after its run", `{"name":"n","schedule":{"kind":"at","at":"2027-02-01T16:00:00"},"payload":{"kind":"systemEvent","text":"t"}}`, true, true},
		{"at kept", `{"name":"n","deleteAfterRun":false,"schedule":{"kind":"at","at":"2027-02-01"},"payload":{"kind":"systemEvent","text":"t"}}`, true, false},
		{"disabled", `{"name":"n","enabled":false,"schedule":{"kind":"every","everyMs":1000},"payload":{"kind":"systemEvent","text":"t"}}`, false, false},
		{"null is absent", `{"name":"n","enabled":null,"schedule":{"kind":"every","everyMs":1000},"payload":{"kind":"systemEvent","text":"t"}}`, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := DecodeJob([]byte(tc.src))
			if err != nil || j.Enabled != tc.enabled || j.DeleteAfterRun != tc.deleteAfterRun {
				t.Errorf("DecodeJob = enabled %v, deleteAfterRun %v, %v; want %v, %v", j.Enabled, j.DeleteAfterRun, err, tc.enabled, tc.deleteAfterRun)
			}
		})
	}
}

func TestDecodeJobErrors(t *testing.T) {
	tests := []struct{ name, src, err string }{
		{"not an object", `[1]`, "expected a JSON object"},
		{"server's id", `{"id":"x","name":"n"}`, "id: set by the server"},
		{"state", `{"name":"n","state":{}}`, "state: set by the server"},
		{"creator: an agent cannot claim to be the operator", `{"name":"n","creator":"operator"}`, "creator: set by the server"},
		{"unknown field", `{"name":"n","bogus":1}`, `unknown field "bogus"`},
		{"unknown nested field", `{"name":"n","payload":{"kind":"agentTurn","msg":"x"}}`, `unknown field "msg"`},
		{"wrong type names the field", `{"name":"n","payload":{"kind":"agentTurn","timeoutSeconds":"x"}}`, "payload.timeoutSeconds: expected int"},
		{"failureAlert true", `{"name":"n","failureAlert":true}`, "failureAlert: expected false or an object"},
		{"too large", `{"name":"` + strings.Repeat("x", MaxJobJSON) + `"}`, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeJob([]byte(tc.src)); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("DecodeJob error = %v; want %q", err, tc.err)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want func(j Job) bool
	}{
		{"systemEvent goes to main, wakes now", `{"name":" n ","schedule":{"kind":"every","everyMs":60000},"payload":{"kind":"systemEvent","text":"t"}}`,
			func(j Job) bool {
				return j.Name == "n" && j.SessionTarget == TargetMain && j.WakeMode == WakeNow && j.Delivery == nil &&
					*j.Schedule.AnchorMs == testNow.UnixMilli()
			}},
		{"agentTurn is isolated and announces", `{"name":"n","schedule":{"kind":"cron","expr":"0 7 * * 1-5"},"payload":{"kind":"agentTurn","message":"m"}}`,
			func(j Job) bool {
				return j.SessionTarget == TargetIsolated && j.Delivery != nil && j.Delivery.Mode == DeliverAnnounce &&
					j.Schedule.TZ == "Europe/Vienna" && j.Schedule.StaggerMs == nil
			}},
		{"explicit zone and delivery kept", `{"name":"n","schedule":{"kind":"cron","expr":"0 7 * * *","tz":"UTC"},"payload":{"kind":"agentTurn","message":"m"},"delivery":{"mode":"none"}}`,
			func(j Job) bool { return j.Schedule.TZ == "UTC" && j.Delivery.Mode == DeliverNone }},
		{"top of the hour stores its stagger", `{"name":"n","schedule":{"kind":"cron","expr":"0 * * * *"},"payload":{"kind":"agentTurn","message":"m"}}`,
			func(j Job) bool { return j.Schedule.StaggerMs != nil && *j.Schedule.StaggerMs == 300000 }},
		{"an explicit 0 stagger stays", `{"name":"n","schedule":{"kind":"cron","expr":"0 * * * *","staggerMs":0},"payload":{"kind":"agentTurn","message":"m"}}`,
			func(j Job) bool { return *j.Schedule.StaggerMs == 0 }},
		{"timestamps", `{"name":"n","schedule":{"kind":"at","at":"2027-02-01"},"payload":{"kind":"systemEvent","text":"t"}}`,
			func(j Job) bool { return j.CreatedAtMs == testNow.UnixMilli() && j.UpdatedAtMs == testNow.UnixMilli() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, tc.src)
			if !tc.want(j) {
				b, _ := json.Marshal(j)
				t.Errorf("normalized job: %s", b)
			}
			if err := Validate(j, twoChannels); err != nil && j.SessionTarget != TargetIsolated {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	j := Job{Schedule: Schedule{Kind: KindCron, Expr: "0 9 * * *"}}
	Normalize(&j, testNow, "")
	if j.Schedule.TZ != "UTC" {
		t.Errorf("no zone given: tz = %q, want UTC", j.Schedule.TZ)
	}
}

// TestValidate: every refusal names its field; the valid jobs pass.
func TestValidate(t *testing.T) {
	agentTurn := `"payload":{"kind":"agentTurn","message":"m"}`
	every := `"schedule":{"kind":"every","everyMs":60000}`
	tests := []struct {
		name, src, err string
		checks         *Checks
	}{
		{"valid isolated announce", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"announce","channel":"telegram","to":"-100123:topic:4","threadId":4}}`, "", nil},
		{"valid prefix decides", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"announce","to":"slack:C1"}}`, "", nil},
		{"valid main webhook", `{"name":"n",` + every + `,"payload":{"kind":"systemEvent","text":"t"},"delivery":{"mode":"webhook","to":"https://hooks.example.com/x"}}`, "", nil},
		{"valid session target", `{"name":"n",` + every + `,"sessionTarget":"session:daily",` + agentTurn + `,"delivery":{"mode":"none"}}`, "", nil},
		{"valid agent by normalized id", `{"name":"n","agentId":"ops",` + every + `,` + agentTurn + `,"delivery":{"mode":"none"}}`, "", nil},
		{"valid failure alert", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"none"},"failureAlert":{"after":3,"channel":"slack","to":"C9"}}`, "", nil},
		{"valid one channel needs no name", `{"name":"n",` + every + `,` + agentTurn + `}`, "", &Checks{Channels: []string{"telegram"}}},

		{"name required", `{"name":"  ",` + every + `,` + agentTurn + `}`, "name: required", nil},
		{"name too long", `{"name":"` + strings.Repeat("é", MaxName+1) + `",` + every + `,` + agentTurn + `}`, "name: longer than 200", nil},
		{"name one line", `{"name":"a\nb",` + every + `,` + agentTurn + `}`, "name: must be one line", nil},
		{"message too long", `{"name":"n",` + every + `,"payload":{"kind":"agentTurn","message":"` + strings.Repeat("x", MaxText+1) + `"}}`, "payload.message: longer than", nil},
		{"unknown agent", `{"name":"n","agentId":"ghost",` + every + `,` + agentTurn + `}`, `agentId: unknown agent "ghost"`, nil},
		{"schedule kind required", `{"name":"n","schedule":{},` + agentTurn + `}`, "schedule.kind: required", nil},
		{"unsupported schedule kind", `{"name":"n","schedule":{"kind":"on-exit"},` + agentTurn + `}`, `schedule.kind: unsupported schedule kind "on-exit"`, nil},
		{"bad expression", `{"name":"n","schedule":{"kind":"cron","expr":"0 25 * * *"},` + agentTurn + `}`, "schedule.expr: hour field", nil},
		{"never matches", `{"name":"n","schedule":{"kind":"cron","expr":"0 0 30 2 *"},` + agentTurn + `}`, "schedule.expr: \"0 0 30 2 *\" matches no time", nil},
		{"bad zone", `{"name":"n","schedule":{"kind":"cron","expr":"0 9 * * *","tz":"Europe/Atlantis"},` + agentTurn + `}`, "schedule.tz: unknown time zone", nil},
		{"tz with every", `{"name":"n","schedule":{"kind":"every","everyMs":1000,"tz":"UTC"},` + agentTurn + `}`, `schedule.tz: not valid with kind "every"`, nil},
		{"negative stagger", `{"name":"n","schedule":{"kind":"cron","expr":"0 9 * * *","staggerMs":-1},` + agentTurn + `}`, "schedule.staggerMs", nil},
		{"bad at", `{"name":"n","schedule":{"kind":"at","at":"next tuesday"},` + agentTurn + `}`, "schedule.at:", nil},
		{"zero every", `{"name":"n","schedule":{"kind":"every","everyMs":0},` + agentTurn + `}`, "schedule.everyMs", nil},
		{"unsupported payload kind", `{"name":"n",` + every + `,"payload":{"kind":"script"}}`, `payload.kind: unsupported payload kind "script"`, nil},
		{"payload kind required", `{"name":"n",` + every + `,"payload":{}}`, "payload.kind: required", nil},
		{"systemEvent text", `{"name":"n",` + every + `,"payload":{"kind":"systemEvent","text":" "}}`, "payload.text: required", nil},
		{"systemEvent with a model", `{"name":"n",` + every + `,"payload":{"kind":"systemEvent","text":"t","model":"a/b"}}`, "payload: a systemEvent takes only text", nil},
		{"agentTurn message", `{"name":"n",` + every + `,"payload":{"kind":"agentTurn"}}`, "payload.message: required", nil},
		{"bad model", `{"name":"n",` + every + `,"payload":{"kind":"agentTurn","message":"m","model":"/"}}`, "payload.model:", nil},
		{"negative timeout", `{"name":"n",` + every + `,"payload":{"kind":"agentTurn","message":"m","timeoutSeconds":-1}}`, "payload.timeoutSeconds", nil},
		{"empty tool name", `{"name":"n",` + every + `,"payload":{"kind":"agentTurn","message":"m","toolsAllow":[""]}}`, "payload.toolsAllow[0]", nil},
		{"thinking checked", `{"name":"n",` + every + `,"payload":{"kind":"agentTurn","message":"m","thinking":"galaxy"}}`, "payload.thinking: no such level",
			&Checks{Agents: []string{"main"}, Thinking: func(_, l string) error { return errors.New("no such level") }}},
		{"main runs systemEvents only", `{"name":"n","sessionTarget":"main",` + every + `,` + agentTurn + `}`, "sessionTarget: main runs systemEvent payloads only", nil},
		{"isolated runs agentTurns only", `{"name":"n","sessionTarget":"isolated",` + every + `,"payload":{"kind":"systemEvent","text":"t"}}`, "sessionTarget: isolated runs agentTurn payloads only", nil},
		{"session target needs a key", `{"name":"n","sessionTarget":"session:",` + every + `,` + agentTurn + `}`, "sessionTarget: session:<key> needs a key", nil},
		{"bad session target", `{"name":"n","sessionTarget":"elsewhere",` + every + `,` + agentTurn + `}`, "sessionTarget: expected", nil},
		{"bad wake mode", `{"name":"n","wakeMode":"later",` + every + `,"payload":{"kind":"systemEvent","text":"t"}}`, "wakeMode: expected", nil},
		{"R3.7 main announce", `{"name":"n",` + every + `,"payload":{"kind":"systemEvent","text":"t"},"delivery":{"mode":"announce","channel":"telegram","to":"1"}}`, "delivery.mode: a main-session job", nil},
		{"several channels, none named", `{"name":"n",` + every + `,` + agentTurn + `}`, "delivery.channel: several channels are configured (telegram, slack)", nil},
		{"unknown channel", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"announce","channel":"irc","to":"x"}}`, `delivery.channel: unknown channel "irc"`, nil},
		{"prefix disagrees", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"announce","channel":"telegram","to":"slack:C1"}}`, "delivery.to: \"slack:C1\" is addressed to slack but channel is telegram", nil},
		{"bad delivery mode", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"carrier-pigeon"}}`, "delivery.mode: expected", nil},
		{"bad thread id", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"none","threadId":{}}}`, "delivery.threadId", nil},
		{"failure destination channel", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"none","failureDestination":{"channel":"fax"}}}`, "delivery.failureDestination.channel: unknown channel", nil},
		{"webhook needs a URL", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"webhook"}}`, "delivery.to: the webhook URL is required", nil},
		{"webhook scheme", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"webhook","to":"file:///etc/passwd"}}`, "delivery.to: expected an http:// or https:// URL", nil},
		{"webhook credentials", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"webhook","to":"https://u:p@example.com/"}}`, "delivery.to: credentials in the URL are refused", nil},
		{"webhook SSRF policy", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"webhook","to":"http://169.254.169.254/"}}`, "delivery.to: private address",
			&Checks{Agents: []string{"main"}, WebhookURL: func(string) error { return errors.New("private address") }}},
		{"failure alert after", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"none"},"failureAlert":{"after":-1}}`, "failureAlert.after", nil},
		{"failure alert mode", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"none"},"failureAlert":{"mode":"sms"}}`, "failureAlert.mode", nil},
		{"failure alert webhook", `{"name":"n",` + every + `,` + agentTurn + `,"delivery":{"mode":"none"},"failureAlert":{"mode":"webhook","to":"ftp://x"}}`, "failureAlert.to: expected an http", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := twoChannels
			if tc.checks != nil {
				c = *tc.checks
			}
			err := Validate(newJob(t, tc.src), c)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Validate = %v; want an error with %q", err, tc.err)
			}
		})
	}
}

func TestFailureAlertJSON(t *testing.T) {
	on := true
	tests := []struct {
		name string
		json string
		a    FailureAlert
	}{
		{"false is Disabled", `false`, FailureAlert{Disabled: true}},
		{"settings", `{"enabled":true,"after":3,"cooldownMs":60000,"mode":"announce","channel":"telegram","to":"1"}`,
			FailureAlert{Enabled: &on, After: 3, CooldownMs: 60000, Mode: "announce", Destination: Destination{Channel: "telegram", To: "1"}}},
		{"empty object", `{}`, FailureAlert{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a FailureAlert
			if err := json.Unmarshal([]byte(tc.json), &a); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.a, a); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(tc.a)
			if err != nil || string(b) != tc.json {
				t.Errorf("Marshal = %s, %v; want %s", b, err, tc.json)
			}
		})
	}
	// Inside a job, through the pointer field.
	j := Job{FailureAlert: &FailureAlert{Disabled: true}}
	b, _ := json.Marshal(j)
	if !strings.Contains(string(b), `"failureAlert":false`) {
		t.Errorf("job JSON %s lacks failureAlert:false", b)
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil || back.FailureAlert == nil || !back.FailureAlert.Disabled {
		t.Errorf("round trip: %+v, %v", back.FailureAlert, err)
	}
}

func TestReschedule(t *testing.T) {
	j := newJob(t, `{"name":"n","schedule":{"kind":"every","everyMs":60000},"payload":{"kind":"systemEvent","text":"t"}}`)
	j.State = JobState{ConsecutiveErrors: 10, ConsecutiveSkipped: 2, ScheduleErrors: 1,
		AutoDisabled: &AutoDisabled{Reason: ReasonConsecutiveFailures}, NextRunAtMs: i64(1)}
	if err := Reschedule(&j, testNow.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := JobState{NextRunAtMs: i64(testNow.Add(2 * time.Minute).UnixMilli())}
	if diff := cmp.Diff(want, j.State); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	j.Enabled = false
	if err := Reschedule(&j, testNow); err != nil || j.State.NextRunAtMs != nil {
		t.Errorf("disabled: next %v, %v", j.State.NextRunAtMs, err)
	}
}

// TestUpdateFlow is cron.update as the gateway runs it: patch, normalize,
// validate, reschedule when the schedule identity changed.
func TestUpdateFlow(t *testing.T) {
	j := newJob(t, `{"name":"n","schedule":{"kind":"every","everyMs":60000},"payload":{"kind":"systemEvent","text":"t"}}`)
	j.State.ConsecutiveErrors = 3
	next, changed, err := ApplyPatch(j, json.RawMessage(`{"schedule":{"kind":"cron","expr":"0 7 * * *"}}`))
	if err != nil || !changed {
		t.Fatalf("ApplyPatch = %v, %v", changed, err)
	}
	if err := Validate(next, twoChannels); err == nil || !strings.Contains(err.Error(), "schedule.tz: required") {
		t.Errorf("a cron schedule without its zone validated: %v", err)
	}
	next.UpdatedAtMs = testNow.Add(time.Hour).UnixMilli()
	Normalize(&next, testNow.Add(time.Hour), "Europe/Vienna")
	if err := Validate(next, twoChannels); err != nil {
		t.Fatal(err)
	}
	if err := Reschedule(&next, testNow.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// 07:00 Vienna is 06:00 UTC in winter; the top-of-hour stagger is
	// not the default here (hour 7 is not a wildcard).
	if got := time.UnixMilli(*next.State.NextRunAtMs).UTC(); !got.Equal(utc("2027-01-02T06:00:00Z")) || next.State.ConsecutiveErrors != 0 {
		t.Errorf("next run %v, errors %d", got, next.State.ConsecutiveErrors)
	}
	if next.CreatedAtMs != j.CreatedAtMs {
		t.Errorf("createdAtMs moved")
	}
}
