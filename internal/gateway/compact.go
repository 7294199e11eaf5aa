package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"talon/internal/agent"
	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/session"
	"talon/internal/store"
	"talon/internal/tools/sessions"
	"talon/protocol"
)

// This file is the gateway's side of context management (spec
// context.md §9, §10): sessions.compact, the /compact and /status chat
// commands, and the compaction agent events.

func init() {
	register("sessions.compact", protocol.ScopeAdmin, sessionsCompact)
}

// busyNotice is why /compact cannot run now.
const busyNotice = "a run of this session is still active; try again when it has ended"

// Chat commands a message may be instead of a turn.
const (
	cmdCompact = "/compact"
	cmdStatus  = "/status"
	cmdNew     = "/new"
	cmdReset   = "/reset"
)

// chatCommand reads a message that is a chat command (/compact with its
// optional focus, /status, /new, /reset) rather than a turn; ok is false
// for any other message.
func chatCommand(text string) (cmd, arg string, ok bool) {
	t := strings.TrimSpace(text)
	for _, c := range []string{cmdCompact, cmdStatus, cmdNew, cmdReset} {
		rest, found := strings.CutPrefix(t, c)
		if !found || rest != "" && !unicode.IsSpace([]rune(rest)[0]) {
			continue
		}
		if c != cmdCompact && strings.TrimSpace(rest) != "" {
			return "", "", false
		}
		return c, strings.TrimSpace(rest), true
	}
	return "", "", false
}

// compaction is the agent event data of a compaction (R9.4): its start,
// and its end with whether it committed and the request is retried.
type compactionData struct {
	Phase        string `json:"phase"`
	Reason       string `json:"reason"`
	Completed    *bool  `json:"completed,omitempty"`
	WillRetry    *bool  `json:"willRetry,omitempty"`
	Outcome      string `json:"outcome,omitempty"`
	TokensBefore int64  `json:"tokensBefore,omitempty"`
	TokensAfter  int64  `json:"tokensAfter,omitempty"`
	Window       int64  `json:"contextWindow,omitempty"`
	Error        string `json:"error,omitempty"`
	// Notice is the line for the user (compaction.notifyUser's, or the
	// /compact reply), which a chat shows.
	Notice string `json:"notice,omitempty"`
}

func newCompactionData(ev agent.CompactionEvent) compactionData {
	d := compactionData{Phase: ev.Phase, Reason: ev.Reason, Notice: ev.Notice}
	if ev.Phase != "end" {
		return d
	}
	d.Completed, d.WillRetry = &ev.Completed, &ev.WillRetry
	d.TokensBefore, d.TokensAfter, d.Window, d.Error = ev.TokensBefore, ev.TokensAfter, ev.Window, ev.Error
	switch {
	case !ev.Completed:
		d.Outcome = "failed"
	case ev.HardTrim:
		d.Outcome = "hard-trim"
	default:
		d.Outcome = "compacted"
	}
	return d
}

// compactionsChanged tells the tenant a compaction committed.
func (s *Server) compactionsChanged(t *tenant, tgt sessionTarget, sessionID string) {
	s.sessionsChanged(t, tgt, sessionID, "compact", map[string]any{"compacted": true})
}

