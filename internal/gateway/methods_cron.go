package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"talon/internal/automation"
	"talon/internal/automation/cron"
	"talon/internal/netguard"
	"talon/internal/store"
	"talon/protocol"
)

// The cron methods (spec automation.md §11) and wake. A job is checked by
// package automation's rules, stored in the tenant's database and handed
// to the process's scheduler; the cron event tells every client.

func init() {
	register("cron.status", protocol.ScopeRead, cronStatus)
	register("cron.list", protocol.ScopeRead, cronList)
	register("cron.get", protocol.ScopeRead, cronGet)
	register("cron.add", protocol.ScopeAdmin, cronAdd)
	register("cron.update", protocol.ScopeAdmin, cronUpdate)
	register("cron.remove", protocol.ScopeAdmin, cronRemove)
	register("cron.run", protocol.ScopeAdmin, cronRun)
	register("cron.runs", protocol.ScopeRead, cronRuns)
	register("wake", protocol.ScopeWrite, wake)
	register("last-heartbeat", protocol.ScopeRead, lastHeartbeat)
}

// cronReady makes sure the scheduler has the call's tenant.
func (s *Server) cronReady(c *call) error {
	if s.cron == nil {
		return &protocol.Error{Code: protocol.CodeUnavailable, Message: "the cron scheduler is not running (the gateway is not serving)"}
	}
	s.ensureCron(c.t, c.rt)
	return nil
}

// jobIDParam reads id, or its alias jobId.
func jobIDParam(c *call) (string, error) {
	var p struct {
		ID    string `json:"id"`
		JobID string `json:"jobId"`
	}
	if err := c.params(&p); err != nil {
		return "", err
	}
	id := strings.TrimSpace(p.ID)
	if id == "" {
		id = strings.TrimSpace(p.JobID)
	}
	if id == "" {
		return "", protocol.Errorf("invalid %s params: id is required", c.req.Method)
	}
	return id, nil
}

// unknownJob is §11's answer for an id the tenant has no job with.
func unknownJob(id string) error { return protocol.Errorf("unknown cron job id: %s", id) }

// cronChecks are what automation.Validate needs from a tenant: its
// config's agents and channels, and its webhooks' network rule.
func (s *Server) cronChecks(t *tenant, rt *runtime) automation.Checks {
	c := automation.ChecksOf(rt.file.Config)
	guard := s.webhookGuard(t, rt)
	c.WebhookURL = func(u string) error { return netguard.CheckURL(u, guard) }
	return c
}

// defaultZone is automation.DefaultZone of the runtime's config.
func defaultZone(rt *runtime) string { return automation.DefaultZone(rt.file.Config) }

func cronStatus(s *Server, c *call) (any, error) {
	if err := s.cronReady(c); err != nil {
		return nil, err
	}
	st, err := s.cron.Status(cronKey(c.t))
	if err != nil {
		return nil, err
	}
	return st, nil
}

