package cron

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, args string
		job        string // the built job/patch JSON, "" for none
		err        string
	}{
		{"list", `{"action":"list","includeDisabled":true,"limit":5}`, "", ""},
		{"add every", `{"action":"add","name":"digest","every":"30m","message":"summarise"}`,
			`{"name":"digest","payload":{"kind":"agentTurn","message":"summarise"},"schedule":{"everyMs":1800000,"kind":"every"}}`, ""},
		{"add cron with tools and a chat", `{"action":"add","name":"d","cron":"0 7 * * 1-5","tz":"Europe/Vienna","message":"m","tools":["read"],"channel":"telegram","to":"42"}`,
			`{"delivery":{"channel":"telegram","mode":"announce","to":"42"},"name":"d","payload":{"kind":"agentTurn","message":"m","toolsAllow":["read"]},"schedule":{"expr":"0 7 * * 1-5","kind":"cron","tz":"Europe/Vienna"}}`, ""},
		{"add relative at", `{"action":"add","name":"r","at":"20m","systemEvent":"stand up"}`,
			`{"name":"r","payload":{"kind":"systemEvent","text":"stand up"},"schedule":{"at":"2026-11-27T07:20:00Z","kind":"at"}}`, ""},
		{"update", `{"action":"update","jobId":"j1","enabled":false}`, `{"enabled":false}`, ""},
		{"two schedules", `{"action":"add","name":"x","every":"1h","cron":"* * * * *","message":"m"}`, "", "one of at, every and cron"},
		{"no schedule", `{"action":"add","name":"x","message":"m"}`, "", "needs a schedule"},
		{"no payload", `{"action":"add","name":"x","every":"1h"}`, "", "needs message"},
		{"both payloads", `{"action":"add","name":"x","every":"1h","message":"m","systemEvent":"s"}`, "", "not both"},
		{"no name", `{"action":"add","every":"1h","message":"m"}`, "", "needs name"},
		{"bad every", `{"action":"add","name":"x","every":"soon","message":"m"}`, "", "not a duration"},
		{"get without id", `{"action":"get"}`, "", "needs jobId"},
		{"wake without text", `{"action":"wake"}`, "", "needs text"},
		{"unknown action", `{"action":"explode"}`, "", "action"},
		{"unknown argument", `{"action":"list","job":{}}`, "", "job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parse(json.RawMessage(tc.args), now)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if string(r.Job) != tc.job && !(tc.job == "" && r.Job == nil) {
				t.Errorf("job %s\nwant %s", r.Job, tc.job)
			}
		})
	}
}
