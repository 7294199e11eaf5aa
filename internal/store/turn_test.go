package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"talon/internal/llm"
)

// TestBeginTurn: one transaction creates or bumps the session and appends
// the input; an invalid message leaves neither the session nor any message.
func TestBeginTurn(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	clock := time.UnixMilli(1_000)
	db.Now = func() time.Time { return clock }
	user := llm.Message{Role: llm.RoleUser, Content: "hi"}

	if _, err := db.BeginTurn(ctx, "main", "agent:main:x", user, llm.Message{Role: "system"}); err == nil {
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
	id2, err := db.BeginTurn(ctx, "main", "agent:main:x", llm.Message{Role: llm.RoleUser, Content: "again"})
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

// TestBeginFreshTurn: BeginFreshTurn leaves the row BeginTurn leaves, for a
// new key and for a key that exists after all (then it bumps the session
// and appends, as BeginTurn does), and leaves nothing for an invalid
// message.
func TestBeginFreshTurn(t *testing.T) {
	ctx := context.Background()
	user := llm.Message{Role: llm.RoleUser, Content: "hi"}
	answer := llm.Message{Role: llm.RoleAssistant, Content: "hello"}
	// row is a session's stored columns with its transcript id as "ID".
	row := func(t *testing.T, db *DB, key, id string) string {
		t.Helper()
		var sid, entry string
		var label sql.NullString
		var at int64
		if err := db.r.QueryRowContext(ctx, `SELECT session_id, label, updated_at, entry FROM sessions WHERE agent_id = 'main' AND key = ?`, key).
			Scan(&sid, &label, &at, &entry); err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(fmt.Sprintf("%s %v %d %s", sid, label, at, entry), id, "ID")
	}
	cases := []struct {
		name     string
		existing bool // the key has a session from an earlier turn
		messages int  // in its transcript afterwards
	}{{"new key", false, 2}, {"taken key", true, 3}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rows [2]string
			var transcripts [2][]llm.Message
			for i, begin := range []func(*DB, context.Context, string, string, ...llm.Message) (string, error){
				(*DB).BeginTurn, (*DB).BeginFreshTurn,
			} {
				db := openTest(t)
				clock := time.UnixMilli(1_000)
				db.Now = func() time.Time { return clock }
				var first string
				if c.existing {
					var err error
					if first, err = db.BeginTurn(ctx, "main", "openai:x", user); err != nil {
						t.Fatal(err)
					}
					clock = time.UnixMilli(2_000)
				}
				if _, err := begin(db, ctx, "main", "openai:y", user, llm.Message{Role: "system"}); err == nil {
					t.Fatal("an invalid message was accepted")
				}
				if _, err := db.GetSession(ctx, "main", "openai:y"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("a failed turn left a session behind: %v", err)
				}
				id, err := begin(db, ctx, "main", "openai:x", user, answer)
				if err != nil {
					t.Fatal(err)
				}
				if c.existing && id != first {
					t.Errorf("turn %d on a taken key: transcript %s, want the session's %s", i, id, first)
				}
				rows[i] = row(t, db, "openai:x", id)
				if transcripts[i], err = db.Transcript(ctx, id, 0); err != nil {
					t.Fatal(err)
				}
			}
			if rows[0] != rows[1] {
				t.Errorf("BeginTurn left %s\nBeginFreshTurn left %s", rows[0], rows[1])
			}
			if !reflect.DeepEqual(transcripts[0], transcripts[1]) || len(transcripts[1]) != c.messages {
				t.Errorf("transcripts: BeginTurn %+v, BeginFreshTurn %+v", transcripts[0], transcripts[1])
			}
		})
	}
}
