package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"talon/internal/channel"
)

// codes hands out CODE0001, CODE0002, … so tests can name them.
func codes() func() (string, error) {
	var n atomic.Int64
	return func() (string, error) { return fmt.Sprintf("CODE%04d", n.Add(1)), nil }
}

func ask(sender string, now time.Time, next func() (string, error)) PairingAsk {
	return PairingAsk{Channel: "telegram", AccountID: "default", SenderID: sender, Now: now,
		TTL: time.Hour, Cap: 3, NewCode: next, Meta: json.RawMessage(`{"username":"u` + sender + `"}`)}
}

func TestAskPairingCapAndTTL(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	next := codes()
	now := time.UnixMilli(1_700_000_000_000)
	steps := []struct {
		name    string
		sender  string
		at      time.Duration
		created bool
		capped  bool
		code    string
	}{
		{"first sender gets a code", "1", 0, true, false, "CODE0001"},
		{"second", "2", time.Minute, true, false, "CODE0002"},
		{"third", "3", 2 * time.Minute, true, false, "CODE0003"},
		{"fourth sender: capped, no code (vector 8)", "4", 3 * time.Minute, false, true, ""},
		{"first again: same code, not created (vector 8)", "1", 4 * time.Minute, false, false, "CODE0001"},
		{"after the first expired, the fourth gets a slot", "4", time.Hour + time.Second, true, false, "CODE0004"},
		{"the first, expired, asks anew", "1", time.Hour + time.Minute + time.Second, true, false, "CODE0005"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, err := db.AskPairing(ctx, ask(s.sender, now.Add(s.at), next))
			if err != nil {
				t.Fatal(err)
			}
			if out.Created != s.created || out.Capped != s.capped || out.Request.Code != s.code {
				t.Errorf("AskPairing = %+v; want created %v capped %v code %q", out, s.created, s.capped, s.code)
			}
		})
	}
	list, err := db.PairingRequests(ctx, "telegram", "", now.Add(time.Hour+2*time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var senders []string
	for _, r := range list {
		senders = append(senders, r.SenderID)
	}
	if fmt.Sprint(senders) != "[4 1]" { // 2 and 3 expired too by then
		t.Errorf("pending after expiry = %v", senders)
	}
}

func TestAskPairingRefreshKeepsCreatedAt(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	next := codes()
	now := time.UnixMilli(1_700_000_000_000)
	db.AskPairing(ctx, ask("1", now, next))
	out, _ := db.AskPairing(ctx, ask("1", now.Add(50*time.Minute), next))
	if !out.Request.CreatedAt.Equal(now) || !out.Request.LastSeenAt.Equal(now.Add(50*time.Minute)) {
		t.Errorf("refresh: created %v last seen %v", out.Request.CreatedAt, out.Request.LastSeenAt)
	}
	// The TTL runs from createdAt (R7.2), not from the last message.
	out, _ = db.AskPairing(ctx, ask("1", now.Add(61*time.Minute), next))
	if !out.Created || out.Request.Code == "CODE0001" {
		t.Errorf("after the TTL from createdAt: %+v, want a new request", out)
	}
}

func TestAskPairingCodeCollision(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.UnixMilli(1_700_000_000_000)
	draws := []string{"SAME", "SAME", "OTHER"}
	var i int
	next := func() (string, error) { i++; return draws[i-1], nil }
	db.AskPairing(ctx, ask("1", now, next))
	out, err := db.AskPairing(ctx, ask("2", now, next))
	if err != nil || out.Request.Code != "OTHER" {
		t.Errorf("second sender = %+v, %v; want the code drawn after the collision", out, err)
	}
	bad := ask("3", now, func() (string, error) { return "", errors.New("no entropy") })
	if _, err := db.AskPairing(ctx, bad); err == nil {
		t.Error("AskPairing succeeded without a code")
	}
	for _, a := range []PairingAsk{{}, {Channel: "telegram", AccountID: "a", SenderID: "1"}} {
		if _, err := db.AskPairing(ctx, a); err == nil {
			t.Errorf("AskPairing(%+v) accepted", a)
		}
	}
}

func TestApproveAndDismiss(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "talon.db")
	gw, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	cli, err := Open(path) // `talon pairing approve` in another process
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	next := codes()
	now := time.UnixMilli(1_700_000_000_000)
	gw.AskPairing(ctx, ask("1", now, next))
	gw.AskPairing(ctx, ask("2", now, next))
	if allowed, _ := gw.PairingAllowList(ctx, "telegram", "default"); len(allowed) != 0 {
		t.Fatalf("allow list before approval = %v", allowed)
	}
	r, err := cli.ApprovePairing(ctx, PairingMatch{Channel: "telegram", Code: "code0001"}, now.Add(time.Minute), time.Hour)
	if err != nil || r.SenderID != "1" || r.AccountID != "default" {
		t.Fatalf("ApprovePairing by code = %+v, %v", r, err)
	}
	if allowed, _ := gw.PairingAllowList(ctx, "telegram", "default"); fmt.Sprint(allowed) != "[1]" {
		t.Errorf("the gateway's allow list after another process approved = %v, want [1]", allowed)
	}
	if _, err := cli.ApprovePairing(ctx, PairingMatch{Channel: "telegram", Code: "CODE0001"}, now, time.Hour); !errors.Is(err, ErrPairingNotFound) {
		t.Errorf("approving twice: %v", err)
	}
	if _, err := cli.ApprovePairing(ctx, PairingMatch{Channel: "telegram", Code: "CODE0002"}, now.Add(2*time.Hour), time.Hour); !errors.Is(err, ErrPairingNotFound) {
		t.Errorf("approving an expired request: %v", err)
	}
	gw.AskPairing(ctx, ask("3", now.Add(2*time.Hour), next))
	d, err := gw.DismissPairing(ctx, PairingMatch{Channel: "telegram", AccountID: "default", SenderID: "3"}, now.Add(2*time.Hour), time.Hour)
	if err != nil || d.SenderID != "3" {
		t.Errorf("DismissPairing = %+v, %v", d, err)
	}
	if allowed, _ := gw.PairingAllowList(ctx, "telegram", "default"); fmt.Sprint(allowed) != "[1]" {
		t.Errorf("dismiss approved the sender: %v", allowed)
	}
	for _, m := range []PairingMatch{{Code: "X"}, {Channel: "telegram"}, {Channel: "telegram", Code: "X", SenderID: "1"}} {
		if _, err := gw.ApprovePairing(ctx, m, now, time.Hour); err == nil || errors.Is(err, ErrPairingNotFound) {
			t.Errorf("ApprovePairing(%+v) = %v; want a refusal of the match", m, err)
		}
	}
	if ok, _ := gw.RevokePairing(ctx, "telegram", "default", "1"); !ok {
		t.Error("RevokePairing found nothing")
	}
}

