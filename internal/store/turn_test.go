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

	e1, err := db.BeginTurn(ctx, "main", "agent:main:x", user)
	if err != nil {
		t.Fatal(err)
	}
	if e1.SessionID == "" || e1.UpdatedAt != 1_000 {
		t.Fatalf("entry %+v", e1)
	}
	clock = time.UnixMilli(2_000)
	e2, err := db.BeginTurn(ctx, "main", "agent:main:x", provider.Message{Role: provider.RoleUser, Content: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if e2.SessionID != e1.SessionID || e2.UpdatedAt != 2_000 {
		t.Errorf("second turn entry %+v, want same session bumped to 2000", e2)
	}
	msgs, err := db.Transcript(ctx, e1.SessionID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "hi" || msgs[1].Content != "again" {
		t.Errorf("transcript %+v", msgs)
	}
}
