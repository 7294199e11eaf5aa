package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"talon/internal/automation"
	"talon/internal/policy"
	"talon/internal/session"
	"talon/internal/store"
	"talon/internal/tools"
	"talon/protocol"
)

// cronTools serves the cron tool of tenant t's runs (spec automation.md
// §7) with the scope of R7.3: a run sees and changes only the jobs its
// agent made, unless its sender is an owner; a cron run itself may read
// and remove its own job and create nothing; a job it makes runs with at
// most the making run's tools (R3.11) and, made from a chat, announces to
// that chat (R7.4).
type cronTools struct {
	s *Server
	t *tenant
}

var _ tools.Crons = cronTools{}

// creatorOf is the creator an agent's jobs carry.
func creatorOf(agentID string) string { return "agent:" + agentID }

// cronRunJob is the job of a cron run's session key
// (agent:<id>:cron:<job>:run:<run>), "" for another session.
func cronRunJob(key string) string {
	_, rest, ok := strings.Cut(key, ":cron:")
	if !ok {
		return ""
	}
	job, _, _ := strings.Cut(rest, ":")
	return job
}

func (x cronTools) Cron(ctx context.Context, sessionKey string, r tools.CronRequest) (json.RawMessage, error) {
	s, t := x.s, x.t
	rt, err := t.current(s)
	if err != nil {
		return nil, err
	}
	if s.cron == nil {
		return nil, errors.New("the cron scheduler is not running")
	}
	s.ensureCron(t, rt)
	cfg := rt.file.Config
	agentID := session.AgentOf(sessionKey, cfg.DefaultAgentID())
	own := cronRunJob(sessionKey)
	mine := func(j automation.Job) bool {
		switch {
		case own != "":
			return j.ID == own
		case r.Owner:
			return true
		}
		return j.Creator == creatorOf(agentID) && cmp.Or(j.AgentID, cfg.DefaultAgentID()) == agentID
	}
	if own != "" && !slices.Contains([]string{"status", "list", "get", "remove", "runs"}, r.Action) {
		return nil, fmt.Errorf("a cron run may read and remove its own job, not %s", r.Action)
	}
	db := rt.runner.Store
	switch r.Action {
	case "status":
		st, err := s.cron.Status(cronKey(t))
		if err != nil {
			return nil, err
		}
		return json.Marshal(st)
	case "list":
		jobs, err := db.CronJobs(ctx)
		if err != nil {
			return nil, err
		}
		var out []map[string]any
		for _, j := range jobs {
			if !mine(j) || !j.Enabled && !r.IncludeDisabled {
				continue
			}
			out = append(out, summary(j))
		}
		limit := cmp.Or(r.Limit, 50)
		end := min(len(out), r.Offset+limit)
		page := []map[string]any{}
		if r.Offset < len(out) {
			page = out[r.Offset:end]
		}
		res := map[string]any{"jobs": page, "total": len(out)}
		if end < len(out) {
			res["nextOffset"] = end
		}
		return json.Marshal(res)
	case "get", "runs", "remove", "run", "update":
		j, err := db.CronJob(ctx, r.JobID)
		if errors.Is(err, store.ErrNotFound) || err == nil && !mine(j) {
			// Not found in this run's view: not "does not exist" at all.
			return nil, fmt.Errorf("no job %s among the jobs this run may see", r.JobID)
		} else if err != nil {
			return nil, err
		}
		switch r.Action {
		case "get":
			return json.Marshal(j)
		case "runs":
			runs, total, err := db.CronRuns(ctx, store.CronRunQuery{JobID: j.ID, Limit: 20})
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"entries": nonNil(runs), "total": total})
		case "remove":
			removed, err := s.removeJob(ctx, t, rt, j.ID)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"ok": true, "removed": removed})
		case "run":
			runID, err := s.cron.Run(ctx, cronKey(t), j.ID, r.RunMode)
			if err != nil {
				return json.Marshal(map[string]any{"enqueued": false, "reason": err.Error()})
			}
			return json.Marshal(map[string]any{"enqueued": true, "runId": runID})
		}
		patch, err := x.capTools(r.Job, r.Tools)
		if err != nil {
			return nil, err
		}
		saved, err := s.updateJob(ctx, t, rt, j.ID, patch, nil, mine)
		if err != nil {
			return nil, toolError(err)
		}
		return json.Marshal(saved)
	case "add":
		j, err := automation.DecodeJob(r.Job)
		if err != nil {
			return nil, err
		}
		if j.AgentID != "" && j.AgentID != agentID && !r.Owner {
			return nil, fmt.Errorf("a job of agent %q: this run may make jobs for itself (%s) only", j.AgentID, agentID)
		}
		j.AgentID = cmp.Or(j.AgentID, agentID)
		j.Creator = creatorOf(agentID)
		if r.Owner {
			j.Creator = "owner"
		}
		if j.Payload.Kind == automation.PayloadAgentTurn {
			j.Payload.ToolsAllow = capList(j.Payload.ToolsAllow, r.Tools)
		}
		if r.ContextMessages > 0 && j.Payload.Kind == automation.PayloadSystemEvent && strings.TrimSpace(j.Payload.Text) != "" {
			j.Payload.Text = automation.WithContext(j.Payload.Text, chatLines(ctx, db, agentID, sessionKey), r.ContextMessages)
		}
		if j.Delivery == nil && j.Payload.Kind == automation.PayloadAgentTurn {
			// Made from a chat: its answer goes back to that chat (R7.4).
			if h := t.hub(); h != nil {
				if chat, ok := h.ChatOf(ctx, sessionKey); ok {
					to := chat.Target.Peer.ID
					if chat.Target.Peer.Kind == "direct" && chat.Channel != "telegram" {
						to = "user:" + to
					} else if chat.Channel != "telegram" {
						to = "channel:" + to
					}
					d := &automation.Delivery{Mode: automation.DeliverAnnounce, Channel: chat.Channel, To: to, AccountID: chat.AccountID}
					if chat.Target.ThreadID != "" {
						d.ThreadID, _ = json.Marshal(chat.Target.ThreadID)
					}
					j.Delivery = d
				}
			}
		}
		added, err := s.addJob(ctx, t, rt, j)
		if err != nil {
			return nil, toolError(err)
		}
		return json.Marshal(added)
	case "wake":
		key := policy.MainSessionKey(cfg, agentID)
		out, err := t.events().add(key, r.Text, time.Now())
		if err != nil {
			return nil, err
		}
		if r.Mode == automation.WakeNow {
			if err := s.wakeNow(t, agentID, key); err != nil {
				return nil, err
			}
		}
		return json.Marshal(map[string]any{"ok": true, "eventOutcome": out})
	}
	return nil, fmt.Errorf("unknown action %q", r.Action)
}

