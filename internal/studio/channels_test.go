package studio

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"talon/internal/channel/telegram/tgtest"
)

// TestChannelsPage: the Channels page shows a Telegram account against a
// fake Bot API, a stranger's pairing request with Approve and Dismiss,
// an approval that lets the sender talk to the bot (told by DM), and the
// session the conversation made.
func TestChannelsPage(t *testing.T) {
	tg := tgtest.Start(t)
	e := newEnv(t, `{"channels":{"telegram":{"botToken":"`+tg.Token+`","apiRoot":"`+tg.URL+`","dmPolicy":"pairing"}},"session":{"dmScope":"per-channel-peer"}}`)
	b := e.signIn(adminToken, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, page := b.get("/channels")
	if !strings.Contains(page, "<td>Telegram</td><td>default</td>") || !strings.Contains(page, "None waiting.") {
		t.Fatalf("the channels page before any message:\n%s", page)
	}
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 808, FirstName: "Pia"}, Text: "hi"})
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_, page = b.get("/channels")
	form := regexp.MustCompile(`action="/channels/pairing/([A-Za-z0-9_-]+)/approve"`).FindStringSubmatch(page)
	if form == nil || !strings.Contains(page, "Approve Pia") || !strings.Contains(page, "Dismiss") {
		t.Fatalf("no pairing request with Approve and Dismiss:\n%s", page)
	}
	if strings.Contains(page, pairingCodeIn(tg)) {
		t.Error("the page shows the pairing code; requests go by their opaque id")
	}
	resp, page := b.post("/channels/pairing/"+form[1]+"/approve", url.Values{"channel": {"telegram"}, "account": {"default"}})
	if resp.StatusCode != 200 || !strings.Contains(page, "Approved: 808") || !strings.Contains(page, "None waiting.") {
		t.Fatalf("approving: %d\n%s", resp.StatusCode, page)
	}
	sent, err := tg.WaitSent(ctx, 2)
	if err != nil || sent[1].ChatID != "808" {
		t.Fatalf("the sender was not told of the approval: %+v %v", sent, err)
	}
	tg.UserSays(tgtest.Say{From: tgtest.User{ID: 808, FirstName: "Pia"}, Text: "hello again"})
	if _, err := tg.WaitSent(ctx, 3); err != nil {
		t.Fatalf("the approved sender got no answer: %v", err)
	}
	_, page = b.get("/channels")
	if !strings.Contains(page, "telegram: Pia") {
		t.Errorf("the session the chat made is not listed:\n%s", page)
	}
	for _, bad := range []struct{ path, account string }{
		{"/channels/pairing/" + form[1] + "/approve", "../x"},
		{"/channels/pairing/%3Cscript%3E/approve", "default"},
		{"/channels/pairing/" + form[1] + "/delete", "default"},
	} {
		if resp, _ := b.post(bad.path, url.Values{"channel": {"telegram"}, "account": {bad.account}}); resp.StatusCode < 400 {
			t.Errorf("POST %s with account %q: %d", bad.path, bad.account, resp.StatusCode)
		}
	}
}

// pairingCodeIn is the code of the fake's first pairing reply.
func pairingCodeIn(tg *tgtest.Server) string {
	for _, m := range tg.Sent() {
		if c := regexp.MustCompile(`\b[A-HJ-NP-Z2-9]{8}\b`).FindString(m.Text); c != "" {
			return c
		}
	}
	return "no code sent"
}
