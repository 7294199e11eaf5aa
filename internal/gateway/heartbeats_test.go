package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	b := ts.srv.beats.m[beatKey{"acme", "main"}]
	ts.srv.beats.mu.Unlock()
	if b == nil || b.every != minTenantBeat {
		t.Fatalf("the tenant's heartbeat %+v, want one every %s", b, minTenantBeat)
	}
}
