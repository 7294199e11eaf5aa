package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/channel/telegram/tgtest"
	"talon/internal/llm"
	"talon/internal/session"
	"talon/internal/store"
	"talon/protocol"
)

// TestCronJobs: jobs added over WS are checked (a bad one is refused and
// nothing stored), run on time in their own session, deliver to a
// webhook and to a chat, are listed with their runs, run on demand, and
// stop when removed (spec automation.md §3, §5, §11).
func TestCronJobs(t *testing.T) {
	tg := tgtest.Start(t)
	var mu sync.Mutex
	var hooks []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &m)
		m["auth"] = r.Header.Get("Authorization")
		mu.Lock()
		hooks = append(hooks, m)
		mu.Unlock()
	}))
	defer hook.Close()
	_, url := startWS(t, `,"tools":{"network":{"allowLoopback":true}},"cron":{"webhookToken":"hook-secret"},
		"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	admin := dialWS(t, url)
	reader := dialWS(t, url, protocol.ScopeRead)

	for _, tc := range []struct {
		name string
		job  map[string]any
		err  string
	}{
		{"bad expression", map[string]any{"name": "x", "schedule": map[string]any{"kind": "cron", "expr": "61 * * * *"}, "payload": map[string]any{"kind": "agentTurn", "message": "hi"}}, "schedule.expr"},
		{"unknown agent", map[string]any{"name": "x", "agentId": "ghost", "schedule": map[string]any{"kind": "every", "everyMs": 60000}, "payload": map[string]any{"kind": "agentTurn", "message": "hi"}}, "ghost"},
		{"private webhook", map[string]any{"name": "x", "schedule": map[string]any{"kind": "every", "everyMs": 60000}, "payload": map[string]any{"kind": "agentTurn", "message": "hi"},
			"delivery": map[string]any{"mode": "webhook", "to": "http://10.0.0.1/hook"}}, "delivery.to"},
		{"a creator", map[string]any{"name": "x", "creator": "operator", "schedule": map[string]any{"kind": "every", "everyMs": 60000}, "payload": map[string]any{"kind": "agentTurn", "message": "hi"}}, "creator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := callErr(admin, "cron.add", tc.job); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("cron.add: %v, want an error about %q", err, tc.err)
			}
		})
	}
	if _, err := callErr(reader, "cron.add", map[string]any{"name": "x"}); err == nil || !strings.Contains(err.Error(), "missing scope: operator.admin") {
		t.Fatalf("cron.add with read scope: %v", err)
	}
	type list struct {
		Jobs []struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Enabled bool   `json:"enabled"`
		} `json:"jobs"`
		Total int `json:"total"`
	}
	if l := mustCall[list](t, admin, "cron.list", map[string]any{"includeDisabled": true}); l.Total != 0 {
		t.Fatalf("refused jobs were stored: %+v", l)
	}

	// A one-shot in two seconds: its answer to the webhook, then gone.
	at := time.Now().Add(2 * time.Second).UTC().Format("2006-01-02T15:04:05")
	added := mustCall[map[string]any](t, admin, "cron.add", map[string]any{"name": "ping the webhook",
		"schedule": map[string]any{"kind": "at", "at": at}, "payload": map[string]any{"kind": "agentTurn", "message": "status report please"},
		"delivery": map[string]any{"mode": "webhook", "to": hook.URL + "/done"}})
	oneShot, _ := added["id"].(string)
	if oneShot == "" || added["deliveryPreview"] == nil {
		t.Fatalf("cron.add = %v", added)
	}
	waitFor(t, "the webhook delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(hooks) == 1 })
	mu.Lock()
	got := hooks[0]
	mu.Unlock()
	if got["jobId"] != oneShot || got["status"] != "ok" || got["auth"] != "Bearer hook-secret" || !strings.Contains(got["summary"].(string), "inspect:") {
		t.Errorf("webhook got %v", got)
	}
	type runs struct {
		Entries []struct {
			JobID          string `json:"jobId"`
			Status         string `json:"status"`
			DeliveryStatus string `json:"deliveryStatus"`
			SessionKey     string `json:"sessionKey"`
		} `json:"entries"`
	}
	waitFor(t, "the one-shot's run in history", func() bool {
		r := mustCall[runs](t, reader, "cron.runs", map[string]any{"id": oneShot})
		return len(r.Entries) == 1 && r.Entries[0].Status == "ok" && r.Entries[0].DeliveryStatus == "delivered" &&
			strings.HasPrefix(r.Entries[0].SessionKey, "agent:main:cron:"+oneShot+":run:")
	})
	waitFor(t, "the one-shot deleted after its run", func() bool {
		_, err := callErr(reader, "cron.get", map[string]any{"id": oneShot})
		return err != nil && strings.Contains(err.Error(), "unknown cron job id: "+oneShot)
	})

	// An hourly job, run on demand, announced to Telegram.
	hourly := mustCall[map[string]any](t, admin, "cron.add", map[string]any{"name": "hourly digest",
		"schedule": map[string]any{"kind": "cron", "expr": "0 * * * *", "tz": "Europe/Vienna"},
		"payload":  map[string]any{"kind": "agentTurn", "message": "digest"},
		"delivery": map[string]any{"mode": "announce", "channel": "telegram", "to": "4242"}})
	id := hourly["id"].(string)
	st := hourly["state"].(map[string]any)
	if st["nextRunAtMs"] == nil || hourly["schedule"].(map[string]any)["staggerMs"] != float64(300000) {
		t.Errorf("an hourly job's next run and default stagger: %v", hourly)
	}
	ran := mustCall[map[string]any](t, admin, "cron.run", map[string]any{"jobId": id})
	if ran["enqueued"] != true || ran["runId"] == "" {
		t.Fatalf("cron.run = %v", ran)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tg.Wait(ctx, func() bool {
		for _, m := range tg.Sent() {
			if m.ChatID == "4242" && strings.Contains(m.Text, "inspect:") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the announce did not reach Telegram: %v (sent %+v)", err, tg.Sent())
	}
	if s := mustCall[map[string]any](t, reader, "cron.status", nil); s["enabled"] != true || s["jobs"] != float64(1) || s["nextWakeAtMs"] == nil {
		t.Errorf("cron.status = %v", s)
	}
	upd := mustCall[map[string]any](t, admin, "cron.update", map[string]any{"id": id, "patch": map[string]any{"enabled": false}})
	if upd["enabled"] != false || upd["state"].(map[string]any)["nextRunAtMs"] != nil {
		t.Errorf("disabled: %v", upd)
	}
	if rm := mustCall[map[string]any](t, admin, "cron.remove", map[string]any{"id": id}); rm["removed"] != true {
		t.Errorf("cron.remove = %v", rm)
	}
	if _, err := callErr(admin, "cron.run", map[string]any{"id": id}); err == nil || !strings.Contains(err.Error(), "unknown cron job id") {
		t.Errorf("cron.run of a removed job: %v", err)
	}
}

// TestCronTool: an agent's cron tool adds a job capped to its run's tools,
// lists it, and a cron run of the job may not make jobs of its own (spec
// automation.md §7, R3.11, R7.3).
func TestCronTool(t *testing.T) {
	_, url := startWS(t, "")
	c := dialWS(t, url)
	chatTurn(t, c, "ct-1", `/call cron {"action":"add","name":"self check","every":"1h","message":"/call cron {\"action\":\"add\",\"name\":\"child\",\"every\":\"1h\",\"message\":\"x\"}","tools":["read","cron","canvas"],"deliver":"none"}`)
	type list struct {
		Jobs []struct {
			ID      string `json:"id"`
			Creator string `json:"creator"`
			Payload struct {
				ToolsAllow []string `json:"toolsAllow"`
			} `json:"payload"`
		} `json:"jobs"`
	}
	l := mustCall[list](t, c, "cron.list", nil)
	if len(l.Jobs) != 1 || l.Jobs[0].Creator != "owner" || strings.Join(l.Jobs[0].Payload.ToolsAllow, ",") != "read,cron" {
		t.Fatalf("jobs %+v: want one, made by the owner's run, its tools held to the run's (no canvas)", l.Jobs)
	}
	id := l.Jobs[0].ID
	mustCall[map[string]any](t, c, "cron.run", map[string]any{"id": id})
	type runs struct {
		Entries []struct {
			Status  string `json:"status"`
			Summary string `json:"summary"`
		} `json:"entries"`
	}
	waitFor(t, "the job's run", func() bool {
		r := mustCall[runs](t, c, "cron.runs", map[string]any{"id": id})
		return len(r.Entries) == 1
	})
	r := mustCall[runs](t, c, "cron.runs", map[string]any{"id": id})
	if !strings.Contains(r.Entries[0].Summary, "a cron run may read and remove its own job, not add") {
		t.Errorf("the cron run's own add: %+v", r.Entries[0])
	}
	if l := mustCall[list](t, c, "cron.list", nil); len(l.Jobs) != 1 {
		t.Errorf("a cron run made a job: %+v", l.Jobs)
	}

	// A reminder with contextMessages carries the chat's last lines.
	chatTurn(t, c, "ct-2", "remember the milk")
	chatTurn(t, c, "ct-3", `/call cron {"action":"add","name":"milk","at":"1h","systemEvent":"Buy milk","contextMessages":3}`)
	type jobs struct {
		Jobs []struct {
			Name    string `json:"name"`
			Payload struct {
				Text string `json:"text"`
			} `json:"payload"`
		} `json:"jobs"`
	}
	var text string
	for _, j := range mustCall[jobs](t, c, "cron.list", nil).Jobs {
		if j.Name == "milk" {
			text = j.Payload.Text
		}
	}
	if !strings.HasPrefix(text, "Buy milk\n\nRecent context:\n") || !strings.Contains(text, "- User: remember the milk\n- Assistant: inspect:") {
		t.Errorf("the reminder's text %q lacks the chat's last lines", text)
	}
}

// TestCronSessionRetention: cron.sessionRetention prunes isolated run
// sessions older than it (false keeps them), at most once an hour.
func TestCronSessionRetention(t *testing.T) {
	tests := []struct {
		name, retention string
		pruned          bool
	}{
		{"default 24h", ``, true},
		{"36h keeps a 30h-old run", `,cron:{sessionRetention:"36h"}`, false},
		{"false keeps all", `,cron:{sessionRetention:false}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, _ := startWS(t, tt.retention)
			tn := ts.srv.defaultTenant
			rt, err := tn.current(ts.srv)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			key := "agent:main:cron:job1:run:r1"
			if err := tn.store.PutSession(ctx, "main", key, session.Entry{SessionID: "s1", UpdatedAt: time.Now().Add(-30 * time.Hour).UnixMilli()}); err != nil {
				t.Fatal(err)
			}
			tn.mu.Lock()
			tn.cronPruned = time.Time{}
			tn.mu.Unlock()
			ts.srv.pruneCron(ctx, tn, rt.file.Config)
			_, err = tn.store.GetSession(ctx, "main", key)
			if gone := errors.Is(err, store.ErrNotFound); gone != tt.pruned {
				t.Fatalf("run session pruned: %v (%v), want %v", gone, err, tt.pruned)
			}
			// Within the hour: not again.
			if err := tn.store.PutSession(ctx, "main", "agent:main:cron:job1:run:r2", session.Entry{SessionID: "s2", UpdatedAt: 1}); err != nil {
				t.Fatal(err)
			}
			ts.srv.pruneCron(ctx, tn, rt.file.Config)
			if _, err := tn.store.GetSession(ctx, "main", "agent:main:cron:job1:run:r2"); err != nil {
				t.Errorf("pruned again within the hour: %v", err)
			}
		})
	}
}

