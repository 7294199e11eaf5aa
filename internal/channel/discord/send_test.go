package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

func room(id string) channel.Target {
	return channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: id}}
}

func TestSend(t *testing.T) {
	no := false
	tests := []struct {
		name   string
		opts   func(*Options)
		out    channel.Outbound
		want   discordtest.Sent // ID filled from the answer
		dmWith string           // the DM channel's user, when the target is a user
	}{
		{
			name: "room",
			out:  channel.Outbound{Target: room(discordtest.ChannelID), Text: "**hi**", Key: "run1:0"},
			want: discordtest.Sent{ChannelID: discordtest.ChannelID, Content: "**hi**", Nonce: "run1:0", EnforceNonce: true, Flags: 4,
				AllowedMentions: &discordtest.AllowedMentions{Parse: []string{"users"}, RepliedUser: true}},
		},
		{
			name: "thread, replying, embeds shown",
			opts: func(o *Options) { o.SuppressEmbeds = &no },
			out:  channel.Outbound{Target: room(discordtest.ThreadID), Text: "see https://example.com", ReplyTo: "<reply>", Key: "run2:0"},
			want: discordtest.Sent{ChannelID: discordtest.ThreadID, Content: "see https://example.com", Nonce: "run2:0", EnforceNonce: true,
				ReplyTo: "<reply>", FailIfNotExists: &no, AllowedMentions: &discordtest.AllowedMentions{Parse: []string{"users"}, RepliedUser: true}},
		},
		{
			name:   "user, through the DM channel",
			out:    channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: discordtest.OtherUserID}}, Text: "psst", Key: strings.Repeat("long-key-", 8)},
			want:   discordtest.Sent{Content: "psst", Nonce: Nonce(strings.Repeat("long-key-", 8)), EnforceNonce: true, Flags: 4, AllowedMentions: &discordtest.AllowedMentions{Parse: []string{"users"}, RepliedUser: true}},
			dmWith: discordtest.OtherUserID,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake := discordtest.Start(t)
			b := newBot(t, fake, tt.opts)
			if tt.out.ReplyTo == "<reply>" {
				tt.out.ReplyTo = fake.UserSays(discordtest.Say{ChannelID: discordtest.ThreadID, Text: "q"})
				tt.want.ReplyTo = tt.out.ReplyTo
			}
			got, err := b.Send(ctx, tt.out)
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.Sent()
			if len(sent) != 1 {
				t.Fatalf("sent %d messages", len(sent))
			}
			tt.want.ID = got.MessageID
			if tt.dmWith != "" {
				tt.want.ChannelID = sent[0].ChannelID
				if !snowflake(sent[0].ChannelID) || sent[0].ChannelID == tt.dmWith {
					t.Errorf("DM posted into %q", sent[0].ChannelID)
				}
			}
			if diff := cmp.Diff(tt.want, sent[0]); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if b.Status().LastOutboundAt.IsZero() {
				t.Error("LastOutboundAt not set")
			}
		})
	}
}

