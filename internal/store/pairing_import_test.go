package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestImportPairing(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	now := time.UnixMilli(1_700_000_000_000)
	// A request the gateway made before the import: CODE0001 for sender 1.
	if _, err := db.AskPairing(ctx, ask("1", now.Add(-10*time.Minute), codes())); err != nil {
		t.Fatal(err)
	}
	req := func(account, sender, code string, age time.Duration) PairingRequest {
		return PairingRequest{Channel: "telegram", AccountID: account, SenderID: sender, Code: code,
			CreatedAt: now.Add(-age), LastSeenAt: now.Add(-age), Meta: json.RawMessage(`{"accountId":"` + account + `"}`)}
	}
	in := PairingImport{Now: now, TTL: time.Hour, Cap: 3, Requests: []PairingRequest{
		req("default", "2", "AAAA2222", 5*time.Minute),
		req("default", "1", "BBBB2222", 5*time.Minute), // sender 1 waits with CODE0001
		req("work", "3", "CODE0001", 5*time.Minute),    // codes are unique per channel
		req("work", "4", "CCCC2222", 2*time.Hour),
		req("default", "5", "DDDD2222", time.Minute),
		req("default", "6", "EEEE2222", time.Minute), // default has 1, 2 and 5 now
		{Channel: "slack", AccountID: "default", SenderID: "U1", Code: "AAAA2222", CreatedAt: now, LastSeenAt: now},
	}, Allow: []PairingAllow{{"telegram", "default", "7"}, {"telegram", "work", "7"}, {"telegram", "default", "7"}}}
	steps := []struct {
		name   string
		dryRun bool
		want   PairingImported
		codes  []string // the pending codes after the step
	}{
		{"dry run changes nothing", true, PairingImported{
			Requests: []ImportOutcome{ImportNew, ImportSenderPending, ImportCodeInUse, ImportExpired, ImportNew, ImportCapped, ImportNew},
			Allow:    []bool{true, true, false}}, []string{"CODE0001"}},
		{"import", false, PairingImported{
			Requests: []ImportOutcome{ImportNew, ImportSenderPending, ImportCodeInUse, ImportExpired, ImportNew, ImportCapped, ImportNew},
			Allow:    []bool{true, true, false}}, []string{"CODE0001", "AAAA2222", "DDDD2222", "AAAA2222"}},
		{"again: nothing new", false, PairingImported{
			Requests: []ImportOutcome{ImportPresent, ImportSenderPending, ImportCodeInUse, ImportExpired, ImportPresent, ImportCapped, ImportPresent},
			Allow:    []bool{false, false, false}}, []string{"CODE0001", "AAAA2222", "DDDD2222", "AAAA2222"}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			in := in
			in.DryRun = s.dryRun
			got, err := db.ImportPairing(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(s.want, got); d != "" {
				t.Errorf("outcomes (-want +got):\n%s", d)
			}
			list, err := db.PairingRequests(ctx, "", "", now, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, r := range list {
				codes = append(codes, r.Code)
			}
			if d := cmp.Diff(s.codes, codes); d != "" {
				t.Errorf("pending codes (-want +got):\n%s", d)
			}
		})
	}
	t.Run("imported requests can be approved", func(t *testing.T) {
		r, err := db.ApprovePairing(ctx, PairingMatch{Channel: "telegram", Code: "dddd2222"}, now, time.Hour)
		if err != nil || r.SenderID != "5" || r.LastSeenAt.UnixMilli() != now.Add(-time.Minute).UnixMilli() || string(r.Meta) != `{"accountId":"default"}` {
			t.Fatalf("approve = %+v, %v", r, err)
		}
		allowed, err := db.PairingAllowList(ctx, "telegram", "default")
		if d := cmp.Diff([]string{"5", "7"}, allowed); d != "" || err != nil {
			t.Errorf("allow list (-want +got):\n%s %v", d, err)
		}
	})
	t.Run("an invalid request imports nothing", func(t *testing.T) {
		bad := PairingImport{Now: now, TTL: time.Hour, Cap: 3, Requests: []PairingRequest{req("default", "8", "FFFF2222", 0), req("default", "", "GGGG2222", 0)},
			Allow: []PairingAllow{{"telegram", "default", "9"}}}
		if _, err := db.ImportPairing(ctx, bad); err == nil {
			t.Fatal("no error for a request without a sender")
		}
		allowed, _ := db.PairingAllowList(ctx, "telegram", "default")
		if d := cmp.Diff([]string{"5", "7"}, allowed); d != "" {
			t.Errorf("allow list (-want +got):\n%s", d)
		}
	})
}
