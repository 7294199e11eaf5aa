package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/session"
)

// TestTurnLedger: a turn's model calls are written to the ledger in the
// commit of the messages they produced, with the turn's agent, key and
// transcript; a commit that fails writes none of them; the session row
// keeps the turn's cache tokens and cost and their totals until a reset.
func TestTurnLedger(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const agent, key = "main", "agent:main:l"
	answer := func(c *Call) []Item {
		return []Item{{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}, Call: c}}
	}
	call := func(in, out, read, write, cost int64) *Call {
		return &Call{Kind: CallTurn, Provider: "p", Model: "m", Input: in, Output: out, CacheRead: read, CacheWrite: write, Cost: cost, Priced: true}
	}
	tok := &session.Tokens{}
	tok.Count(150, 10, 0)
	tok.CountCache(40, 10, 1_500_000)
	id, err := db.StartTurn(ctx, agent, key, false, tok, append(Items(llm.Message{Role: llm.RoleUser, Content: "hi"}), answer(call(100, 10, 40, 10, 1_500_000))...))
	if err != nil {
		t.Fatal(err)
	}
	tok.Counted()
	tok.Count(60, 5, 0)
	tok.CountCache(60, 0, 250_000)
	if err := db.ContinueTurn(ctx, agent, key, id, tok, answer(call(0, 5, 60, 0, 250_000))); err != nil {
		t.Fatal(err)
	}
	bad := append(answer(call(1, 1, 0, 0, 1)), Items(llm.Message{Role: "system"})...)
	if err := db.ContinueTurn(ctx, agent, key, id, &session.Tokens{}, bad); err == nil {
		t.Fatal("a commit with an invalid message was accepted")
	}
	if err := db.ContinueTurn(ctx, agent, key, id, &session.Tokens{}, answer(&Call{Kind: CallTurn, Model: "m", Input: -1})); err == nil {
		t.Fatal("a negative count was accepted")
	}

	var rows []string
	r, err := db.r.QueryContext(ctx, `SELECT agent_id, session_key, session_id, kind, input, output, cache_read, cache_write, cost FROM usage ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		var a, k, sid, kind string
		var in, out, read, write, cost int64
		if err := r.Scan(&a, &k, &sid, &kind, &in, &out, &read, &write, &cost); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, strings.ReplaceAll(fmt.Sprintf("%s %s %s %s %d %d %d %d %d", a, k, sid, kind, in, out, read, write, cost), id, "ID"))
	}
	want := []string{
		"main agent:main:l ID turn 100 10 40 10 1500000",
		"main agent:main:l ID turn 0 5 60 0 250000",
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ledger rows (-want +got):\n%s", diff)
	}

	e, err := db.GetSession(ctx, agent, key)
	if err != nil {
		t.Fatal(err)
	}
	type totals struct {
		Read, Write, CumRead, CumWrite int64
		Cost, CumCost                  float64
	}
	got := totals{e.CacheRead, e.CacheWrite, e.CumulativeCacheReadTokens, e.CumulativeCacheWriteTokens, e.EstimatedCostUsd, e.CumulativeCostUsd}
	if w := (totals{60, 0, 100, 10, 1.75, 1.75}); got != w {
		t.Errorf("session totals %+v, want %+v", got, w)
	}
	e, err = db.ResetSession(ctx, agent, key, time.UnixMilli(1_700_000_001_000))
	if err != nil {
		t.Fatal(err)
	}
	if got := (totals{e.CacheRead, e.CacheWrite, e.CumulativeCacheReadTokens, e.CumulativeCacheWriteTokens, e.EstimatedCostUsd, e.CumulativeCostUsd}); got != (totals{}) {
		t.Errorf("after a reset, session totals %+v, want none", got)
	}
	// The ledger is not the session's: a reset keeps what was spent.
	if tot, _, err := db.Usage(ctx, UsageQuery{}); err != nil || tot.Calls != 2 || tot.Cost != 1_750_000 {
		t.Errorf("ledger after a reset: %+v, %v; want 2 calls costing 1750000", tot, err)
	}
}

// TestUsageQuery: sums over a time range, per agent, and grouped by
// agent, model, kind and calendar day in a time zone; unpriced calls
// are counted apart.
func TestUsageQuery(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	day := func(d, hour int) int64 { return time.Date(2026, 3, d, hour, 0, 0, 0, time.UTC).UnixMilli() }
	calls := []*Call{
		{At: day(1, 1), AgentID: "main", Kind: CallTurn, Provider: "a", Model: "x", Input: 10, Output: 1, Cost: 100, Priced: true},
		{At: day(1, 23), AgentID: "main", Kind: CallSummary, Provider: "a", Model: "x", Input: 20, Output: 2, CacheRead: 5, Cost: 200, Priced: true},
		{At: day(2, 12), AgentID: "ops", Kind: CallCron, Provider: "b", Model: "y", Input: 30, Output: 3, CacheWrite: 7},
		{At: day(3, 0), AgentID: "ops", Kind: CallImage, Provider: "a", Model: "x", Input: 40, Output: 4, Cost: 0, Priced: true},
	}
	if err := db.RecordCalls(ctx, calls...); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordCalls(ctx, &Call{Kind: CallTurn, Model: "x"}); err == nil {
		t.Error("a call without an agent was recorded")
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tot := func(calls, in, out, read, write, cost, unpriced int64) UsageTotals {
		return UsageTotals{Calls: calls, Input: in, Output: out, CacheRead: read, CacheWrite: write, Cost: cost, Unpriced: unpriced}
	}
	tests := []struct {
		name   string
		q      UsageQuery
		total  UsageTotals
		groups []UsageGroup
	}{
		{"everything", UsageQuery{}, tot(4, 100, 10, 5, 7, 300, 1), nil},
		{"a range", UsageQuery{Since: day(1, 12), Until: day(3, 0)}, tot(2, 50, 5, 5, 7, 200, 1), nil},
		{"one agent", UsageQuery{AgentID: " OPS "}, tot(2, 70, 7, 0, 7, 0, 1), nil},
		{"by agent", UsageQuery{By: ByAgent}, tot(4, 100, 10, 5, 7, 300, 1), []UsageGroup{
			{"main", tot(2, 30, 3, 5, 0, 300, 0)}, {"ops", tot(2, 70, 7, 0, 7, 0, 1)}}},
		{"by model", UsageQuery{By: ByModel}, tot(4, 100, 10, 5, 7, 300, 1), []UsageGroup{
			{"a/x", tot(3, 70, 7, 5, 0, 300, 0)}, {"b/y", tot(1, 30, 3, 0, 7, 0, 1)}}},
		{"by kind", UsageQuery{By: ByKind, Since: day(2, 0)}, tot(2, 70, 7, 0, 7, 0, 1), []UsageGroup{
			{"cron", tot(1, 30, 3, 0, 7, 0, 1)}, {"image", tot(1, 40, 4, 0, 0, 0, 0)}}},
		{"by UTC day", UsageQuery{By: ByDay}, tot(4, 100, 10, 5, 7, 300, 1), []UsageGroup{
			{"2026-03-01", tot(2, 30, 3, 5, 0, 300, 0)}, {"2026-03-02", tot(1, 30, 3, 0, 7, 0, 1)}, {"2026-03-03", tot(1, 40, 4, 0, 0, 0, 0)}}},
		{"by Berlin day", UsageQuery{By: ByDay, Location: berlin}, tot(4, 100, 10, 5, 7, 300, 1), []UsageGroup{
			{"2026-03-01", tot(1, 10, 1, 0, 0, 100, 0)}, {"2026-03-02", tot(2, 50, 5, 5, 7, 200, 1)}, {"2026-03-03", tot(1, 40, 4, 0, 0, 0, 0)}}},
		{"nothing", UsageQuery{Since: day(9, 0), By: ByAgent}, UsageTotals{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			total, groups, err := db.Usage(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.total, total); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.groups, groups); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := db.Usage(ctx, UsageQuery{By: "week"}); err == nil || !strings.Contains(err.Error(), `unknown grouping "week"`) {
		t.Errorf("an unknown grouping: %v", err)
	}
}