// chatLines are the last messages of a session's transcript as the cron
// tool's contextMessages reads them (R7.1): the rows that can hold the
// ten lines it may take, with tool rounds between them. A session with
// no transcript yet has none.
func chatLines(ctx context.Context, db *store.DB, agentID, key string) []automation.ChatLine {
	msgs, err := lastMessages(ctx, db, agentID, key, 4*automation.MaxContextMessages)
	if err != nil {
		return nil
	}
	out := make([]automation.ChatLine, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, automation.ChatLine{Role: string(m.Role), Text: m.Content})
	}
	return out
}

// capTools holds a patch's payload.toolsAllow to the caller's tools.
func (x cronTools) capTools(patch json.RawMessage, caller []string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	var p map[string]json.RawMessage
	if raw, ok := m["payload"]; ok && json.Unmarshal(raw, &p) == nil {
		var list []string
		if raw, ok := p["toolsAllow"]; ok && json.Unmarshal(raw, &list) == nil {
			p["toolsAllow"], _ = json.Marshal(capList(list, caller))
			m["payload"], _ = json.Marshal(p)
		}
	}
	return json.Marshal(m)
}

// capList is R3.11: a job made by a run gets at most that run's tools —
// the entries of asked that name one of them (a group or "*" stands for
// the ones of the run it covers); nil asked is every tool of the run.
func capList(asked, run []string) []string {
	if asked == nil {
		return slices.Clone(run)
	}
	out := []string{}
	for _, name := range run {
		rules := policy.NewRules(asked, nil)
		if v, _ := rules.Check(name); v == policy.Allowed && len(asked) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// summary is a job as the tool's list shows it (§7).
func summary(j automation.Job) map[string]any {
	m := map[string]any{"id": j.ID, "name": j.Name, "enabled": j.Enabled, "scheduleKind": j.Schedule.Kind, "schedule": j.Schedule,
		"lastRunStatus": j.State.LastRunStatus}
	if n := j.State.NextRunAtMs; n != nil {
		m["nextRunAtMs"] = *n
		m["nextRunAt"] = time.UnixMilli(*n).UTC().Format(time.RFC3339)
	}
	if l := j.State.LastRunAtMs; l != nil {
		m["lastRunAt"] = time.UnixMilli(*l).UTC().Format(time.RFC3339)
	}
	return m
}

// toolError is a WS refusal as the model reads it: the message alone.
func toolError(err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return errors.New(strings.TrimPrefix(pe.Message, "invalid cron.add params: "))
	}
	return err
}
