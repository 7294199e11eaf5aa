package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/session"
	"talon/internal/store"
	"talon/internal/tools"
)

// maxSendDepth bounds chains of sessions_send (A sends to B, which sends
// to C, …) so two sessions cannot ping-pong forever.
const maxSendDepth = 3

type sendDepthKey struct{}

// runSessions is the session-tools backend of one run: it sees only the
// sessions of the run's own agent.
type runSessions struct {
	r       *Runner
	agentID string
	key     string
}

var _ tools.Sessions = (*runSessions)(nil)

// target canonicalises a session key named by the model and keeps it
// within the run's agent.
func (s *runSessions) target(key string) (string, error) {
	k, err := session.Canonical(s.r.Config, s.agentID, key)
	if err != nil {
		return "", err
	}
	if a := session.AgentOf(k, s.agentID); a != s.agentID {
		return "", fmt.Errorf("session %q belongs to agent %q; this agent can only reach its own sessions", k, a)
	}
	return k, nil
}

// entry reads a session the model named, within the run's agent.
func (s *runSessions) entry(ctx context.Context, key string) (string, session.Entry, error) {
	k, err := s.target(key)
	if err != nil {
		return "", session.Entry{}, err
	}
	e, err := s.r.Store.GetSession(ctx, s.agentID, k)
	if errors.Is(err, store.ErrNotFound) {
		return "", session.Entry{}, fmt.Errorf("no session %q", k)
	}
	return k, e, err
}

func (s *runSessions) Status(ctx context.Context, key string) (json.RawMessage, error) {
	k, e, err := s.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"key": k, "entry": e})
}

func (s *runSessions) List(ctx context.Context, _ string, limit int) (json.RawMessage, error) {
	rows, err := s.r.Store.ListSessions(ctx, s.agentID, limit, 0)
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
	return json.Marshal(map[string]any{"sessions": out})
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

func (s *runSessions) Send(ctx context.Context, from, to, message string) (json.RawMessage, error) {
	k, err := s.target(to)
	if err != nil {
		return nil, err
	}
	depth, _ := ctx.Value(sendDepthKey{}).(int)
	if depth >= maxSendDepth {
		return nil, fmt.Errorf("sessions_send chains stop at %d hops", maxSendDepth)
	}
	ctx = context.WithValue(ctx, sendDepthKey{}, depth+1)
	res, err := s.r.Run(ctx, Request{
		AgentID: s.agentID, SessionKey: k,
		Input: []provider.Message{{Role: provider.RoleUser, Content: fmt.Sprintf("[message from session %s]\n%s", from, message)}},
	})
	if err != nil {
		return nil, fmt.Errorf("running session %s: %w", k, err)
	}
	return json.Marshal(map[string]any{"sessionKey": k, "reply": res.Text})
}

func (s *runSessions) Spawn(ctx context.Context, parent, agentID, task, label string) (json.RawMessage, error) {
	if id := policy.NormalizeAgentID(agentID); id != s.agentID {
		return nil, fmt.Errorf("spawning agent %q from agent %q is not allowed; spawn this agent", id, s.agentID)
	}
	parentDepth := policy.SubagentDepth(parent, nil)
	if e, err := s.r.Store.GetSession(ctx, s.agentID, parent); err == nil && e.SpawnDepth != nil {
		parentDepth = *e.SpawnDepth
	}
	depth, max := parentDepth+1, policy.MaxSpawnDepth(s.r.Config)
	if depth > max {
		return nil, fmt.Errorf("spawn depth %d exceeds agents.defaults.subagents.maxSpawnDepth (%d)", depth, max)
	}
	child := session.Subagent(s.agentID, store.NewID())
	patch := map[string]any{"spawnedBy": parent, "spawnDepth": depth}
	if l := strings.TrimSpace(label); l != "" {
		patch["label"] = l
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	if _, err := s.r.Store.PatchSession(ctx, s.agentID, child, raw, time.Now()); err != nil {
		return nil, fmt.Errorf("creating subagent session: %w", err)
	}
	res, err := s.r.Run(ctx, Request{
		AgentID: s.agentID, SessionKey: child,
		Input: []provider.Message{{Role: provider.RoleUser, Content: task}},
	})
	if err != nil {
		return nil, fmt.Errorf("running subagent %s: %w", child, err)
	}
	return json.Marshal(map[string]any{"sessionKey": child, "depth": depth, "reply": res.Text})
}