func cronList(s *Server, c *call) (any, error) {
	var p struct {
		IncludeDisabled bool   `json:"includeDisabled"`
		Limit           *int   `json:"limit"`
		Offset          int    `json:"offset"`
		Query           string `json:"query"`
		Enabled         string `json:"enabled"`
		ScheduleKind    string `json:"scheduleKind"`
		LastRunStatus   string `json:"lastRunStatus"`
		SortBy          string `json:"sortBy"`
		SortDir         string `json:"sortDir"`
		AgentID         string `json:"agentId"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	limit := 50
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > 200 {
			return nil, protocol.Errorf("invalid cron.list params: limit must be 1 to 200")
		}
		limit = *p.Limit
	}
	if p.Offset < 0 {
		return nil, protocol.Errorf("invalid cron.list params: offset must not be negative")
	}
	q := store.CronListQuery{IncludeDisabled: p.IncludeDisabled, Enabled: p.Enabled, Query: p.Query, ScheduleKind: p.ScheduleKind,
		LastRunStatus: p.LastRunStatus, AgentID: p.AgentID, DefaultAgentID: c.rt.file.Config.DefaultAgentID(),
		SortBy: p.SortBy, SortDir: p.SortDir, Limit: limit, Offset: p.Offset}
	jobs, total, err := c.storeOf().ListCronJobs(c.ctx, q)
	if err != nil {
		return nil, asParamError(c, err)
	}
	out := map[string]any{"jobs": nonNil(jobs), "total": total, "offset": p.Offset, "limit": limit,
		"hasMore": p.Offset+len(jobs) < total}
	if p.Offset+len(jobs) < total {
		out["nextOffset"] = p.Offset + len(jobs)
	}
	return out, nil
}

// asParamError words a store's refusal of a query as the call's.
func asParamError(c *call, err error) error {
	if errors.Is(err, store.ErrInvalidQuery) {
		return protocol.Errorf("invalid %s params: %v", c.req.Method, err)
	}
	return err
}

func cronGet(s *Server, c *call) (any, error) {
	id, err := jobIDParam(c)
	if err != nil {
		return nil, err
	}
	j, err := c.storeOf().CronJob(c.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownJob(id)
	}
	return j, err
}

func cronAdd(s *Server, c *call) (any, error) {
	if err := s.cronReady(c); err != nil {
		return nil, err
	}
	j, err := automation.DecodeJob(c.req.Params)
	if err != nil {
		return nil, protocol.Errorf("invalid cron.add params: %v", err)
	}
	j.Creator = "operator"
	j, err = s.addJob(c.ctx, c.t, c.rt, j)
	if err != nil {
		return nil, err
	}
	return withPreview(j)
}

// addJob normalises, checks and stores a new job of t (its Creator set by
// the caller) and hands it to the scheduler: cron.add and the cron tool.
func (s *Server) addJob(ctx context.Context, t *tenant, rt *runtime, j automation.Job) (automation.Job, error) {
	now := time.Now()
	automation.Normalize(&j, now, defaultZone(rt))
	if err := automation.Validate(j, s.cronChecks(t, rt)); err != nil {
		return j, protocol.Errorf("invalid cron.add params: %v", err)
	}
	j.ID = uuid.NewString()
	if err := automation.Reschedule(&j, now); err != nil {
		return j, protocol.Errorf("invalid cron.add params: schedule: %v", err)
	}
	db := rt.runner.Store
	if err := db.AddCronJob(ctx, j); err != nil {
		if errors.Is(err, store.ErrTooManyCronJobs) {
			return j, protocol.Errorf("%v", err)
		}
		return j, err
	}
	s.markCron(t, true)
	if err := s.cron.JobChanged(ctx, cronKey(t), j.ID); err != nil {
		s.log.Error("scheduling a new cron job", "tenant", t.id, "job", j.ID, "err", err)
	}
	if fresh, err := db.CronJob(ctx, j.ID); err == nil {
		j = fresh
	}
	s.broadcast(t, EventCron, cron.Event{JobID: j.ID, Action: "added", Job: &j, NextRunAtMs: j.State.NextRunAtMs})
	return j, nil
}

// withPreview is a job with §7's deliveryPreview {label, detail}.
func withPreview(j automation.Job) (any, error) {
	raw, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	label, detail := "none", "the result is not sent anywhere"
	if d := j.Delivery; d != nil {
		switch d.Mode {
		case automation.DeliverAnnounce:
			label = "announce"
			switch {
			case d.To != "":
				detail = fmt.Sprintf("posted to %s %s", cmp.Or(d.Channel, "the channel its prefix names"), d.To)
			default:
				detail = "posted to the chat the job's session last talked in"
			}
		case automation.DeliverWebhook:
			label, detail = "webhook", "POSTed to "+d.To
		}
	}
	if j.Payload.Kind == automation.PayloadSystemEvent {
		label, detail = "system event", "queued for "+cmp.Or(j.SessionTarget, "main")+" session's next turn"
	}
	m["deliveryPreview"] = map[string]string{"label": label, "detail": detail}
	return m, nil
}

func cronUpdate(s *Server, c *call) (any, error) {
	if err := s.cronReady(c); err != nil {
		return nil, err
	}
	var p struct {
		ID                     string          `json:"id"`
		JobID                  string          `json:"jobId"`
		Patch                  json.RawMessage `json:"patch"`
		ExpectedConfigRevision *int64          `json:"expectedConfigRevision"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	id := strings.TrimSpace(cmp.Or(p.ID, p.JobID))
	if id == "" {
		return nil, protocol.Errorf("invalid cron.update params: id is required")
	}
	if len(p.Patch) == 0 {
		return nil, protocol.Errorf("invalid cron.update params: patch is required")
	}
	saved, err := s.updateJob(c.ctx, c.t, c.rt, id, p.Patch, p.ExpectedConfigRevision, nil)
	if err != nil {
		return nil, err
	}
	return withPreview(saved)
}

// updateJob applies a patch to one of t's jobs: cron.update and the cron
// tool; may, when set, says whether the caller may change that job.
func (s *Server) updateJob(ctx context.Context, t *tenant, rt *runtime, id string, patch json.RawMessage, expectedRev *int64, may func(automation.Job) bool) (automation.Job, error) {
	db := rt.runner.Store
	j, err := db.CronJob(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && may != nil && !may(j) {
		return j, unknownJob(id)
	} else if err != nil {
		return j, err
	}
	expected := j.ConfigRevision
	if expectedRev != nil {
		if *expectedRev != j.ConfigRevision {
			return j, protocol.Errorf("cron job %s changed since revision %d (now %d): get it again and retry", id, *expectedRev, j.ConfigRevision)
		}
		expected = *expectedRev
	}
	next, changed, err := automation.ApplyPatch(j, patch)
	if err != nil {
		return j, protocol.Errorf("invalid cron.update params: %v", err)
	}
	now := time.Now()
	next.UpdatedAtMs = now.UnixMilli()
	automation.Normalize(&next, now, defaultZone(rt))
	if err := automation.Validate(next, s.cronChecks(t, rt)); err != nil {
		return j, protocol.Errorf("invalid cron.update params: %v", err)
	}
	if changed {
		if err := automation.Reschedule(&next, now); err != nil {
			return j, protocol.Errorf("invalid cron.update params: schedule: %v", err)
		}
	}
	saved, err := db.UpdateCronJob(ctx, next, expected)
	if errors.Is(err, store.ErrStateChanged) {
		return j, protocol.Errorf("cron job %s changed meanwhile: get it again and retry", id)
	} else if err != nil {
		return j, err
	}
	if err := s.cron.JobChanged(ctx, cronKey(t), id); err != nil {
		s.log.Error("rescheduling a cron job", "tenant", t.id, "job", id, "err", err)
	}
	if fresh, err := db.CronJob(ctx, id); err == nil {
		saved = fresh
	}
	s.broadcast(t, EventCron, cron.Event{JobID: id, Action: "updated", Job: &saved, NextRunAtMs: saved.State.NextRunAtMs})
	return saved, nil
}

func cronRemove(s *Server, c *call) (any, error) {
	if err := s.cronReady(c); err != nil {
		return nil, err
	}
	id, err := jobIDParam(c)
	if err != nil {
		return nil, err
	}
	removed, err := s.removeJob(c.ctx, c.t, c.rt, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "removed": removed}, nil
}

// removeJob removes one of t's jobs and unschedules it.
func (s *Server) removeJob(ctx context.Context, t *tenant, rt *runtime, id string) (bool, error) {
	db := rt.runner.Store
	removed, err := db.RemoveCronJob(ctx, id)
	if err != nil || !removed {
		return removed, err
	}
	if err := s.cron.JobRemoved(cronKey(t), id); err != nil && !errors.Is(err, cron.ErrUnknownJob) {
		s.log.Error("unscheduling a cron job", "tenant", t.id, "job", id, "err", err)
	}
	if jobs, err := db.CronJobs(ctx); err == nil && len(jobs) == 0 {
		s.markCron(t, false)
	}
	s.broadcast(t, EventCron, cron.Event{JobID: id, Action: "removed"})
	return true, nil
}

func cronRun(s *Server, c *call) (any, error) {
	if err := s.cronReady(c); err != nil {
		return nil, err
	}
	var p struct {
		ID    string `json:"id"`
		JobID string `json:"jobId"`
		Mode  string `json:"mode"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	id := strings.TrimSpace(cmp.Or(p.ID, p.JobID))
	if id == "" {
		return nil, protocol.Errorf("invalid cron.run params: id is required")
	}
	switch p.Mode {
	case "", cron.ModeForce, cron.ModeDue, cron.ModeIfEnabled:
	default:
		return nil, protocol.Errorf(`invalid cron.run params: mode must be "force", "due" or "if-enabled"`)
	}
	runID, err := s.cron.Run(c.ctx, cronKey(c.t), id, p.Mode)
	switch {
	case errors.Is(err, cron.ErrUnknownJob):
		return nil, unknownJob(id)
	case errors.Is(err, cron.ErrNotDue), errors.Is(err, cron.ErrJobDisabled), errors.Is(err, cron.ErrPaused):
		return map[string]any{"ok": true, "enqueued": false, "reason": err.Error()}, nil
	case err != nil:
		return nil, err
	}
	return map[string]any{"ok": true, "enqueued": true, "runId": runID}, nil
}

func cronRuns(s *Server, c *call) (any, error) {
	var p struct {
		ID               string   `json:"id"`
		JobID            string   `json:"jobId"`
		Scope            string   `json:"scope"`
		RunID            string   `json:"runId"`
		Limit            *int     `json:"limit"`
		Offset           int      `json:"offset"`
		Statuses         []string `json:"statuses"`
		DeliveryStatuses []string `json:"deliveryStatuses"`
		Query            string   `json:"query"`
		SortDir          string   `json:"sortDir"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	id := strings.TrimSpace(cmp.Or(p.ID, p.JobID))
	switch p.Scope {
	case "", "job":
		if id == "" && p.Scope == "job" {
			return nil, protocol.Errorf("invalid cron.runs params: scope job needs id")
		}
	case "all":
		id = ""
	default:
		return nil, protocol.Errorf(`invalid cron.runs params: scope must be "job" or "all"`)
	}
	limit := 50
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > 200 {
			return nil, protocol.Errorf("invalid cron.runs params: limit must be 1 to 200")
		}
		limit = *p.Limit
	}
	if p.Offset < 0 {
		return nil, protocol.Errorf("invalid cron.runs params: offset must not be negative")
	}
	runs, total, err := c.storeOf().CronRuns(c.ctx, store.CronRunQuery{JobID: id, RunID: p.RunID, Statuses: p.Statuses,
		DeliveryStatuses: p.DeliveryStatuses, Query: p.Query, Limit: limit, Offset: p.Offset, SortDir: p.SortDir})
	if err != nil {
		return nil, asParamError(c, err)
	}
	out := map[string]any{"entries": nonNil(runs), "total": total, "hasMore": p.Offset+len(runs) < total}
	if p.Offset+len(runs) < total {
		out["nextOffset"] = p.Offset + len(runs)
	}
	return out, nil
}

func wake(s *Server, c *call) (any, error) {
	var p struct {
		Mode       string `json:"mode"`
		Text       string `json:"text"`
		SessionKey string `json:"sessionKey"`
		AgentID    string `json:"agentId"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	switch p.Mode {
	case "", automation.WakeNow, automation.WakeNextHeartbeat:
	default:
		return nil, protocol.Errorf(`invalid wake params: mode must be "now" or "next-heartbeat"`)
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, protocol.Errorf("invalid wake params: text is required")
	}
	tgt, err := c.eventTarget(p.SessionKey, p.AgentID)
	if err != nil {
		return nil, err
	}
	out, err := c.t.events().add(tgt.key, p.Text, time.Now())
	if err != nil {
		return nil, protocol.Errorf("invalid wake params: %v", err)
	}
	if p.Mode != automation.WakeNextHeartbeat {
		if err := s.wakeNow(c.t, tgt.agent, tgt.key); err != nil {
			return nil, err
		}
	}
	return map[string]any{"ok": true, "sessionKey": tgt.key, "eventOutcome": out}, nil
}

func lastHeartbeat(s *Server, c *call) (any, error) {
	w := c.t.wakeState()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		return nil, nil
	}
	return *w.last, nil
}
