package gateway

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"talon/internal/agent"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/policy"
	"talon/internal/provider"
	"talon/internal/session"
	"talon/internal/store"
	"talon/protocol"
)

// The session methods (spec §2.1, §5): list, patch, reset and delete a
// tenant's sessions. Every key a client sends is canonicalised
// (session.Canonical: "main" → agent:<default>:main, lower case) and the
// results echo the canonical key. The tenant is the connection's, so one
// tenant never sees another's store.
func init() {
	register("sessions.list", protocol.ScopeRead, sessionsList)
	register("sessions.patch", protocol.ScopeWrite, sessionsPatch)
	register("sessions.reset", protocol.ScopeWrite, sessionsReset)
	register("sessions.delete", protocol.ScopeWrite, sessionsDelete)
}

// adminPatchFields are the sessions.patch fields that need operator.admin
// rather than operator.write: they change what the session's commands may
// do on the host (where exec runs, its security and ask modes, and
// elevated mode, whose "full" bypasses approvals).
var adminPatchFields = []string{"execHost", "execSecurity", "execAsk", "execNode", "elevatedLevel"}

// Bounds of sessions.list.
const (
	maxListLimit      = 10000
	maxActiveMinutes  = 10 * 365 * 24 * 60
	maxSearchLen      = 512
	listProbeMessages = 20 // messages read per row for a derived title or a preview
	titleRunes        = 60
	previewRunes      = 120
)

// sessionTarget is a session a call names: its agent and canonical key.
type sessionTarget struct{ agent, key string }

// target canonicalises the session key sent as params.<field> of method.
func (c *call) target(field, raw string) (sessionTarget, error) {
	if strings.TrimSpace(raw) == "" {
		return sessionTarget{}, protocol.Errorf("invalid %s params: %s is required", c.req.Method, field)
	}
	cfg := c.rt.file.Config
	key, err := session.Canonical(cfg, "", raw)
	if err != nil {
		return sessionTarget{}, invalidParams(err)
	}
	return sessionTarget{agent: session.AgentOf(key, cfg.DefaultAgentID()), key: key}, nil
}

// configuredAgent refuses a key of an agent the config does not define:
// patch and reset would otherwise create sessions nothing can run.
func (c *call) configuredAgent(t sessionTarget) error {
	if !c.rt.file.Config.HasAgent(t.agent) {
		return protocol.Errorf("unknown agent %q (session %s): add it to agents.list first", t.agent, t.key)
	}
	return nil
}

// invalidParams turns a session validation failure into INVALID_REQUEST
// with its message unchanged; other errors pass.
func invalidParams(err error) error {
	var ve *session.ValidationError
	if errors.As(err, &ve) {
		return protocol.Errorf("%s", ve.Message)
	}
	return err
}

// tryLock takes key's lock only if no run holds it.
func (l *sessionLocks) tryLock(key lockKey) (unlock func(), ok bool) {
	e := l.acquire(key)
	select {
	case e.held <- struct{}{}:
		return l.unlocker(key, e), true
	default:
		l.release(key, e)
		return nil, false
	}
}

// holdIdle takes a session's run lock for a reset or a delete, which must
// not happen under a turn in progress (its next write would bring the
// session back, or land in the old transcript). A held session is refused
// at once rather than waited for: a turn can last minutes.
func (s *Server) holdIdle(t *tenant, key string) (func(), error) {
	unlock, ok := s.locks.tryLock(sessionLockKey(t, key))
	if !ok {
		return nil, &protocol.Error{Code: protocol.CodeUnavailable, Retryable: true, RetryAfterMs: 1000,
			Message: "Session " + key + " is still active (a run holds it); try again when the run has ended."}
	}
	return unlock, nil
}

// sessionsChanged tells the tenant's readers that a session changed;
// more are further members of the event.
func (s *Server) sessionsChanged(t *tenant, tgt sessionTarget, sessionID, reason string, more map[string]any) {
	p := map[string]any{"sessionKey": tgt.key, "agentId": tgt.agent, "reason": reason, "ts": time.Now().UnixMilli()}
	if sessionID != "" {
		p["sessionId"] = sessionID
	}
	for k, v := range more {
		p[k] = v
	}
	s.broadcast(t, protocol.EventSessionsChanged, p)
}

// storeOf is the tenant's session store as the call's runtime holds it.
func (c *call) storeOf() *store.DB { return c.rt.runner.Store }

