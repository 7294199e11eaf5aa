package telegram

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

var ann = tgtest.User{ID: 42, FirstName: "Ann", Username: "ann"}

// testTiming keeps the loop's waits short; nothing asserts on them.
var testTiming = timing{pollTimeout: 30 * time.Second, stall: 120 * time.Second,
	backoffMin: 5 * time.Millisecond, backoffMax: 50 * time.Millisecond, maxWait: 5 * time.Second, sleep: sleep}

func newBot(t *testing.T, s *tgtest.Server, mod func(*Options)) *Bot {
	t.Helper()
	o := Options{AccountID: "main", Token: s.Token, APIRoot: s.URL, HTTPClient: &http.Client{}, LinkPreview: true}
	if mod != nil {
		mod(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	b.timing = testTiming
	return b
}

// inbox is an Accept that records envelopes and refuses while fail > 0.
type inbox struct {
	mu      sync.Mutex
	fail    int
	got     []channel.Envelope
	refused []string // DeliveryIDs refused
	changed chan struct{}
}

func newInbox() *inbox { return &inbox{changed: make(chan struct{}, 1)} }

func (in *inbox) accept(_ context.Context, e channel.Envelope) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	defer func() {
		select {
		case in.changed <- struct{}{}:
		default:
		}
	}()
	if in.fail > 0 {
		in.fail--
		in.refused = append(in.refused, e.DeliveryID)
		return errors.New("store is down")
	}
	in.got = append(in.got, e)
	return nil
}

func (in *inbox) wait(ctx context.Context, t *testing.T, n int) []channel.Envelope {
	t.Helper()
	for {
		in.mu.Lock()
		if len(in.got) >= n {
			got := append([]channel.Envelope(nil), in.got...)
			in.mu.Unlock()
			return got
		}
		in.mu.Unlock()
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d envelopes: %v", n, ctx.Err())
		case <-in.changed:
		}
	}
}

// run starts b.Run; the returned func cancels it and returns its error.
func run(t *testing.T, b *Bot, accept channel.Accept) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, accept) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Run did not return after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitStatus waits until cond holds for the bot's status. Status has no
// change feed, so it looks again each millisecond until ctx ends.
func waitStatus(ctx context.Context, t *testing.T, b *Bot, cond func(channel.Status) bool) channel.Status {
	t.Helper()
	for {
		st := b.Status()
		if cond(st) {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("status never matched: %+v", st)
		case <-time.After(time.Millisecond):
		}
	}
}

func TestNewRefuses(t *testing.T) {
	const token = "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	c := &http.Client{}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"short token", Options{Token: "123:abc", HTTPClient: c}, "bot token"},
		{"token with spaces", Options{Token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA ", HTTPClient: c}, "bot token"},
		{"no client", Options{Token: token}, "HTTP client"},
		{"root with token", Options{Token: token, HTTPClient: c, APIRoot: "https://api.telegram.org/bot" + token}, "/bot<TOKEN>"},
		{"root with scheme ftp", Options{Token: token, HTTPClient: c, APIRoot: "ftp://x.test"}, "scheme"},
		{"root with credentials", Options{Token: token, HTTPClient: c, APIRoot: "https://u:p@x.test"}, "credentials"},
		{"webhook without secret", Options{Token: token, HTTPClient: c, Webhook: &Webhook{URL: "https://x.test/hook"}}, "webhookSecret"},
		{"webhook secret with spaces", Options{Token: token, HTTPClient: c, Webhook: &Webhook{URL: "https://x.test/hook", Secret: "a b"}}, "webhookSecret"},
		{"webhook over http", Options{Token: token, HTTPClient: c, Webhook: &Webhook{URL: "http://x.test/hook", Secret: "s"}}, "https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error about %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "AAAAAAAAAAAA") {
				t.Fatalf("error shows the token: %v", err)
			}
		})
	}
	if _, err := New(Options{Token: token, HTTPClient: c, APIRoot: "https://tg.example.test/api/"}); err != nil {
		t.Fatalf("a root with a path: %v", err)
	}
}

func TestPollingMapsMessages(t *testing.T) {
	s := tgtest.Start(t)
	s.SetPrivacy(true)
	b := newBot(t, s, nil)
	in := newInbox()
	run(t, b, in.accept)
	ctx := testCtx(t)
	s.UserSays(tgtest.Say{From: ann, Text: "hello"})
	s.UserSays(tgtest.Say{From: ann, Chat: -1001, ChatTitle: "Ops", Text: "hey @talon_test_bot"})
	s.UserSays(tgtest.Say{From: ann, Chat: -1001, Topic: 17, Text: "topic talk @other_person"})
	got := in.wait(ctx, t, 3)
	want := []struct {
		peer                channel.Peer
		mentioned, mentions bool
	}{
		{channel.Peer{Kind: channel.Direct, ID: "42"}, false, false},
		{channel.Peer{Kind: channel.Group, ID: "-1001"}, true, false},
		{channel.Peer{Kind: channel.Group, ID: "-1001:topic:17"}, false, true},
	}
	for i, w := range want {
		if got[i].Peer != w.peer || got[i].Mentioned != w.mentioned || got[i].MentionsOthers != w.mentions || got[i].ReplyTo != nil {
			t.Errorf("envelope %d = %+v, want %+v", i, got[i], w)
		}
	}
	info := b.Info()
	if info.ID != s.Bot.ID || info.Username != s.Bot.Username || !info.CanReadAllGroupMessages {
		t.Fatalf("info = %+v", info)
	}
	st := waitStatus(ctx, t, b, func(st channel.Status) bool { return !st.LastInboundAt.IsZero() })
	if st.Mode != "polling" || !st.Connected || st.BotName != "talon_test_bot" || st.BotID != "7000000001" {
		t.Fatalf("status = %+v", st)
	}
}

func TestDurableIngress(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	in := newInbox()
	in.fail = 1 << 30 // the store is down
	_, first := s.UserSays(tgtest.Say{From: ann, Text: "one"})
	s.UserSays(tgtest.Say{From: ann, Text: "two"})
	run(t, b, in.accept)
	ctx := testCtx(t)
	id := strconv.FormatInt(first, 10)
	for {
		in.mu.Lock()
		n := len(in.refused)
		in.mu.Unlock()
		if n >= 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-in.changed:
		}
	}
	in.mu.Lock()
	for _, r := range in.refused {
		if r != id {
			t.Errorf("refused update %s; only %s should be offered while it is refused", r, id)
		}
	}
	in.fail = 0 // the store is back
	in.mu.Unlock()
	if n := s.Pending(); n != 2 {
		t.Fatalf("%d updates pending while accept refused, want 2 (offset not advanced)", n)
	}
	if st := b.Status(); !strings.Contains(st.LastError, "store is down") {
		t.Fatalf("status does not show the refusal: %+v", st)
	}
	got := in.wait(ctx, t, 2)
	if got[0].DeliveryID != id || got[0].Text != "one" || got[1].Text != "two" {
		t.Fatalf("order after retries: %+v", got)
	}
	// The poll after them acknowledges both to Telegram.
	if err := s.Wait(ctx, func() bool { return s.Pending() == 0 }); err != nil {
		t.Fatal(err)
	}
}

// recordWaits makes b's waits return at once and records them.
func recordWaits(b *Bot) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	b.timing.sleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err() == nil
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}
