package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"talon/internal/llm"
	"talon/internal/session"
)

// BenchmarkAppend appends one message per transaction: one fsynced commit
// per iteration.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	db := openTest(b)
	m := llm.Message{Role: llm.RoleAssistant, Content: "a reply of about a hundred bytes, which is a typical short assistant turn in a chat."}
	b.ReportAllocs()
	for b.Loop() {
		if err := db.AppendMessages(ctx, "bench", m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranscript reads the last 200 messages of a 1000-message
// transcript (chat.history's default limit).
func BenchmarkTranscript(b *testing.B) {
	for _, limit := range []int{200} {
		b.Run(fmt.Sprint(limit), func(b *testing.B) {
			ctx := context.Background()
			db := openTest(b)
			batch := make([]llm.Message, 100)
			for i := range batch {
				batch[i] = llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("message %d with some text to make it realistic", i)}
			}
			for range 10 {
				if err := db.AppendMessages(ctx, "bench", batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				msgs, err := db.Transcript(ctx, "bench", limit)
				if err != nil || len(msgs) != limit {
					b.Fatal(len(msgs), err)
				}
			}
		})
	}
}

// BenchmarkBeginTurn is the one durable commit of a stateless gateway
// turn: a new session row with the user's message and the model's answer,
// by BeginTurn and by BeginFreshTurn, and with the answer's token counts
// as the runner commits it (StartTurn, fresh).
func BenchmarkBeginTurn(b *testing.B) {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "hi"},
		{Role: llm.RoleAssistant, Content: "a short reply from the model"},
	}
	tok := session.Tokens{Window: 128000}
	tok.Count(1200, 40, 1240)
	for _, bc := range []struct {
		name  string
		fresh bool
		tok   *session.Tokens
	}{{"upsert", false, nil}, {"fresh", true, nil}, {"fresh+tokens", true, &tok}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			db := openTest(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.StartTurn(ctx, "main", "openai:"+NewID(), bc.fresh, bc.tok, Items(msgs...)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTurnDisk measures what a turn adds to a tenant's database: a
// 200-byte question and an 800-byte answer with its usage and ledger row,
// on one session, 1,000 turns; the file's growth once its log is
// checkpointed, divided by the turns (the text itself is 1,000 bytes).
// docs/scaling.md sizes a deployment's storage with it.
func BenchmarkTurnDisk(b *testing.B) {
	const turns = 1000
	question := strings.Repeat("q", 200)
	answer := strings.Repeat("a", 800)
	for b.Loop() {
		ctx := context.Background()
		path := filepath.Join(b.TempDir(), File)
		db, err := OpenWith(path, Options{SyncWindow: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		size := func() int64 {
			if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			return fi.Size()
		}
		before := size()
		for i := range turns {
			id, err := db.BeginTurn(ctx, "main", "agent:main:disk", llm.Message{Role: llm.RoleUser, Content: question})
			if err != nil {
				b.Fatal(err)
			}
			tok := &session.Tokens{Window: 128000}
			tok.Count(int64(300+i), 200, 0)
			it := Item{Message: llm.Message{Role: llm.RoleAssistant, Content: answer},
				Call: &Call{Kind: CallTurn, Provider: "p", Model: "m", Input: int64(300 + i), Output: 200, Cost: 1000, Priced: true}}
			if err := db.ContinueTurn(ctx, "main", "agent:main:disk", id, tok, []Item{it}); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.rollUp(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(size()-before)/turns, "bytes/turn")
		db.Close()
	}
}
