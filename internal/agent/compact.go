package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"talon/internal/compaction"
	"talon/internal/config"
	"talon/internal/llm"
	"talon/internal/provider"
	"talon/internal/store"
)

// This file is compaction as a run and the gateway do it (spec context.md
// §5): the summariser calls with their timeout, the hard trim when they
// fail, the commit, and what the user is told.

// CompactionEvent is a compaction's start or end (spec context.md R9.4),
// for the listeners of a run or of a manual compaction.
type CompactionEvent struct {
	Phase  string // "start" or "end"
	Reason string // compaction.ReasonManual, ReasonThreshold or ReasonOverflow
	// The rest is the end's: whether a compaction was committed, whether
	// the request that overflowed is sent again, the estimated context
	// before and after and the window, whether the summary is the hard
	// trim's stub, and why nothing was committed.
	Completed, WillRetry      bool
	TokensBefore, TokensAfter int64
	Window                    int64
	HardTrim                  bool
	Error                     string
	// Notice is the line to show the user: the /compact reply (R9.1),
	// or with compaction.notifyUser the automatic start and end notices
	// (R9.2); "" for none.
	Notice string
}

// OverflowError ends a run whose request the model kept refusing as too
// large after the overflow recovery's attempts (R5.4). Its message is
// compaction.OverflowAdvice; the session and its transcript stay as they
// are (never a new sessionId).
type OverflowError struct {
	Attempts int   // the compaction attempts made, at most 3
	Err      error // the provider's last refusal
}

func (e *OverflowError) Error() string { return compaction.OverflowAdvice }
func (e *OverflowError) Unwrap() error { return e.Err }

// maxOverflowAttempts bounds the compactions of one run's overflow
// recovery (R5.3).
const maxOverflowAttempts = 3

// compactRequest says what one compaction is for.
type compactRequest struct {
	reason string // compaction.Reason*
	focus  string // /compact's instructions
	// pending is the input of the turn the transcript does not hold yet.
	pending []llm.Message
	// attempt is the overflow recovery's attempt (1 to 3), stated the
	// size the provider said the refused request had (0: unknown).
	attempt int
	stated  int64
	// ref is the run's model: the summary model unless compaction.model
	// says otherwise. chain, when set, is the run's model chain: a summary
	// of the run's own model falls back along it, as the run's turns do
	// (nil: ref alone).
	ref   string
	chain *provider.Chain
}

// compactOutcome is what a compaction did.
type compactOutcome struct {
	compacted bool
	// skipped is compaction.ErrAlreadyCompacted or ErrNothingToCompact;
	// failed why summarising failed when nothing was committed (manual).
	skipped, failed error
	before, after   int64
	record          compaction.Compaction
}