// TestSendExactlyOnce: the same chunk sent twice, or a send whose answer
// was lost, posts one message (better #2).
func TestSendExactlyOnce(t *testing.T) {
	tests := []struct {
		name        string
		fail        []discordtest.SendFailure
		twice       bool
		wantErr     error // nil: confirmed
		wantAPI     int   // an APIError status, 0 for none
		wantPosted  int
		wantAttempt int
	}{
		{name: "the same key twice", twice: true, wantPosted: 1, wantAttempt: 2},
		{name: "answer lost, repeated with the nonce", fail: []discordtest.SendFailure{discordtest.LoseAnswer}, wantPosted: 1, wantAttempt: 2},
		{name: "server error, repeated with the nonce", fail: []discordtest.SendFailure{discordtest.ServerError}, wantPosted: 1, wantAttempt: 2},
		{name: "still unknown after the repeat", fail: []discordtest.SendFailure{discordtest.ServerError, discordtest.LoseAnswer}, wantErr: ErrUnconfirmed, wantPosted: 1, wantAttempt: 2},
		{name: "answer without an id", fail: []discordtest.SendFailure{discordtest.NoID}, wantErr: ErrUnconfirmed, wantPosted: 1, wantAttempt: 1},
		{name: "refused", fail: []discordtest.SendFailure{discordtest.Forbidden}, wantAPI: 403, wantPosted: 0, wantAttempt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			fake.FailNextSend(tt.fail...)
			out := channel.Outbound{Target: room(discordtest.ChannelID), Text: "once", Key: "run:7"}
			first, err := b.Send(ctx, out)
			if tt.twice {
				again, err2 := b.Send(ctx, out)
				if err2 != nil || again != first {
					t.Errorf("second send = %+v, %v; want %+v", again, err2, first)
				}
			}
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			case tt.wantAPI != 0:
				var api *APIError
				if !errors.As(err, &api) || api.Status != tt.wantAPI || errors.Is(err, ErrUnconfirmed) {
					t.Errorf("err = %v, want a %d refusal", err, tt.wantAPI)
				}
			case tt.wantErr == nil && tt.wantAPI == 0 && (err != nil || !snowflake(first.MessageID)):
				t.Errorf("send = %+v, %v", first, err)
			}
			if n := len(fake.Sent()); n != tt.wantPosted {
				t.Errorf("posted %d messages, want %d", n, tt.wantPosted)
			}
			posts := 0
			for _, r := range fake.Requests() {
				if r == "POST /channels/"+discordtest.ChannelID+"/messages" {
					posts++
				}
			}
			if posts != tt.wantAttempt {
				t.Errorf("%d POSTs, want %d", posts, tt.wantAttempt)
			}
		})
	}
}

func TestSendRateLimited(t *testing.T) {
	tests := []struct {
		name    string
		limits  []discordtest.RateLimit
		wantErr bool
		posts   int
	}{
		{name: "route limit", limits: []discordtest.RateLimit{{RetryAfter: 5 * time.Millisecond}}, posts: 2},
		{name: "global limit", limits: []discordtest.RateLimit{{RetryAfter: 5 * time.Millisecond, Global: true}}, posts: 2},
		{name: "too long to wait", limits: []discordtest.RateLimit{{RetryAfter: 10 * time.Minute}}, wantErr: true, posts: 1},
		{name: "limited again and again", limits: []discordtest.RateLimit{{RetryAfter: time.Millisecond}, {RetryAfter: time.Millisecond}, {RetryAfter: time.Millisecond}, {RetryAfter: time.Millisecond}, {RetryAfter: time.Millisecond}}, wantErr: true, posts: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			fake.RateLimitNext(tt.limits...)
			_, err := b.Send(testCtx(t), channel.Outbound{Target: room(discordtest.ChannelID), Text: "hi", Key: "k"})
			if (err != nil) != tt.wantErr || errors.Is(err, ErrUnconfirmed) {
				t.Fatalf("err = %v, want error %v (never unconfirmed: a 429 posted nothing)", err, tt.wantErr)
			}
			if n := len(fake.Requests()); n != tt.posts {
				t.Errorf("%d requests, want %d", n, tt.posts)
			}
			if want := 0; !tt.wantErr && len(fake.Sent()) != 1 || tt.wantErr && len(fake.Sent()) != want {
				t.Errorf("posted %d", len(fake.Sent()))
			}
		})
	}
}

func TestSendRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		out  channel.Outbound
	}{
		{"empty text", channel.Outbound{Target: room(discordtest.ChannelID), Text: "  "}},
		{"path in the channel id", channel.Outbound{Target: room("../users/@me"), Text: "x"}},
		{"path in the thread id", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.ChannelID}, ThreadID: "1/../2"}, Text: "x"}},
		{"user id not a snowflake", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: "@alice"}}, Text: "x"}},
		{"group kind", channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Group, ID: "1"}}, Text: "x"}},
		{"reply id not a snowflake", channel.Outbound{Target: room(discordtest.ChannelID), Text: "x", ReplyTo: "abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			if _, err := b.Send(testCtx(t), tt.out); err == nil {
				t.Fatal("Send accepted it")
			}
			if r := fake.Requests(); len(r) != 0 {
				t.Errorf("requests made: %v", r)
			}
		})
	}
}

