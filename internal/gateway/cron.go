package gateway

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"talon/internal/agent"
	"talon/internal/automation"
	"talon/internal/automation/cron"
	"talon/internal/channel/format"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/session"
	"talon/internal/store"
)

// Cron jobs (spec automation.md): one scheduler for the process
// (automation/cron) runs the jobs of every tenant whose store it was
// given; this file gives it the tenants, runs their payloads and reports
// their events. The WS methods are methods_cron.go, delivery
// crondeliver.go.

// cronMarker is a file in a tenant's directory while it has cron jobs, so
// that a starting gateway loads the tenants it must schedule without
// opening every tenant's database.
const cronMarker = "cron.active"

// cronKey is a tenant's id in the scheduler: "_" for the operator's own,
// as in channel webhook paths.
func cronKey(t *tenant) string { return hubTenant(t) }

// tenantOfCron is the tenant a scheduler key names.
func (s *Server) tenantOfCron(key string) (*tenant, error) {
	if key == "_" {
		return s.defaultTenant, nil
	}
	return s.lookup(key)
}

// newCron makes the process's scheduler.
func (s *Server) newCron() *cron.Scheduler {
	c, err := cron.New(cron.Options{Exec: cronExec{s}, Log: s.log.With("part", "cron"),
		OnEvent: func(key string, ev cron.Event) { s.cronEvent(key, ev) }})
	if err != nil {
		// Only a bad option fails New: a programming error.
		panic(fmt.Sprintf("gateway: starting the cron scheduler: %v", err))
	}
	return c
}

// testHookLoading, when set, runs before the start-up loads each
// tenant's cron work.
var testHookLoading func(tenant string)

// startCron schedules the jobs and heartbeats of the operator's tenant,
// then, in the background until ctx ends, of every tenant that has jobs
// (cronMarker), a heartbeat block or internal hooks (boot-md's checklist
// runs when the gateway starts). Each such tenant is opened to read its
// schedule, and closed again by the warm set when it has nothing due
// soon: thousands take a while, and the gateway serves meanwhile (a
// tenant asked for first is opened, and scheduled, by that request).
func (s *Server) startCron(ctx context.Context) {
	s.loadCron(s.defaultTenant)
	s.loading.Add(1)
	go func() {
		defer s.loading.Done()
		dirs, _ := os.ReadDir(filepath.Join(s.opts.StateDir, "tenants"))
		for _, d := range dirs {
			if ctx.Err() != nil {
				return
			}
			if !d.IsDir() || !needsCron(filepath.Join(s.opts.StateDir, "tenants", d.Name())) {
				continue
			}
			if testHookLoading != nil {
				testHookLoading(d.Name())
			}
			if t, err := s.lookup(d.Name()); err == nil {
				s.loadCron(t)
			}
		}
	}()
}

