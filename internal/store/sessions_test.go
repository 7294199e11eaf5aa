package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"talon/internal/llm"
	"talon/internal/session"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func TestSessionCRUD(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)

	if _, err := db.GetSession(ctx, "ops", "agent:ops:main"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetSession of a missing session: %v, want ErrNotFound", err)
	}
	e := session.Entry{
		SessionID: "s-1", UpdatedAt: 10, Label: "Main", ExecHost: "node",
		Extra: map[string]json.RawMessage{"fastMode": json.RawMessage(`true`)},
	}
	if err := db.PutSession(ctx, "ops", "agent:ops:main", e); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetSession(ctx, "OPS", " Agent:Ops:Main ") // compared lower-cased
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Errorf("GetSession after PutSession (-want +got):\n%s", d)
	}

	e.SessionID, e.UpdatedAt, e.Label = "s-2", 20, ""
	if err := db.PutSession(ctx, "ops", "agent:ops:main", e); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.GetSession(ctx, "ops", "agent:ops:main"); got.SessionID != "s-2" || got.Label != "" {
		t.Errorf("PutSession did not replace: %+v", got)
	}
	if _, err := db.GetSession(ctx, "other", "agent:ops:main"); !errors.Is(err, ErrNotFound) {
		t.Errorf("session visible under another agent: %v", err)
	}

	if err := db.PutSession(ctx, "ops", "agent:ops:x", session.Entry{}); err == nil {
		t.Error("PutSession accepted an entry without sessionId")
	}
	if err := db.PutSession(ctx, "", "k", e); err == nil {
		t.Error("PutSession accepted an empty agent")
	}
	if _, err := db.GetSession(ctx, "ops", " "); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession with an empty key: %v", err)
	}

	for _, want := range []bool{true, false} {
		ok, err := db.DeleteSession(ctx, "ops", "agent:ops:main")
		if err != nil || ok != want {
			t.Errorf("DeleteSession = %v, %v; want %v", ok, err, want)
		}
	}
	if _, err := db.GetSession(ctx, "ops", "agent:ops:main"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSession after delete: %v", err)
	}
}

