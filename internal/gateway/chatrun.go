package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"talon/internal/agent"
	"talon/internal/compaction"
	"talon/internal/llm"
	"talon/internal/provider"
	"talon/internal/tools"
	"talon/protocol"
)

// Run timing.
const (
	// chatDeltaInterval is the least time between two chat delta events
	// of a run, upstream's throttle; agent assistant events carry every
	// fragment as it comes.
	chatDeltaInterval = 150 * time.Millisecond
	// abortWait bounds how long an abort waits for the runs it stopped to
	// end, so that their aborted events reach the client before the
	// answer does.
	abortWait = 10 * time.Second
)

// silentReply is the whole answer of an agent with nothing to say; chat
// events do not show it (spec §2.2).
const silentReply = "NO_REPLY"

// Why a run's context ended.
var (
	errAbortRPC   = errors.New("aborted by chat.abort")
	errAbortStop  = errors.New("aborted by a stop command")
	errShutdown   = errors.New("aborted: the gateway is shutting down")
	errRunTimeout = errors.New("run timed out")
)

// stopReason is how chat events name an abort's cause, as upstream does.
func stopReason(cause error) string {
	switch cause {
	case errAbortStop:
		return "stop"
	case errShutdown:
		return "restart"
	}
	return "rpc"
}

// runRegistry holds the chat.send and agent runs in flight, per tenant,
// with each tenant's idempotency cache. A run belongs to the server, not
// to the request that started it: it goes on when its client leaves and
// ends when done, aborted, or at shutdown (drain).
type runRegistry struct {
	mu      sync.Mutex
	ctx     context.Context // every run's parent; cancelled to abort them all
	cancel  context.CancelCauseFunc
	closing bool
	wg      sync.WaitGroup
	tenants map[*tenant]*tenantRuns
}

// tenantRuns are one tenant's runs and idempotency cache.
type tenantRuns struct {
	active map[string]*chatRun // by runId; guarded by runRegistry.mu
	idem   idemCache
}

// of returns the tenant's runs, creating them on first use.
func (g *runRegistry) of(t *tenant) *tenantRuns {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ofLocked(t)
}

func (g *runRegistry) ofLocked(t *tenant) *tenantRuns {
	if g.tenants == nil {
		g.tenants = map[*tenant]*tenantRuns{}
	}
	tr := g.tenants[t]
	if tr == nil {
		tr = &tenantRuns{active: map[string]*chatRun{}}
		g.tenants[t] = tr
	}
	return tr
}

// add registers r as running and returns its context: cancelled by an
// abort (the cause says which), at shutdown, or after timeout (> 0). It
// refuses while the gateway shuts down and when a run in flight has the
// same id.
func (g *runRegistry) add(r *chatRun, timeout time.Duration) (context.Context, *protocol.Error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return nil, &protocol.Error{Code: protocol.CodeUnavailable, Message: "the gateway is shutting down; retry after it restarts", Retryable: true, RetryAfterMs: 1000}
	}
	tr := g.ofLocked(r.t)
	if other := tr.active[r.id]; other != nil {
		return nil, protocol.Errorf("idempotencyKey %q is the runId of a %s run still in flight", r.id, other.kind)
	}
	if g.ctx == nil {
		g.ctx, g.cancel = context.WithCancelCause(context.Background())
	}
	ctx, cancel := context.WithCancelCause(g.ctx)
	r.cancel = cancel
	if timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, timeout, errRunTimeout)
		r.cancel = func(cause error) { cancel(cause); stop() }
	}
	tr.active[r.id] = r
	g.wg.Add(1)
	return ctx, nil
}

// remove forgets a run that has ended.
func (g *runRegistry) remove(r *chatRun) {
	g.mu.Lock()
	if tr := g.tenants[r.t]; tr != nil && tr.active[r.id] == r {
		delete(tr.active, r.id)
	}
	g.mu.Unlock()
	r.cancel(nil) // releases the context's resources
	g.wg.Done()
}

// forget drops t's runs and idempotency cache, and returns its runs in
// flight, for the caller to abort.
func (g *runRegistry) forget(t *tenant) []*chatRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	tr := g.tenants[t]
	delete(g.tenants, t)
	if tr == nil {
		return nil
	}
	out := make([]*chatRun, 0, len(tr.active))
	for _, r := range tr.active {
		out = append(out, r)
	}
	return out
}

