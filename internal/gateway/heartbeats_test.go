package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"talon/internal/automation"
	"talon/internal/channel/telegram/tgtest"
)

// TestScheduledHeartbeats: a heartbeat block makes the agent's heartbeat
// run on its cadence; a reply that is not HEARTBEAT_OK is an alert
// delivered to the target; an effectively empty HEARTBEAT.md skips the
// turn; set-heartbeats false stops them (spec automation.md §9).
func TestScheduledHeartbeats(t *testing.T) {
	tg := tgtest.Start(t)
	ts, url := startWS(t, `,"agents":{"defaults":{"heartbeat":{"every":"1s","target":"telegram","to":"4242"}}},
		"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"open","allowFrom":["*"]}}`)
	c := dialWS(t, url)
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
		t.Fatalf("no heartbeat alert reached the target: %v", err)
	}
	waitFor(t, "a sent heartbeat event", func() bool {
		var ev map[string]any
		return c.Call(ctx, "last-heartbeat", nil, &ev) == nil && ev != nil && ev["status"] == "sent" && ev["channel"] == "telegram"
	})

	// An effectively empty checklist: the next heartbeat is skipped.
	ws := filepath.Join(ts.dir, "workspace")
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		t.Fatalf("no agent workspace at %s: %v", ws, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "HEARTBEAT.md"), []byte("# Checklist\n\n- [ ]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a heartbeat skipped for its empty checklist", func() bool {
		var ev map[string]any
		return c.Call(ctx, "last-heartbeat", nil, &ev) == nil && ev != nil && ev["status"] == "skipped" && ev["reason"] == "empty-heartbeat-file"
	})

	// Turned off: no more turns.
	mustCall[map[string]any](t, c, "set-heartbeats", map[string]any{"enabled": false})
	time.Sleep(1500 * time.Millisecond) // a heartbeat in flight when it was turned off ends
	var before map[string]any
	c.Call(ctx, "last-heartbeat", nil, &before)
	time.Sleep(2500 * time.Millisecond)
	var after map[string]any
	c.Call(ctx, "last-heartbeat", nil, &after)
	if before["ts"] != after["ts"] {
		t.Errorf("heartbeats ran after set-heartbeats false: %v then %v", before, after)
	}
}

// TestTenantHeartbeatFloor: a tenant cannot make the gateway call a model
// every second: its heartbeat cadence is held to minTenantBeat.
func TestTenantHeartbeatFloor(t *testing.T) {
	ts, _ := startWS(t, "")
	writeFile(t, filepath.Join(ts.dir, "tenants", "acme", "talon.json"), []byte(`{gateway: {auth: {token: "acme-token"}},
		agents: {defaults: {heartbeat: {every: "1s"}}}}`))
	acme, err := ts.srv.lookup("acme")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := acme.current(ts.srv)
	if err != nil {
		t.Fatal(err)
	}
	ts.srv.ensureCron(acme, rt)
	ts.srv.beats.mu.Lock()
	b := ts.srv.beats.get(beatKey{"acme", "main"})
	ts.srv.beats.mu.Unlock()
	if b == nil || b.every != minTenantBeat {
		t.Fatalf("the tenant's heartbeat %+v, want one every %s", b, minTenantBeat)
	}
}