func sessionsPatch(s *Server, c *call) (any, error) {
	raw := bytes.TrimSpace(c.req.Params)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	p, err := session.ParsePatch(raw)
	if err != nil {
		return nil, invalidParams(err)
	}
	var key string
	if kr, ok := p["key"]; !ok {
		return nil, protocol.Errorf("invalid sessions.patch params: key is required")
	} else if json.Unmarshal(kr, &key) != nil {
		return nil, protocol.Errorf("invalid sessions.patch params: key must be a string")
	}
	for _, f := range adminPatchFields {
		if p.Sets(f) && !c.c.has(protocol.ScopeAdmin) {
			return nil, protocol.Errorf("missing scope: %s", protocol.ScopeAdmin)
		}
	}
	tgt, err := c.target("key", key)
	if err != nil {
		return nil, err
	}
	if err := c.configuredAgent(tgt); err != nil {
		return nil, err
	}
	cfg := c.rt.file.Config
	entry, err := c.storeOf().PatchSessionWith(c.ctx, tgt.agent, tgt.key, raw, time.Now(),
		func(_ session.Entry, next *session.Entry) error {
			return applyModelFields(cfg, c.rt.providers, tgt.agent, p, next)
		})
	if err != nil {
		return nil, invalidParams(err)
	}
	s.sessionsChanged(c.t, tgt, entry.SessionID, "patch", nil)
	m := sessionModel(cfg, tgt.agent, entry)
	return map[string]any{
		"ok": true, "path": c.storeOf().Path(), "key": tgt.key, "entry": entry,
		"resolved": map[string]string{"modelProvider": m.Provider, "model": m.Model},
	}, nil
}