// compact compacts v's transcript (R5.9–R5.13): it plans the cut, has the
// summary model summarise what leaves the view within the per-compaction
// timeout, and commits the compaction entry with the session counters.
// When summarising fails, an automatic compaction commits the hard trim
// instead, so the next request fits (better-item 1); a manual one leaves
// the transcript as it is. The last overflow attempt hard-trims without
// a model call. v is reread after a commit. Its error is the run's
// cancellation or the store's; anything else is in the outcome.
func (r *Runner) compact(ctx context.Context, v *view, cr compactRequest, on func(CompactionEvent)) (compactOutcome, error) {
	entries := v.entries
	if cr.reason == compaction.ReasonOverflow {
		entries = rebase(entries)
	}
	pendingTokens := compaction.Tokens{}
	pendingTokens.Add(cr.pending...)
	out := compactOutcome{before: v.size(v.tokens(cr.pending))}
	budget := v.set.Budget(v.win.Tokens, v.fixed+pendingTokens.Total())
	switch {
	case cr.attempt >= maxOverflowAttempts:
		budget = compaction.Budget{}
	case cr.attempt > 1:
		budget.Keep, budget.MaxTail = budget.Keep/4, budget.MaxTail/4
	case cr.stated > out.before && out.before > 0:
		// The estimate fell short of the provider's count: keep as much
		// less as it was short.
		budget.Keep = budget.Keep * out.before / cr.stated
		budget.MaxTail = budget.MaxTail * out.before / cr.stated
	}
	plan, err := compaction.Prepare(entries, budget, cr.pending)
	if err != nil {
		out.skipped = err
		return out, nil
	}
	plan.TokensBefore = max(out.before, cr.stated)
	out.before = plan.TokensBefore
	emit := func(ev CompactionEvent) {
		ev.Reason, ev.Window = cr.reason, v.win.Tokens
		if on != nil {
			on(ev)
		}
	}
	start := CompactionEvent{Phase: "start"}
	if v.set.NotifyUser && cr.reason != compaction.ReasonManual {
		start.Notice = compaction.NoticeStarting
	}
	emit(start)
	r.logInfo("embedded run auto-compaction start", "session", v.key, "reason", cr.reason, "tokensBefore", plan.TokensBefore)

	var rec compaction.Compaction
	var sumErr error
	// calls are the summary model's calls: every one that answered is
	// paid for, whether or not its summary is kept, and goes into the
	// ledger with the compaction's commit, or alone when none is made.
	var calls []*store.Call
	if cr.attempt >= maxOverflowAttempts {
		rec = plan.HardTrim()
	} else {
		rec, calls, sumErr = r.summarize(ctx, v, plan, cr)
	}
	if sumErr != nil {
		end := CompactionEvent{Phase: "end", TokensBefore: out.before, Error: sumErr.Error()}
		if err := ctx.Err(); err != nil {
			r.record(ctx, v.agentID, v.key, calls...)
			emit(end)
			return out, err
		}
		if cr.reason == compaction.ReasonManual {
			r.record(ctx, v.agentID, v.key, calls...)
			out.failed = sumErr
			emit(end)
			return out, nil
		}
		r.logWarn("compaction: summarising failed; trimming the oldest turns instead", "session", v.key, "err", sumErr)
		rec = plan.HardTrim()
	}
	after := compaction.Estimate(append(slices.Clip(entries), compaction.Entry{Kind: compaction.KindCompaction, Compaction: &rec}))
	after.Add(cr.pending...)
	out.after = v.size(after)
	e, _, err := r.Store.AppendCompaction(context.WithoutCancel(ctx), v.agentID, v.key, v.sessionID, rec, out.after, calls...)
	if err != nil {
		r.record(ctx, v.agentID, v.key, calls...)
		emit(CompactionEvent{Phase: "end", TokensBefore: out.before, Error: "committing the compaction failed"})
		return out, err
	}
	out.compacted, out.record = true, rec
	v.flushed = e.MemoryFlushCompactionCount != nil && *e.MemoryFlushCompactionCount == e.CompactionCount
	if err := v.read(context.WithoutCancel(ctx), r.Store); err != nil {
		return out, err
	}
	end := CompactionEvent{Phase: "end", Completed: true, WillRetry: cr.reason == compaction.ReasonOverflow,
		TokensBefore: out.before, TokensAfter: out.after, HardTrim: rec.Details.HardTrim}
	if v.set.NotifyUser && cr.reason != compaction.ReasonManual {
		end.Notice = compaction.NoticeDone
	}
	emit(end)
	r.logInfo("embedded run auto-compaction complete", "session", v.key, "reason", cr.reason,
		"tokensBefore", out.before, "tokensAfter", out.after, "hardTrim", rec.Details.HardTrim)
	return out, nil
}

// rebase rewrites a view that ends with a compaction, for overflow
// recovery: the same view, with the compaction first keeping nothing and
// its kept tail after it, so that a compaction can take more of that
// tail out of view (the view was already compacted and still did not
// fit). Other views are returned as they are.
func rebase(entries []compaction.Entry) []compaction.Entry {
	b := len(entries) - 1
	if b < 0 || entries[b].Kind != compaction.KindCompaction || entries[b].Compaction == nil {
		return entries
	}
	c := *entries[b].Compaction
	start := -1
	for i := b - 1; i >= 0 && c.FirstKeptEntryID != ""; i-- {
		if entries[i].ID == c.FirstKeptEntryID {
			start = i
			break
		}
	}
	if start < 0 {
		return entries
	}
	c.FirstKeptEntryID = ""
	out := []compaction.Entry{{ID: entries[b].ID, Kind: compaction.KindCompaction, Compaction: &c}}
	for _, e := range entries[start:b] {
		if e.Kind == compaction.KindMessage {
			out = append(out, e)
		}
	}
	return out
}