// active says t has a run in flight or a request waiting on one's answer.
func (g *runRegistry) active(t *tenant) bool {
	g.mu.Lock()
	tr := g.tenants[t]
	g.mu.Unlock()
	return tr != nil && (len(tr.active) > 0 || tr.idem.pending())
}

// release drops t's idempotency cache when nothing of it is in flight:
// the tenant closes, and a retry after that is a new request.
func (g *runRegistry) release(t *tenant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if tr := g.tenants[t]; tr != nil && len(tr.active) == 0 && !tr.idem.pending() {
		delete(g.tenants, t)
	}
}

// get returns the tenant's run in flight with this id, or nil.
func (g *runRegistry) get(t *tenant, id string) *chatRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ofLocked(t).active[id]
}

// ofSession returns the tenant's runs in flight on a session, by runId.
func (g *runRegistry) ofSession(t *tenant, key string) []*chatRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*chatRun
	for _, r := range g.ofLocked(t).active {
		if r.key == key {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// abort cancels runs with cause and waits (at most abortWait, or until
// ctx ends) for them to end; it returns their ids.
func abortRuns(ctx context.Context, runs []*chatRun, cause error) []string {
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		r.cancel(cause)
		ids = append(ids, r.id)
	}
	timer := time.NewTimer(abortWait)
	defer timer.Stop()
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ids
		case <-timer.C:
			return ids
		}
	}
	return ids
}

// drain refuses new runs, lets those in flight finish until ctx ends,
// then aborts them (each turn ends with an aborted record and event) and
// waits for them to end.
func (g *runRegistry) drain(ctx context.Context) {
	g.mu.Lock()
	g.closing = true
	cancel := g.cancel
	g.mu.Unlock()
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	if cancel != nil {
		cancel(errShutdown)
	}
	<-done
}

// chatRun is one chat.send or agent run: an agent turn on a session whose
// progress goes out as chat and agent events, and whose answer stays in
// the tenant's idempotency cache.
type chatRun struct {
	s       *Server
	t       *tenant
	rt      *runtime
	id      string // the runId: the request's idempotencyKey
	kind    string // "chat" or "agent"
	key     string // canonical session key
	agentID string
	starter *conn // tool events go to it alone
	idem    *idemCache
	entry   *idemEntry
	req     agent.Request
	// cmd is the chat command (/compact, /status) the run answers instead
	// of a turn, with its argument; "" for a turn.
	cmd, arg   string
	timeout    time.Duration
	acceptedAt time.Time
	cancel     context.CancelCauseFunc // set by runRegistry.add
	done       chan struct{}           // closed when the run has ended

	mu        sync.Mutex // orders the run's events; guards what follows
	startedAt time.Time
	chatSeq   int64
	agentSeq  int64
	text      string // the current assistant message so far
	sent      int    // bytes of text the chat deltas have carried
	replace   bool   // the next chat delta starts a new message
	newText   bool   // a tool ran: the next text starts a new message
	lastDelta time.Time
	timer     *time.Timer // a chat delta due later
	ended     bool
	out       runOutcome
	waiters   []waiter // agent requests waiting for the final answer
}

// waiter is an agent request that gets the run's final answer.
type waiter struct {
	c  *conn
	id string
}

// runOutcome is how a run ended.
type runOutcome struct {
	status     string // ok, error, timeout or aborted
	stopReason string
	message    string // what went wrong, for a client
	errorKind  string // refusal, timeout, rate_limit, context_length or unknown
	res        *agent.Result
	endedAt    time.Time
	// payload and err are the agent request's final answer.
	payload any
	err     *protocol.Error
}

// newRun prepares a run of req on a session for the request c; the
// handler registers it (runRegistry.add), answers, and only then starts
// it, so that no event of the run precedes the answer.
func (s *Server) newRun(c *call, kind, id, key, agentID string, req agent.Request, timeout time.Duration) *chatRun {
	return s.prepareRun(c.t, c.rt, c.c, kind, id, key, agentID, req, timeout)
}

// prepareRun is newRun for a run that may have no client: a channel's
// (starter nil), whose tool events then go to nobody.
func (s *Server) prepareRun(t *tenant, rt *runtime, starter *conn, kind, id, key, agentID string, req agent.Request, timeout time.Duration) *chatRun {
	r := &chatRun{
		s: s, t: t, rt: rt, id: id, kind: kind, key: key, agentID: agentID, starter: starter,
		req: req, timeout: timeout, acceptedAt: time.Now(), done: make(chan struct{}),
	}
	r.req.AgentID, r.req.SessionKey, r.req.Owner = agentID, key, true
	r.req.OnDelta = r.onDelta
	r.req.OnToolStart = r.onToolStart
	r.req.OnToolResult = r.onToolResult
	r.req.OnCompaction = r.onCompaction
	lk := sessionLockKey(t, key)
	r.req.Waiting = func() bool { return s.locks.waiting(lk) }
	return r
}

