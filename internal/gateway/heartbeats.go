package gateway

import (
	"cmp"
	"context"
	"sync"
	"time"

	"talon/internal/automation"
	"talon/protocol"
)

// Scheduled heartbeats (spec automation.md R9.1, R9.2): every heartbeat
// agent of a loaded tenant runs a heartbeat turn every `every` since its
// last one, which the tenant's database keeps so that a restart does not
// fire it again. One goroutine checks them all once a second.
//
// Talon runs them only for a config that has a heartbeat block
// (agents.defaults.heartbeat or an agent's): OpenClaw's default of one
// every 30 minutes on the default agent would be a model call per tenant
// per half hour that no one asked for. A tenant's every is held to at
// least minTenantBeat.

// minTenantBeat is the shortest heartbeat cadence a tenant gets: a
// tenant must not make the gateway call a model every second.
const minTenantBeat = 5 * time.Minute

func init() {
	register("set-heartbeats", protocol.ScopeAdmin, setHeartbeats)
}

// beatKey is one tenant's agent.
type beatKey struct{ tenant, agent string }

// beat is an agent's cadence and when it next runs.
type beat struct {
	every time.Duration
	next  time.Time
	busy  bool // a turn of it runs now
}

// beats are the process's scheduled heartbeats.
type beats struct {
	mu sync.Mutex
	// m holds them by tenant (cronKey), then agent: what one tenant has is
	// read without a scan of every tenant's, as an opening, a close and
	// the warm set's choices do.
	m    map[string]map[string]*beat
	off  map[string]bool // tenants that set-heartbeats turned off
	once sync.Once
}

// get is k's beat, nil when it has none; b.mu is held.
func (b *beats) get(k beatKey) *beat { return b.m[k.tenant][k.agent] }

// applyBeats makes the scheduled heartbeats of t those of rt's config.
func (s *Server) applyBeats(t *tenant, rt *runtime) {
	cfg := rt.file.Config
	want := map[string]time.Duration{}
	for _, hs := range automation.ScheduledHeartbeats(cfg) {
		if t.id != "" {
			hs.Every = max(hs.Every, minTenantBeat)
		}
		want[hs.AgentID] = hs.Every
	}
	key := cronKey(t)
	b := &s.beats
	b.mu.Lock()
	if b.m == nil {
		b.m = map[string]map[string]*beat{}
	}
	mine := b.m[key]
	if mine == nil {
		mine = map[string]*beat{}
	}
	var fresh []string
	for agent := range mine {
		if _, ok := want[agent]; !ok {
			delete(mine, agent)
		}
	}
	for agent, every := range want {
		if cur := mine[agent]; cur != nil {
			if cur.every != every {
				cur.next = cur.next.Add(every - cur.every)
				cur.every = every
			}
			continue
		}
		mine[agent] = &beat{every: every, next: time.Now().Add(every)}
		fresh = append(fresh, agent)
	}
	if len(mine) > 0 {
		b.m[key] = mine
	} else {
		delete(b.m, key)
	}
	b.mu.Unlock()
	// A restart does not fire early: the next beat is after the last
	// one stored.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, agent := range fresh {
		last, ok, err := rt.runner.Store.LastHeartbeat(ctx, agent)
		if err != nil || !ok {
			continue
		}
		b.mu.Lock()
		if cur := b.get(beatKey{key, agent}); cur != nil {
			cur.next = last.Add(cur.every)
		}
		b.mu.Unlock()
	}
	if len(want) > 0 {
		// The loop starts with the first heartbeat: a gateway without
		// any does not wake every second.
		b.once.Do(func() { go s.beatLoop() })
	}
}

// forgetBeats drops t's heartbeats (the tenant closed).
func (s *Server) forgetBeats(t *tenant) {
	key := cronKey(t)
	s.beats.mu.Lock()
	defer s.beats.mu.Unlock()
	delete(s.beats.m, key)
}

// beatLoop starts the heartbeats that are due, once a second, until the
// gateway shuts down.
func (s *Server) beatLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range tick.C {
		s.srvMu.Lock()
		shut := s.shut
		s.srvMu.Unlock()
		if shut {
			return
		}
		now := time.Now()
		var due []beatKey
		s.beats.mu.Lock()
		for tenant, agents := range s.beats.m {
			if s.beats.off[tenant] {
				continue
			}
			for agent, b := range agents {
				if !b.busy && !now.Before(b.next) {
					b.busy, b.next = true, now.Add(b.every)
					due = append(due, beatKey{tenant, agent})
				}
			}
		}
		s.beats.mu.Unlock()
		for _, k := range due {
			go s.scheduledBeat(k, now)
		}
	}
}

// scheduledBeat runs one scheduled heartbeat (R9.2): skipped while cron
// work of the agent runs, recorded as the agent's last when it ran.
func (s *Server) scheduledBeat(k beatKey, at time.Time) {
	defer func() {
		s.beats.mu.Lock()
		if b := s.beats.get(k); b != nil {
			b.busy = false
		}
		s.beats.mu.Unlock()
	}()
	t, err := s.tenantOfCron(k.tenant)
	if err != nil {
		return
	}
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
	hs := automation.HeartbeatFor(rt.file.Config, k.agent)
	if s.cronBusy(t, k.agent, rt.file.Config.DefaultAgentID()) {
		ev := heartbeatEvent{Ts: at.UnixMilli(), AgentID: k.agent, Status: "skipped", Reason: "busy"}
		s.recordBeat(t, ev, true)
		return
	}
	key := heartbeatKey(rt.file.Config, hs)
	if hs.IsolatedSession {
		key += ":heartbeat:" + at.UTC().Format("20060102T150405")
	}
	ev := s.heartbeatTurn(ctx, t, rt, hs, key)
	if ev.Status != "skipped" || ev.Reason != "busy" {
		if err := rt.runner.Store.SetLastHeartbeat(context.WithoutCancel(ctx), k.agent, at); err != nil {
			s.log.Warn("recording a heartbeat", "tenant", t.id, "agent", k.agent, "err", err)
		}
	}
}

// cronBusy says cron work of agentID runs in t now (R9.2).
func (s *Server) cronBusy(t *tenant, agentID, defaultAgent string) bool {
	if s.cron == nil {
		return false
	}
	runs, err := s.cron.Running(cronKey(t))
	if err != nil {
		return false
	}
	for _, r := range runs {
		if cmp.Or(r.AgentID, defaultAgent) == agentID {
			return true
		}
	}
	return false
}

// recordBeat keeps a heartbeat event for last-heartbeat and, with
// indicate (the useIndicator of its visibility), broadcasts it.
func (s *Server) recordBeat(t *tenant, ev heartbeatEvent, indicate bool) {
	w := t.wakeState()
	w.mu.Lock()
	last := ev
	w.last = &last
	w.mu.Unlock()
	if indicate {
		s.broadcast(t, EventHeartbeat, ev)
	}
}

func setHeartbeats(s *Server, c *call) (any, error) {
	var p struct {
		Enabled *bool `json:"enabled"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	if p.Enabled == nil {
		return nil, protocol.Errorf("invalid set-heartbeats params: enabled is required")
	}
	key := cronKey(c.t)
	s.beats.mu.Lock()
	if s.beats.off == nil {
		s.beats.off = map[string]bool{}
	}
	if *p.Enabled {
		delete(s.beats.off, key)
	} else {
		s.beats.off[key] = true
	}
	s.beats.mu.Unlock()
	return map[string]any{"ok": true, "enabled": *p.Enabled}, nil
}
