package discord

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

// fast are timings that keep the tests short; the gateway's own heartbeat
// interval is set on the fake.
var fast = timing{
	backoffMin:   2 * time.Millisecond,
	backoffMax:   20 * time.Millisecond,
	acceptRetry:  time.Millisecond,
	helloTimeout: 10 * time.Second,
	invalidMin:   time.Millisecond,
	invalidMax:   3 * time.Millisecond,
}

// inbox is an Accept that keeps what it took; it refuses while failing
// is set.
type inbox struct {
	mu      sync.Mutex
	got     []channel.Envelope
	tries   int
	failing bool
	changed chan struct{}
}

func newInbox() *inbox { return &inbox{changed: make(chan struct{})} }

func (in *inbox) accept(ctx context.Context, e channel.Envelope) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.tries++
	defer in.change()
	if in.failing {
		return errors.New("store unavailable")
	}
	in.got = append(in.got, e)
	return nil
}

func (in *inbox) change() {
	close(in.changed)
	in.changed = make(chan struct{})
}

func (in *inbox) setFailing(v bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.failing = v
}

// waitFor waits until cond holds for what the inbox has seen.
func (in *inbox) waitFor(t *testing.T, ctx context.Context, what string, cond func(got []channel.Envelope, tries int) bool) []channel.Envelope {
	t.Helper()
	for {
		in.mu.Lock()
		got, tries, ch := append([]channel.Envelope(nil), in.got...), in.tries, in.changed
		in.mu.Unlock()
		if cond(got, tries) {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (have %d envelopes)", what, ctx.Err(), len(got))
		case <-ch:
		}
	}
}

// wait waits for the envelope of message id.
func (in *inbox) wait(t *testing.T, ctx context.Context, id string) channel.Envelope {
	t.Helper()
	got := in.waitFor(t, ctx, "message "+id, func(got []channel.Envelope, _ int) bool { return find(got, id) >= 0 })
	return got[find(got, id)]
}

func find(got []channel.Envelope, id string) int {
	for i, e := range got {
		if e.MessageID == id {
			return i
		}
	}
	return -1
}

// testCtx bounds a test's waits: a hang fails instead of stalling.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newBot is a bot for the fake with fast timings.
func newBot(t *testing.T, fake *discordtest.Server, edit func(*Options)) *Bot {
	t.Helper()
	o := Options{AccountID: "Main", Token: discordtest.Token, APIURL: fake.URL, HTTPClient: fake.Client()}
	if edit != nil {
		edit(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	b.timing = fast
	return b
}

// running is a bot whose Run is in progress.
type running struct {
	bot  *Bot
	in   *inbox
	stop context.CancelFunc
	done chan error
}

// run starts b.Run and stops it when the test ends.
func run(t *testing.T, b *Bot) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{bot: b, in: newInbox(), stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- b.Run(ctx, r.in.accept) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// result waits for Run to return.
func (r *running) result(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-ctx.Done():
		t.Fatal("Run did not return")
		return nil
	}
}

// startReady starts a bot on a fresh fake and waits for READY.
func startReady(t *testing.T, edit func(*Options)) (*discordtest.Server, *running) {
	t.Helper()
	fake := discordtest.Start(t)
	r := run(t, newBot(t, fake, edit))
	if err := fake.WaitReady(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	return fake, r
}

func ptr[T any](v T) *T { return &v }
