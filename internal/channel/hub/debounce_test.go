package hub

import (
	"context"
	"slices"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/store"
)

// debounced lets anyone DM the bot and waits 300 ms of quiet.
const debounced = `{session: {dmScope: "per-channel-peer"}, messages: {inbound: {byChannel: {telegram: 300}}},
	channels: {telegram: {botToken: "tok-1", dmPolicy: "open", allowFrom: ["*"], replyToMode: "batched"}}}`

func TestDebounce(t *testing.T) {
	media := dm("A", "m")
	media.Media = []channel.Media{{Ref: "f1", Kind: "image"}}
	for _, tc := range []struct {
		name string
		msgs []channel.Envelope
		// quiet says the test lets the window pass: without it only what
		// ends a batch at once lets the first turn start.
		quiet bool
		want  []string // the turns' texts, in order
		reply string   // the first answer's native reply reference
	}{
		{"a burst is one turn", []channel.Envelope{dm("A", "1"), dm("A", "2"), dm("A", "3")}, true,
			[]string{"hello 1\nhello 2\nhello 3"}, "1"},
		{"one message waits the window alone", []channel.Envelope{dm("A", "1")}, true, []string{"hello 1"}, ""},
		{"a command ends the batch at once", []channel.Envelope{dm("A", "1"), dm("A", "2"), withText(dm("A", "3"), "/status")}, false,
			[]string{"hello 1\nhello 2", "/status"}, "1"},
		{"media ends the batch at once", []channel.Envelope{dm("A", "1"), media}, false,
			[]string{"hello 1", "hello m"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			r := newRig(t)
			r.apply(debounced)
			tr := r.tr("default")
			for _, e := range tc.msgs {
				tr.inject(ctx, t, e)
			}
			if tc.quiet {
				waitFor(ctx, t, func() bool { return r.clock.live() > 0 }) // the worker waits
				r.clock.advance(300 * time.Millisecond)
				// The worker may start a new wait after a wake-up: tick
				// until the turn has run.
				done := make(chan struct{})
				defer close(done)
				go func() {
					for {
						select {
						case <-done:
							return
						case <-time.After(time.Millisecond):
							r.clock.fire()
						}
					}
				}()
			}
			r.settled(ctx, len(tc.msgs))
			var got []string
			for _, c := range r.turns.calls {
				got = append(got, c.Envelope.Text)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("turns %q, want %q", got, tc.want)
			}
			if p := r.p.posts[0]; p.ReplyTo != tc.reply {
				t.Errorf("the first answer replies to %q, want %q", p.ReplyTo, tc.reply)
			}
			if n := len(tc.msgs) - len(tc.want); n > 0 {
				rows, err := r.db.OpenInbound(ctx, "telegram", "default", store.Conversation(tc.msgs[0]))
				if err != nil || len(rows) != 0 {
					t.Errorf("open rows after the batch: %+v, %v", rows, err)
				}
			}
		})
	}
}

func withText(e channel.Envelope, text string) channel.Envelope {
	e.Text = text
	return e
}

func waitFor(ctx context.Context, t *testing.T, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatal("timed out")
		case <-time.After(time.Millisecond):
		}
	}
}