// TestAskPairingRacesKeepTheCap runs many unknown senders at once from two
// DBs on one file: never more than the cap pending.
func TestAskPairingRacesKeepTheCap(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "talon.db")
	var dbs []*DB
	for range 2 {
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	next := codes()
	now := time.UnixMilli(1_700_000_000_000)
	var created atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := dbs[i%2].AskPairing(ctx, ask(fmt.Sprint(i), now, next))
			if err != nil {
				t.Error(err)
			}
			if out.Created {
				created.Add(1)
			}
		}()
	}
	wg.Wait()
	list, _ := dbs[0].PairingRequests(ctx, "", "", now, time.Hour)
	if created.Load() != 3 || len(list) != 3 {
		t.Errorf("created %d, pending %d; want 3 and 3", created.Load(), len(list))
	}
}

func TestPairInboundCommitsReplyWithRequest(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	next := codes()
	now := time.UnixMilli(1_700_000_000_000)
	reply := func(r PairingRequest) ([]Chunk, error) {
		return []Chunk{{Channel: "telegram", AccountID: "default", Outbound: channel.Outbound{Text: "code " + r.Code, Key: "p"}}}, nil
	}
	id1, _, _ := db.AcceptInbound(ctx, env("1", "d1"))
	out, err := db.PairInbound(ctx, id1, ask("111", now, next), reply)
	if err != nil || !out.Created {
		t.Fatalf("PairInbound = %+v, %v", out, err)
	}
	got, _ := db.Chunks(ctx, AnswerBatch(id1))
	if len(got) != 1 || got[0].Text != "code CODE0001" {
		t.Errorf("reply chunks = %+v", got)
	}
	id2, _, _ := db.AcceptInbound(ctx, env("2", "d2"))
	if out, _ := db.PairInbound(ctx, id2, ask("111", now, next), reply); out.Created {
		t.Error("a second message created a second request")
	}
	if got, _ := db.Chunks(ctx, AnswerBatch(id2)); len(got) != 0 {
		t.Errorf("a refresh queued a reply: %+v", got)
	}
	open, _ := db.OpenInbound(ctx, "telegram", "default", Conversation(env("", "")))
	if len(open) != 1 || open[0].ID != id1 || open[0].State != InboxAnswered {
		t.Errorf("open rows = %+v; want only the first, answered", open)
	}
	// A reply that cannot be built rolls the request back too.
	id3, _, _ := db.AcceptInbound(ctx, env("3", "d3"))
	fail := func(PairingRequest) ([]Chunk, error) { return nil, errors.New("render") }
	if _, err := db.PairInbound(ctx, id3, ask("222", now, next), fail); err == nil {
		t.Fatal("PairInbound succeeded with a failing reply")
	}
	if list, _ := db.PairingRequests(ctx, "telegram", "default", now, time.Hour); len(list) != 1 {
		t.Errorf("pending after a rolled back ask = %d, want 1", len(list))
	}
}
