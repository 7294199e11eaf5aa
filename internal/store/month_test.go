package store

import (
	"context"
	"testing"
	"time"

	"talon/internal/llm"
)

// TestMonthUsage: the running month total equals a scan of the month
// after every kind of write — calls recorded, a turn's commit, a commit
// that failed (not counted), a call of another month — and starts afresh
// in the next month; the month's alert is recorded once.
func TestMonthUsage(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	scan := func(at time.Time) UsageTotals {
		t.Helper()
		start := time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
		tot, _, err := db.Usage(ctx, UsageQuery{Since: start.UnixMilli(), Until: start.AddDate(0, 1, 0).UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		return tot
	}
	check := func(step string, at time.Time, want int64) {
		t.Helper()
		got, err := db.MonthUsage(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		if got != scan(at) || got.Tokens() != want {
			t.Errorf("%s: running total %+v, scan %+v, want %d tokens", step, got, scan(at), want)
		}
	}
	call := func(at time.Time, in int64) *Call {
		return &Call{At: at.UnixMilli(), AgentID: "main", Kind: CallTurn, Provider: "p", Model: "m", Input: in, Output: 1, Cost: in, Priced: true}
	}
	if err := db.RecordCalls(ctx, call(now.AddDate(0, -1, 0), 1000)); err != nil { // last month
		t.Fatal(err)
	}
	check("seeded", now, 0)
	if err := db.RecordCalls(ctx, call(now, 10), call(now, 20)); err != nil {
		t.Fatal(err)
	}
	check("recorded", now, 32)
	answer := []Item{{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}, Call: &Call{Kind: CallTurn, Provider: "p", Model: "m", Input: 7}}}
	if _, err := db.StartTurn(ctx, "main", "agent:main:m", false, nil, answer); err != nil {
		t.Fatal(err)
	}
	check("a turn's commit", now, 39)
	bad := append(Items(llm.Message{Role: "system"}), answer...)
	if _, err := db.StartTurn(ctx, "main", "agent:main:bad", false, nil, bad); err == nil {
		t.Fatal("a commit with an invalid message was accepted")
	}
	check("a failed commit", now, 39)
	if err := db.RecordCalls(ctx, call(now.AddDate(0, -1, 0), 5)); err != nil {
		t.Fatal(err)
	}
	check("a call of last month", now, 39)
	next := now.AddDate(0, 1, 0)
	if err := db.RecordCalls(ctx, call(next, 100)); err != nil {
		t.Fatal(err)
	}
	check("next month", next, 101)

	for i, want := range []bool{true, false} {
		if first, err := db.MarkAlert(ctx, "2026-11"); err != nil || first != want {
			t.Errorf("alert %d: first %v err %v, want %v", i, first, err, want)
		}
	}
	if first, _ := db.MarkAlert(ctx, "2026-12"); !first {
		t.Error("a new month's alert was taken as sent")
	}
}
