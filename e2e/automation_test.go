package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"talon/internal/channel/telegram/tgtest"
	"talon/internal/fakellm"
)

// TestAutomation walks cron jobs, hooks and wakes with the real binary
// (issue 22): a job added with `talon gateway call cron.add` runs on time
// and announces to a chat; one added with `talon cron add` is listed,
// survives a kill -9 and a restart with its next run, and once removed
// is gone from the scheduler; bad jobs (an unsafe webhook, an invalid
// expression, an unknown agent) are refused with the reason and nothing
// stored; a hook wakes the agent.
func TestAutomation(t *testing.T) {
	tg := tgtest.Start(t)
	s, dir := channelConfig(t, map[string]any{"telegram": map[string]any{
		"botToken": tg.Token, "apiRoot": tg.URL, "dmPolicy": "open", "allowFrom": []string{"*"},
	}}, map[string]any{"hooks": map[string]any{"enabled": true, "token": "e2e-hooks-token-0123456789"}})
	ctx := waitCtx(t)
	ws := "ws" + strings.TrimPrefix(s.base, "http")
	call := func(method string, params any) (string, error) {
		return talonCLI(t, "gateway", "call", method, "--url", ws, "--token", defaultToken, "--params", string(mustJSONBytes(t, params)))
	}

	// A one-shot in two seconds, announced to Telegram.
	at := time.Now().Add(2 * time.Second).UTC().Format("2006-01-02T15:04:05")
	if out, err := call("cron.add", map[string]any{"name": "e2e one-shot", "schedule": map[string]any{"kind": "at", "at": at},
		"payload":  map[string]any{"kind": "agentTurn", "message": "the nightly report"},
		"delivery": map[string]any{"mode": "announce", "channel": "telegram", "to": "4242"}}); err != nil {
		t.Fatalf("cron.add: %v\n%s", err, out)
	}
	if err := tg.Wait(ctx, func() bool {
		for _, m := range tg.Sent() {
			if m.ChatID == "4242" && strings.Contains(m.Text, "inspect:") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the one-shot's answer never reached the chat: %v\n%s", err, s.proc.Log)
	}

	// Bad jobs are refused whole, each with its reason.
	every := map[string]any{"kind": "every", "everyMs": 60000}
	turn := map[string]any{"kind": "agentTurn", "message": "x"}
	for _, bad := range []struct {
		name string
		job  map[string]any
		want string
	}{
		{"unsafe webhook", map[string]any{"name": "bad", "schedule": every, "payload": turn,
			"delivery": map[string]any{"mode": "webhook", "to": "http://169.254.169.254/"}}, "delivery.to"},
		{"invalid expression", map[string]any{"name": "bad", "schedule": map[string]any{"kind": "cron", "expr": "61 * * * *"}, "payload": turn}, "schedule.expr"},
		{"unknown agent", map[string]any{"name": "bad", "agentId": "ghost", "schedule": every, "payload": turn}, "ghost"},
	} {
		if out, err := call("cron.add", bad.job); err == nil || !strings.Contains(out, bad.want) {
			t.Fatalf("%s: not refused with %q: %v\n%s", bad.name, bad.want, err, out)
		}
	}

	// An hourly job with the CLI; listed, then through a kill -9.
	out, err := talonCLI(t, "cron", "add", "--url", ws, "--token", defaultToken, "--name", "e2e hourly",
		"--cron", "0 * * * *", "--tz", "Europe/Vienna", "--message", "digest", "--no-deliver")
	if err != nil {
		t.Fatalf("talon cron add: %v\n%s", err, out)
	}
	if out, err := talonCLI(t, "cron", "list", "--url", ws, "--token", defaultToken); err != nil || !strings.Contains(out, "e2e hourly") || strings.Contains(out, "bad") {
		t.Fatalf("talon cron list: %v\n%s", err, out)
	}
	s.kill()
	s = restartWithModel(t, dir)
	type list struct {
		Jobs []struct {
			Name  string `json:"name"`
			State struct {
				NextRunAtMs *int64 `json:"nextRunAtMs"`
			} `json:"state"`
		} `json:"jobs"`
	}
	var l list
	if err := wsCall(t, s, "cron.list", nil, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Jobs) != 1 || l.Jobs[0].Name != "e2e hourly" || l.Jobs[0].State.NextRunAtMs == nil {
		t.Fatalf("after the restart: %+v (the one-shot ran and is gone; the hourly one keeps its next run)", l.Jobs)
	}
	var runs struct {
		Entries []struct {
			JobName        string `json:"jobName"`
			DeliveryStatus string `json:"deliveryStatus"`
		} `json:"entries"`
	}
	if err := wsCall(t, s, "cron.runs", map[string]any{"scope": "all"}, &runs); err != nil || len(runs.Entries) != 1 ||
		runs.Entries[0].JobName != "e2e one-shot" || runs.Entries[0].DeliveryStatus != "delivered" {
		t.Fatalf("run history after the restart: %+v %v", runs.Entries, err)
	}

	// Removed, a job is gone from the store and the scheduler.
	var hourly struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	if err := wsCall(t, s, "cron.list", nil, &hourly); err != nil || len(hourly.Jobs) != 1 {
		t.Fatalf("cron.list: %+v %v", hourly, err)
	}
	if out, err := talonCLI(t, "cron", "remove", hourly.Jobs[0].ID, "--url", "ws"+strings.TrimPrefix(s.base, "http"), "--token", defaultToken); err != nil {
		t.Fatalf("talon cron remove: %v\n%s", err, out)
	}
	var status struct {
		Jobs     int    `json:"jobs"`
		NextWake *int64 `json:"nextWakeAtMs"`
	}
	if err := wsCall(t, s, "cron.status", nil, &status); err != nil || status.Jobs != 0 || status.NextWake != nil {
		t.Fatalf("after the removal the scheduler still has %+v (%v)", status, err)
	}

	// A hook wakes the agent: the notice is in its next turn.
	req, _ := http.NewRequest(http.MethodPost, s.base+"/hooks/wake", strings.NewReader(`{"text":"ticket 77 escalated","mode":"now"}`))
	req.Header.Set("Authorization", "Bearer e2e-hooks-token-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("hooks/wake: %v %v", resp, err)
	}
	resp.Body.Close()
	waitFor(t, "the woken turn with the notice", func() bool {
		var h struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if wsCall(t, s, "chat.history", map[string]any{"sessionKey": "agent:main:main"}, &h) != nil {
			return false
		}
		for _, m := range h.Messages {
			if strings.Contains(string(m.Content), "ticket 77 escalated") {
				return true
			}
		}
		return false
	})
}

func mustJSONBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHeartbeatOKGoesNowhere: with the real binary, a heartbeat agent runs
// on its cadence, and a model that answers HEARTBEAT_OK has nothing
// delivered to the heartbeat's chat target (issue 22).
func TestHeartbeatOKGoesNowhere(t *testing.T) {
	model, err := fakellm.Start(fakellm.Options{Reply: "HEARTBEAT_OK"})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	tg := tgtest.Start(t)
	s, _ := channelConfig(t, map[string]any{"telegram": map[string]any{
		"botToken": tg.Token, "apiRoot": tg.URL, "dmPolicy": "open", "allowFrom": []string{"*"},
	}}, map[string]any{
		"models": map[string]any{"providers": map[string]any{"fake": map[string]any{"baseUrl": model.BaseURL(), "api": "openai-completions"}}},
		"agents": map[string]any{"list": []map[string]any{{"id": "main"},
			{"id": "watch", "model": "fake/" + fakellm.Model, "heartbeat": map[string]any{"every": "1s", "target": "telegram", "to": "4242"}}}},
	})
	waitFor(t, "three heartbeat turns", func() bool { return model.Chats() >= 3 })
	var last struct {
		AgentID, Status string
	}
	if err := wsCall(t, s, "last-heartbeat", nil, &last); err != nil || last.AgentID != "watch" || last.Status != "ok-token" {
		t.Fatalf("last heartbeat %+v (%v): want watch's, ok-token", last, err)
	}
	if sent := tg.Sent(); len(sent) != 0 {
		t.Errorf("an OK heartbeat reached the chat: %+v", sent)
	}
}
