package automation

import (
	"encoding/json"
	"strings"
	"testing"
)

const baseJob = `{"name":"Morning brief","description":"d","agentId":"ops",
	"schedule":{"kind":"cron","expr":"0 7 * * 1-5","tz":"Europe/Vienna","staggerMs":0},
	"payload":{"kind":"agentTurn","message":"Summarize.","model":"openai/gpt-5","thinking":"low","timeoutSeconds":600},
	"delivery":{"mode":"announce","channel":"telegram","to":"-1001:topic:42","bestEffort":true},
	"failureAlert":{"after":2}}`

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name    string
		patch   string
		changed bool
		check   func(j Job) bool
	}{
		{"rename keeps the schedule", `{"name":"Brief"}`, false,
			func(j Job) bool { return j.Name == "Brief" && j.Schedule.Expr == "0 7 * * 1-5" }},
		{"null clears optional fields", `{"description":null,"agentId":null,"failureAlert":null}`, false,
			func(j Job) bool { return j.Description == "" && j.AgentID == "" && j.FailureAlert == nil }},
		{"payload is partial", `{"payload":{"model":null,"message":"New."}}`, false,
			func(j Job) bool {
				p := j.Payload
				return p.Message == "New." && p.Model == "" && p.Thinking == "low" && *p.TimeoutSeconds == 600
			}},
		{"payload kind change replaces it", `{"payload":{"kind":"systemEvent","text":"t"}}`, false,
			func(j Job) bool { return j.Payload.Text == "t" && j.Payload.Message == "" && j.Payload.Model == "" }},
		{"delivery is partial", `{"delivery":{"to":"-1002","bestEffort":null}}`, false,
			func(j Job) bool {
				d := j.Delivery
				return d.Mode == DeliverAnnounce && d.Channel == "telegram" && d.To == "-1002" && !d.BestEffort
			}},
		{"delivery null clears it", `{"delivery":null}`, false, func(j Job) bool { return j.Delivery == nil }},
		{"schedule field merged", `{"schedule":{"tz":"America/New_York"}}`, true,
			func(j Job) bool { return j.Schedule.TZ == "America/New_York" && j.Schedule.Expr == "0 7 * * 1-5" }},
		{"schedule kind change replaces it", `{"schedule":{"kind":"every","everyMs":60000}}`, true,
			func(j Job) bool { return j.Schedule.EveryMs == 60000 && j.Schedule.Expr == "" && j.Schedule.TZ == "" }},
		{"same schedule again is no change", `{"schedule":{"kind":"cron","expr":"0 7 * * 1-5"}}`, false,
			func(j Job) bool { return j.Schedule.TZ == "Europe/Vienna" }},
		{"disable", `{"enabled":false}`, true, func(j Job) bool { return !j.Enabled }},
		{"failureAlert false", `{"failureAlert":false}`, false,
			func(j Job) bool { return j.FailureAlert != nil && j.FailureAlert.Disabled }},
		{"empty lists survive: [] is no tools, not every tool", `{"payload":{"toolsAllow":[],"fallbacks":[]}}`, false,
			func(j Job) bool {
				p := j.Payload
				return p.ToolsAllow != nil && len(p.ToolsAllow) == 0 && p.Fallbacks != nil && len(p.Fallbacks) == 0
			}},
		{"an edit elsewhere keeps toolsAllow []", `{"payload":{"toolsAllow":[]}}`, false,
			func(j Job) bool {
				again, _, err := ApplyPatch(j, json.RawMessage(`{"name":"y"}`))
				return err == nil && again.Payload.ToolsAllow != nil && len(again.Payload.ToolsAllow) == 0
			}},
		{"state survives", `{"name":"x"}`, false,
			func(j Job) bool { return j.State.ConsecutiveErrors == 4 && j.ID == "job-1" && j.ConfigRevision == 7 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, baseJob)
			j.ID, j.ConfigRevision, j.State.ConsecutiveErrors = "job-1", 7, 4
			next, changed, err := ApplyPatch(j, json.RawMessage(tc.patch))
			if err != nil {
				t.Fatalf("ApplyPatch = %v", err)
			}
			if changed != tc.changed {
				t.Errorf("scheduleChanged = %v, want %v", changed, tc.changed)
			}
			if !tc.check(next) {
				b, _ := json.Marshal(next)
				t.Errorf("patched job: %s", b)
			}
		})
	}
}

func TestApplyPatchErrors(t *testing.T) {
	tests := []struct{ name, patch, err string }{
		{"not an object", `"x"`, "patch: expected a JSON object"},
		{"id", `{"id":"other"}`, "id: cannot be changed"},
		{"state", `{"state":{"nextRunAtMs":1}}`, "state: cannot be changed (kept by the scheduler)"},
		{"creator", `{"creator":"operator"}`, "creator: cannot be changed"},
		{"unknown key", `{"colour":"red"}`, "colour: unknown field"},
		{"clearing the name", `{"name":null}`, "name: required, cannot be cleared"},
		{"clearing the schedule", `{"schedule":null}`, "schedule: required, cannot be cleared"},
		{"schedule not an object", `{"schedule":"daily"}`, "schedule: expected an object"},
		{"unknown nested key", `{"payload":{"temperature":1}}`, `unknown field "temperature"`},
		{"wrong type", `{"payload":{"timeoutSeconds":"long"}}`, "payload.timeoutSeconds: expected int"},
		{"too large", `{"description":"` + strings.Repeat("x", MaxJobJSON) + `"}`, "patch: larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob(t, baseJob)
			if _, _, err := ApplyPatch(j, json.RawMessage(tc.patch)); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ApplyPatch error = %v; want %q", err, tc.err)
			}
		})
	}
}
