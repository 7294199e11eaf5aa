package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/llm"
	"talon/internal/session"
)

// counters are an entry's token counters, for comparison.
type counters struct{ In, Out, Ctx, Window, CumIn, CumOut, CumTotal int64 }

func countersOf(e session.Entry) counters {
	return counters{e.InputTokens, e.OutputTokens, e.TotalTokens, e.ContextTokens,
		e.CumulativeInputTokens, e.CumulativeOutputTokens, e.CumulativeTotalTokens}
}

// TestTurnTokens: each commit of a turn writes its token counts with its
// messages, in the same transaction. The turn's figures replace the last
// turn's, the cumulative counters grow, a reset zeroes them (keeping the
// window), and a commit of a turn whose session was reset meanwhile
// counts nothing on the new transcript.
func TestTurnTokens(t *testing.T) {
	ctx := context.Background()
	const agent, key = "main", "agent:main:t"
	user := func(s string) []Item { return Items(llm.Message{Role: llm.RoleUser, Content: s}) }
	reply := Items(llm.Message{Role: llm.RoleAssistant, Content: "ok"})
	// call counts one model call's usage into a turn's running figures.
	call := func(tok *session.Tokens, in, out int64) *session.Tokens { tok.Count(in, out, 0); return tok }

	type step struct {
		name string
		run  func(db *DB, sid *string) error
		want counters
	}
	steps := []step{
		{"first turn, one model call", func(db *DB, sid *string) (err error) {
			*sid, err = db.StartTurn(ctx, agent, key, false, call(&session.Tokens{Window: 128000}, 100, 10), append(user("hi"), reply...))
			return err
		}, counters{100, 10, 100, 128000, 100, 10, 110}},
		{"second turn, two model calls", func(db *DB, sid *string) error {
			tok := &session.Tokens{Window: 128000}
			if _, err := db.StartTurn(ctx, agent, key, false, call(tok, 200, 20), append(user("again"), reply...)); err != nil {
				return err
			}
			tok.Counted()
			return db.ContinueTurn(ctx, agent, key, *sid, call(tok, 250, 5), reply)
		}, counters{450, 25, 250, 128000, 550, 35, 585}},
		{"a commit without usage counts nothing", func(db *DB, sid *string) error {
			return db.ContinueTurn(ctx, agent, key, *sid, &session.Tokens{}, reply)
		}, counters{450, 25, 250, 128000, 550, 35, 585}},
		{"a model with no known window removes it", func(db *DB, sid *string) error {
			_, err := db.StartTurn(ctx, agent, key, false, call(&session.Tokens{}, 1, 1), user("x"))
			return err
		}, counters{1, 1, 1, 0, 551, 36, 587}},
		{"an invalid message writes neither it nor the tokens", func(db *DB, sid *string) error {
			if _, err := db.StartTurn(ctx, agent, key, false, call(&session.Tokens{}, 7, 7), Items(llm.Message{Role: "system"})); err == nil {
				t.Error("a system message was accepted")
			}
			return nil
		}, counters{1, 1, 1, 0, 551, 36, 587}},
		{"reset zeroes the counters", func(db *DB, sid *string) error {
			if _, err := db.StartTurn(ctx, agent, key, false, call(&session.Tokens{Window: 8000}, 3, 3), user("y")); err != nil {
				return err
			}
			_, err := db.ResetSession(ctx, agent, key, time.Now())
			return err
		}, counters{Window: 8000}},
		{"a turn that began before the reset counts nothing after it", func(db *DB, sid *string) error {
			return db.ContinueTurn(ctx, agent, key, *sid, call(&session.Tokens{Window: 8000}, 9, 9), reply)
		}, counters{Window: 8000}},
	}
	db := openTest(t)
	var sid string
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := s.run(db, &sid); err != nil {
				t.Fatal(err)
			}
			e, err := db.GetSession(ctx, agent, key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s.want, countersOf(e)); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFreshTurnTokens: a fresh key's first commit counts its tokens too.
func TestFreshTurnTokens(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	tok := session.Tokens{Window: 4096}
	tok.Count(40, 2, 45)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "ok"}}
	if _, err := db.StartTurn(ctx, "main", "openai:fresh", true, &tok, Items(msgs...)); err != nil {
		t.Fatal(err)
	}
	e, err := db.GetSession(ctx, "main", "openai:fresh")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(counters{40, 2, 40, 4096, 40, 2, 45}, countersOf(e)); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}