// mentions says the config file in dir contains one of words: a cheap
// test that spares loading tenants that cannot need it.
func mentions(dir string, words ...string) bool {
	path, ok := config.Find(dir)
	if !ok {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && slices.ContainsFunc(words, func(w string) bool { return bytes.Contains(b, []byte(w)) })
}

// loadCron hands t to the scheduler: a runtime loaded now does it itself,
// one loaded before the gateway served does it here.
func (s *Server) loadCron(t *tenant) {
	rt, err := t.current(s)
	if err != nil {
		s.log.Error("starting cron jobs", "tenant", t.id, "err", err)
		return
	}
	s.ensureCron(t, rt)
}

// ensureCron hands t to the scheduler unless it has it.
func (s *Server) ensureCron(t *tenant, rt *runtime) {
	t.mu.Lock()
	on := t.cronOn
	t.mu.Unlock()
	if !on {
		s.applyCron(t, rt)
	}
}

// applyCron gives the scheduler t's cron settings after every new
// runtime: the first time the tenant itself (its startup rules, R5.7).
// It runs once the gateway serves: before, there is nothing to run on.
func (s *Server) applyCron(t *tenant, rt *runtime) {
	s.srvMu.Lock()
	serving := s.httpSrv != nil && !s.shut
	s.srvMu.Unlock()
	if !serving || s.cron == nil {
		return
	}
	s.applyBeats(t, rt)
	cfg := cronSettings(rt.file.Config, s.secretEnv(t, rt))
	t.mu.Lock()
	if t.closed || t.store == nil {
		t.mu.Unlock()
		return
	}
	first, db, boot := !t.cronOn, t.store, !t.booted
	t.cronOn, t.booted = true, true
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if first {
		// The checklist runs when the gateway starts, not each time a
		// closed tenant opens again (warm.go).
		if boot {
			s.boot(t, rt)
		}
		s.pruneCron(ctx, t, rt.file.Config)
		err = s.cron.AddTenant(ctx, cronKey(t), db, cfg)
	} else {
		err = s.cron.UpdateTenant(ctx, cronKey(t), cfg)
	}
	if err != nil {
		s.log.Error("applying cron settings", "tenant", t.id, "err", err)
	}
}

// cronPruneEvery is how often a tenant's cron leftovers are pruned while
// it runs jobs; it is also pruned when taken up.
const cronPruneEvery = time.Hour

// pruneCron drops t's run history past R4.3's keep (7 days, lost runs
// 24 h, 2,000 a job) and the sessions of its isolated runs past
// cron.sessionRetention, at most once per cronPruneEvery.
func (s *Server) pruneCron(ctx context.Context, t *tenant, cfg *config.Config) {
	now := time.Now()
	t.mu.Lock()
	db, due := t.store, now.Sub(t.cronPruned) >= cronPruneEvery
	if due {
		t.cronPruned = now
	}
	t.mu.Unlock()
	if !due || db == nil {
		return
	}
	if n, err := db.PruneCronRuns(ctx, now); err != nil {
		s.log.Warn("pruning cron run history", "tenant", t.id, "err", err)
	} else if n > 0 {
		s.log.Info("pruned cron run history", "tenant", t.id, "runs", n)
	}
	keep, err := cfg.Cron.Retention()
	if err != nil || keep <= 0 {
		return
	}
	if n, err := db.PruneCronSessions(ctx, now.Add(-keep)); err != nil {
		s.log.Warn("pruning cron run sessions", "tenant", t.id, "err", err)
	} else if n > 0 {
		s.log.Info("pruned cron run sessions", "tenant", t.id, "sessions", n)
	}
}

// closeCron stops t's jobs and waits for its runs; it must run before the
// tenant's store closes.
func (s *Server) closeCron(t *tenant) {
	s.forgetBeats(t)
	s.removeCron(t)
}

// removeCron takes t's jobs from the scheduler, which keeps their next
// runs in t's store; its heartbeats stay scheduled (a closed tenant
// opens again for one, warm.go).
func (s *Server) removeCron(t *tenant) {
	t.mu.Lock()
	on := t.cronOn
	t.cronOn = false
	t.mu.Unlock()
	if !on || s.cron == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	// A closed scheduler has stopped every tenant's jobs already.
	if err := s.cron.RemoveTenant(ctx, cronKey(t)); err != nil && !errors.Is(err, cron.ErrUnknownTenant) && !errors.Is(err, cron.ErrClosed) {
		s.log.Error("stopping cron jobs", "tenant", t.id, "err", err)
	}
}

// cronSettings are a config's cron.* settings as the scheduler takes
// them.
func cronSettings(cfg *config.Config, env func(string) string) cron.TenantConfig {
	c := cfg.Cron
	out := cron.TenantConfig{Enabled: c.Active(env), SkipMissed: c.SkipMissedJobs != nil && *c.SkipMissedJobs,
		MaxConcurrent: c.Concurrency()}
	if a := c.FailureAlert; a != nil {
		fa := &automation.FailureAlert{Enabled: a.Enabled, Mode: a.Mode,
			Destination: automation.Destination{Channel: a.Channel, To: a.To, AccountID: a.AccountID}}
		if a.After != nil {
			fa.After = *a.After
		}
		if a.CooldownMs != nil {
			fa.CooldownMs = *a.CooldownMs
		}
		fa.IncludeSkipped = a.IncludeSkipped != nil && *a.IncludeSkipped
		out.FailureAlert = fa
	}
	return out
}

// markCron keeps t's cronMarker in step with whether it has jobs.
func (s *Server) markCron(t *tenant, has bool) {
	p := filepath.Join(t.dir, cronMarker)
	if has {
		if err := os.WriteFile(p, []byte("this tenant has cron jobs: the gateway schedules them at start\n"), 0o600); err != nil {
			s.log.Error("marking a tenant with cron jobs", "tenant", t.id, "err", err)
		}
		return
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Error("unmarking a tenant without cron jobs", "tenant", t.id, "err", err)
	}
}

// cronExec runs a job's payload for the scheduler.
type cronExec struct{ s *Server }

// unattended is what an isolated run's prompt says of its situation
// (R3.8).
const unattended = "This is a scheduled run of a cron job: no one is there to answer questions. " +
	"Do the task with what you have; your final reply is the deliverable and is sent as it is. " +
	"If there is nothing to report, reply with exactly NO_REPLY."

// Execute runs one job: a systemEvent is queued for its session (and wakes
// it per wakeMode), an agentTurn runs a turn and its answer is delivered.
func (x cronExec) Execute(ctx context.Context, key string, j automation.Job, runID string) cron.Outcome {
	s := x.s
	t, err := s.tenantOfCron(key)
	if err != nil {
		return cron.Outcome{Status: automation.StatusError, Error: "the tenant is gone: " + err.Error()}
	}
	release := s.enter(t)
	defer release()
	rt, err := t.current(s)
	if err != nil {
		return cron.Outcome{Status: automation.StatusError, Error: "loading the tenant's config: " + err.Error()}
	}
	cfg := rt.file.Config
	agentID := j.AgentID
	if agentID == "" {
		agentID = cfg.DefaultAgentID()
	}
	if !cfg.HasAgent(agentID) {
		return cron.Outcome{Status: automation.StatusError, Error: fmt.Sprintf("agent %q is not in the config", agentID)}
	}
	sessionKey, err := jobSession(cfg, j, agentID, runID)
	if err != nil {
		return cron.Outcome{Status: automation.StatusError, Error: err.Error()}
	}
	defer s.pruneCron(context.WithoutCancel(ctx), t, cfg)
	if j.Payload.Kind == automation.PayloadSystemEvent {
		return s.cronEvent_(t, j, agentID, sessionKey)
	}
	return s.cronTurn(ctx, t, rt, j, agentID, sessionKey, runID)
}

// jobSession is the session a run works in (§3.2): the main session, a
// named one, or a fresh one per run (isolated, R3.8, and current, R3.9,
// which reads the tail of the conversation that made the job).
func jobSession(cfg *config.Config, j automation.Job, agentID, runID string) (string, error) {
	target := j.SessionTarget
	switch {
	case target == automation.TargetMain:
		if j.SessionKey != "" {
			return session.Canonical(cfg, agentID, j.SessionKey)
		}
		return policy.MainSessionKey(cfg, agentID), nil
	case strings.HasPrefix(target, "session:"):
		return session.Canonical(cfg, agentID, strings.TrimPrefix(target, "session:"))
	case target == automation.TargetCurrent && j.SessionKey == "":
		return "", errors.New(`sessionTarget "current" without the session that made the job`)
	}
	return fmt.Sprintf("agent:%s:cron:%s:run:%s", agentID, j.ID, runID), nil
}

// currentTail bounds the conversation a current job's run reads (R3.9):
// its last user and assistant messages, each cut to currentTailChars.
const (
	currentTail      = 20
	currentTailChars = 4000
)

// lastMessages are the messages among the last rows of a session's
// transcript (hidden ones left out); none when it has no session yet.
func lastMessages(ctx context.Context, db *store.DB, agentID, key string, rows int) ([]llm.Message, error) {
	e, err := db.GetSession(ctx, agentID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return db.Transcript(ctx, e.SessionID, rows)
}

// conversationTail is the end of a conversation as a current job's run
// reads it: its last user and assistant text messages, oldest first.
func conversationTail(ctx context.Context, db *store.DB, agentID, key string) ([]llm.Message, error) {
	msgs, err := lastMessages(ctx, db, agentID, key, 4*currentTail)
	if err != nil {
		return nil, err
	}
	var out []llm.Message
	for _, m := range msgs {
		if (m.Role == llm.RoleUser || m.Role == llm.RoleAssistant) && strings.TrimSpace(m.Content) != "" {
			if r := []rune(m.Content); len(r) > currentTailChars {
				m.Content = string(r[:currentTailChars]) + "…"
			}
			out = append(out, llm.Message{Role: m.Role, Content: m.Content})
		}
	}
	return out[max(len(out)-currentTail, 0):], nil
}

// commitToConversation appends a current job's answer to the
// conversation that made it (R3.9), once no run holds the conversation,
// so that its next turn knows what the job said.
func (s *Server) commitToConversation(ctx context.Context, t *tenant, agentID, key, text string) error {
	unlock, err := s.locks.lock(ctx, sessionLockKey(t, key))
	if err != nil {
		return fmt.Errorf("waiting for the conversation: %w", err)
	}
	defer unlock()
	t.mu.Lock()
	db := t.store
	t.mu.Unlock()
	if db == nil {
		return errors.New("the tenant is closed")
	}
	e, err := db.GetSession(ctx, agentID, key)
	if err != nil {
		return fmt.Errorf("reading the conversation: %w", err)
	}
	return db.AppendMessages(ctx, e.SessionID, llm.Message{Role: llm.RoleAssistant, Content: text})
}

// cronEvent_ queues a systemEvent job's text for its session and, with
// wakeMode now, wakes the session at once.
func (s *Server) cronEvent_(t *tenant, j automation.Job, agentID, key string) cron.Outcome {
	out, err := t.events().add(key, j.Payload.Text, time.Now())
	if err != nil {
		return cron.Outcome{Status: automation.StatusError, Error: err.Error(), SessionKey: key}
	}
	summary := "system event " + out + " for " + key
	if j.WakeMode != automation.WakeNextHeartbeat {
		if err := s.wakeNow(t, agentID, key); err != nil {
			summary += "; not woken: " + err.Error()
		} else {
			summary += "; woken"
		}
	}
	return cron.Outcome{Status: automation.StatusOK, Summary: summary, SessionKey: key,
		DeliveryStatus: automation.DeliveryNotAsked}
}

// cronTurn runs an agentTurn job's turn as a run of its session, then
// delivers the answer; a current job's answer also goes into the
// conversation that made it.
func (s *Server) cronTurn(ctx context.Context, t *tenant, rt *runtime, j automation.Job, agentID, key, runID string) cron.Outcome {
	p := j.Payload
	req := agent.Request{Input: []llm.Message{{Role: llm.RoleUser, Content: p.Message}}, Model: p.Model,
		JobModel: true, Fallbacks: p.Fallbacks, Kind: store.CallCron, Thinking: p.Thinking,
		Owner: j.Creator == "" || j.Creator == "operator" || j.Creator == "owner", LightContext: p.LightContext}
	route := key // whose last chat an announce without a target goes to
	home := ""
	switch j.SessionTarget {
	case automation.TargetIsolated:
		req.ExtraSystem = unattended
	case automation.TargetCurrent:
		var err error
		if home, err = session.Canonical(rt.file.Config, agentID, j.SessionKey); err != nil {
			return cron.Outcome{Status: automation.StatusError, Error: err.Error(), SessionKey: key}
		}
		tail, err := conversationTail(ctx, rt.runner.Store, agentID, home)
		if err != nil {
			return cron.Outcome{Status: automation.StatusError, Error: "reading the conversation: " + err.Error(), SessionKey: key}
		}
		req.Input = append(tail, req.Input...)
		req.ExtraSystem = unattended + " The messages before the last one are the end of the conversation this job was made in " +
			"(" + home + "); your final reply is added to that conversation."
		route = home
	}
	if p.ToolsAllow != nil && !(len(p.ToolsAllow) == 1 && p.ToolsAllow[0] == "*") {
		req.ToolsAllow, req.ToolsAllowKey = p.ToolsAllow, fmt.Sprintf("cron job %s payload.toolsAllow", j.ID)
	}
	if skip := budgetSkip(ctx, rt); skip != "" {
		return cron.Outcome{Status: automation.StatusSkipped, Error: skip, SessionKey: key}
	}
	// The scheduler's deadline on ctx is the one that counts (R3.12).
	res, failed := s.backgroundTurn(ctx, t, rt, "cron-"+runID, key, agentID, req, 24*time.Hour)
	o := cron.Outcome{SessionKey: key}
	if res != nil {
		o.Model = res.Model
		if m, err := config.ParseModelRef(res.Model); err == nil {
			o.Provider = m.Provider
		}
		u := res.Usage
		o.Usage = &automation.Usage{InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens),
			TotalTokens: int64(u.TotalTokens)}
	}
	if failed != "" {
		o.Status, o.Error = automation.StatusError, failed
		return o
	}
	o.Status = automation.StatusOK
	text := res.Text
	o.Summary = text
	if body := strings.TrimSpace(format.StripHeartbeat(text)); home != "" && body != "" && !format.IsSilent(body) {
		if err := s.commitToConversation(ctx, t, agentID, home, body); err != nil {
			o.Status, o.Error = automation.StatusError, "adding the answer to "+home+": "+err.Error()
			return o
		}
	}
	s.deliverRun(ctx, t, rt, j, key, route, runID, text, &o)
	return o
}

// backgroundTurn runs a turn no client asked for (a cron job, a
// heartbeat, a hook) as a chat run of its session: WS clients and Studio
// see its events, it waits for the session's other runs, and ctx ending
// aborts it. It returns the result, or why the run failed.
func (s *Server) backgroundTurn(ctx context.Context, t *tenant, rt *runtime, runID, key, agentID string, req agent.Request, timeout time.Duration) (*agent.Result, string) {
	r := s.prepareRun(t, rt, nil, "chat", runID, key, agentID, req, timeout)
	runCtx, perr := s.runs.add(r, r.timeout)
	if perr != nil {
		r.abandon(perr)
		return nil, "starting the run: " + perr.Message
	}
	stop := context.AfterFunc(ctx, func() { r.cancel(context.Cause(ctx)) })
	defer stop()
	r.run(runCtx)
	if out := r.out; out.status != "ok" || out.res == nil {
		return out.res, cmp.Or(out.message, out.status, "the run ended without an answer")
	}
	return r.out.res, ""
}
