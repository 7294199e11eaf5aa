package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"talon/internal/automation"
	"talon/internal/automation/cron"
	"talon/internal/channel"
	"talon/internal/channel/format"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/internal/netguard"
	"talon/internal/policy"
	"talon/internal/session"
)

// Delivery of a cron run's answer (spec automation.md §3.3): announce to
// a chat through the tenant's channel hub, POST to a webhook through the
// network guard, or nothing.

// webhookTimeout bounds one webhook delivery.
const webhookTimeout = 30 * time.Second

// deliverRun delivers a finished agentTurn run's text per the job's
// delivery and records how it went in o. key is the run's session (whose
// message tool sends count as delivered), route the session whose last
// chat an announce without a target goes to.
func (s *Server) deliverRun(ctx context.Context, t *tenant, rt *runtime, j automation.Job, key, route, runID, text string, o *cron.Outcome) {
	d := j.Delivery
	if d == nil || d.Mode == "" || d.Mode == automation.DeliverNone {
		o.DeliveryStatus = automation.DeliveryNotAsked
		return
	}
	if d.Mode == automation.DeliverWebhook {
		s.deliverWebhook(ctx, t, rt, j, runID, o)
		return
	}
	body := strings.TrimSpace(format.StripHeartbeat(text))
	switch {
	case strings.TrimSpace(text) == "":
		o.DeliverySuppressionReason = automation.SuppressEmpty
	case format.IsSilent(body):
		o.DeliverySuppressionReason = automation.SuppressSilent
	case body == "":
		o.DeliverySuppressionReason = automation.SuppressHeartbeat
	}
	h := t.hub()
	if o.DeliverySuppressionReason != "" {
		o.DeliveryStatus = automation.DeliveryNotAsked // silent by choice (R3.15)
		if h != nil {
			h.TakeToolSends(key)
		}
		return
	}
	fail := func(err error) {
		o.DeliveryStatus, o.DeliveryError = automation.NotDelivered, err.Error()
		f := false
		o.Delivered = &f
	}
	if h == nil {
		fail(errors.New("announce: no chat channel is configured"))
		return
	}
	ch, account, target, err := s.announceTarget(ctx, rt, d, j, route)
	if err != nil {
		fail(fmt.Errorf("announce: %w", err))
		return
	}
	if hub.Sent(h.TakeToolSends(key), ch, target, body) {
		// The run's message tool already posted it there (vector 12).
		o.DeliveryStatus, o.DeliverySuppressionReason = automation.Delivered, "message_tool"
		yes := true
		o.Delivered = &yes
		return
	}
	res, err := h.Send(ctx, hub.SendRequest{Channel: ch, AccountID: account, Target: target, Text: body,
		IdempotencyKey: "cron:" + cronKey(t) + ":" + runID})
	switch {
	case err != nil && res.Unconfirmed > 0:
		o.DeliveryStatus, o.DeliveryError = automation.DeliveryUnknown, err.Error()
	case err != nil:
		fail(fmt.Errorf("announce to %s: %w", ch, err))
	case len(res.MessageIDs) == 0 && res.Unconfirmed > 0:
		o.DeliveryStatus = automation.DeliveryUnknown // R3.17: never resent
	default:
		yes := true
		o.DeliveryStatus, o.Delivered = automation.Delivered, &yes
	}
}

// announceTarget resolves an announce delivery's chat (R3.13): an
// explicit channel and to; a to with a platform prefix; the run
// session's last route; else the tenant's only configured channel.
func (s *Server) announceTarget(ctx context.Context, rt *runtime, d *automation.Delivery, j automation.Job, key string) (ch, account string, t channel.Target, err error) {
	cfg := rt.file.Config
	ch = strings.ToLower(strings.TrimSpace(d.Channel))
	if ch == "last" {
		ch = ""
	}
	to, account := strings.TrimSpace(d.To), d.AccountID
	if ch == "" {
		if c, rest, ok := strings.Cut(to, ":"); ok && channelLabels[strings.ToLower(c)] != "" {
			ch, to = strings.ToLower(c), rest
		} else if c, rest, ok := strings.Cut(to, ":"); ok && strings.EqualFold(c, "tg") {
			ch, to = "telegram", rest
		}
	}
	thread := threadOf(d.ThreadID)
	if to == "" {
		// The last route of the job's session, else of its agent's main
		// session (a main job announces where that session last talked).
		for _, k := range []string{key, mainKeyOf(cfg, j)} {
			if lc, la, lt, ok := s.lastRoute(ctx, rt, k); ok && (ch == "" || ch == lc) {
				return lc, cmp.Or(account, la), lt, nil
			}
		}
		return "", "", channel.Target{}, errors.New("no target: give delivery.to (and channel), or run the job in a session that has talked in a chat")
	}
	if ch == "" {
		var only []string
		for _, id := range chatChannelIDs {
			if _, ok := cfg.Channels[id]; ok {
				only = append(only, id)
			}
		}
		if len(only) != 1 {
			return "", "", channel.Target{}, fmt.Errorf("delivery.channel is needed: %d chat channels are configured", len(only))
		}
		ch = only[0]
	}
	if channelLabels[ch] == "" {
		return "", "", channel.Target{}, fmt.Errorf("channel %q is not one Talon runs (telegram, slack, discord)", ch)
	}
	t, err = parseTarget(ch, to, thread)
	if err != nil {
		return "", "", channel.Target{}, fmt.Errorf("delivery.to %q: %w", to, err)
	}
	return ch, account, t, nil
}