func TestSendCancelled(t *testing.T) {
	fake := discordtest.Start(t)
	b := newBot(t, fake, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Send(ctx, channel.Outbound{Target: room(discordtest.ChannelID), Text: "x", Key: "k"}); err == nil {
		t.Fatal("Send with a cancelled context succeeded")
	}
	if n := len(fake.Sent()); n != 0 {
		t.Errorf("posted %d", n)
	}
	// A send waiting out a 429 stops when its context ends.
	fake.RateLimitNext(discordtest.RateLimit{RetryAfter: 50 * time.Second})
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.Send(ctx, channel.Outbound{Target: room(discordtest.ChannelID), Text: "x", Key: "k"})
		done <- err
	}()
	if err := fake.WaitRequests(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestTyping(t *testing.T) {
	tests := []struct {
		name   string
		target channel.Target
		want   func(fake *discordtest.Server) string
	}{
		{"room", room(discordtest.ChannelID), func(*discordtest.Server) string { return discordtest.ChannelID }},
		{"thread", room(discordtest.ThreadID), func(*discordtest.Server) string { return discordtest.ThreadID }},
		{"DM", channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: discordtest.UserID}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			if err := b.Typing(testCtx(t), tt.target); err != nil {
				t.Fatal(err)
			}
			got := fake.Typing()
			if len(got) != 1 || (tt.want != nil && got[0] != tt.want(fake)) || !snowflake(got[0]) {
				t.Errorf("typing in %v", got)
			}
		})
	}
}

// TestDMChannelFromInbound: a reply to a DM posts into the DM channel the
// message came from, without opening it again.
func TestDMChannelFromInbound(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startReady(t, nil)
	id := fake.UserSays(discordtest.Say{Text: "hi"})
	e := r.in.wait(t, ctx, id)
	if _, err := r.bot.Send(ctx, channel.Outbound{Target: channel.Target{Peer: e.Peer}, Text: "hello", ReplyTo: e.MessageID, Key: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, req := range fake.Requests() {
		if req == "POST /users/@me/channels" {
			t.Errorf("the DM channel was opened again: %v", fake.Requests())
		}
	}
}

func TestNonce(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"run1:0", "run1:0"},
		{"exactly-twenty-five-chars", "exactly-twenty-five-chars"},
		{"with space", Nonce("with space")},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := Nonce(tt.key); got != tt.want || len(got) > 25 {
				t.Errorf("Nonce(%q) = %q", tt.key, got)
			}
		})
	}
	long1, long2 := Nonce(strings.Repeat("a", 40)), Nonce(strings.Repeat("a", 39)+"b")
	if len(long1) != 25 || long1 == long2 || long1 != Nonce(strings.Repeat("a", 40)) {
		t.Errorf("long keys: %q, %q", long1, long2)
	}
	if Nonce("with space") == "with space" {
		t.Error("a key with a space was sent as is")
	}
}

func TestNew(t *testing.T) {
	fake := discordtest.Start(t)
	tests := []struct {
		name string
		o    Options
	}{
		{"no client", Options{Token: "t"}},
		{"no token", Options{HTTPClient: fake.Client()}},
		{"token with a newline", Options{Token: "a\nb", HTTPClient: fake.Client()}},
		{"api url not http", Options{Token: "t", HTTPClient: fake.Client(), APIURL: "file:///etc"}},
		{"api url with credentials", Options{Token: "t", HTTPClient: fake.Client(), APIURL: "https://u:p@example.com"}},
		{"gateway url not ws", Options{Token: "t", HTTPClient: fake.Client(), GatewayURL: "https://example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

// TestTokenNeverShown runs through success and failures with debug logs
// on and looks for the token everywhere the bot writes.
func TestTokenNeverShown(t *testing.T) {
	ctx := testCtx(t)
	var logs bytes.Buffer
	fake := discordtest.Start(t)
	fake.SetPrivileged(false, true)
	r := run(t, newBot(t, fake, func(o *Options) {
		o.Log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.GatewayURL = fake.GatewayURL
	}))
	runErr := r.result(t, ctx)
	_, sendErr := r.bot.Send(ctx, channel.Outbound{Target: room("999"), Text: "x"})
	st, _ := json.Marshal(r.bot.Status())
	for what, text := range map[string]string{"logs": logs.String(), "run error": runErr.Error(), "send error": sendErr.Error(), "status": string(st)} {
		if strings.Contains(text, discordtest.Token) {
			t.Errorf("the token is in the %s: %s", what, text)
		}
	}
}
