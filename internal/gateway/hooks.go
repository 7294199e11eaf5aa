package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"talon/internal/agent"
	"talon/internal/automation"
	"talon/internal/automation/cron"
	"talon/internal/automation/hooks"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/store"
	"talon/internal/tenantid"
)

// HTTP hooks (spec automation.md §10). The operator's config serves them
// at its hooks.path (default /hooks): /hooks/wake, /hooks/agent and
// mapped /hooks/<name>. A tenant's are under /hooks/{tenant} followed by
// its own hooks.path (/hooks/acme/hooks/wake), so that no two tenants'
// paths meet; an operator's mapping named like a tenant is shadowed by
// that tenant's hooks while they are enabled. Package hooks checks each
// request; hookDispatch runs what it admits.

// hookRuntime is a runtime's hooks handler, made on first use.
type hookRuntime struct {
	once sync.Once
	h    *hooks.Handler // nil when the config's hooks are off
}

// hooksOf is rt's handler for t, nil when its hooks are not enabled.
func (s *Server) hooksOf(t *tenant, rt *runtime) *hooks.Handler {
	rt.hooks.once.Do(func() {
		if !rt.file.Config.Hooks.Active() {
			return
		}
		rt.hooks.h = hooks.New(hooks.Options{Config: rt.file.Config, Dispatcher: hookDispatch{s: s, t: t},
			Log: s.log.With("part", "hooks", "tenant", t.id)})
	})
	return rt.hooks.h
}

// serveHooks serves r when it is a hook request of a tenant whose hooks
// are on, and reports whether it did.
func (s *Server) serveHooks(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/hooks/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		if tenantid.Valid(id) {
			t, err := s.lookup(id)
			if errors.Is(err, errMoving) && s.movingServes(id, false) {
				unavailable(w)
				return true
			}
			if err == nil && s.hooksOn(t, strings.TrimPrefix(p, "/hooks/"+id)) {
				release := s.enter(t)
				defer release()
				if rt, err := t.current(s); err == nil {
					if h := s.hooksOf(t, rt); h != nil && under(strings.TrimPrefix(p, "/hooks/"+id), h.Path()) {
						r2 := r.Clone(r.Context())
						r2.URL.Path = strings.TrimPrefix(p, "/hooks/"+id)
						r2.URL.RawPath = ""
						h.ServeHTTP(w, r2)
						return true
					}
				}
			}
		}
	}
	rt, err := s.defaultTenant.current(s)
	if err != nil {
		return false
	}
	if h := s.hooksOf(s.defaultTenant, rt); h != nil && under(p, h.Path()) {
		h.ServeHTTP(w, r)
		return true
	}
	return false
}

// hooksOn says t's config, read without opening t, takes hook requests
// at path: a request to a tenant without hooks opens nothing.
func (s *Server) hooksOn(t *tenant, path string) bool {
	cfg, err := s.authConfig(t)
	return err == nil && cfg.Hooks.Active() && under(path, config.HooksPath(cfg.Hooks.Path))
}

// under says path is base or below it.
func under(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+"/")
}

// hookDispatch runs a tenant's admitted hook requests.
type hookDispatch struct {
	s *Server
	t *tenant
}

// Wake queues the text for the session and wakes it per mode (R10.2).
func (d hookDispatch) Wake(ctx context.Context, w hooks.Wake) (string, error) {
	rt, err := d.t.current(d.s)
	if err != nil {
		return "", fmt.Errorf("%w: %v", hooks.ErrUnavailable, err)
	}
	agentID := cmp.Or(w.AgentID, rt.file.Config.DefaultAgentID())
	key := cmp.Or(w.SessionKey, policy.MainSessionKey(rt.file.Config, agentID))
	out, err := d.t.events().add(key, w.Text, time.Now())
	if err != nil {
		return "", fmt.Errorf("%w: %v", hooks.ErrRejected, err)
	}
	if w.Mode != hooks.ModeNextHeartbeat {
		if err := d.s.wakeNow(d.t, agentID, key); err != nil {
			return "", err
		}
	}
	return out, nil
}

