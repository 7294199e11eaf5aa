package gateway

import (
	"context"
	"fmt"
	"time"

	"talon/internal/automation"
	"talon/internal/automation/cron"
	"talon/internal/channel/hub"
)

// EventCron is the cron event (spec automation.md §6.1).
const EventCron = "cron"

// cronEvent broadcasts a scheduler event to the tenant's clients and
// sends the alert it carries, beside the run: it must not block.
func (s *Server) cronEvent(key string, ev cron.Event) {
	t, err := s.tenantOfCron(key)
	if err != nil {
		return
	}
	s.broadcast(t, EventCron, ev)
	if ev.Alert != nil {
		go s.sendAlert(t, *ev.Alert)
	}
}

// alertText is what a failure, recovery or auto-disable notice says.
func alertText(a cron.Alert) string {
	name := a.Job.Name
	switch a.Kind {
	case cron.AlertRecovery:
		return fmt.Sprintf("✅ Cron job %q runs again: the last run succeeded.", name)
	case cron.AlertAutoDisabled:
		return fmt.Sprintf("⛔ Cron job %q was turned off after %d failures in a row (last: %s). Fix it, then enable it again.", name, a.ConsecutiveErrors, a.Error)
	}
	return fmt.Sprintf("⚠️ Cron job %q failed %d times in a row: %s", name, a.ConsecutiveErrors, a.Error)
}

// sendAlert delivers an alert along its route (§6.4): the merged
// settings' destination, else the job's announce target; a route that
// leads nowhere drops it (logged).
func (s *Server) sendAlert(t *tenant, a cron.Alert) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	release := s.enter(t)
	defer release()
	rt, err := t.current(s)
	if err != nil {
		return
	}
	text := alertText(a)
	if a.Settings.Mode == "webhook" {
		j := a.Job
		j.Delivery = &automation.Delivery{Mode: automation.DeliverWebhook, To: a.Settings.To}
		o := cron.Outcome{Status: automation.StatusError, Error: a.Error, Summary: text}
		s.deliverWebhook(ctx, t, rt, j, "alert-"+fmt.Sprint(time.Now().UnixMilli()), &o)
		if o.DeliveryStatus != automation.Delivered {
			s.log.Warn("cron alert not delivered", "tenant", t.id, "job", a.Job.ID, "err", o.DeliveryError)
		}
		return
	}
	h := t.hub()
	if h == nil {
		s.log.Info("cron alert has no chat to go to", "tenant", t.id, "job", a.Job.ID, "alert", a.Kind)
		return
	}
	d := &automation.Delivery{Mode: automation.DeliverAnnounce, Channel: a.Settings.Channel, To: a.Settings.To, AccountID: a.Settings.AccountID}
	if d.To == "" && a.Job.Delivery != nil && a.Job.Delivery.Mode == automation.DeliverAnnounce {
		d = a.Job.Delivery
	}
	ch, account, target, err := s.announceTarget(ctx, rt, d, a.Job, "")
	if err != nil {
		s.log.Info("cron alert has no chat to go to", "tenant", t.id, "job", a.Job.ID, "alert", a.Kind, "why", err)
		return
	}
	key := fmt.Sprintf("cron-alert:%s:%s:%d", a.Job.ID, a.Kind, time.Now().UnixMilli())
	if _, err := h.Send(ctx, hub.SendRequest{Channel: ch, AccountID: account, Target: target, Text: text, IdempotencyKey: key}); err != nil {
		s.log.Warn("cron alert not delivered", "tenant", t.id, "job", a.Job.ID, "err", err)
	}
}
