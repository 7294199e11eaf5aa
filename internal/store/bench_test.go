package store

import (
	"context"
	"fmt"
	"testing"

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