// TestCronCurrentTarget is R3.9: a current job runs detached, in a run
// session of its own, with the tail of the conversation that made it,
// and its answer is added to that conversation.
func TestCronCurrentTarget(t *testing.T) {
	ts, url := startWS(t, "")
	c := dialWS(t, url)
	chatTurn(t, c, "cur-1", "remember the milk")
	var added struct {
		ID string `json:"id"`
	}
	mustRPC(t, c, "cron.add", map[string]any{"name": "follow up", "sessionTarget": "current", "sessionKey": "agent:main:main",
		"schedule": map[string]any{"kind": "every", "everyMs": 3600000},
		"payload":  map[string]any{"kind": "agentTurn", "message": "follow up on it"}}, &added)
	before := len(transcriptOf(t, ts, "agent:main:main"))
	mustCall[map[string]any](t, c, "cron.run", map[string]any{"id": added.ID})
	type runs struct {
		Entries []struct {
			Status, Summary, SessionKey string
		} `json:"entries"`
	}
	var r runs
	waitFor(t, "the job's run", func() bool {
		r = mustCall[runs](t, c, "cron.runs", map[string]any{"id": added.ID})
		return len(r.Entries) == 1
	})
	e := r.Entries[0]
	// The inspect model counts what it was sent: the conversation's two
	// messages and the job's.
	if e.Status != "ok" || !strings.Contains(e.Summary, " 3 messages") || !strings.Contains(e.SessionKey, ":cron:"+added.ID+":run:") {
		t.Fatalf("run %+v: want ok, with the conversation's tail, in a run session of its own", e)
	}
	msgs := transcriptOf(t, ts, "agent:main:main")
	if len(msgs) != before+1 || msgs[len(msgs)-1].Role != llm.RoleAssistant || msgs[len(msgs)-1].Content != strings.TrimSpace(e.Summary) {
		t.Errorf("the conversation has %d messages after %d, last %+v; want the job's answer added", len(msgs), before, msgs[len(msgs)-1])
	}
}
