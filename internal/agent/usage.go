package agent

import (
	"context"
	"sync"

	"talon/internal/config"
	"talon/internal/provider"
	"talon/internal/session"
	"talon/internal/store"
)

// callOf is a model call that answered, for the usage ledger: what it
// was for, the model ref names, the tokens the provider reported and
// their price (models.providers.*.models[].cost). A provider's prompt
// count includes the tokens it read from or wrote to its cache
// (provider.Usage); the ledger counts them apart, as OpenClaw does, so
// that each kind has its own price.
func (r *Runner) callOf(kind, ref string, u provider.Usage) *store.Call {
	mref, _ := config.ParseModelRef(ref)
	read, write := int64(max(u.CacheReadTokens, 0)), int64(max(u.CacheWriteTokens, 0))
	c := &store.Call{
		Kind: kind, Provider: mref.Provider, Model: mref.Model,
		Input:  max(int64(u.PromptTokens)-read-write, 0),
		Output: int64(max(u.CompletionTokens, 0)), CacheRead: read, CacheWrite: write,
	}
	if c.Model == "" {
		c.Model = ref
	}
	if price := r.Config.ModelCost(mref); price != nil {
		c.Cost, c.Priced = price.MicroUSD(c.Input, c.Output, c.CacheRead, c.CacheWrite), true
	}
	return c
}

// record writes model calls whose answers no commit of the session
// recorded (a summary that failed, a memory flush cut short, a tool's
// model call in a run that ended before its result was stored) to the
// ledger. The answers were paid for, so a failure to record them is
// logged, not returned.
func (r *Runner) record(ctx context.Context, agentID, key string, calls ...*store.Call) {
	if len(calls) == 0 {
		return
	}
	for _, c := range calls {
		c.AgentID, c.SessionKey = agentID, key
	}
	if err := r.Store.RecordCalls(context.WithoutCancel(ctx), calls...); err != nil {
		r.logWarn("usage: recording model calls", "agent", agentID, "session", key, "err", err)
	}
}

// kind is what the run's model calls are for in the ledger: the
// request's Kind, else a subagent's turn for a subagent session, else a
// turn.
func (req *Request) kind() string {
	switch {
	case req.Kind != "":
		return req.Kind
	case session.IsSubagent(req.SessionKey):
		return store.CallSubagent
	}
	return store.CallTurn
}

// sideCalls are the model calls a run's tools made (the image and pdf
// models): each goes into the ledger with the tool result it produced
// (store.Item.Also), in the commit that stores that result.
type sideCalls struct {
	mu    sync.Mutex
	calls []*store.Call
}

func (s *sideCalls) add(c *store.Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// take returns the calls made since the last take.
func (s *sideCalls) take() []*store.Call {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = nil
	return out
}