// sessionsCompact is sessions.compact (spec §10): with maxLines, the
// legacy trim without a model call; without, the LLM compaction. A
// session with a run in flight is refused, never waited for.
func sessionsCompact(s *Server, c *call) (any, error) {
	const m = "sessions.compact"
	var p struct {
		Key      string   `json:"key"`
		AgentID  *string  `json:"agentId"`
		MaxLines *float64 `json:"maxLines"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	maxLines, trim, err := intParam(m, "maxLines", p.MaxLines, 1, 1_000_000)
	if err != nil {
		return nil, err
	}
	tgt, err := c.compactTarget(deref(p.AgentID), p.Key)
	if err != nil {
		return nil, err
	}
	unlock, ok := s.locks.tryLock(sessionLockKey(c.t, tgt.key))
	if !ok {
		return nil, protocol.Errorf("Session %s has an active run; retry after it finishes.", tgt.key)
	}
	defer unlock()
	runner := c.rt.runner
	if trim {
		res, err := runner.TrimLines(c.ctx, tgt.agent, tgt.key, maxLines)
		if err != nil {
			return nil, compactError(tgt, err)
		}
		out := map[string]any{"ok": true, "key": tgt.key, "compacted": res.Compacted}
		if res.Reason != "" {
			out["reason"] = res.Reason
		} else {
			out["kept"] = res.Kept
		}
		if res.Compacted {
			s.compactionsChanged(c.t, tgt, res.SessionID)
		}
		return out, nil
	}
	ev := s.compactionEvents(c.t, tgt.key, "compact-"+store.NewID())
	res, err := runner.Compact(c.ctx, tgt.agent, tgt.key, "", ev)
	if err != nil {
		return nil, compactError(tgt, err)
	}
	out := map[string]any{"ok": res.Compacted || res.Reason == agent.ReasonNoTranscript, "key": tgt.key, "compacted": res.Compacted}
	if !res.Compacted {
		out["reason"] = res.Reason
		return out, nil
	}
	out["result"] = map[string]any{"tokensBefore": res.TokensBefore, "tokensAfter": res.TokensAfter,
		"summary": res.Summary, "firstKeptEntryId": res.FirstKeptEntryID}
	s.compactionsChanged(c.t, tgt, res.SessionID)
	return out, nil
}

// compactTarget canonicalises sessions.compact's key for its agentId, if
// given, and checks the agent is configured.
func (c *call) compactTarget(agentID, raw string) (sessionTarget, error) {
	if strings.TrimSpace(raw) == "" {
		return sessionTarget{}, protocol.Errorf("invalid sessions.compact params: key is required")
	}
	cfg := c.rt.file.Config
	if strings.TrimSpace(agentID) != "" {
		agentID = config.NormalizeAgentID(agentID)
		if !cfg.HasAgent(agentID) {
			return sessionTarget{}, protocol.Errorf("invalid sessions.compact params: unknown agent id %q", agentID)
		}
	}
	key, err := session.Canonical(cfg, agentID, raw)
	if err != nil {
		return sessionTarget{}, invalidParams(err)
	}
	tgt := sessionTarget{agent: session.AgentOf(key, cfg.DefaultAgentID()), key: key}
	if agentID != "" && tgt.agent != agentID {
		return sessionTarget{}, protocol.Errorf("invalid sessions.compact params: session %s belongs to agent %q, not %q", key, tgt.agent, agentID)
	}
	return tgt, c.configuredAgent(tgt)
}

// compactError is a failed compaction as the client is told: a session
// that changed under it is the client's to retry (INVALID_REQUEST, as
// upstream says it); anything else is UNAVAILABLE.
func compactError(tgt sessionTarget, err error) error {
	if errors.Is(err, store.ErrSessionChanged) {
		return &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "Session " + tgt.key + " changed before compaction. Retry.",
			Details: map[string]string{"reason": "session-lifecycle-changed"}}
	}
	var we *compaction.WindowError
	if errors.As(err, &we) {
		return protocol.Errorf("%s", we.Error())
	}
	return &protocol.Error{Code: protocol.CodeUnavailable, Message: "compaction failed: " + safeRunError(err)}
}

// compactionEvents broadcasts a manual compaction's events as agent
// events of a run of its own (runId), as upstream's sessions.compact does.
func (s *Server) compactionEvents(t *tenant, key, runID string) func(agent.CompactionEvent) {
	var seq int64
	return func(ev agent.CompactionEvent) {
		seq++
		s.broadcast(t, protocol.EventAgent, agentEvent{RunID: runID, Seq: seq, Stream: "compaction", Ts: time.Now().UnixMilli(),
			Data: newCompactionData(ev), SessionKey: key})
	}
}

// command runs a chat command on a session for the HTTP endpoint and a
// chat run: /compact under the session's lock, if no run holds it (its
// reply says so otherwise), /new and /reset likewise, or /status. It
// returns the reply.
func (s *Server) command(ctx context.Context, t *tenant, rt *runtime, agentID, key, cmd, arg string, on func(agent.CompactionEvent)) (string, error) {
	if cmd == cmdStatus {
		return s.statusReply(ctx, rt, agentID, key)
	}
	unlock, ok := s.locks.tryLock(sessionLockKey(t, key))
	if !ok {
		if cmd != cmdCompact {
			return "Not reset: " + busyNotice + " (a stop word ends it).", nil
		}
		return compaction.NoticeUnavailable(busyNotice), nil
	}
	defer unlock()
	if cmd == cmdNew || cmd == cmdReset {
		// As sessions.reset: a new session id, the transcript kept.
		entry, err := rt.runner.Store.ResetSession(ctx, agentID, key, time.Now())
		if err != nil {
			return "", err
		}
		t.events().drain(key)
		s.sessionsChanged(t, sessionTarget{agent: agentID, key: key}, entry.SessionID, strings.TrimPrefix(cmd, "/"), nil)
		return "New session started: the conversation before this is no longer in the model's context.", nil
	}
	res, err := rt.runner.Compact(ctx, agentID, key, arg, on)
	if err != nil {
		return "", err
	}
	if res.Compacted {
		s.compactionsChanged(t, sessionTarget{agent: agentID, key: key}, res.SessionID)
	}
	return res.Notice, nil
}

// statusReply is /status (R9.3): the session's model, context used of the
// window, compactions and token counters.
func (s *Server) statusReply(ctx context.Context, rt *runtime, agentID, key string) (string, error) {
	e, err := rt.runner.Store.GetSession(ctx, agentID, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	cfg := rt.file.Config
	model := sessionModel(cfg, agentID, e).String()
	if s.opts.Model != "" {
		model = s.opts.Model
	}
	window := *contextTokens(cfg, modelRef(model))
	st := sessions.StatusOf(key, e, model, window)
	lines := []string{
		fmt.Sprintf("Session %s", key),
		"Model: " + model,
		sessions.ContextLine(st.Tokens.Context.Used, window, st.Tokens.Context.Estimated),
		fmt.Sprintf("🧹 Compactions: %d", e.CompactionCount),
		fmt.Sprintf("Tokens since the last reset: %d in, %d out", e.CumulativeInputTokens, e.CumulativeOutputTokens),
	}
	return strings.Join(lines, "\n"), nil
}

// modelRef parses a model reference, the zero value when it does not
// parse.
func modelRef(ref string) config.ModelRef {
	m, _ := config.ParseModelRef(ref)
	return m
}
