package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"talon/internal/agent"
	"talon/internal/automation"
	"talon/internal/channel/format"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/store"
)

// Heartbeat turns (spec automation.md §9) and wakes (R8.4): a
// heartbeat-style turn runs the agent's heartbeat prompt in a session,
// with the session's queued system events before it; a reply that is only
// HEARTBEAT_OK (or NO_REPLY) is an acknowledgement and goes nowhere, any
// other is an alert delivered to the heartbeat's target (none by default).

// EventHeartbeat is the heartbeat event (R9.7).
const EventHeartbeat = "heartbeat"

// Wake pacing (R8.4): event-driven turns of one agent start at least
// wakeGap apart, and at most wakeFlood in wakeFloodWindow; the others are
// deferred, never dropped.
const (
	wakeGap         = 30 * time.Second
	wakeFlood       = 5
	wakeFloodWindow = time.Minute
)

// errBusy says a heartbeat found its session or agent busy (R9.2).
var errBusy = errors.New("busy")

// heartbeatEvent is R9.7's event.
type heartbeatEvent struct {
	Ts         int64  `json:"ts"`
	AgentID    string `json:"agentId"`
	Status     string `json:"status"` // sent, ok-empty, ok-token, skipped, failed
	Reason     string `json:"reason,omitempty"`
	To         string `json:"to,omitempty"`
	Channel    string `json:"channel,omitempty"`
	Preview    string `json:"preview,omitempty"`
	DurationMs int64  `json:"durationMs,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
}

// wakes paces a tenant's wakes per agent.
type wakes struct {
	mu      sync.Mutex
	started map[string][]time.Time // agent → recent starts
	pending map[string]bool        // agent+session keys with a deferred turn
	last    *heartbeatEvent
}

// wakeState is the tenant's wake pacing.
func (t *tenant) wakeState() *wakes {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wakes == nil {
		t.wakes = &wakes{started: map[string][]time.Time{}, pending: map[string]bool{}}
	}
	return t.wakes
}

// delay is how long a wake of agentID must wait (0: start now), and
// records the start when it is 0.
func (w *wakes) delay(agentID string, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var recent []time.Time
	for _, at := range w.started[agentID] {
		if now.Sub(at) < wakeFloodWindow {
			recent = append(recent, at)
		}
	}
	w.started[agentID] = recent
	var wait time.Duration
	if n := len(recent); n > 0 {
		wait = max(wait, recent[n-1].Add(wakeGap).Sub(now))
	}
	if len(recent) >= wakeFlood {
		wait = max(wait, recent[len(recent)-wakeFlood].Add(wakeFloodWindow).Sub(now))
	}
	if wait <= 0 {
		w.started[agentID] = append(recent, now)
	}
	return wait
}

// wakeNow asks for a heartbeat-style turn of agentID in key at once
// (R8.4): it starts beside the caller, or later when the agent's wakes are
// paced; a wake already deferred for the session takes this one along.
func (s *Server) wakeNow(t *tenant, agentID, key string) error {
	w := t.wakeState()
	id := agentID + "\x00" + key
	w.mu.Lock()
	if w.pending[id] {
		w.mu.Unlock()
		return nil
	}
	w.pending[id] = true
	w.mu.Unlock()
	var try func()
	try = func() {
		if wait := w.delay(agentID, time.Now()); wait > 0 {
			time.AfterFunc(wait, try)
			return
		}
		w.mu.Lock()
		delete(w.pending, id)
		w.mu.Unlock()
		release := s.enter(t)
		defer release()
		rt, err := t.current(s)
		if err != nil {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx, unbind := t.bind(ctx)
		defer unbind()
		hs := automation.HeartbeatFor(rt.file.Config, agentID)
		if ev := s.heartbeatTurn(ctx, t, rt, hs, key); ev.Status == "skipped" && ev.Reason == "busy" {
			// Deferred, not dropped: try again after the gap.
			w.mu.Lock()
			w.pending[id] = true
			w.mu.Unlock()
			time.AfterFunc(wakeGap, try)
		}
	}
	go try()
	return nil
}

// heartbeatTurn runs one heartbeat-style turn of hs's agent in key and
// delivers what its visibility lets through (an alert; the bare token
// with showOk) to hs's target; it records, and broadcasts unless the
// visibility turns the indicator off, the heartbeat event it returns.
func (s *Server) heartbeatTurn(ctx context.Context, t *tenant, rt *runtime, hs automation.HeartbeatSettings, key string) heartbeatEvent {
	start := time.Now()
	ev := heartbeatEvent{Ts: start.UnixMilli(), AgentID: hs.AgentID, SessionKey: key}
	// Before the run only an explicit channel target is known; "last" and
	// "owner" are read under channels.defaults until they resolve.
	vis := automation.VisibilityFor(rt.file.Config, targetChannel(hs.Target), hs.AccountID)
	finish := func() heartbeatEvent {
		ev.DurationMs = time.Since(start).Milliseconds()
		s.recordBeat(t, ev, vis.UseIndicator)
		return ev
	}
	if len(s.runs.ofSession(t, key)) > 0 {
		ev.Status, ev.Reason = "skipped", "busy"
		return finish()
	}
	if skip, reason := s.heartbeatSkip(t, rt, hs, vis); skip {
		ev.Status, ev.Reason = "skipped", reason
		return finish()
	}
	if skip := budgetSkip(ctx, rt); skip != "" {
		ev.Status, ev.Reason = "skipped", "budget-exceeded"
		return finish()
	}
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: hs.Prompt}}, Model: hs.Model, JobModel: true, Owner: true, Kind: store.CallHeartbeat,
		LightContext: hs.LightContext,
		// An exchange with nothing to say stays out of the session's
		// history and of its next turns (R9.6, better-items 3 and 4).
		Quiet: func(text string) bool {
			kind, _ := automation.HeartbeatReply(text, hs.AckMaxChars)
			return kind != automation.HeartbeatAlert
		}}
	res, failed := s.backgroundTurn(ctx, t, rt, "heartbeat-"+store.NewID(), key, hs.AgentID, req, hs.Timeout)
	if failed != "" {
		ev.Status, ev.Reason = "failed", failed
		return finish()
	}
	kind, alert := automation.HeartbeatReply(res.Text, hs.AckMaxChars)
	ev.Status = kind
	if kind == automation.HeartbeatAlert {
		ev.Preview = preview(alert)
	}
	show := func(v automation.Visibility) string {
		vis = v
		switch {
		case kind == automation.HeartbeatAlert && v.ShowAlerts:
			return alert
		case kind != automation.HeartbeatAlert && v.ShowOK:
			return format.HeartbeatToken
		}
		return ""
	}
	ch, to, err := s.deliverHeartbeat(ctx, t, rt, hs, key, show)
	if kind != automation.HeartbeatAlert {
		// An acknowledgement stays one whether or not its token could
		// be shown.
		if err == nil {
			ev.Channel, ev.To = ch, to
		}
		return finish()
	}
	ev.Channel, ev.To = ch, to
	switch {
	case errors.Is(err, errNoTarget):
		ev.Status, ev.Reason = "skipped", "no-target"
	case errors.Is(err, errHidden):
		ev.Status, ev.Reason = "skipped", "alerts-disabled"
	case err != nil:
		ev.Status, ev.Reason = "failed", err.Error()
	default:
		ev.Status = "sent"
	}
	return finish()
}

// targetChannel is the channel a heartbeat target names before it runs:
// "" for none, last and owner.
func targetChannel(target string) string {
	switch t := strings.ToLower(strings.TrimSpace(target)); t {
	case "", "none", "last", "owner":
		return ""
	default:
		return t
	}
}

// heartbeatSkip says a heartbeat must not run now without a model call:
// nothing of it would show, outside activeHours, or an effectively empty
// HEARTBEAT.md (R9.3).
func (s *Server) heartbeatSkip(t *tenant, rt *runtime, hs automation.HeartbeatSettings, vis automation.Visibility) (bool, string) {
	cfg := rt.file.Config
	if vis.Silent() {
		return true, "alerts-disabled"
	}
	if hs.ActiveHours != nil {
		if in, err := automation.InActiveHours(*hs.ActiveHours, time.Now(), cfg.Agents.Defaults.UserTimezone); err != nil || !in {
			return true, "quiet-hours"
		}
	}
	ws, err := t.workspaces().Open(cfg.AgentWorkspace(t.dir, hs.AgentID), false)
	if err == nil {
		defer ws.Close()
		if b, err := ws.ReadFile("HEARTBEAT.md"); err == nil && automation.EmptyChecklist(string(b)) {
			return true, "empty-heartbeat-file"
		}
	}
	return false, ""
}

// errNoTarget says a heartbeat alert had nowhere to go (target none);
// errHidden that its route's visibility keeps it back.
var (
	errNoTarget = errors.New("no target")
	errHidden   = errors.New("hidden by the channel's heartbeat visibility")
)

// deliverHeartbeat posts what show gives for the visibility of the
// heartbeat's route to its target (R9.5): none (Talon's default), last
// (the session's last route), or a channel with to; owner is the first
// concrete commands.ownerAllowFrom entry. show returning "" sends
// nothing (errHidden).
func (s *Server) deliverHeartbeat(ctx context.Context, t *tenant, rt *runtime, hs automation.HeartbeatSettings, key string, show func(automation.Visibility) string) (string, string, error) {
	cfg := rt.file.Config
	h := t.hub()
	var d automation.Delivery
	switch target := strings.TrimSpace(hs.Target); target {
	case "", "none":
		return "", "", errNoTarget
	case "last":
		d = automation.Delivery{Mode: automation.DeliverAnnounce}
	case "owner":
		owner := ""
		for _, o := range cfg.Commands.OwnerAllowFrom {
			if c, id, ok := strings.Cut(strings.TrimSpace(o), ":"); ok && id != "" && id != "*" && channelLabels[strings.ToLower(c)] != "" {
				owner = o
				break
			}
		}
		if owner == "" {
			return "", "", errNoTarget
		}
		d = automation.Delivery{Mode: automation.DeliverAnnounce, To: owner}
	default:
		d = automation.Delivery{Mode: automation.DeliverAnnounce, Channel: target, To: hs.To, AccountID: hs.AccountID}
	}
	if h == nil {
		return "", "", errors.New("no chat channel is configured")
	}
	j := automation.Job{AgentID: hs.AgentID}
	ch, account, tgt, err := s.announceTarget(ctx, rt, &d, j, key)
	if err != nil {
		return "", "", err
	}
	text := show(automation.VisibilityFor(cfg, ch, account))
	if text == "" {
		return ch, tgt.Peer.ID, errHidden
	}
	if hs.DirectPolicy == "block" && tgt.Peer.Kind == "direct" {
		return ch, tgt.Peer.ID, errors.New("dm-blocked")
	}
	_, err = h.Send(ctx, hub.SendRequest{Channel: ch, AccountID: account, Target: tgt, Text: text,
		IdempotencyKey: "heartbeat:" + store.NewID(), Ack: text == format.HeartbeatToken})
	return ch, tgt.Peer.ID, err
}

// preview is the first 200 characters of a text, for events.
func preview(s string) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return string(r)
}

// heartbeatKey is the session a heartbeat of hs runs in: its session
// setting, else the agent's main session.
func heartbeatKey(cfg *config.Config, hs automation.HeartbeatSettings) string {
	if k := strings.TrimSpace(hs.Session); k != "" && k != "main" {
		return k
	}
	return policy.MainSessionKey(cfg, hs.AgentID)
}
