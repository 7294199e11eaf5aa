package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"talon/internal/budget"
	"talon/internal/config"
	"talon/internal/store"
	"talon/protocol"
)

// EventBudget is the event of a tenant's month crossing its budget's
// alert fraction: sent to the tenant's clients and, with the tenant's id,
// to the operator's (the default tenant's).
const EventBudget = "usage.budget"

// errBudgetType is the OpenAI error envelope's type of a refused turn
// (HTTP 402).
const errBudgetType = "budget_exceeded"

// budgetGate is a tenant's month budget state: the month whose alert has
// been sent, so that most turns need not ask the store.
type budgetGate struct {
	mu      sync.Mutex
	alerted string // budget.MonthKey
}

// admitter is a runner's Admit and Spent for tenant t under cfg, the
// config in force (for a tenant, held to the operator's budget by the
// ceiling).
func (s *Server) admitter(t *tenant, db *store.DB, cfg *config.Config) (admit func(context.Context) error, spent func(context.Context)) {
	b := budget.Of(cfg.Usage.Budget)
	if !b.Set() {
		return nil, nil
	}
	admit = func(ctx context.Context) error { return s.admitTurn(ctx, t, db, b) }
	spent = func(ctx context.Context) {
		now := time.Now()
		if used, err := monthUsed(ctx, db, now); err == nil {
			s.budgetAlert(ctx, t, db, b, used, now)
		}
	}
	return admit, spent
}

// admitTurn refuses a turn when the month's usage has reached the
// budget: the turn that crossed it has completed, this one never calls a
// model. It reads the store's running month total, no scan.
func (s *Server) admitTurn(ctx context.Context, t *tenant, db *store.DB, b budget.Budget) error {
	now := time.Now()
	used, err := monthUsed(ctx, db, now)
	if err != nil {
		return err // fails closed: a budget that cannot be read is not spent
	}
	s.budgetAlert(ctx, t, db, b, used, now)
	if e := b.Check(used, now); e != nil {
		s.log.Info("turn refused: monthly usage budget reached", "tenant", t.id, "usedTokens", used.Tokens, "usedCostMicroUsd", used.Cost, "budget", b.Describe())
		return e
	}
	return nil
}

// monthUsed is the month's usage as a budget counts it.
func monthUsed(ctx context.Context, db *store.DB, now time.Time) (budget.Used, error) {
	tot, err := db.MonthUsage(ctx, now)
	if err != nil {
		return budget.Used{}, err
	}
	return budget.Used{Tokens: tot.Tokens(), Cost: tot.Cost}, nil
}

// budgetAlert fires the month's alert once, when usage has reached the
// alert fraction: the store records the month, so neither a second
// gateway nor a restart fires it again.
func (s *Server) budgetAlert(ctx context.Context, t *tenant, db *store.DB, b budget.Budget, used budget.Used, now time.Time) {
	if !b.Alerting(used) {
		return
	}
	month := budget.MonthKey(now)
	g := &t.budget
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.alerted == month {
		return
	}
	first, err := db.MarkAlert(context.WithoutCancel(ctx), month)
	if err != nil {
		s.log.Error("budget alert", "tenant", t.id, "err", err)
		return
	}
	g.alerted = month
	if !first {
		return
	}
	payload := map[string]any{
		"month": month, "alertAt": b.AlertAt, "fraction": b.Fraction(used),
		"usedTokens": used.Tokens, "usedCostUsd": float64(used.Cost) / 1e6, "budget": b.Describe(),
	}
	s.log.Warn("tenant usage crossed its budget's alert fraction", "tenant", t.id, "month", month,
		"fraction", b.Fraction(used), "alertAt", b.AlertAt, "budget", b.Describe())
	s.broadcast(t, EventBudget, payload)
	if t.id != "" && s.defaultTenant != nil {
		op := map[string]any{"tenant": t.id}
		for k, v := range payload {
			op[k] = v
		}
		s.broadcast(s.defaultTenant, EventBudget, op)
	}
}

// budgetRefusal is err's budget refusal, if it is one.
func budgetRefusal(err error) *budget.Exceeded {
	var e *budget.Exceeded
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// budgetError is a refused turn as a WS error (protocol.CodeBudgetExceeded).
func budgetError(e *budget.Exceeded) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeBudgetExceeded, Message: e.Error(), Details: e.Details()}
}

// writeBudgetError answers a refused HTTP turn: 402, OpenAI's envelope.
func writeBudgetError(w http.ResponseWriter, e *budget.Exceeded) {
	writeJSON(w, http.StatusPaymentRequired, map[string]any{"error": map[string]any{
		"message": e.Error(), "type": errBudgetType, "code": errBudgetType, "details": e.Details(),
	}})
}

// admit asks the runner's Admit, if it has one, whether a turn may start.
func (rt *runtime) admit(ctx context.Context) error {
	if rt.runner.Admit == nil {
		return nil
	}
	return rt.runner.Admit(ctx)
}

// budgetSkip is why a background run (a cron job's, a heartbeat's) is
// skipped rather than run: "" unless the budget is spent, else the
// refusal. Other failures of the check are left to the run, which checks
// again.
func budgetSkip(ctx context.Context, rt *runtime) string {
	if e := budgetRefusal(rt.admit(ctx)); e != nil {
		return "budget-exceeded: " + e.Error()
	}
	return ""
}

// budgetReply is what a chat sender is told when the budget is spent.
func budgetReply(e *budget.Exceeded) string {
	return "This assistant has used its monthly usage budget and cannot answer until " +
		e.Resets.Format("2 January 2006") + " (UTC), unless its operator raises the budget."
}

func init() {
	register("usage.budget", protocol.ScopeRead, usageBudget)
}

// usageBudget is Talon's own usage.budget: the budget in force for the
// connection's tenant (for a tenant, its usage.budget held to the
// operator's), the month's usage from the running total, and where it
// stands.
func usageBudget(_ *Server, c *call) (any, error) {
	now := time.Now()
	used, err := monthUsed(c.ctx, c.storeOf(), now)
	if err != nil {
		return nil, err
	}
	b := budget.Of(c.rt.file.Config.Usage.Budget)
	_, end := budget.Month(now)
	out := map[string]any{
		"month":    budget.MonthKey(now),
		"used":     map[string]any{"tokens": used.Tokens, "costUsd": float64(used.Cost) / 1e6},
		"resetsAt": end.Format(time.RFC3339),
		"budget":   nil,
	}
	if b.Set() {
		lim := map[string]any{"alertAt": b.AlertAt}
		if b.Tokens != budget.None {
			lim["monthlyTokens"] = b.Tokens
		}
		if b.Cost != budget.None {
			lim["monthlyCostUsd"] = float64(b.Cost) / 1e6
		}
		out["budget"], out["fraction"], out["reached"] = lim, b.Fraction(used), b.Reached(used)
	}
	return out, nil
}