// mainKeyOf is the main session of a job's agent.
func mainKeyOf(cfg *config.Config, j automation.Job) string {
	agentID := j.AgentID
	if agentID == "" {
		agentID = cfg.DefaultAgentID()
	}
	return policy.MainSessionKey(cfg, agentID)
}

// threadOf reads delivery.threadId, a number or a string.
func threadOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// lastRoute is where a session last talked in a chat (recordChatRoute).
func (s *Server) lastRoute(ctx context.Context, rt *runtime, key string) (ch, account string, t channel.Target, ok bool) {
	agentID := session.AgentOf(key, rt.file.Config.DefaultAgentID())
	e, err := rt.runner.Store.GetSession(ctx, agentID, key)
	if err != nil {
		return "", "", channel.Target{}, false
	}
	str := func(k string) string {
		var v string
		if raw, ok := e.Extra[k]; ok {
			_ = json.Unmarshal(raw, &v)
		}
		return v
	}
	ch, to := str("lastChannel"), str("lastTo")
	if ch == "" || to == "" {
		return "", "", channel.Target{}, false
	}
	kind := channel.Kind(str("chatType"))
	if !slices.Contains([]channel.Kind{channel.Direct, channel.Group, channel.Room}, kind) {
		kind = channel.Direct
	}
	return ch, str("lastAccountId"), channel.Target{Peer: channel.Peer{Kind: kind, ID: to}, ThreadID: str("lastThreadId")}, true
}

// deliverWebhook POSTs the finished run, as its run-log entry with the
// job's summary, to the job's webhook URL (R3.3's webhook mode): through
// the network guard, with cron.webhookToken as a bearer token.
func (s *Server) deliverWebhook(ctx context.Context, t *tenant, rt *runtime, j automation.Job, runID string, o *cron.Outcome) {
	fail := func(status, msg string) {
		o.DeliveryStatus, o.DeliveryError = status, msg
		f := false
		o.Delivered = &f
	}
	url := strings.TrimSpace(j.Delivery.To)
	guard := s.webhookGuard(t, rt)
	if err := netguard.CheckURL(url, guard); err != nil {
		fail(automation.NotDelivered, "webhook: "+err.Error())
		return
	}
	body, err := json.Marshal(map[string]any{
		"action": "finished", "jobId": j.ID, "jobName": j.Name, "runId": runID, "status": o.Status,
		"summary": strings.TrimSpace(format.StripHeartbeat(o.Summary)), "error": o.Error, "sessionKey": o.SessionKey, "model": o.Model, "ts": time.Now().UnixMilli(),
		"job": map[string]any{"id": j.ID, "name": j.Name, "agentId": j.AgentID, "schedule": j.Schedule},
	})
	if err != nil {
		fail(automation.NotDelivered, "webhook: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fail(automation.NotDelivered, "webhook: "+err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if tok := rt.file.Config.Cron.WebhookToken; tok != nil {
		v, err := tok.Resolve(s.secretEnv(t, rt))
		if err != nil {
			fail(automation.NotDelivered, "webhook: cron.webhookToken: "+err.Error())
			return
		}
		req.Header.Set("Authorization", "Bearer "+v)
	}
	guard.Timeout = webhookTimeout
	resp, err := netguard.NewClient(guard).Do(req)
	if err != nil {
		// The request may have reached the server: unknown, never resent.
		fail(automation.DeliveryUnknown, "webhook: "+t.hideString(err.Error()))
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fail(automation.NotDelivered, fmt.Sprintf("webhook: %s answered %s", url, resp.Status))
		return
	}
	yes := true
	o.DeliveryStatus, o.Delivered = automation.Delivered, &yes
}

// webhookGuard is the network rule of a tenant's webhooks: the ceiling's
// for a tenant; for the operator's own config public addresses, and
// loopback with tools.network.allowLoopback.
func (s *Server) webhookGuard(t *tenant, rt *runtime) netguard.Options {
	if t.id != "" {
		if rt.root != nil && rt.root.ceil != nil {
			return rt.root.ceil.Net()
		}
		return netguard.Options{}
	}
	n := rt.file.Config.Tools.Network.AllowLoopback
	return netguard.Options{AllowLoopback: n != nil && *n}
}
