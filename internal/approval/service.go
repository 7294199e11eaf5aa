package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Sink appends one system event (text such as "Exec finished (gateway
// id=…, session=…, code 0)" and an output tail) to the transcript of an
// agent's session. internal/agent provides the one the gateway uses
// (agent.TranscriptSink), which decides how the model sees it.
type Sink func(ctx context.Context, agentID, sessionKey, text string) error

// sinkTimeout bounds one system-event write; it is not tied to any request
// (the turn that asked for approval is long over) nor to shutdown (the
// outcome of a command that ran must still be recorded).
const sinkTimeout = 30 * time.Second

// ErrClosed is returned for work asked of a Service after Close.
var ErrClosed = errors.New("exec approvals: the gateway is shutting down")

// Service is one tenant's exec approvals: the approvals file (Store), the
// pending approvals (Manager), the background work that waits for a
// decision and runs the approved command, and the delivery of its outcome
// to the session as a system event.
//
// The gateway builds one per tenant with NewService, sets
// Manager.Approvers (who can answer a request: operator.approvals
// clients, and a channel conversation's approvers)
// and Manager.Emit (broadcast of exec.approval.requested/resolved) before
// the first run, serves exec.approval.resolve with Resolve and
// exec.approval.list with Pending, gives it to the tenant's agent runners
// (agent.Runner.Approvals), and calls Close on shutdown before it closes
// the sandboxes and the session store.
//
// System events never land inside a turn: a run holds its session (Hold)
// for as long as it works, and an event posted meanwhile is queued and
// written when the last hold is released, so a transcript never shows an
// event between a model's tool call and its result. The approved command
// itself runs outside any turn and holds nothing while it runs.
type Service struct {
	Store   *Store
	Manager *Manager
	// Log receives what cannot be reported to anyone else (a system event
	// that could not be written); slog.Default() when nil.
	Log *slog.Logger

	sink   Sink
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	running  int // background work started by Go that has not returned
	sessions map[string]*sessionEvents
}

// sessionEvents is one session's holds and queued events. refs counts the
// holds and posts using it (guarded by Service.mu), so the map entry goes
// when nobody does; mu is held while events are written, so a run that
// starts then waits for the write instead of overlapping it.
type sessionEvents struct {
	refs int

	mu    sync.Mutex
	held  int
	queue []event
}

// event is a system event waiting for a session's turn to end.
type event struct{ agentID, sessionKey, text string }

// NewService opens the approvals of the tenant whose state directory is
// stateDir (<stateDir>/exec-approvals.json) and writes system events with
// sink. Its Manager has no approvers until the gateway sets them, so until
// then every prompt falls back at once to askFallback.
func NewService(stateDir string, sink Sink) (*Service, error) {
	if sink == nil {
		return nil, errors.New("opening exec approvals: no sink for system events")
	}
	st, err := NewStore(stateDir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{
		Store: st, Manager: &Manager{Store: st}, sink: sink,
		ctx: ctx, cancel: cancel, sessions: map[string]*sessionEvents{},
	}, nil
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// Resolve ends a pending approval (exec.approval.resolve): idOrPrefix is
// its id or a unique prefix, decision one of allow-once, allow-always,
// deny; resolvedBy names the operator for the resolved event. ctx bounds
// the allow-always write.
func (s *Service) Resolve(ctx context.Context, idOrPrefix, decision, resolvedBy string) error {
	return s.Manager.Resolve(ctx, idOrPrefix, decision, resolvedBy)
}

// Pending lists the approvals waiting for a decision, oldest first
// (exec.approval.list).
func (s *Service) Pending() []RequestedPayload { return s.Manager.List() }

// Go runs f in the background with a context that ends when the Service
// closes; Close waits for f to return. It fails with ErrClosed once Close
// has begun.
func (s *Service) Go(f func(ctx context.Context)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.wg.Add(1)
	s.running++
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			s.running--
			s.mu.Unlock()
		}()
		f(s.ctx)
	}()
	return nil
}

// Busy says an approval waits for a decision or background work (an
// approved command) still runs: closing the Service now would end them.
func (s *Service) Busy() bool {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	return running > 0 || len(s.Manager.List()) > 0
}

// Close ends every pending approval (reason "gateway-shutdown"), cancels
// the background work (approved commands still running are killed) and
// waits for it, including the system events it posts. Call it once, before
// closing what the sink writes to.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.Manager.shutdown()
	s.cancel()
	s.wg.Wait()
}

func sessionID(agentID, key string) string {
	return strings.ToLower(strings.TrimSpace(agentID)) + "\x00" + strings.ToLower(strings.TrimSpace(key))
}

func (s *Service) session(agentID, key string) (*sessionEvents, string) {
	id := sessionID(agentID, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.sessions[id]
	if e == nil {
		e = &sessionEvents{}
		s.sessions[id] = e
	}
	e.refs++
	return e, id
}

func (s *Service) unref(id string, e *sessionEvents) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.refs--; e.refs == 0 && s.sessions[id] == e {
		delete(s.sessions, id)
	}
}

// Hold marks a turn of the session as running until release is called:
// system events posted meanwhile wait, and are written by the release
// that ends the last hold. Holds nest; release is safe to call once.
func (s *Service) Hold(agentID, sessionKey string) (release func()) {
	e, id := s.session(agentID, sessionKey)
	e.mu.Lock() // waits for an event being written now
	e.held++
	e.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			e.held--
			if e.held == 0 {
				for _, ev := range e.queue {
					s.write(ev.agentID, ev.sessionKey, ev.text)
				}
				e.queue = nil
			}
			e.mu.Unlock()
			s.unref(id, e)
		})
	}
}

// Post delivers a system event to the session: at once when no turn
// holds it, else when the last hold is released. A write that fails is
// logged (nobody waits for it) and returned.
func (s *Service) Post(agentID, sessionKey, text string) error {
	e, id := s.session(agentID, sessionKey)
	defer s.unref(id, e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held > 0 {
		e.queue = append(e.queue, event{agentID, sessionKey, text})
		return nil
	}
	return s.write(agentID, sessionKey, text)
}

func (s *Service) write(agentID, sessionKey, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	if err := s.sink(ctx, agentID, sessionKey, text); err != nil {
		err = fmt.Errorf("writing a system event to session %s of agent %s: %w", sessionKey, agentID, err)
		s.log().Error("exec approvals", "err", err, "event", text)
		return err
	}
	return nil
}

// Use is one allowlist entry an exec call matched: the entry's id and what
// it matched, for RecordUse.
type Use struct {
	EntryID      string
	Command      string
	ResolvedPath string
}

// RecordUse stamps the matched entries with lastUsedAt, lastUsedCommand
// and lastResolvedPath (spec §4.6), through the Store with its baseHash
// (retried when another writer got in between). Entries that are gone by
// now are skipped. A failure is logged as well as returned: the command
// the entries allowed runs anyway.
func (s *Service) RecordUse(ctx context.Context, uses []Use, now time.Time) error {
	if len(uses) == 0 {
		return nil
	}
	_, err := s.Store.Update(ctx, func(f *File) error {
		for _, a := range f.Agents {
			for i := range a.Allowlist {
				e := &a.Allowlist[i]
				for _, u := range uses {
					if u.EntryID != "" && e.ID == u.EntryID {
						e.LastUsedAt, e.LastUsedCommand, e.LastResolvedPath = now.UnixMilli(), u.Command, u.ResolvedPath
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("recording allowlist use: %w", err)
		s.log().Error("exec approvals", "err", err)
		return err
	}
	return nil
}
