package slack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/slack/slacktest"
)

// benchApp is an App that has identified its bot, without a network.
func benchApp(b *testing.B, mode string) *App {
	a, err := New(Options{Mode: mode, BotToken: "xoxb-1", AppToken: "xapp-1", SigningSecret: "s", HTTPClient: &http.Client{}})
	if err != nil {
		b.Fatal(err)
	}
	a.bot = identity{UserID: "UBOT", BotID: "BBOT", TeamID: "T1"}
	return a
}

const benchEvent = `{"token":"x","team_id":"T1","api_app_id":"A1","type":"event_callback","event_id":"Ev0123456789","event_time":1777000000,` +
	`"event":{"type":"message","channel":"C0123456","channel_type":"channel","user":"U0123456","team":"T1",` +
	`"text":"<@UBOT> could you summarise yesterday's incident thread for the on-call handover?","ts":"1777000000.000100","thread_ts":"1776999999.000100","parent_user_id":"U0999"}}`

// BenchmarkInboundEvent is one Events API payload decoded, checked and
// mapped to an Envelope, up to Accept (a Socket Mode envelope's work
// before the ack).
func BenchmarkInboundEvent(b *testing.B) {
	a := benchApp(b, ModeSocket)
	accept := func(ctx context.Context, e channel.Envelope) error { return nil }
	raw := []byte(benchEvent)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.handleCallback(ctx, raw, accept); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventsRequest is the same through ServeHTTP: body read,
// signature verified, event accepted, 200 written.
func BenchmarkEventsRequest(b *testing.B) {
	a := benchApp(b, ModeHTTP)
	a.accept = func(ctx context.Context, e channel.Envelope) error { return nil }
	raw := []byte(benchEvent)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := Sign([]byte("s"), ts, raw)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/channels/_/slack/default", strings.NewReader(benchEvent))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Slack-Request-Timestamp", ts)
		r.Header.Set("X-Slack-Signature", sig)
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// TestIdleSocketMemory measures what an idle, connected Socket Mode
// account costs: n Apps connect to one fake, and the growth of heap in use
// plus goroutine stacks is divided by n. The fake's side of each
// connection (its handler goroutine, WebSocket state and buffers) is in
// the same process and counted too, so the figure is an upper bound for
// the App alone.
func TestIdleSocketMemory(t *testing.T) {
	const n = 200
	fake := slacktest.Start(t)
	client := fake.Client()
	before := inUse()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, n)
	apps := make([]*App, n)
	for i := range apps {
		a, err := New(Options{AccountID: fmt.Sprint("a", i), BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		apps[i] = a
		go func() {
			a.Run(ctx, func(context.Context, channel.Envelope) error { return nil })
			done <- struct{}{}
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range n {
			<-done
		}
	})
	if err := fake.WaitConnections(testCtx(t), n); err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		for !a.Status().Connected {
			runtime.Gosched()
		}
	}
	after := inUse()
	per := (int64(after) - int64(before)) / n
	t.Logf("idle connected socket-mode account: %d bytes (heap in use + stacks, client and fake server sides, %d accounts)", per, n)
	if per > 100<<10 {
		t.Errorf("an idle account costs %d bytes, goal under 100 KB", per)
	}
}

// inUse is heap in use plus stacks after a full collection.
func inUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkSocketEventToAccept is one event from the fake's Socket Mode
// server to Accept over loopback: frame written, read, decoded, mapped,
// accepted (the ack follows).
func BenchmarkSocketEventToAccept(b *testing.B) {
	fake := slacktest.Start(b)
	a, err := New(Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.URL, HTTPClient: fake.Client()})
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		a.Run(ctx, func(context.Context, channel.Envelope) error { got <- struct{}{}; return nil })
		close(stopped)
	}()
	defer func() { cancel(); <-stopped }()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := fake.WaitConnections(wctx, 1); err != nil {
		b.Fatal(err)
	}
	for !a.Status().Connected {
		runtime.Gosched()
	}
	m := slacktest.Message{Kind: "channel", Text: "<@U0BOT> what changed in the deploy?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fake.UserSays(wctx, m); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}
