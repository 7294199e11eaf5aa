package gateway

import (
	"encoding/json"
	"sync"
	"time"

	"talon/protocol"
)

// hubs tracks the connected WebSocket clients of every tenant, for
// broadcasts, presence and the approver count.
type hubs struct {
	mu    sync.RWMutex
	conns map[*tenant]map[*conn]struct{}

	tickOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
}

func (h *hubs) add(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns == nil {
		h.conns = map[*tenant]map[*conn]struct{}{}
	}
	m := h.conns[c.t]
	if m == nil {
		m = map[*conn]struct{}{}
		h.conns[c.t] = m
	}
	m[c] = struct{}{}
}

func (h *hubs) remove(c *conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns[c.t], c)
	if len(h.conns[c.t]) == 0 {
		delete(h.conns, c.t) // a tenant without clients costs nothing here
	}
}

// of returns the tenant's connections at this moment.
func (h *hubs) of(t *tenant) []*conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*conn, 0, len(h.conns[t]))
	for c := range h.conns[t] {
		out = append(out, c)
	}
	return out
}

// count is how many of the tenant's connections hold scope.
func (h *hubs) count(t *tenant, scope string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for c := range h.conns[t] {
		if c.has(scope) {
			n++
		}
	}
	return n
}

// eventScope is the scope a broadcast event needs (spec §1.8); "" is
// every authenticated client.
func eventScope(name string) string {
	switch name {
	case protocol.EventApprovalRequest, protocol.EventApprovalResolved:
		return protocol.ScopeApprovals
	case protocol.EventTick, protocol.EventShutdown, protocol.EventPresence, "health", "heartbeat":
		return ""
	}
	return protocol.ScopeRead
}

// droppable events may be skipped for a client that cannot keep up: a
// later one carries the same information (the next tick). Chat deltas are
// too (the next delta and the final carry the whole text), through
// broadcastDroppable: the event name alone does not tell them from the
// final. Agent assistant events are not: clients append their delta.
func droppable(name string) bool {
	return name == protocol.EventTick
}

// broadcast sends an event to every client of the tenant allowed to see
// it, each with its own seq. The payload is encoded once.
func (s *Server) broadcast(t *tenant, name string, payload any) {
	s.fanout(t, name, payload, droppable(name))
}

// broadcastDroppable is broadcast for an event that a later one
// supersedes, which a slow client may miss rather than be dropped.
func (s *Server) broadcastDroppable(t *tenant, name string, payload any) {
	s.fanout(t, name, payload, true)
}

func (s *Server) fanout(t *tenant, name string, payload any, drop bool) {
	raw, err := json.Marshal(payload)
	if err != nil {
		s.log.Error("encoding event", "event", name, "err", err)
		return
	}
	scope := eventScope(name)
	for _, c := range s.hubs.of(t) {
		if c.has(scope) {
			c.sendRaw(name, raw, true, drop)
		}
	}
}

// startTicker starts the tick broadcast once, with the first client.
func (s *Server) startTicker() {
	s.hubs.tickOnce.Do(func() {
		s.hubs.mu.Lock()
		if s.hubs.stop == nil {
			s.hubs.stop = make(chan struct{})
		}
		stop := s.hubs.stop
		s.hubs.mu.Unlock()
		go func() {
			tk := time.NewTicker(s.tickInterval())
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-tk.C:
					s.tickAll(now)
				}
			}
		}()
	})
}

func (s *Server) tickAll(now time.Time) {
	raw, _ := json.Marshal(map[string]int64{"ts": now.UnixMilli()})
	s.hubs.mu.RLock()
	var all []*conn
	for _, m := range s.hubs.conns {
		for c := range m {
			all = append(all, c)
		}
	}
	s.hubs.mu.RUnlock()
	for _, c := range all {
		c.sendRaw(protocol.EventTick, raw, true, true)
	}
}

// closeWS tells every client the gateway is stopping and closes it with
// 1012 (service restart): hijacked connections are not closed by
// http.Server.Shutdown.
func (s *Server) closeWS(reason string) {
	s.hubs.stopOnce.Do(func() {
		s.hubs.mu.Lock()
		if s.hubs.stop == nil {
			s.hubs.stop = make(chan struct{})
		}
		close(s.hubs.stop)
		var all []*conn
		for _, m := range s.hubs.conns {
			for c := range m {
				all = append(all, c)
			}
		}
		s.hubs.mu.Unlock()
		raw, _ := json.Marshal(map[string]any{"reason": reason})
		for _, c := range all {
			c.sendRaw(protocol.EventShutdown, raw, true, false)
			c.close(protocol.CloseRestart, reason)
		}
	})
}