func sessionsReset(s *Server, c *call) (any, error) {
	var p struct {
		Key    string  `json:"key"`
		Reason *string `json:"reason"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	reason := "reset"
	if p.Reason != nil {
		if *p.Reason != "new" && *p.Reason != "reset" {
			return nil, protocol.Errorf(`invalid sessions.reset params: reason must be "new" or "reset"`)
		}
		reason = *p.Reason
	}
	tgt, err := c.target("key", p.Key)
	if err != nil {
		return nil, err
	}
	if err := c.configuredAgent(tgt); err != nil {
		return nil, err
	}
	unlock, err := s.holdIdle(c.t, tgt.key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	entry, err := c.storeOf().ResetSession(c.ctx, tgt.agent, tgt.key, time.Now())
	if err != nil {
		return nil, err
	}
	c.t.events().drain(tgt.key) // the old session's events are not the new one's (R8.2)
	s.sessionsChanged(c.t, tgt, entry.SessionID, reason, nil)
	return map[string]any{"ok": true, "key": tgt.key, "entry": entry}, nil
}

func sessionsDelete(s *Server, c *call) (any, error) {
	var p struct {
		Key              string `json:"key"`
		DeleteTranscript *bool  `json:"deleteTranscript"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	tgt, err := c.target("key", p.Key)
	if err != nil {
		return nil, err
	}
	if main := policy.MainSessionKey(c.rt.file.Config, tgt.agent); tgt.key == main {
		return nil, protocol.Errorf("Cannot delete the main session (%s).", main)
	}
	unlock, err := s.holdIdle(c.t, tgt.key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	db := c.storeOf()
	prev, err := db.GetSession(c.ctx, tgt.agent, tgt.key)
	if errors.Is(err, store.ErrNotFound) {
		return map[string]any{"ok": true, "key": tgt.key, "deleted": false, "archived": []string{}}, nil
	}
	if err != nil {
		return nil, err
	}
	deleted, err := db.DeleteSession(c.ctx, tgt.agent, tgt.key)
	if err != nil {
		return nil, err
	}
	// Transcripts are append-only: the deleted session's stays in the
	// store under its id, reachable by no key. That is what upstream's
	// archive is (a renamed file); the locator says where it is.
	archived := []string{}
	if deleted && (p.DeleteTranscript == nil || *p.DeleteTranscript) {
		archived = append(archived, db.Path()+"#transcript/"+prev.SessionID)
	}
	if deleted {
		s.sessionsChanged(c.t, tgt, prev.SessionID, "delete", nil)
	}
	return map[string]any{"ok": true, "key": tgt.key, "deleted": deleted, "archived": archived}, nil
}

// listParams are sessions.list's. Numbers are float64 so that 2.5 is
// refused as "not an integer" rather than as "not a number".
type listParams struct {
	Limit                *float64 `json:"limit"`
	ActiveMinutes        *float64 `json:"activeMinutes"`
	IncludeGlobal        bool     `json:"includeGlobal"`
	IncludeUnknown       bool     `json:"includeUnknown"`
	IncludeDerivedTitles bool     `json:"includeDerivedTitles"`
	IncludeLastMessage   bool     `json:"includeLastMessage"`
	Label                *string  `json:"label"`
	SpawnedBy            *string  `json:"spawnedBy"`
	AgentID              *string  `json:"agentId"`
	Search               *string  `json:"search"`
}

// intParam checks an optional integer parameter against [lo, hi].
func intParam(method, name string, v *float64, lo, hi int) (int, bool, error) {
	if v == nil {
		return 0, false, nil
	}
	if *v != math.Trunc(*v) || *v < float64(lo) || *v > float64(hi) {
		return 0, false, protocol.Errorf("invalid %s params: %s must be an integer from %d to %d", method, name, lo, hi)
	}
	return int(*v), true, nil
}

// sessionFilter is a validated sessions.list request.
type sessionFilter struct {
	limit                   int
	since                   int64 // updatedAt lower bound; 0 = none
	includeGlobal, unknown  bool
	titles, previews        bool
	label, spawnedBy, agent string
	spawnedByKey            string // spawnedBy canonicalised
	search                  string // lower case
}

func (c *call) listFilter() (sessionFilter, error) {
	var p listParams
	if err := c.params(&p); err != nil {
		return sessionFilter{}, err
	}
	const m = "sessions.list"
	f := sessionFilter{limit: maxListLimit, includeGlobal: p.IncludeGlobal, unknown: p.IncludeUnknown,
		titles: p.IncludeDerivedTitles, previews: p.IncludeLastMessage}
	if n, ok, err := intParam(m, "limit", p.Limit, 1, maxListLimit); err != nil {
		return f, err
	} else if ok {
		f.limit = n
	}
	if n, ok, err := intParam(m, "activeMinutes", p.ActiveMinutes, 1, maxActiveMinutes); err != nil {
		return f, err
	} else if ok {
		f.since = time.Now().Add(-time.Duration(n) * time.Minute).UnixMilli()
	}
	if p.Label != nil {
		f.label = strings.TrimSpace(*p.Label)
		if f.label == "" || len(utf16.Encode([]rune(f.label))) > session.MaxLabelLen {
			return f, protocol.Errorf("invalid %s params: label must be a non-empty string of at most %d characters", m, session.MaxLabelLen)
		}
	}
	if p.SpawnedBy != nil {
		if f.spawnedBy = strings.TrimSpace(*p.SpawnedBy); f.spawnedBy == "" {
			return f, protocol.Errorf("invalid %s params: spawnedBy must be a non-empty session key", m)
		}
		if k, err := session.Canonical(c.rt.file.Config, "", f.spawnedBy); err == nil {
			f.spawnedByKey = k
		}
	}
	if p.AgentID != nil {
		if strings.TrimSpace(*p.AgentID) == "" {
			return f, protocol.Errorf("invalid %s params: agentId must be a non-empty agent id", m)
		}
		f.agent = config.NormalizeAgentID(*p.AgentID)
	}
	if p.Search != nil {
		f.search = strings.ToLower(strings.TrimSpace(*p.Search))
		if utf8.RuneCountInString(f.search) > maxSearchLen {
			return f, protocol.Errorf("invalid %s params: search must be at most %d characters", m, maxSearchLen)
		}
	}
	return f, nil
}

// scans reports whether the filter needs every row: without one, each
// agent's most recent rows are enough.
func (f *sessionFilter) scans() bool {
	return f.since > 0 || f.label != "" || f.spawnedBy != "" || f.search != ""
}

func (f *sessionFilter) keep(agentID string, r store.SessionRow) bool {
	e := &r.Entry
	switch {
	case r.Key == session.GlobalKey && (!f.includeGlobal || f.agent != ""),
		r.Key == session.UnknownKey && (!f.unknown || f.agent != ""),
		f.since > 0 && e.UpdatedAt < f.since,
		f.label != "" && e.Label != f.label,
		f.spawnedBy != "" && !strings.EqualFold(e.SpawnedBy, f.spawnedBy) && !strings.EqualFold(e.SpawnedBy, f.spawnedByKey):
		return false
	}
	if f.search != "" {
		for _, s := range []string{r.Key, e.Label, e.DisplayName, e.SessionID} {
			if strings.Contains(strings.ToLower(s), f.search) {
				return true
			}
		}
		return false
	}
	return true
}

// sessionRow is OpenClaw's GatewaySessionRow (spec §5.2), as far as
// Talon's entries have its fields.
type sessionRow struct {
	Key                string `json:"key"`
	Kind               string `json:"kind"`
	UpdatedAt          int64  `json:"updatedAt"`
	SessionID          string `json:"sessionId,omitempty"`
	Label              string `json:"label,omitempty"`
	DisplayName        string `json:"displayName,omitempty"`
	DerivedTitle       string `json:"derivedTitle,omitempty"`
	LastMessagePreview string `json:"lastMessagePreview,omitempty"`
	ChatType           string `json:"chatType,omitempty"`
	ThinkingLevel      string `json:"thinkingLevel,omitempty"`
	VerboseLevel       string `json:"verboseLevel,omitempty"`
	ReasoningLevel     string `json:"reasoningLevel,omitempty"`
	ElevatedLevel      string `json:"elevatedLevel,omitempty"`
	ResponseUsage      string `json:"responseUsage,omitempty"`
	SendPolicy         string `json:"sendPolicy,omitempty"`
	GroupActivation    string `json:"groupActivation,omitempty"`
	ExecHost           string `json:"execHost,omitempty"`
	ExecSecurity       string `json:"execSecurity,omitempty"`
	ExecAsk            string `json:"execAsk,omitempty"`
	ExecNode           string `json:"execNode,omitempty"`
	InputTokens        int64  `json:"inputTokens,omitempty"`
	OutputTokens       int64  `json:"outputTokens,omitempty"`
	// TotalTokens is the context in use: the last model call's prompt,
	// or after a compaction its estimate (TotalTokensFresh false) until
	// the next call reports usage.
	TotalTokens      int64 `json:"totalTokens,omitempty"`
	TotalTokensFresh *bool `json:"totalTokensFresh,omitempty"`
	CompactionCount  int64 `json:"compactionCount,omitempty"`
	// The Cumulative counters are Talon's (session.Entry).
	CumulativeInputTokens  int64  `json:"cumulativeInputTokens,omitempty"`
	CumulativeOutputTokens int64  `json:"cumulativeOutputTokens,omitempty"`
	CumulativeTotalTokens  int64  `json:"cumulativeTotalTokens,omitempty"`
	ModelProvider          string `json:"modelProvider,omitempty"`
	Model                  string `json:"model,omitempty"`
	ProviderOverride       string `json:"providerOverride,omitempty"`
	ModelOverride          string `json:"modelOverride,omitempty"`
	ContextTokens          *int64 `json:"contextTokens,omitempty"`
	SpawnedBy              string `json:"spawnedBy,omitempty"`
	SpawnDepth             *int   `json:"spawnDepth,omitempty"`
	AbortedLastRun         bool   `json:"abortedLastRun,omitempty"`
	SystemSent             bool   `json:"systemSent,omitempty"`
	// The channel fields of spec channels.md R4.7: where a chat session's
	// conversation is (its entry's, as a channel turn wrote them).
	Channel          string `json:"channel,omitempty"`
	LastChannel      string `json:"lastChannel,omitempty"`
	LastTo           string `json:"lastTo,omitempty"`
	LastAccountID    string `json:"lastAccountId,omitempty"`
	LastThreadID     string `json:"lastThreadId,omitempty"`
	ParentSessionKey string `json:"parentSessionKey,omitempty"`
}

// extraString is a string member of an entry's Extra ("" when absent or
// not a string).
func extraString(e *session.Entry, name string) string {
	var s string
	if raw, ok := e.Extra[name]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// sessionKind classifies a key as OpenClaw does.
func sessionKind(key string, e *session.Entry) string {
	switch {
	case key == session.GlobalKey:
		return "global"
	case key == session.UnknownKey:
		return "unknown"
	case e.ChatType == "group" || e.ChatType == "channel" || strings.Contains(key, ":group:") || strings.Contains(key, ":channel:"):
		return "group"
	}
	return "direct"
}

func newSessionRow(cfg *config.Config, agentID string, r store.SessionRow) sessionRow {
	e := &r.Entry
	m := sessionModel(cfg, agentID, *e)
	return sessionRow{
		Key: r.Key, Kind: sessionKind(r.Key, e), UpdatedAt: e.UpdatedAt, SessionID: e.SessionID,
		Label: e.Label, DisplayName: e.DisplayName, ChatType: e.ChatType,
		ThinkingLevel: e.ThinkingLevel, VerboseLevel: e.VerboseLevel, ReasoningLevel: e.ReasoningLevel,
		ElevatedLevel: e.ElevatedLevel, ResponseUsage: e.ResponseUsage, SendPolicy: e.SendPolicy,
		GroupActivation: e.GroupActivation,
		ExecHost:        e.ExecHost, ExecSecurity: e.ExecSecurity, ExecAsk: e.ExecAsk, ExecNode: e.ExecNode,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, TotalTokens: e.TotalTokens,
		TotalTokensFresh: e.TotalTokensFresh, CompactionCount: e.CompactionCount,
		CumulativeInputTokens: e.CumulativeInputTokens, CumulativeOutputTokens: e.CumulativeOutputTokens,
		CumulativeTotalTokens: e.CumulativeTotalTokens,
		ModelProvider:         m.Provider, Model: m.Model, ProviderOverride: e.ProviderOverride, ModelOverride: e.ModelOverride,
		ContextTokens: contextTokens(cfg, m), SpawnedBy: e.SpawnedBy, SpawnDepth: e.SpawnDepth,
		AbortedLastRun: e.AbortedLastRun, SystemSent: e.SystemSent,
		Channel: extraString(e, "channel"), LastChannel: extraString(e, "lastChannel"), LastTo: extraString(e, "lastTo"),
		LastAccountID: extraString(e, "lastAccountId"), LastThreadID: extraString(e, "lastThreadId"),
		ParentSessionKey: extraString(e, "parentSessionKey"),
	}
}

func sessionsList(_ *Server, c *call) (any, error) {
	f, err := c.listFilter()
	if err != nil {
		return nil, err
	}
	cfg := c.rt.file.Config
	db := c.storeOf()
	agents := cfg.AgentIDs()
	if f.agent != "" {
		agents = []string{f.agent}
	}
	// Without a filter each agent's newest limit rows suffice (two more
	// for the global and unknown rows left out).
	perAgent := 0
	if !f.scans() {
		perAgent = f.limit + 2
	}
	type found struct {
		agent string
		row   store.SessionRow
	}
	var all []found
	for _, a := range agents {
		rows, err := db.ListSessions(c.ctx, a, perAgent, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if f.keep(a, r) {
				all = append(all, found{a, r})
			}
		}
	}
	slices.SortFunc(all, func(x, y found) int {
		return cmp.Or(cmp.Compare(y.row.Entry.UpdatedAt, x.row.Entry.UpdatedAt), strings.Compare(x.row.Key, y.row.Key))
	})
	all = all[:min(len(all), f.limit)]
	out := make([]sessionRow, len(all))
	for i, x := range all {
		out[i] = newSessionRow(cfg, x.agent, x.row)
		if err := f.describe(c.ctx, db, &out[i]); err != nil {
			return nil, err
		}
	}
	def := provider.DefaultModel(cfg, cfg.DefaultAgentID())
	return map[string]any{
		"ts": time.Now().UnixMilli(), "path": db.Path(), "count": len(out),
		"defaults": map[string]any{"modelProvider": def.Provider, "model": def.Model, "contextTokens": contextTokens(cfg, def)},
		"sessions": out,
	}, nil
}

// describe adds the derived title (from the first user message) and the
// last message preview (the last user or assistant text) when asked,
// reading a few messages at either end of the row's transcript. System
// events are neither: a title or a preview is what people said.
func (f *sessionFilter) describe(ctx context.Context, db *store.DB, row *sessionRow) error {
	if f.titles && row.SessionID != "" {
		head, err := db.TranscriptHead(ctx, row.SessionID, listProbeMessages)
		if err != nil {
			return err
		}
		for _, r := range head {
			if r.Message.Role == llm.RoleUser && strings.TrimSpace(r.Message.Content) != "" && !agent.IsSystemEvent(r.Message) {
				row.DerivedTitle = oneLine(r.Message.Content, titleRunes)
				break
			}
		}
	}
	if f.previews && row.SessionID != "" {
		tail, err := db.TranscriptRecords(ctx, row.SessionID, listProbeMessages)
		if err != nil {
			return err
		}
		tail = store.Visible(tail)
		for i := len(tail) - 1; i >= 0; i-- {
			m := tail[i].Message
			if (m.Role == llm.RoleUser || m.Role == llm.RoleAssistant) && strings.TrimSpace(m.Content) != "" && !agent.IsSystemEvent(m) {
				row.LastMessagePreview = oneLine(m.Content, previewRunes)
				break
			}
		}
	}
	return nil
}

// oneLine collapses runs of white space to one space and cuts the text to
// max runes, marking a cut with an ellipsis.
func oneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)[:max-1]
	return strings.TrimRightFunc(string(r), unicode.IsSpace) + "…"
}
