package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/internal/sandbox"
	"talon/internal/session"
	"talon/internal/store"
	"talon/internal/tools"
	"talon/internal/tools/sessions"
)

// maxSendDepth bounds chains of sessions_send (A sends to B, which sends
// to C, …) so two sessions cannot ping-pong forever.
const maxSendDepth = 3

type sendDepthKey struct{}

// runSessions is the session-tools backend of one run. It reaches the
// sessions its visibility allows (tools/sessions.Visibility: the scope of
// tools.sessions.visibility, the sandbox clamp, tools.agentToAgent), all in
// the tenant's own store, and makes a session act (send, spawn) only when
// that session is no less confined than the run's (sessions.CheckDrive).
type runSessions struct {
	r       *Runner
	agentID string
	key     string        // the run's session, canonical
	plan    *sandbox.Plan // the run's sandbox
	vis     sessions.Visibility
}

var _ tools.Sessions = (*runSessions)(nil)

func newRunSessions(r *Runner, agentID, key string, plan *sandbox.Plan) *runSessions {
	if plan.SessionKey != "" {
		key = plan.SessionKey
	}
	return &runSessions{r: r, agentID: agentID, key: key, plan: plan,
		vis: sessions.ResolveVisibility(r.Config, plan.Sandboxed)}
}

// target canonicalises a session key named by the model and checks the
// run may reach it. It reads the session first, since whether it was
// spawned by this one decides; a session that does not exist is reported
// only once it is visible, so refusals never tell which keys exist.
func (s *runSessions) target(ctx context.Context, key string) (sessions.Target, session.Entry, bool, error) {
	k, err := session.Canonical(s.r.Config, s.agentID, key)
	if err != nil {
		return sessions.Target{}, session.Entry{}, false, err
	}
	t := sessions.Target{Agent: session.AgentOf(k, s.agentID), Key: k}
	e, err := s.r.Store.GetSession(ctx, t.Agent, k)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return t, e, false, fmt.Errorf("reading session %s: %w", k, err)
	}
	t.SpawnedBy = s.spawnedBy(t.Agent, e)
	if err := s.vis.Check(s.agentID, s.key, t); err != nil {
		return t, e, false, err
	}
	return t, e, found, nil
}

// spawnedBy is the canonical key of the session that spawned e, an entry
// of agent; "" when none did or it cannot be read.
func (s *runSessions) spawnedBy(agent string, e session.Entry) string {
	if e.SpawnedBy == "" {
		return ""
	}
	k, err := session.Canonical(s.r.Config, agent, e.SpawnedBy)
	if err != nil {
		return ""
	}
	return k
}

// entry reads a visible session that exists.
func (s *runSessions) entry(ctx context.Context, key string) (string, session.Entry, error) {
	t, e, found, err := s.target(ctx, key)
	if err != nil {
		return "", e, err
	}
	if !found {
		return "", e, fmt.Errorf("no session %q", t.Key)
	}
	return t.Key, e, nil
}

// Status shows a visible session with its token counters, against the
// context window of the model it runs with now.
func (s *runSessions) Status(ctx context.Context, key string) (json.RawMessage, error) {
	k, e, err := s.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	model := runModel(s.r.Config, session.AgentOf(k, s.agentID), "", e)
	return json.Marshal(sessions.StatusOf(k, e, model, compaction.ResolveWindow(s.r.Config, model).Tokens))
}

// List shows the visible sessions, newest first, and the scope that chose
// them.
func (s *runSessions) List(ctx context.Context, _ string, limit int) (json.RawMessage, error) {
	rows, err := s.visibleRows(ctx, limit)
	if err != nil {
		return nil, err
	}
	type row struct {
		Key       string `json:"key"`
		UpdatedAt int64  `json:"updatedAt"`
		Label     string `json:"label,omitempty"`
		SpawnedBy string `json:"spawnedBy,omitempty"`
	}
	out := make([]row, len(rows))
	for i, r := range rows {
		out[i] = row{r.Key, r.Entry.UpdatedAt, r.Entry.Label, r.Entry.SpawnedBy}
	}
	return json.Marshal(map[string]any{"sessions": out, "visibility": s.vis.Scope})
}

// visibleRows are at most limit visible sessions, newest first: under
// self and tree, this session and its children (which are subagent
// sessions, so only those rows are read); else the sessions of every
// reachable agent.
func (s *runSessions) visibleRows(ctx context.Context, limit int) ([]store.SessionRow, error) {
	var rows []store.SessionRow
	if s.vis.Scope == sessions.ScopeSelf || s.vis.Scope == sessions.ScopeTree {
		if e, err := s.r.Store.GetSession(ctx, s.agentID, s.key); err == nil {
			rows = append(rows, store.SessionRow{Key: s.key, Entry: e})
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("reading session %s: %w", s.key, err)
		}
		if s.vis.Scope == sessions.ScopeTree {
			subs, err := s.r.Store.ListSubagentSessions(ctx, s.agentID)
			if err != nil {
				return nil, err
			}
			for _, r := range subs {
				if r.Key != s.key && s.spawnedBy(s.agentID, r.Entry) == s.key {
					rows = append(rows, r)
				}
			}
		}
	} else {
		for _, a := range s.vis.Agents(s.agentID, s.r.Config.AgentIDs()) {
			got, err := s.r.Store.ListSessions(ctx, a, limit, 0)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
		}
	}
	slices.SortStableFunc(rows, func(a, b store.SessionRow) int {
		if c := cmp.Compare(b.Entry.UpdatedAt, a.Entry.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return rows[:min(len(rows), limit)], nil
}

func (s *runSessions) History(ctx context.Context, key string, limit int) (json.RawMessage, error) {
	k, e, err := s.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	msgs, err := s.r.Store.Transcript(ctx, e.SessionID, limit)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"key": k, "messages": msgs})
}

// drive checks the run may make the session key of agent act: that
// session's sandbox, resolved as its own runs would resolve it, confines no
// less than the run's.
func (s *runSessions) drive(agent, key string) error {
	p, err := sandbox.Resolve(s.r.Config, s.r.StateDir, agent, key)
	if err != nil {
		return fmt.Errorf("resolving the sandbox of %s: %w", key, err)
	}
	return sessions.CheckDrive(s.plan, &p)
}

func (s *runSessions) Send(ctx context.Context, _, to, message string) (json.RawMessage, error) {
	t, _, _, err := s.target(ctx, to)
	if err != nil {
		return nil, err
	}
	if t.Key == s.key {
		return nil, errors.New("a session cannot send to itself")
	}
	if err := s.drive(t.Agent, t.Key); err != nil {
		return nil, err
	}
	depth, _ := ctx.Value(sendDepthKey{}).(int)
	if depth >= maxSendDepth {
		return nil, fmt.Errorf("sessions_send chains stop at %d hops", maxSendDepth)
	}
	ctx = context.WithValue(ctx, sendDepthKey{}, depth+1)
	res, err := s.r.Run(ctx, Request{
		AgentID: t.Agent, SessionKey: t.Key,
		Input: []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("[message from session %s]\n%s", s.key, message)}},
	})
	if err != nil {
		return nil, fmt.Errorf("running session %s: %w", t.Key, err)
	}
	return json.Marshal(map[string]any{"sessionKey": t.Key, "reply": res.Text})
}
