package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// R10.5's replay bounds: a settled entry lives 5 minutes, at most 1000 of
// them; entries still admitting or running stay until they settle.
const (
	ReplayTTL     = 5 * time.Minute
	MaxReplayDone = 1000
)

// replay is one idempotency key's admission and run.
type replay struct {
	admitted chan struct{} // closed when admission settled
	rep      reply         // the refusal, when admission failed
	runID    string

	done       chan struct{} // closed when the completion is known
	completion Completion
	finishedAt time.Time
}

type settled struct {
	id string
	e  *replay
}

// replays is the handler's replay cache.
type replays struct {
	now  func() time.Time
	mu   sync.Mutex
	m    map[string]*replay
	done []settled // oldest first
}

func newReplays(now func() time.Time) *replays {
	return &replays{now: now, m: map[string]*replay{}}
}

// claim returns id's entry, and true when the caller is the first and
// must admit the run.
func (r *replays) claim(id string) (*replay, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune()
	if e, ok := r.m[id]; ok {
		return e, false
	}
	e := &replay{admitted: make(chan struct{}), done: make(chan struct{})}
	r.m[id] = e
	return e, true
}

// settle records the admission; a refused one is forgotten, so a retry
// admits afresh. An admitted one is watched until its completion.
func (r *replays) settle(id string, e *replay, runID string, done <-chan Completion, rep reply) {
	r.mu.Lock()
	if rep.status != 0 {
		e.rep = rep
		if r.m[id] == e {
			delete(r.m, id)
		}
		close(e.admitted)
		r.mu.Unlock()
		return
	}
	e.runID = runID
	close(e.admitted)
	r.mu.Unlock()
	go func() {
		c, ok := <-done
		if !ok {
			c = Completion{Status: "error"}
		}
		r.finish(id, e, c.safe())
	}()
}

func (r *replays) finish(id string, e *replay, c Completion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.completion, e.finishedAt = c, r.now()
	close(e.done)
	r.done = append(r.done, settled{id, e})
	r.prune()
}

// prune forgets settled entries past their TTL or beyond the bound; mu
// is held.
func (r *replays) prune() {
	now := r.now()
	n := 0
	for n < len(r.done) && (len(r.done)-n > MaxReplayDone || now.Sub(r.done[n].e.finishedAt) >= ReplayTTL) {
		if s := r.done[n]; r.m[s.id] == s.e {
			delete(r.m, s.id)
		}
		n++
	}
	r.done = r.done[n:]
}

// identity is the replay identity of a request: the token, the path, the
// key and the dispatch fields, so a changed message or route makes a new
// run.
func (h *Handler) identity(path, key string, fields any) string {
	raw, _ := json.Marshal(fields) // plain data: cannot fail
	s := sha256.New()
	s.Write(h.token[:])
	for _, part := range [][]byte{[]byte(path), []byte(key), raw} {
		s.Write([]byte{0})
		s.Write(part)
	}
	return hex.EncodeToString(s.Sum(nil))
}

// admit dispatches an agent turn, replaying an earlier one with the same
// identity (id "" when the request has none), and answers R10.3's way.
func (h *Handler) admit(ctx context.Context, t AgentTurn, id string, wait bool) reply {
	var (
		runID string
		done  <-chan Completion
	)
	e, first := (*replay)(nil), true
	if id != "" {
		e, first = h.replays.claim(id)
	}
	if first {
		var rep reply
		runID, done, rep = h.dispatchAgent(ctx, t)
		if e != nil {
			h.replays.settle(id, e, runID, done, rep)
		}
		if rep.status != 0 {
			return rep
		}
	} else {
		select {
		case <-e.admitted:
		case <-ctx.Done():
			return fail(http.StatusServiceUnavailable, "hooks: agent: the request ended while an identical one was being admitted")
		}
		if e.rep.status != 0 {
			return e.rep
		}
		runID = e.runID
	}
	ok := map[string]any{"ok": true, "runId": runID}
	if !wait {
		return reply{http.StatusOK, ok}
	}
	var c Completion
	if e != nil {
		select {
		case <-e.done:
			c = e.completion
		case <-ctx.Done():
			return fail(http.StatusServiceUnavailable, "hooks: agent: the request ended before the run completed")
		}
	} else {
		select {
		case got, open := <-done:
			if !open {
				got = Completion{Status: "error"}
			}
			c = got.safe()
		case <-ctx.Done():
			return fail(http.StatusServiceUnavailable, "hooks: agent: the request ended before the run completed")
		}
	}
	ok["completion"] = c
	return reply{http.StatusOK, ok}
}

// dispatchAgent asks the Dispatcher to admit t within the admission time.
func (h *Handler) dispatchAgent(ctx context.Context, t AgentTurn) (string, <-chan Completion, reply) {
	actx, cancel := context.WithTimeout(ctx, h.admitTime)
	defer cancel()
	runID, done, err := h.d.Agent(actx, t)
	if err == nil && (runID == "" || done == nil) {
		h.log.Error("hooks: the dispatcher admitted a run without a run id or completion channel")
		return "", nil, fail(http.StatusBadGateway, "hooks: agent: agent preparation failed")
	}
	if err != nil {
		if actx.Err() != nil && !isRefusal(err) {
			err = context.DeadlineExceeded
		}
		return "", nil, h.dispatchError("agent", err)
	}
	return runID, done, reply{}
}