// Agent starts an agent turn (R10.3): in the logical session when
// persistent, else in a fresh session under it; requests of one logical
// session run one after another. The result is delivered to channel and
// to when given, else a completion notice is queued on the agent's main
// session; deliver false only logs it.
func (d hookDispatch) Agent(ctx context.Context, a hooks.AgentTurn) (string, <-chan hooks.Completion, error) {
	s, t := d.s, d.t
	rt, err := t.current(s)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", hooks.ErrUnavailable, err)
	}
	cfg := rt.file.Config
	if !cfg.HasAgent(a.AgentID) {
		return "", nil, fmt.Errorf("%w: unknown agent %q", hooks.ErrRejected, a.AgentID)
	}
	runID := uuid.NewString()
	key := a.SessionKey
	if !a.Persistent {
		key = a.SessionKey + ":run:" + runID
	}
	// Admission: the logical session's lane, taken before answering.
	lane := sessionLockKey(t, "hook-lane:"+a.SessionKey)
	unlock, err := s.locks.lock(ctx, lane)
	if err != nil {
		return "", nil, fmt.Errorf("%w: waiting for the session's earlier hook: %v", hooks.ErrUnavailable, err)
	}
	done := make(chan hooks.Completion, 1)
	release := s.enter(t) // the turn outlives the request
	go func() {
		defer release()
		defer unlock()
		runCtx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runCtx, unbind := t.bind(runCtx)
		defer unbind()
		done <- d.run(runCtx, rt, a, key, runID)
	}()
	return runID, done, nil
}

// run runs an admitted hook turn and delivers its answer.
func (d hookDispatch) run(ctx context.Context, rt *runtime, a hooks.AgentTurn, key, runID string) hooks.Completion {
	s, t := d.s, d.t
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: a.Message}}, Model: a.Model, Kind: store.CallHook, Thinking: a.Thinking}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = channelRunTimeout
	}
	res, failed := s.backgroundTurn(ctx, t, rt, "hook-"+runID, key, a.AgentID, req, timeout)
	if failed != "" {
		s.log.Warn("hook run failed", "tenant", t.id, "hook", a.Source, "run", runID, "err", failed)
		return hooks.Completion{Status: "error"}
	}
	c := hooks.Completion{Status: "ok", ReplyDisposition: "visible"}
	if !a.Deliver {
		s.log.Info("hook run finished (deliver false)", "tenant", t.id, "hook", a.Source, "run", runID)
		return c
	}
	if a.Channel == "" && a.To == "" {
		// No destination: tell the agent's main session (R10.3).
		note := fmt.Sprintf("Hook %q finished (run %s).", cmp.Or(a.Name, "Hook"), runID)
		if _, err := t.events().add(policy.MainSessionKey(rt.file.Config, a.AgentID), note, time.Now()); err != nil {
			s.log.Warn("hook completion notice not queued", "tenant", t.id, "err", err)
		}
		return c
	}
	j := automation.Job{ID: "hook", Name: cmp.Or(a.Name, "Hook"), AgentID: a.AgentID,
		Delivery: &automation.Delivery{Mode: automation.DeliverAnnounce, Channel: a.Channel, To: a.To, AccountID: a.AccountID}}
	var o cron.Outcome
	s.deliverRun(ctx, t, rt, j, key, key, runID, res.Text, &o)
	yes := true
	c.DeliveryAttempted = &yes
	c.Delivered, c.DeliverySuppressionReason = o.Delivered, o.DeliverySuppressionReason
	if o.DeliverySuppressionReason != "" && o.DeliverySuppressionReason != "message_tool" {
		c.ReplyDisposition = map[string]string{automation.SuppressEmpty: "empty"}[o.DeliverySuppressionReason]
		if c.ReplyDisposition == "" {
			c.ReplyDisposition = "silent"
		}
	}
	if o.DeliveryError != "" {
		c.DeliveryError = "delivery-failed"
		s.log.Warn("hook delivery failed", "tenant", t.id, "hook", a.Source, "err", o.DeliveryError)
	}
	return c
}
