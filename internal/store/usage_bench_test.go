package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"talon/internal/llm"
	"talon/internal/session"
)

// BenchmarkLedgerTurn is a turn's commit of the model's answer with and
// without its ledger row (and the session's cache and cost counters):
// the difference is what the ledger adds per model call. The commit is
// not fsynced (a sync window, as talon serve runs), so the figures are
// the work, not the disk.
func BenchmarkLedgerTurn(b *testing.B) {
	for _, ledger := range []bool{false, true} {
		b.Run(fmt.Sprintf("ledger=%v", ledger), func(b *testing.B) {
			ctx := context.Background()
			db, err := OpenWith(filepath.Join(b.TempDir(), "talon.db"), Options{SyncWindow: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			id, err := db.BeginTurn(ctx, "main", "agent:main:b", llm.Message{Role: llm.RoleUser, Content: "hi"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				tok := &session.Tokens{Window: 128000}
				tok.Count(1200, 40, 0)
				it := Item{Message: llm.Message{Role: llm.RoleAssistant, Content: "a short reply from the model"}}
				if ledger {
					tok.CountCache(800, 100, 4200)
					it.Call = &Call{Kind: CallTurn, Provider: "anthropic", Model: "claude-x", Input: 300, Output: 40, CacheRead: 800, CacheWrite: 100, Cost: 4200, Priced: true}
				}
				if err := db.ContinueTurn(ctx, "main", "agent:main:b", id, tok, []Item{it}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUsageMonth sums a month of 100,000 calls of 10 agents on 4
// models, by day, by model and by agent: what usage.cost and talon usage
// ask.
func BenchmarkUsageMonth(b *testing.B) {
	ctx := context.Background()
	db := openTest(b)
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	const n = 100_000
	step := int64(30*24*time.Hour/time.Millisecond) / n
	calls := make([]*Call, 0, 1000)
	for i := range n {
		calls = append(calls, &Call{At: start + int64(i)*step, AgentID: fmt.Sprintf("agent%d", i%10), SessionKey: "agent:x:main",
			Kind: CallTurn, Provider: "p", Model: fmt.Sprintf("m%d", i%4), Input: 1000, Output: 100, CacheRead: 500, Cost: 1234, Priced: true})
		if len(calls) == cap(calls) {
			if err := db.RecordCalls(ctx, calls...); err != nil {
				b.Fatal(err)
			}
			calls = calls[:0]
		}
	}
	for _, by := range []string{ByDay, ByModel, ByAgent} {
		b.Run(by, func(b *testing.B) {
			for b.Loop() {
				tot, _, err := db.Usage(ctx, UsageQuery{Since: start, Until: start + 31*24*3600*1000, By: by})
				if err != nil || tot.Calls != n {
					b.Fatal(tot.Calls, err)
				}
			}
		})
	}
}
