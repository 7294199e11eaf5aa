package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"talon/internal/provider"
)

// TestBeginTurn: one transaction creates or bumps the session and appends
// the input; an invalid message leaves neither the session nor any message.
func TestBeginTurn(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	clock := time.UnixMilli(1_000)
	db.Now = func() time.Time { return clock }
	user := provider.Message{Role: provider.RoleUser, Content: "hi"}

	if _, err := db.BeginTurn(ctx, "main", "agent:main:x", user, provider.Message{Role: "system"}); err == nil {
		t.Fatal("an invalid message was accepted")
	}
	if _, err := db.GetSession(ctx, "main", "agent:main:x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a failed turn left a session behind: %v", err)
	}

	id, err := db.BeginTurn(ctx, "main", "agent:main:x", user)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := db.GetSession(ctx, "main", "agent:main:x"); err != nil || e.SessionID != id || e.UpdatedAt != 1_000 {
		t.Fatalf("entry %+v, %v; want sessionId %s updatedAt 1000", e, err, id)
	}
	clock = time.UnixMilli(2_000)
	id2, err := db.BeginTurn(ctx, "main", "agent:main:x", provider.Message{Role: provider.RoleUser, Content: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := db.GetSession(ctx, "main", "agent:main:x"); id2 != id || e.UpdatedAt != 2_000 {
		t.Errorf("second turn: id %s entry %+v, want the same session bumped to 2000", id2, e)
	}
	msgs, err := db.Transcript(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "hi" || msgs[1].Content != "again" {
		t.Errorf("transcript %+v", msgs)
	}
}
