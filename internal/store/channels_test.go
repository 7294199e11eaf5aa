package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"talon/internal/channel"
)

func env(msg, delivery string) channel.Envelope {
	return channel.Envelope{Channel: "telegram", AccountID: "default", DeliveryID: delivery, MessageID: msg,
		Peer: channel.Peer{Kind: channel.Direct, ID: "111"}, Sender: channel.Sender{ID: "111"}, Text: "hi " + msg}
}

func TestAcceptInboundDedupes(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	id1, fresh, err := db.AcceptInbound(ctx, env("1", "u1"))
	if err != nil || !fresh {
		t.Fatalf("first accept = %d, %v, %v", id1, fresh, err)
	}
	other := env("1", "u1")
	other.Peer.ID = "222" // same message id in another chat is another message...
	other.DeliveryID = "u2"
	tests := []struct {
		name  string
		e     channel.Envelope
		fresh bool
		id    int64 // 0: any new id
	}{
		{"same message and delivery", env("1", "u1"), false, id1},
		{"same message, new delivery (a redelivery)", env("1", "u9"), false, id1},
		{"same delivery, new message id (an edit re-sent)", env("5", "u1"), false, id1},
		{"same message id in another chat", other, true, 0},
		{"no message id, new delivery", env("", "u3"), true, 0},
		{"no message id, same delivery", env("", "u3"), false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, fresh, err := db.AcceptInbound(ctx, tt.e)
			if err != nil {
				t.Fatal(err)
			}
			if fresh != tt.fresh || tt.id > 0 && id != tt.id || id == 0 {
				t.Errorf("AcceptInbound = %d, %v; want fresh %v id %d", id, fresh, tt.fresh, tt.id)
			}
		})
	}
	for _, bad := range []channel.Envelope{{}, {Channel: "telegram", AccountID: "a", Peer: channel.Peer{Kind: channel.Direct, ID: "1"}}} {
		if _, _, err := db.AcceptInbound(ctx, bad); err == nil {
			t.Errorf("AcceptInbound(%+v) accepted an envelope without keys", bad)
		}
	}
}