func TestPatchSessionCreatesAndBumps(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	key := "agent:ops:main"

	created, err := db.PatchSession(ctx, "ops", key, json.RawMessage(`{"execHost":"Gateway","label":"Work"}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(created.SessionID) != 36 {
		t.Errorf("new sessionId %q is not a UUID", created.SessionID)
	}
	want := session.Entry{SessionID: created.SessionID, UpdatedAt: t0.UnixMilli(), ExecHost: "gateway", Label: "Work"}
	if d := cmp.Diff(want, created); d != "" {
		t.Errorf("created (-want +got):\n%s", d)
	}
	if got, _ := db.GetSession(ctx, "ops", key); !cmp.Equal(got, created) {
		t.Errorf("stored %+v, returned %+v", got, created)
	}

	later := t0.Add(time.Minute)
	bumped, err := db.PatchSession(ctx, "ops", key, json.RawMessage(`{"execHost":null}`), later)
	if err != nil {
		t.Fatal(err)
	}
	want = session.Entry{SessionID: created.SessionID, UpdatedAt: later.UnixMilli(), Label: "Work"}
	if d := cmp.Diff(want, bumped); d != "" {
		t.Errorf("bumped (-want +got):\n%s", d)
	}

	// A clock that went back does not move updatedAt back.
	same, err := db.PatchSession(ctx, "ops", key, json.RawMessage(`{}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	if same.UpdatedAt != later.UnixMilli() {
		t.Errorf("updatedAt = %d, want %d", same.UpdatedAt, later.UnixMilli())
	}
}

func TestPatchSessionInvalid(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	cases := []struct{ name, key, patch, want string }{
		{"bad execAsk", "agent:ops:main", `{"execAsk":"never"}`, `invalid execAsk (use "off"|"on-miss"|"always")`},
		{"spawnedBy on a main session", "agent:ops:main", `{"spawnedBy":"agent:ops:main"}`, "spawnedBy is only supported for subagent:* sessions"},
		{"not an object", "agent:ops:main", `"x"`, "invalid sessions.patch params: must be an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.PatchSession(ctx, "ops", c.key, json.RawMessage(c.patch), t0)
			var ve *session.ValidationError
			if !errors.As(err, &ve) || err.Error() != c.want {
				t.Fatalf("error = %v, want ValidationError %q", err, c.want)
			}
			if _, err := db.GetSession(ctx, "ops", c.key); !errors.Is(err, ErrNotFound) {
				t.Errorf("a rejected patch created the session: %v", err)
			}
		})
	}
}

func TestPatchSessionSpawnImmutable(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	key := session.Subagent("ops", "abc")
	if _, err := db.PatchSession(ctx, "ops", key, json.RawMessage(`{"spawnedBy":"agent:ops:main","spawnDepth":1}`), t0); err != nil {
		t.Fatal(err)
	}
	for patch, want := range map[string]string{
		`{"spawnedBy":"agent:ops:x"}`: "spawnedBy cannot be changed once set",
		`{"spawnDepth":null}`:         "spawnDepth cannot be cleared once set",
	} {
		if _, err := db.PatchSession(ctx, "ops", key, json.RawMessage(patch), t0); err == nil || err.Error() != want {
			t.Errorf("patch %s: error %v, want %q", patch, err, want)
		}
	}
	got, err := db.GetSession(ctx, "ops", key)
	if err != nil || got.SpawnedBy != "agent:ops:main" || got.SpawnDepth == nil || *got.SpawnDepth != 1 {
		t.Errorf("spawn fields after rejected patches: %+v, %v", got, err)
	}
}

func TestPatchSessionLabelUnique(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	patch := func(agent, key, p string) error {
		_, err := db.PatchSession(ctx, agent, key, json.RawMessage(p), t0)
		return err
	}
	steps := []struct {
		name, agent, key, patch, want string
	}{
		{"first use", "ops", "agent:ops:a", `{"label":"Daily"}`, ""},
		{"taken by another session", "ops", "agent:ops:b", `{"label":" Daily "}`, "label already in use: Daily"},
		{"same session again", "ops", "agent:ops:a", `{"label":"Daily"}`, ""},
		{"labels compare exactly", "ops", "agent:ops:b", `{"label":"daily"}`, ""},
		{"another agent may use it", "research", "agent:research:a", `{"label":"Daily"}`, ""},
		{"freed by null", "ops", "agent:ops:a", `{"label":null}`, ""},
		{"then free", "ops", "agent:ops:c", `{"label":"Daily"}`, ""},
		{"other fields do not recheck", "ops", "agent:ops:c", `{"execAsk":"off"}`, ""},
	}
	for _, s := range steps {
		err := patch(s.agent, s.key, s.patch)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != s.want {
			t.Errorf("%s: error %q, want %q", s.name, got, s.want)
		}
	}
	if e, _ := db.GetSession(ctx, "ops", "agent:ops:b"); e.Label != "daily" {
		t.Errorf("rejected label change kept? label = %q", e.Label)
	}
}

func TestListSessions(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		e := session.Entry{SessionID: "s-" + k, UpdatedAt: int64(100 + i)}
		if k == "d" {
			e.UpdatedAt = 102 // ties with c: ordered by key
		}
		if err := db.PutSession(ctx, "ops", "agent:ops:"+k, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PutSession(ctx, "other", "agent:other:z", session.Entry{SessionID: "z", UpdatedAt: 999}); err != nil {
		t.Fatal(err)
	}
	keys := func(rows []SessionRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Key[len("agent:ops:"):])
		}
		return out
	}
	cases := []struct {
		limit, offset int
		want          []string
	}{
		{0, 0, []string{"e", "c", "d", "b", "a"}},
		{-1, 0, []string{"e", "c", "d", "b", "a"}},
		{2, 0, []string{"e", "c"}},
		{2, 2, []string{"d", "b"}},
		{2, 4, []string{"a"}},
		{2, 5, nil},
		{0, 3, []string{"b", "a"}},
		{3, -1, []string{"e", "c", "d"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("limit=%d,offset=%d", c.limit, c.offset), func(t *testing.T) {
			rows, err := db.ListSessions(ctx, "ops", c.limit, c.offset)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, keys(rows)); d != "" {
				t.Errorf("keys (-want +got):\n%s", d)
			}
		})
	}
	rows, _ := db.ListSessions(ctx, "ops", 1, 0)
	if len(rows) != 1 || rows[0].Entry.SessionID != "s-e" {
		t.Errorf("entry not returned with the row: %+v", rows)
	}
}