// run executes the turn and announces its end.
func (r *chatRun) run(ctx context.Context) {
	res, err := r.turn(ctx)
	r.req = agent.Request{} // the input may hold images; keep no copy
	r.finish(ctx, res, err)
}

// turn runs the agent under the session's lock, as the HTTP endpoint
// does. A panic fails the run rather than the gateway: no request
// goroutine (whose panics net/http recovers) is there to catch it.
func (r *chatRun) turn(ctx context.Context) (res *agent.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.s.log.Error("run panicked", "tenant", r.t.id, "run", r.id, "panic", p, "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("run panicked: %v", p)
		}
	}()
	if r.cmd != "" {
		// A command does not queue behind the session's runs: /compact
		// says it cannot run now instead (spec context.md R5.8).
		r.start()
		text, err := r.s.command(ctx, r.t, r.rt, r.agentID, r.key, r.cmd, r.arg, r.onCompaction)
		if err != nil {
			return nil, err
		}
		return &agent.Result{Text: text, FinishReason: provider.FinishStop}, nil
	}
	unlock, err := r.s.locks.lock(ctx, sessionLockKey(r.t, r.key))
	if err != nil {
		return nil, err
	}
	defer unlock()
	r.start()
	// The session's queued system events go with this turn (spec
	// automation.md R8.2): taken under its lock, so one queued during
	// another turn waits for the next.
	r.req.Input = withEvents(r.req.Input, r.t.events().drain(r.key), r.rt.file.Config)
	return r.rt.runner.Run(ctx, r.req)
}

// start announces that the turn has begun (it has the session).
func (r *chatRun) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.startedAt = time.Now()
	r.emitAgent(lifecycle{Phase: "start", StartedAt: r.startedAt.UnixMilli()})
}

// finish records the outcome, answers the idempotency cache and the
// waiting agent requests, and sends the terminal events.
func (r *chatRun) finish(ctx context.Context, res *agent.Result, err error) {
	out := r.outcome(ctx, res, err)
	if out.status == "error" {
		r.s.log.Error("run failed", "tenant", r.t.id, "agent", r.agentID, "session", r.key, "run", r.id, "err", err)
	}
	switch {
	case r.kind == "agent":
		out.payload, out.err = r.agentAnswer(ctx, out)
		r.idem.finish(r.entry, out.payload, out.err, out.endedAt)
	case r.idem != nil: // a channel's run has no idempotency entry
		payload, perr := r.chatAnswer(out)
		r.idem.finish(r.entry, payload, perr, out.endedAt)
	}

	r.mu.Lock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.ended, r.out = true, out
	r.emitChat(r.terminalChat(out), false)
	r.emitAgent(r.terminalLifecycle(out))
	for _, w := range r.waiters {
		w.c.sendResponse(w.id, out.payload, out.err)
	}
	// The ended run stays in the idempotency cache for agent.wait: it
	// keeps its outcome, not the connection, config or text.
	r.waiters, r.starter, r.rt, r.text = nil, nil, nil, ""
	r.mu.Unlock()

	r.s.runs.remove(r)
	close(r.done)
}

// abandon ends a run that could not be registered: the agent requests
// following it get err.
func (r *chatRun) abandon(err *protocol.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	for _, w := range r.waiters {
		w.c.sendResponse(w.id, nil, err)
	}
	r.waiters = nil
}

// acceptedPayload is the agent request's first answer.
func (r *chatRun) acceptedPayload() map[string]any {
	return map[string]any{"runId": r.id, "status": "accepted", "acceptedAt": r.acceptedAt.UnixMilli(), "sessionKey": r.key, "agentId": r.agentID}
}

// follow makes an agent request follow the run: it gets the accepted
// answer now and the final one when the run ends. False, with nothing
// sent, when the run has already ended (the cache has the answer).
func (r *chatRun) follow(c *conn, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return false
	}
	c.sendResponse(id, r.acceptedPayload(), nil)
	r.waiters = append(r.waiters, waiter{c: c, id: id})
	return true
}