func TestInboxLifecycle(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	group := func(msg string) channel.Envelope {
		e := env(msg, "d"+msg)
		e.Peer = channel.Peer{Kind: channel.Group, ID: "-100"}
		return e
	}
	var ids []int64
	for _, m := range []string{"1", "2", "3"} {
		id, _, err := db.AcceptInbound(ctx, group(m))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	conv := Conversation(group("1"))
	if convs, _ := db.OpenConversations(ctx, "telegram", "default"); len(convs) != 1 || convs[0] != conv {
		t.Fatalf("OpenConversations = %v", convs)
	}
	// 1 and 2 are history, 3 is addressed.
	for _, id := range ids[:2] {
		if err := db.SetInbound(ctx, id, InboxReceived, InboxHistory, "no_mention"); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetInbound(ctx, ids[0], InboxReceived, InboxDropped, ""); !errors.Is(err, ErrStateChanged) {
		t.Errorf("SetInbound from a state the row is not in: %v", err)
	}
	hist, err := db.PendingHistory(ctx, "telegram", "default", conv, ids[2], 1)
	if err != nil || len(hist) != 1 || hist[0].ID != ids[1] {
		t.Fatalf("PendingHistory limit 1 = %+v, %v; want the newest (row %d)", hist, err, ids[1])
	}
	if err := db.StartInbound(ctx, ids[2], InboxReceived, "main", "agent:main:telegram:group:-100"); err != nil {
		t.Fatal(err)
	}
	// A crash re-runs a running row: the attempt is counted.
	if err := db.StartInbound(ctx, ids[2], InboxRunning, "main", "agent:main:telegram:group:-100"); err != nil {
		t.Fatal(err)
	}
	open, _ := db.OpenInbound(ctx, "telegram", "default", conv)
	if len(open) != 1 || open[0].State != InboxRunning || open[0].Attempts != 2 || open[0].Envelope.Text != "hi 3" {
		t.Fatalf("OpenInbound = %+v", open)
	}
	chunks := []Chunk{
		{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Target: channel.Target{Peer: group("3").Peer}, Text: "<b>a</b>", Plain: "a", Key: "k0", ReplyTo: "3"}},
		{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Target: channel.Target{Peer: group("3").Peer}, Text: "b", Plain: "b", Key: "k1"}},
	}
	if err := db.AnswerInbound(ctx, ids[2], chunks); err != nil {
		t.Fatal(err)
	}
	if hist, _ := db.PendingHistory(ctx, "telegram", "default", conv, ids[2]+1, 50); len(hist) != 0 {
		t.Errorf("history still pending after the answer: %+v", hist)
	}
	got, err := db.Chunks(ctx, AnswerBatch(ids[2]))
	if err != nil || len(got) != 2 || got[0].Text != "<b>a</b>" || got[0].ReplyTo != "3" || got[1].Key != "k1" || got[0].State != SendPending {
		t.Fatalf("Chunks = %+v, %v", got, err)
	}
	b := AnswerBatch(ids[2])
	if err := db.EndSend(ctx, b, 0, "m1", nil); !errors.Is(err, ErrStateChanged) {
		t.Errorf("EndSend of a chunk not sending: %v", err)
	}
	if err := db.BeginSend(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.BeginSend(ctx, b, 0); !errors.Is(err, ErrStateChanged) {
		t.Errorf("BeginSend twice: %v", err)
	}
	if err := db.EndSend(ctx, b, 0, "m1", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.BeginSend(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSend(ctx, b, 1, "", nil); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Chunks(ctx, b)
	if got[0].State != SendSent || got[0].MessageID != "m1" || got[1].State != SendUnconfirmed {
		t.Errorf("after sends: %+v", got)
	}
	if err := db.SetInbound(ctx, ids[2], InboxAnswered, InboxDelivered, ""); err != nil {
		t.Fatal(err)
	}
	if convs, _ := db.OpenConversations(ctx, "telegram", "default"); len(convs) != 0 {
		t.Errorf("OpenConversations after delivery = %v", convs)
	}
}

func TestAnswerWithoutChunksIsDelivered(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	id, _, _ := db.AcceptInbound(ctx, env("1", "d1"))
	if err := db.StartInbound(ctx, id, InboxReceived, "main", "agent:main:main"); err != nil {
		t.Fatal(err)
	}
	if err := db.AnswerInbound(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	if open, _ := db.OpenInbound(ctx, "telegram", "default", Conversation(env("1", ""))); len(open) != 0 {
		t.Errorf("a NO_REPLY answer left the row open: %+v", open)
	}
}

// TestInboxSurvivesKill closes the database mid-way (the state a kill -9
// leaves: every committed transaction, nothing after) and reopens it.
func TestInboxSurvivesKill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "talon.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 3)
	for i := range ids {
		ids[i], _, _ = db.AcceptInbound(ctx, env(fmt.Sprint(i), fmt.Sprint("d", i)))
	}
	db.StartInbound(ctx, ids[1], InboxReceived, "main", "agent:main:main")
	db.StartInbound(ctx, ids[2], InboxReceived, "main", "agent:main:main")
	ch := []Chunk{{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Text: "x", Plain: "x", Key: "k"}},
		{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Text: "y", Plain: "y", Key: "k2"}}}
	db.AnswerInbound(ctx, ids[2], ch)
	db.BeginSend(ctx, AnswerBatch(ids[2]), 0) // in flight when killed
	db.Close()

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, fresh, _ := db.AcceptInbound(ctx, env("0", "d0")); fresh {
		t.Error("a message accepted before the kill was accepted again as new")
	}
	open, err := db.OpenInbound(ctx, "telegram", "default", Conversation(env("", "")))
	if err != nil || len(open) != 3 {
		t.Fatalf("OpenInbound after reopen = %+v, %v", open, err)
	}
	want := []InboxState{InboxReceived, InboxRunning, InboxAnswered}
	for i, in := range open {
		if in.State != want[i] {
			t.Errorf("row %d: state %s, want %s", in.ID, in.State, want[i])
		}
	}
	n, err := db.RecoverSends(ctx, "telegram", "default", 0)
	if err != nil || n != 1 {
		t.Fatalf("RecoverSends = %d, %v", n, err)
	}
	got, _ := db.Chunks(ctx, AnswerBatch(ids[2]))
	if got[0].State != SendUnconfirmed || got[1].State != SendPending {
		t.Errorf("after recovery: %s, %s; want unconfirmed, pending", got[0].State, got[1].State)
	}
}

func TestRecoverSendsResendsIdempotentPlatforms(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	got, existing, err := db.QueueSend(ctx, "idem-1", []Chunk{{Channel: "discord", AccountID: "default", Outbound: channel.Outbound{Text: "x", Key: "n1"}}})
	if err != nil || existing || len(got) != 1 {
		t.Fatalf("QueueSend = %+v, %v, %v", got, existing, err)
	}
	db.BeginSend(ctx, got[0].Batch, 0)
	// Restarted after the platform's deduplication window: unconfirmed.
	db.Now = fixedClock(t0.Add(3 * time.Minute))
	later, _, _ := db.QueueSend(ctx, "idem-2", []Chunk{{Channel: "discord", AccountID: "default", Outbound: channel.Outbound{Text: "y", Key: "n2"}}})
	db.BeginSend(ctx, later[0].Batch, 0)
	db.Now = fixedClock(t0.Add(4 * time.Minute))
	if n, _ := db.RecoverSends(ctx, "discord", "default", 2*time.Minute); n != 2 {
		t.Fatalf("RecoverSends = %d, want 2", n)
	}
	if got, _ = db.Chunks(ctx, got[0].Batch); got[0].State != SendUnconfirmed {
		t.Errorf("a chunk in flight before the window: %s, want unconfirmed", got[0].State)
	}
	if later, _ = db.Chunks(ctx, later[0].Batch); later[0].State != SendPending {
		t.Errorf("a chunk in flight within the window: %s, want pending", later[0].State)
	}
	db.Now = fixedClock(t0)
	again, existing, err := db.QueueSend(ctx, "idem-1", []Chunk{{Channel: "discord", AccountID: "default", Outbound: channel.Outbound{Text: "other"}}})
	if err != nil || !existing || len(again) != 1 || again[0].Text != "x" {
		t.Errorf("QueueSend with the same key = %+v, %v, %v; want the first send's chunks", again, existing, err)
	}
	if _, _, err := db.QueueSend(ctx, " ", nil); err == nil {
		t.Error("QueueSend accepted an empty idempotency key")
	}
}

func TestChunkButtonsPersist(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	buttons := []channel.Button{{Label: "Allow once", Data: "/approve ab12 allow-once"}, {Label: "Deny", Data: "/approve ab12 deny"}}
	got, _, err := db.QueueSend(ctx, "approval:1", []Chunk{
		{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Text: "run ls?", Key: "k1"}},
		{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Text: "answer below", Key: "k2", Buttons: buttons}},
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("QueueSend = %+v, %v", got, err)
	}
	if got[0].Buttons != nil || !reflect.DeepEqual(got[1].Buttons, buttons) {
		t.Errorf("buttons read back = %+v, %+v; want none, %+v", got[0].Buttons, got[1].Buttons, buttons)
	}
}