// TestHeartbeatVisibility: channels' heartbeatVisibility decides what a
// heartbeat sends to its target (an OK's token, an alert), whether it
// runs at all (all three off: no model call) and whether its event is
// broadcast.
func TestHeartbeatVisibility(t *testing.T) {
	tests := []struct {
		// channel and defaults are the heartbeat keys of the telegram
		// block and of channels.defaults.
		name, channel, defaults, reply string
		status, reason                 string
		sent                           string // what reaches the chat, "" nothing
		modelCalls                     int
		event                          bool
	}{
		{"an OK is silent by default", ``, ``, "HEARTBEAT_OK", "ok-token", "", "", 1, true},
		{"showOk sends the token", `heartbeatVisibility: {showOk: true},`, `heartbeatVisibility: {showOk: false}`, "All fine. HEARTBEAT_OK", "ok-token", "", "HEARTBEAT_OK", 1, true},
		{"an alert is sent by default", ``, ``, "Disk full", "sent", "", "Disk full", 1, true},
		{"showAlerts false keeps it back", `heartbeat: {showAlerts: false},`, ``, "Disk full", "skipped", "alerts-disabled", "", 1, true},
		{"no indicator: no event", ``, `heartbeatVisibility: {useIndicator: false}`, "Disk full", "sent", "", "Disk full", 1, false},
		{"all off: no model call", ``, `heartbeatVisibility: {showOk: false, showAlerts: false, useIndicator: false}`, "unused",
			"skipped", "alerts-disabled", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := tgtest.Start(t)
			model := newScriptedLLM(t)
			model.push(scripted{Content: tt.reply})
			ts, url := startWS(t, `,models:{providers:{fake:{baseUrl:"`+model.srv.URL+`/v1"}}},
				agents:{defaults:{model:"fake/scripted",heartbeat:{every:"24h",target:"telegram",to:"4242"}}},
				channels:{defaults:{`+tt.defaults+`},telegram:{`+tt.channel+`botToken:"`+tg.Token+`",apiRoot:"`+tg.URL+`",dmPolicy:"open",allowFrom:["*"]}}`)
			c := dialWS(t, url)
			rt, err := ts.srv.defaultTenant.current(ts.srv)
			if err != nil {
				t.Fatal(err)
			}
			hs := automation.HeartbeatFor(rt.file.Config, "main")
			ev := ts.srv.heartbeatTurn(context.Background(), ts.srv.defaultTenant, rt, hs, heartbeatKey(rt.file.Config, hs))
			if ev.Status != tt.status || ev.Reason != tt.reason {
				t.Errorf("event %+v, want status %q reason %q", ev, tt.status, tt.reason)
			}
			if n := model.count(); n != tt.modelCalls {
				t.Errorf("%d model calls, want %d", n, tt.modelCalls)
			}
			if tt.sent != "" {
				ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
				defer cancel()
				if err := tg.Wait(ctx, func() bool {
					return slices.ContainsFunc(tg.Sent(), func(m tgtest.Sent) bool { return m.ChatID == "4242" && m.Text == tt.sent })
				}); err != nil {
					t.Errorf("%q never reached the chat: %v (sent %+v)", tt.sent, err, tg.Sent())
				}
			} else if ev.Status != "skipped" && ev.Channel != "" {
				t.Errorf("the heartbeat went to %s %s, want nowhere", ev.Channel, ev.To)
			}
			// Events go out in order: one broadcast after the turn tells
			// whether the heartbeat's came before it.
			ts.srv.broadcast(ts.srv.defaultTenant, "tick", map[string]any{})
			got := false
			for f := range c.Events() {
				if f.Event == "tick" {
					break
				}
				got = got || f.Event == EventHeartbeat
			}
			if got != tt.event {
				t.Errorf("heartbeat event broadcast: %v, want %v", got, tt.event)
			}
		})
	}
}

// TestQuietHeartbeatHidden is R9.6 and better-items 3 and 4: a heartbeat
// in the main session that has nothing to say is kept in the transcript
// but left out of chat.history and of the model's next turn; an alert
// stays in both.
func TestQuietHeartbeatHidden(t *testing.T) {
	model := newScriptedLLM(t)
	for _, r := range []string{"HEARTBEAT_OK", "hello there", "Disk full"} {
		model.push(scripted{Content: r})
	}
	ts, url := startWS(t, `,models:{providers:{fake:{baseUrl:"`+model.srv.URL+`/v1"}}},
		agents:{defaults:{model:"fake/scripted",heartbeat:{every:"24h",prompt:"CHECK THE LIST"}}}`)
	c := dialWS(t, url)
	rt, err := ts.srv.defaultTenant.current(ts.srv)
	if err != nil {
		t.Fatal(err)
	}
	hs := automation.HeartbeatFor(rt.file.Config, "main")
	key := heartbeatKey(rt.file.Config, hs)
	beat := func() heartbeatEvent {
		return ts.srv.heartbeatTurn(context.Background(), ts.srv.defaultTenant, rt, hs, key)
	}
	if ev := beat(); ev.Status != "ok-token" {
		t.Fatalf("first heartbeat %+v, want ok-token", ev)
	}
	chatTurn(t, c, "q-1", "hi")
	if req := string(model.request(2)); strings.Contains(req, "CHECK THE LIST") || strings.Contains(req, "HEARTBEAT_OK") {
		t.Errorf("the turn after a quiet heartbeat was sent it: %s", req)
	}
	if ev := beat(); ev.Status != "skipped" || ev.Reason != "no-target" {
		t.Fatalf("second heartbeat %+v, want an alert with no target", ev)
	}
	type history struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	var texts []string
	for _, m := range mustCall[history](t, c, "chat.history", map[string]any{"sessionKey": key}).Messages {
		for _, p := range m.Content {
			texts = append(texts, p.Text)
		}
	}
	if want := []string{"hi", "hello there", "CHECK THE LIST", "Disk full"}; !slices.Equal(texts, want) {
		t.Errorf("chat.history %q, want %q: the quiet heartbeat hidden, the alert shown", texts, want)
	}
	if raw := transcriptOf(t, ts, key); len(raw) != 4 {
		t.Errorf("the transcript's visible messages: %d, want 4", len(raw))
	}
}