// outcome classifies how the turn ended.
func (r *chatRun) outcome(ctx context.Context, res *agent.Result, err error) runOutcome {
	out := runOutcome{endedAt: time.Now(), res: res}
	cause := context.Cause(ctx)
	switch {
	case err == nil:
		out.status = "ok"
	case errors.Is(cause, errRunTimeout):
		out.status, out.errorKind = "timeout", "timeout"
		out.message = fmt.Sprintf("run timed out after %s", r.timeout)
	case ctx.Err() != nil:
		out.status, out.stopReason = "aborted", stopReason(cause)
		out.message = "run aborted (" + out.stopReason + ")"
	default:
		out.status, out.message, out.errorKind = "error", safeRunError(err), errorKind(err)
	}
	return out
}

// errorKind sorts a failed run for chat error events.
func errorKind(err error) string {
	if budgetRefusal(err) != nil {
		return errBudgetType
	}
	var oe *agent.OverflowError
	if errors.As(err, &oe) {
		return compaction.ErrorKind
	}
	var perr *provider.Error
	if errors.As(err, &perr) {
		text := strings.ToLower(perr.Type + " " + perr.Message)
		ov, overflow := compaction.ParseOverflow(perr.Status, perr.Type, perr.Message)
		switch {
		case perr.Status == 429 || strings.Contains(text, "rate_limit") || strings.Contains(text, "rate limit") || overflow && ov.Terminal:
			return "rate_limit"
		case overflow:
			return compaction.ErrorKind
		case perr.Status == 408 || strings.Contains(text, "timed out") || strings.Contains(text, "stream idle"):
			return "timeout"
		case strings.Contains(text, "refus") || strings.Contains(text, "content_filter"):
			return "refusal"
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "unknown"
}

// chatAnswer is what a retried chat.send gets once the run has ended: its
// outcome, as upstream replays it.
func (r *chatRun) chatAnswer(out runOutcome) (any, *protocol.Error) {
	switch out.status {
	case "ok":
		return map[string]any{"runId": r.id, "status": "ok"}, nil
	case "aborted":
		return map[string]any{"runId": r.id, "status": "aborted", "stopReason": out.stopReason}, nil
	}
	return r.failure(out)
}

// failure is the answer of a run that failed or timed out: ok false,
// with the run's status in the payload too.
func (r *chatRun) failure(out runOutcome) (any, *protocol.Error) {
	payload := map[string]any{"runId": r.id, "status": out.status, "summary": out.message}
	if out.stopReason != "" {
		payload["stopReason"] = out.stopReason
	}
	code := protocol.CodeUnavailable
	switch {
	case out.status == "timeout":
		code = protocol.CodeAgentTimeout
	case out.errorKind == errBudgetType:
		code = protocol.CodeBudgetExceeded
	}
	return payload, &protocol.Error{Code: code, Message: out.message, Retryable: out.stopReason == "restart"}
}

// agentAnswer is the agent request's final answer.
func (r *chatRun) agentAnswer(ctx context.Context, out runOutcome) (any, *protocol.Error) {
	if out.status == "aborted" {
		out.status = "error"
	}
	if out.status != "ok" {
		return r.failure(out)
	}
	res := out.res
	payloads := []map[string]any{}
	if text := res.Text; strings.TrimSpace(text) != "" && strings.TrimSpace(text) != silentReply {
		payloads = append(payloads, map[string]any{"text": text})
	}
	ref := provider.ShownModel(res.Model)
	meta := map[string]any{"provider": ref.Provider, "model": ref.Model, "usage": usageOf(res.Usage)}
	// The transcript id, as upstream reports it; the run has just written it.
	if e, err := r.rt.runner.Store.GetSession(context.WithoutCancel(ctx), r.agentID, r.key); err == nil {
		meta["sessionId"] = e.SessionID
	}
	return map[string]any{
		"runId": r.id, "status": "ok", "summary": "completed",
		"result": map[string]any{
			"payloads": payloads,
			"meta": map[string]any{
				"durationMs": out.endedAt.Sub(r.startedAt).Milliseconds(),
				"agentMeta":  meta,
				"stopReason": res.FinishReason,
			},
		},
	}, nil
}

func usageOf(u provider.Usage) map[string]int {
	return map[string]int{"input": u.PromptTokens, "output": u.CompletionTokens, "total": u.TotalTokens}
}

// Event payloads.
type (
	agentEvent struct {
		RunID      string `json:"runId"`
		Seq        int64  `json:"seq"`
		Stream     string `json:"stream"`
		Ts         int64  `json:"ts"`
		Data       any    `json:"data"`
		SessionKey string `json:"sessionKey"`
	}
	lifecycle struct {
		Phase      string `json:"phase"`
		StartedAt  int64  `json:"startedAt,omitempty"`
		EndedAt    int64  `json:"endedAt,omitempty"`
		Error      string `json:"error,omitempty"`
		Aborted    bool   `json:"aborted,omitempty"`
		StopReason string `json:"stopReason,omitempty"`
	}
	chatEvent struct {
		RunID        string            `json:"runId"`
		SessionKey   string            `json:"sessionKey"`
		Seq          int64             `json:"seq"`
		State        string            `json:"state"`
		Message      *assistantMessage `json:"message,omitempty"`
		DeltaText    string            `json:"deltaText,omitempty"`
		Replace      bool              `json:"replace,omitempty"`
		Usage        map[string]int    `json:"usage,omitempty"`
		StopReason   string            `json:"stopReason,omitempty"`
		ErrorMessage string            `json:"errorMessage,omitempty"`
		ErrorKind    string            `json:"errorKind,omitempty"`
	}
	assistantMessage struct {
		Role      string     `json:"role"`
		Content   []textPart `json:"content"`
		Timestamp int64      `json:"timestamp"`
		// Provider and Model name the model that answered, in a final
		// event only (a transcript message's model?, provider?).
		Provider string `json:"provider,omitempty"`
		Model    string `json:"model,omitempty"`
	}
	toolData struct {
		Phase      string          `json:"phase"`
		Name       string          `json:"name"`
		ToolCallID string          `json:"toolCallId"`
		Args       json.RawMessage `json:"args,omitempty"`
		Result     *toolOutput     `json:"result,omitempty"`
		IsError    bool            `json:"isError,omitempty"`
	}
	toolOutput struct {
		Content []textPart `json:"content"`
	}
)

func messageOf(text string) *assistantMessage {
	return &assistantMessage{Role: "assistant", Content: []textPart{{Type: "text", Text: text}}, Timestamp: time.Now().UnixMilli()}
}

// silent reports whether text is, or may still become, the silent reply.
func silent(text string) bool {
	t := strings.TrimSpace(text)
	return t != "" && strings.HasPrefix(silentReply, t)
}

// emitAgent broadcasts an agent event of the run; r.mu is held. A
// lifecycle is the "lifecycle" stream, a compaction "compaction",
// anything else "assistant".
func (r *chatRun) emitAgent(data any) {
	stream := "assistant"
	switch data.(type) {
	case lifecycle:
		stream = "lifecycle"
	case compactionData:
		stream = "compaction"
	}
	r.agentSeq++
	r.s.broadcast(r.t, protocol.EventAgent, agentEvent{RunID: r.id, Seq: r.agentSeq, Stream: stream, Ts: time.Now().UnixMilli(), Data: data, SessionKey: r.key})
}

// emitChat broadcasts a chat event of the run; r.mu is held. Deltas may
// be dropped for a client that cannot keep up: the next delta and the
// final carry the whole text.
func (r *chatRun) emitChat(ev chatEvent, delta bool) {
	r.chatSeq++
	ev.RunID, ev.SessionKey, ev.Seq = r.id, r.key, r.chatSeq
	if delta {
		r.s.broadcastDroppable(r.t, protocol.EventChat, ev)
		return
	}
	r.s.broadcast(r.t, protocol.EventChat, ev)
}

// onDelta relays a streamed fragment: an agent event at once, a chat
// delta at most every chatDeltaInterval.
func (r *chatRun) onDelta(frag string) {
	if frag == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if r.newText {
		r.text, r.sent, r.replace, r.newText = "", 0, true, false
	}
	r.text += frag
	r.emitAgent(map[string]string{"text": r.text, "delta": frag})
	if r.timer != nil {
		return // a delta is due
	}
	if wait := chatDeltaInterval - time.Since(r.lastDelta); wait > 0 {
		r.timer = time.AfterFunc(wait, r.flushLater)
		return
	}
	r.flushDelta()
}

func (r *chatRun) flushLater() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	if !r.ended {
		r.flushDelta()
	}
}

// flushDelta sends the text not yet sent as a chat delta; r.mu is held.
// The start of a silent reply is held back.
func (r *chatRun) flushDelta() {
	if r.sent == len(r.text) || silent(r.text) {
		return
	}
	ev := chatEvent{State: "delta", Message: messageOf(r.text), DeltaText: r.text[r.sent:], Replace: r.replace}
	r.sent, r.replace, r.lastDelta = len(r.text), false, time.Now()
	r.emitChat(ev, true)
}

// onCompaction relays a compaction of the run's session as an agent
// event (R9.4), and tells the tenant when one committed.
func (r *chatRun) onCompaction(ev agent.CompactionEvent) {
	r.mu.Lock()
	if !r.ended {
		r.emitAgent(newCompactionData(ev))
	}
	r.mu.Unlock()
	if ev.Phase == "end" && ev.Completed {
		r.s.compactionsChanged(r.t, sessionTarget{agent: r.agentID, key: r.key}, "")
	}
}

// onToolStart tells the client that started the run which tool runs;
// the text after a tool is a new assistant message.
func (r *chatRun) onToolStart(call llm.ToolCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.newText = true
	var args json.RawMessage
	if json.Valid([]byte(call.Arguments)) {
		args = json.RawMessage(call.Arguments)
	}
	r.emitTool(toolData{Phase: "start", Name: call.Name, ToolCallID: call.ID, Args: args})
}

// onToolResult tells the client that started the run a tool's result.
func (r *chatRun) onToolResult(call llm.ToolCall, res tools.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.emitTool(toolData{Phase: "result", Name: call.Name, ToolCallID: call.ID,
		Result: &toolOutput{Content: []textPart{{Type: "text", Text: res.Text}}}, IsError: res.IsError})
}

// emitTool sends a tool-stream agent event to the run's starter only (as
// upstream does: tool arguments and results can be large and private);
// r.mu is held.
func (r *chatRun) emitTool(d toolData) {
	r.agentSeq++
	if r.starter == nil {
		return
	}
	r.starter.sendEvent(protocol.EventAgent, agentEvent{RunID: r.id, Seq: r.agentSeq, Stream: "tool", Ts: time.Now().UnixMilli(), Data: d, SessionKey: r.key}, false)
}

// terminalChat is the chat event that ends the run.
func (r *chatRun) terminalChat(out runOutcome) chatEvent {
	switch out.status {
	case "ok":
		ev := chatEvent{State: "final", StopReason: out.res.FinishReason, Usage: usageOf(out.res.Usage)}
		if t := strings.TrimSpace(out.res.Text); t != "" && t != silentReply {
			ev.Message = messageOf(out.res.Text)
			// As a transcript's assistant message names them: the model
			// that answered, a fallback's when the primary failed.
			m := provider.ShownModel(out.res.Model)
			ev.Message.Provider, ev.Message.Model = m.Provider, m.Model
		}
		return ev
	case "aborted":
		ev := chatEvent{State: "aborted", StopReason: out.stopReason}
		if strings.TrimSpace(r.text) != "" && !silent(r.text) {
			ev.Message = messageOf(r.text)
		}
		return ev
	}
	return chatEvent{State: "error", ErrorMessage: out.message, ErrorKind: out.errorKind}
}

// terminalLifecycle is the agent lifecycle event that ends the run.
func (r *chatRun) terminalLifecycle(out runOutcome) lifecycle {
	l := lifecycle{Phase: "end", EndedAt: out.endedAt.UnixMilli()}
	if !r.startedAt.IsZero() {
		l.StartedAt = r.startedAt.UnixMilli()
	}
	switch out.status {
	case "aborted":
		l.Aborted, l.StopReason = true, out.stopReason
	case "error", "timeout":
		l.Phase, l.Error = "error", out.message
	}
	return l
}

// waitStatus is the run as agent.wait reports it.
func (r *chatRun) waitStatus() map[string]any {
	out := map[string]any{"runId": r.id}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.startedAt.IsZero() {
		out["startedAt"] = r.startedAt.UnixMilli()
	}
	if !r.ended {
		out["status"] = "pending"
		return out
	}
	out["endedAt"] = r.out.endedAt.UnixMilli()
	switch r.out.status {
	case "ok", "timeout":
		out["status"] = r.out.status
	default:
		out["status"] = "error"
		out["error"] = r.out.message
	}
	if r.out.stopReason != "" {
		out["stopReason"] = r.out.stopReason
	} else if r.out.res != nil {
		out["stopReason"] = r.out.res.FinishReason
	}
	return out
}