func TestPruneInbox(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.UnixMilli(1_700_000_000_000)
	db.Now = fixedClock(now.Add(-40 * 24 * time.Hour))
	old, _, _ := db.AcceptInbound(ctx, env("old", "old"))
	db.SetInbound(ctx, old, InboxReceived, InboxDropped, "")
	oldOpen, _, _ := db.AcceptInbound(ctx, env("old-open", "old-open"))
	db.Now = fixedClock(now)
	var done []int64
	for i := range 5 {
		id, _, _ := db.AcceptInbound(ctx, env(fmt.Sprint(i), fmt.Sprint("d", i)))
		db.StartInbound(ctx, id, InboxReceived, "main", "agent:main:main")
		db.AnswerInbound(ctx, id, []Chunk{{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Text: "x", Key: fmt.Sprint(i)}}})
		db.SetInbound(ctx, id, InboxAnswered, InboxDelivered, "")
		done = append(done, id)
	}
	n, err := db.PruneInbox(ctx, "telegram", "default", InboxBounds{MaxAge: 30 * 24 * time.Hour, PerAccount: 3})
	if err != nil {
		t.Fatal(err)
	}
	// The old dropped row, and delivered rows beyond the newest 3 rows
	// (the 3 newest are done[2:], so done[0] and done[1] go).
	if n != 3 {
		t.Errorf("pruned %d rows, want 3", n)
	}
	if open, _ := db.OpenInbound(ctx, "telegram", "default", Conversation(env("", ""))); len(open) != 1 || open[0].ID != oldOpen {
		t.Errorf("open rows after prune = %+v; the open one must stay", open)
	}
	if c, _ := db.Chunks(ctx, AnswerBatch(done[0])); len(c) != 0 {
		t.Errorf("chunks of a pruned row remain: %+v", c)
	}
	if _, fresh, _ := db.AcceptInbound(ctx, env("4", "d4")); fresh {
		t.Error("a remembered message was accepted again")
	}

	// Sends: the newest PerAccount chunks stay, and the rest of their batches.
	for i := range 4 {
		db.Now = fixedClock(now.Add(time.Duration(i) * time.Second))
		chunks := []Chunk{{Channel: "telegram", AccountID: "default"}, {Channel: "telegram", AccountID: "default"}}
		if _, _, err := db.QueueSend(ctx, fmt.Sprint("send-", i), chunks); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.PruneInbox(ctx, "telegram", "default", InboxBounds{MaxAge: 30 * 24 * time.Hour, PerAccount: 3}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{0, 0, 2, 2} { // the newest 3 chunks, rounded up to whole batches
		if c, _ := db.Chunks(ctx, "send:"+fmt.Sprint("send-", i)); len(c) != want {
			t.Errorf("send %d: %d chunks kept, want %d", i, len(c), want)
		}
	}
}

// TestAcceptInboundConcurrently races redeliveries of the same messages
// from many goroutines: each message is fresh exactly once.
func TestAcceptInboundConcurrently(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	var mu sync.Mutex
	fresh := map[string]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				e := env(fmt.Sprint(i), fmt.Sprint("d", i, "-", g)) // same message, a new delivery each time
				_, ok, err := db.AcceptInbound(ctx, e)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					fresh[e.MessageID]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		if n := fresh[fmt.Sprint(i)]; n != 1 {
			t.Errorf("message %d fresh %d times, want 1", i, n)
		}
	}
}