// summarize has the summary model summarise a plan within the
// compaction's timeout (R5.10, R5.14): the history's stages, each an
// update of the last, and a split turn's start. calls are the model
// calls that answered, failed or not.
func (r *Runner) summarize(ctx context.Context, v *view, plan *compaction.Plan, cr compactRequest) (_ compaction.Compaction, calls []*store.Call, _ error) {
	ctx, cancel := context.WithTimeoutCause(ctx, v.set.Timeout, fmt.Errorf("compaction timed out after %s", v.set.Timeout))
	defer cancel()
	ref := r.modelFor(v.set.Model, cr.ref)
	ask, err := r.summaryModel(ref, cr, v.set.Model != "" || r.Model != "")
	if err != nil {
		return compaction.Compaction{}, nil, err
	}
	sum := compaction.Summarizer{Window: compaction.ResolveWindow(r.Config, ref).Tokens, MaxTokens: provider.MaxTokens(r.Config, ref)}
	job, err := plan.Job(v.set, v.win.Tokens, sum, cr.focus)
	if err != nil {
		return compaction.Compaction{}, nil, err
	}
	answered := func(ref string, u provider.Usage) { calls = append(calls, r.callOf(store.CallSummary, ref, u)) }
	prev := plan.PreviousSummary
	for i := range job.Stages() {
		if prev, err = askSummary(ctx, ask, job.Request(i, prev), v.set.QualityRetries, answered); err != nil {
			return compaction.Compaction{}, calls, err
		}
	}
	prefix := ""
	if req, ok := job.PrefixRequest(); ok {
		if prefix, err = askSummary(ctx, ask, req, v.set.QualityRetries, answered); err != nil {
			return compaction.Compaction{}, calls, err
		}
	}
	return job.Compaction(prev, prefix), calls, nil
}

// summarizer sends a summary request to a model and says which answered.
type summarizer func(context.Context, *provider.Request) (*provider.Response, string, error)

// summaryModel is how a compaction asks for its summary: the run's chain
// when the summary model is the run's own (OpenClaw retries a summary
// that failed with an error a fallback can fix along the session's
// chain), else ref alone: compaction.model and the operator's --model
// are exact.
func (r *Runner) summaryModel(ref string, cr compactRequest, exact bool) (summarizer, error) {
	if cr.chain != nil && !exact {
		return func(ctx context.Context, req *provider.Request) (*provider.Response, string, error) {
			return cr.chain.Chat(ctx, req, nil)
		}, nil
	}
	prov, model, err := r.Resolve(ref)
	if err != nil {
		return nil, fmt.Errorf("resolving the summary model %q: %w", ref, err)
	}
	return func(ctx context.Context, req *provider.Request) (*provider.Response, string, error) {
		req.Model = model
		out, err := prov.Chat(ctx, req, nil)
		return out, ref, err
	}, nil
}

// askSummary makes one summariser call: an empty answer fails, and with
// the quality guard on (retries > 0) one without the required headings
// is asked for again, at most retries times. answered hears of each call
// that answered, with the model that did and its usage.
func askSummary(ctx context.Context, ask summarizer, req compaction.Request, retries int, answered func(string, provider.Usage)) (string, error) {
	for attempt := 0; ; attempt++ {
		out, ref, err := ask(ctx, &provider.Request{System: req.System, MaxTokens: int(req.MaxTokens),
			Messages: []llm.Message{{Role: llm.RoleUser, Content: req.Prompt}}})
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
				return "", cause
			}
			return "", fmt.Errorf("calling the summary model: %w", err)
		}
		answered(ref, out.Usage)
		text := strings.TrimSpace(out.Content)
		var problem error
		switch {
		case text == "":
			problem = errors.New("the summary is empty")
		case retries > 0:
			problem = req.Check(text)
		}
		if problem == nil {
			return text, nil
		}
		if attempt >= retries {
			return "", fmt.Errorf("the summary model's answer was refused: %w", problem)
		}
		req = req.Retry(problem)
	}
}