// TestListSubagentSessions: only the agent's agent:<id>:subagent:… rows,
// newest first; keys that merely sort near them are left out.
func TestListSubagentSessions(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	for i, k := range []string{
		"agent:ops:subagent:a", "agent:ops:subagent:b", "agent:ops:subagent", "agent:ops:subagents:x",
		"agent:ops:subagent;", "agent:ops:main", "agent:ops:openai:subagent:c", "agent:other:subagent:z",
	} {
		agent := "ops"
		if strings.HasPrefix(k, "agent:other:") {
			agent = "other"
		}
		if err := db.PutSession(ctx, agent, k, session.Entry{SessionID: "s", UpdatedAt: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.ListSubagentSessions(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Key)
	}
	if d := cmp.Diff([]string{"agent:ops:subagent:b", "agent:ops:subagent:a"}, got); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
}

func TestResetSessionKeepsOldTranscript(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	key := "agent:ops:main"
	before, err := db.PatchSession(ctx, "ops", key, json.RawMessage(`{"label":"L","execAsk":"always"}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	before.InputTokens, before.TotalTokens, before.SystemSent = 5, 9, true
	flushed, stale := int64(2), false
	before.CompactionCount, before.MemoryFlushAt, before.MemoryFlushCompactionCount, before.TotalTokensFresh = 2, 7, &flushed, &stale
	before.Extra = map[string]json.RawMessage{"lastChannel": json.RawMessage(`"telegram"`)}
	if err := db.PutSession(ctx, "ops", key, before); err != nil {
		t.Fatal(err)
	}
	old := []llm.Message{{Role: llm.RoleUser, Content: "hi"}, {Role: llm.RoleAssistant, Content: "hello"}}
	if err := db.AppendMessages(ctx, before.SessionID, old...); err != nil {
		t.Fatal(err)
	}

	later := t0.Add(time.Hour)
	after, err := db.ResetSession(ctx, "ops", key, later)
	if err != nil {
		t.Fatal(err)
	}
	if after.SessionID == before.SessionID || len(after.SessionID) != 36 {
		t.Errorf("reset sessionId = %q (before %q)", after.SessionID, before.SessionID)
	}
	want := session.Entry{SessionID: after.SessionID, UpdatedAt: later.UnixMilli(), Label: "L", ExecAsk: "always",
		Extra: map[string]json.RawMessage{"lastChannel": json.RawMessage(`"telegram"`)}}
	if d := cmp.Diff(want, after); d != "" {
		t.Errorf("after reset (-want +got):\n%s", d)
	}
	if stored, _ := db.GetSession(ctx, "ops", key); !cmp.Equal(stored, after) {
		t.Errorf("stored %+v, returned %+v", stored, after)
	}

	if got, err := db.Transcript(ctx, before.SessionID, 0); err != nil || !cmp.Equal(got, old) {
		t.Errorf("old transcript after reset = %v, %v; want %v", got, err, old)
	}
	if got, err := db.Transcript(ctx, after.SessionID, 0); err != nil || len(got) != 0 {
		t.Errorf("new transcript = %v, %v; want empty", got, err)
	}

	// Resetting a session that does not exist creates it.
	fresh, err := db.ResetSession(ctx, "ops", "agent:ops:new", later)
	if err != nil || fresh.SessionID == "" || fresh.UpdatedAt != later.UnixMilli() {
		t.Errorf("reset of a missing session = %+v, %v", fresh, err)
	}
}

// TestBeginTurnSessionRow: a turn creates the session, raises updatedAt
// when the clock moved on, never lowers it, and refuses bad keys.
func TestBeginTurnSessionRow(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	key := "agent:ops:openai-user:bob"
	open := func(key string) (string, error) { return db.BeginTurn(ctx, "ops", key) }

	id, err := open(key)
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.GetSession(ctx, "ops", key)
	if err != nil || e.SessionID != id || e.UpdatedAt != t0.UnixMilli() {
		t.Fatalf("created entry %+v, %v; want sessionId %q updatedAt %d", e, err, id, t0.UnixMilli())
	}

	later := t0.Add(time.Second)
	db.Now = fixedClock(later)
	again, err := open(key)
	if err != nil || again != id {
		t.Fatalf("second BeginTurn = %q, %v; want %q", again, err, id)
	}
	if e, _ := db.GetSession(ctx, "ops", key); e.UpdatedAt != later.UnixMilli() {
		t.Errorf("updatedAt = %d, want it raised to %d", e.UpdatedAt, later.UnixMilli())
	}

	db.Now = fixedClock(t0) // a clock that went back changes nothing
	if again, err := open(key); err != nil || again != id {
		t.Fatalf("BeginTurn = %q, %v", again, err)
	}
	if e, _ := db.GetSession(ctx, "ops", key); e.UpdatedAt != later.UnixMilli() {
		t.Errorf("updatedAt = %d, want %d", e.UpdatedAt, later.UnixMilli())
	}

	for _, bad := range []string{"", "agent:ops:a\x01b", "agent:ops:" + strings.Repeat("x", 600)} {
		if _, err := open(bad); err == nil {
			t.Errorf("BeginTurn(%q) succeeded", bad)
		}
	}
}