// modelFor is the model of a compaction's or a flush's own model call:
// the operator's --model over everything, else the configured one
// (compaction.model, memoryFlush.model; an alias is read), else the run's.
func (r *Runner) modelFor(configured, runRef string) string {
	switch {
	case r.Model != "":
		return r.Model
	case configured != "":
		return provider.Expand(r.Config, configured)
	}
	return runRef
}

// CompactResult is what a manual compaction did (sessions.compact,
// /compact).
type CompactResult struct {
	SessionID string
	// Compacted says a compaction entry was committed; otherwise Reason
	// says why not: nothing to do ("no transcript", compaction's
	// ErrAlreadyCompacted or ErrNothingToCompact), or with Failed, why
	// summarising failed (the transcript is unchanged).
	Compacted bool
	Failed    bool
	Reason    string
	// TokensBefore and TokensAfter are the estimated context before and
	// after, Window the model's window.
	TokensBefore, TokensAfter, Window int64
	Summary, FirstKeptEntryID         string
	// CompactionCount is the session's count after it.
	CompactionCount int64
	// Notice is the /compact reply (R9.1).
	Notice string
}

// ReasonNoTranscript is why a session without messages is not compacted.
const ReasonNoTranscript = "no transcript"

// Compact compacts a session's transcript now (/compact, sessions.compact:
// R5.7), with focus (at most compaction.MaxFocus characters are read) as
// extra instructions to the summary model, and tells on of its start and
// end. The caller holds the session: no run of it may go on meanwhile
// (the gateway's session lock). A session without messages is not
// compacted; summarising that fails leaves the transcript unchanged.
func (r *Runner) Compact(ctx context.Context, agentID, sessionKey, focus string, on func(CompactionEvent)) (*CompactResult, error) {
	agentID = config.NormalizeAgentID(agentID)
	if !r.Config.HasAgent(agentID) {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	entry, err := r.Store.GetSession(ctx, agentID, sessionKey)
	if errors.Is(err, store.ErrNotFound) {
		return &CompactResult{Reason: ReasonNoTranscript, Notice: compaction.NoticeSkipped(ReasonNoTranscript, 0, 0)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionKey, err)
	}
	ref := r.Model
	if ref == "" {
		ref = runModel(r.Config, agentID, "", entry)
	}
	v := newView(r.Config, agentID, sessionKey, ref, entry)
	res := &CompactResult{SessionID: entry.SessionID, Window: v.win.Tokens, CompactionCount: entry.CompactionCount}
	if _, err := v.win.Check(); err != nil {
		return nil, err
	}
	if err := v.read(ctx, r.Store); err != nil {
		return nil, err
	}
	v.fixed = fixedOf(v.entries)
	res.TokensBefore = v.size(v.tokens(nil))
	if !slices.ContainsFunc(v.entries, func(e compaction.Entry) bool { return e.Kind == compaction.KindMessage }) {
		res.Reason = ReasonNoTranscript
		res.Notice = compaction.NoticeSkipped(res.Reason, res.TokensBefore, res.Window)
		return res, nil
	}
	out, err := r.compact(ctx, v, compactRequest{reason: compaction.ReasonManual, focus: focus, ref: ref}, on)
	if err != nil {
		return nil, err
	}
	res.TokensBefore = out.before
	switch {
	case out.compacted:
		res.Compacted, res.TokensAfter = true, out.after
		res.Summary, res.FirstKeptEntryID = out.record.Summary, out.record.FirstKeptEntryID
		res.CompactionCount++
		res.Notice = compaction.NoticeCompacted(out.before, out.after, res.Window)
	case out.failed != nil:
		res.Failed, res.Reason = true, out.failed.Error()
		res.Notice = compaction.NoticeFailed(res.Reason, out.before, res.Window)
	default:
		res.Reason = out.skipped.Error()
		res.Notice = compaction.NoticeSkipped(res.Reason, out.before, res.Window)
	}
	return res, nil
}

// fixedOf estimates what the last request took besides its messages
// (system prompt, tool definitions) from the usage in view: the prompt
// the provider counted less the messages before the answer, estimated.
// 0 when no usage is in view. A manual compaction has no request of its
// own to measure.
func fixedOf(entries []compaction.Entry) int64 {
	for i := len(entries) - 1; i >= 0; i-- {
		e := &entries[i]
		if e.Kind != compaction.KindMessage {
			return 0
		}
		u := e.Usage
		if e.Message.Role != llm.RoleAssistant || u.Unavailable || u.Tokens() == 0 {
			continue
		}
		prompt := u.Input + u.CacheRead + u.CacheWrite
		if prompt == 0 {
			prompt = u.Tokens() - u.Output
		}
		var msgs int64
		for _, m := range compaction.BuildView(entries[:i]).Messages {
			msgs += compaction.EstimateMessage(&m)
		}
		return max(0, prompt-msgs)
	}
	return 0
}

// TrimResult is what sessions.compact's maxLines mode did.
type TrimResult struct {
	SessionID string
	Compacted bool
	// Kept is the number of lines the transcript's view has after it
	// (before it, when nothing was compacted); Reason is "no transcript"
	// for a session without one.
	Kept   int
	Reason string
}

// TrimLines is sessions.compact with maxLines (spec context.md §10), the
// legacy mode without a model call: when the view holds more than
// maxLines lines (its entries: the boundary stands for OpenClaw's header
// line), a compaction entry keeps the last maxLines−1 verbatim with a
// stub summary (the previous summary carried in it), and the transcript
// stays append-only. The caller holds the session.
func (r *Runner) TrimLines(ctx context.Context, agentID, sessionKey string, maxLines int) (*TrimResult, error) {
	agentID = config.NormalizeAgentID(agentID)
	entry, err := r.Store.GetSession(ctx, agentID, sessionKey)
	if errors.Is(err, store.ErrNotFound) {
		return &TrimResult{Reason: ReasonNoTranscript}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", sessionKey, err)
	}
	v := newView(r.Config, agentID, sessionKey, r.modelFor("", runModel(r.Config, agentID, "", entry)), entry)
	if err := v.read(ctx, r.Store); err != nil {
		return nil, err
	}
	res := &TrimResult{SessionID: entry.SessionID, Kept: len(v.entries)}
	switch {
	case len(v.entries) == 0:
		res.Reason = ReasonNoTranscript
		return res, nil
	case len(v.entries) <= max(1, maxLines):
		return res, nil
	}
	keep := max(1, maxLines) - 1
	c := trimRecord(v.entries, keep, maxLines)
	after := compaction.Estimate(append(slices.Clip(v.entries), compaction.Entry{Kind: compaction.KindCompaction, Compaction: &c}))
	if _, _, err := r.Store.AppendCompaction(ctx, agentID, sessionKey, entry.SessionID, c, after.Total()); err != nil {
		return nil, err
	}
	res.Compacted, res.Kept = true, keep+1
	return res, nil
}

// trimRecord is the compaction entry of TrimLines: the last keep entries
// of the view kept, a stub summary that carries the previous one.
func trimRecord(entries []compaction.Entry, keep, maxLines int) compaction.Compaction {
	n := len(entries)
	c := compaction.Compaction{TokensBefore: compaction.Estimate(entries).Total(), Details: compaction.Details{ReadFiles: []string{}, ModifiedFiles: []string{}, HardTrim: true}}
	if keep > 0 {
		c.FirstKeptEntryID = entries[n-keep].ID
	}
	c.Summary = fmt.Sprintf("[sessions.compact (maxLines %d) kept the last %d transcript entries and took the %d before them out of the model's view without a summary. The session history still holds them.]",
		maxLines, keep, n-keep)
	for i := n - 1; i >= 0; i-- {
		if p := entries[i].Compaction; entries[i].Kind == compaction.KindCompaction && p != nil {
			c.Summary += "\n\nSummary of the conversation before them:\n\n" + p.Summary
			c.Details.ReadFiles, c.Details.ModifiedFiles = p.Details.ReadFiles, p.Details.ModifiedFiles
			break
		}
	}
	return c
}

// now is the runner's clock.
func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) logInfo(msg string, args ...any) {
	if r.Log != nil {
		r.Log.Info(msg, args...)
	}
}

func (r *Runner) logWarn(msg string, args ...any) {
	if r.Log != nil {
		r.Log.Warn(msg, args...)
	}
}
