package discord

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

func dm(userID string) channel.Target {
	return channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: userID}}
}

// posted is a message the bot posted into target, for acting on.
func posted(t *testing.T, b *Bot, target channel.Target) string {
	t.Helper()
	sent, err := b.Send(testCtx(t), channel.Outbound{Target: target, Text: "first", Key: "k:" + target.Peer.ID + target.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	return sent.MessageID
}

func TestReact(t *testing.T) {
	custom := discordtest.EmojiName + ":" + discordtest.EmojiID
	tests := []struct {
		name      string
		target    channel.Target
		fromUser  bool // react to alice's message rather than the bot's
		emoji     string
		remove    bool
		wantEmoji string
	}{
		{name: "unicode on a user's message", target: room(discordtest.ChannelID), fromUser: true, emoji: "👍", wantEmoji: "👍"},
		{name: "removed", target: room(discordtest.ChannelID), fromUser: true, emoji: "👍", remove: true, wantEmoji: "👍"},
		{name: "ZWJ sequence in a thread", target: room(discordtest.ThreadID), emoji: "👩‍💻", wantEmoji: "👩‍💻"},
		{name: "keycap", target: room(discordtest.ChannelID), emoji: "1️⃣", wantEmoji: "1️⃣"},
		{name: "custom as name:id", target: room(discordtest.ChannelID), emoji: custom, wantEmoji: custom},
		{name: "custom as written in text", target: room(discordtest.ChannelID), emoji: "<:" + custom + ">", wantEmoji: custom},
		{name: "animated custom", target: room(discordtest.ChannelID), emoji: "<a:" + custom + ">", wantEmoji: custom},
		{name: "in a DM", target: dm(discordtest.UserID), emoji: "✅", wantEmoji: "✅"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			var msgID string
			if tt.fromUser {
				msgID = fake.UserSays(discordtest.Say{ChannelID: tt.target.Peer.ID, Text: "nice"})
			} else {
				msgID = posted(t, b, tt.target)
			}
			if err := b.React(testCtx(t), tt.target, msgID, tt.emoji, tt.remove); err != nil {
				t.Fatal(err)
			}
			got := fake.Reactions()
			if len(got) != 1 {
				t.Fatalf("reactions: %+v", got)
			}
			want := discordtest.Reaction{ChannelID: got[0].ChannelID, MessageID: msgID, Emoji: tt.wantEmoji, Removed: tt.remove}
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("reaction (-want +got):\n%s", diff)
			}
			if tt.target.Peer.Kind == channel.Room && got[0].ChannelID != tt.target.Peer.ID {
				t.Errorf("reacted in %s", got[0].ChannelID)
			}
		})
	}
}

func TestEdit(t *testing.T) {
	no := false
	tests := []struct {
		name   string
		opts   func(*Options)
		target channel.Target
		flags  *int
	}{
		{name: "room, embeds hidden", target: room(discordtest.ChannelID), flags: ptr(flagSuppressEmbeds)},
		{name: "thread, embeds shown", opts: func(o *Options) { o.SuppressEmbeds = &no }, target: room(discordtest.ThreadID)},
		{name: "DM", target: dm(discordtest.OtherUserID), flags: ptr(flagSuppressEmbeds)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, tt.opts)
			id := posted(t, b, tt.target)
			if err := b.Edit(testCtx(t), tt.target, id, "**fixed** @everyone", "fixed @everyone"); err != nil {
				t.Fatal(err)
			}
			got := fake.Edits()
			if len(got) != 1 {
				t.Fatalf("edits: %+v", got)
			}
			want := discordtest.Edit{ChannelID: fake.Sent()[0].ChannelID, MessageID: id, Content: "**fixed** @everyone", Flags: tt.flags,
				AllowedMentions: &discordtest.AllowedMentions{Parse: []string{"users"}, RepliedUser: true}}
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("edit (-want +got):\n%s", diff)
			}
			if sent := fake.Sent()[0]; !cmp.Equal(sent.AllowedMentions, got[0].AllowedMentions) {
				t.Errorf("edit mentions %+v, send %+v: the rules differ", got[0].AllowedMentions, sent.AllowedMentions)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name     string
		target   channel.Target
		fromUser bool
	}{
		{name: "own, in a room", target: room(discordtest.ChannelID)},
		{name: "own, in a DM", target: dm(discordtest.UserID)},
		{name: "a user's, in a guild channel", target: room(discordtest.ThreadID), fromUser: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			id := ""
			if tt.fromUser {
				id = fake.UserSays(discordtest.Say{ChannelID: tt.target.Peer.ID, Text: "spam"})
			} else {
				id = posted(t, b, tt.target)
			}
			if err := b.Delete(testCtx(t), tt.target, id); err != nil {
				t.Fatal(err)
			}
			if got := fake.Deletions(); len(got) != 1 || got[0].MessageID != id {
				t.Errorf("deletions: %+v", got)
			}
			// Gone: a second delete is Discord's Unknown Message.
			var api *APIError
			if err := b.Delete(testCtx(t), tt.target, id); !errors.As(err, &api) || api.Code != 10008 {
				t.Errorf("second delete: %v, want code 10008", err)
			}
		})
	}
}

// TestActionsRefused: Discord's refusals come back as APIErrors naming
// the step, never as unconfirmed.
func TestActionsRefused(t *testing.T) {
	const unknown = "1699999999999999999"
	tests := []struct {
		name     string
		act      func(b *Bot, fake *discordtest.Server, own string) error
		step     string
		status   int
		code     int
		requests int
	}{
		{"react to an unknown message", func(b *Bot, _ *discordtest.Server, _ string) error {
			return b.React(testCtx(t), room(discordtest.ChannelID), unknown, "👍", false)
		}, "discord react:", 404, 10008, 1},
		{"react to a message in another channel", func(b *Bot, _ *discordtest.Server, own string) error {
			return b.React(testCtx(t), room(discordtest.ThreadID), own, "👍", true)
		}, "discord unreact:", 404, 10008, 1},
		{"react with an unknown custom emoji", func(b *Bot, _ *discordtest.Server, own string) error {
			return b.React(testCtx(t), room(discordtest.ChannelID), own, "nope:123", false)
		}, "discord react:", 400, 10014, 1},
		{"edit an unknown message", func(b *Bot, _ *discordtest.Server, _ string) error {
			return b.Edit(testCtx(t), room(discordtest.ChannelID), unknown, "x", "x")
		}, "discord edit:", 404, 10008, 1},
		{"edit a user's message", func(b *Bot, fake *discordtest.Server, _ string) error {
			id := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "mine"})
			return b.Edit(testCtx(t), room(discordtest.ChannelID), id, "yours now", "yours now")
		}, "discord edit:", 403, 50005, 1},
		{"edit too long", func(b *Bot, _ *discordtest.Server, own string) error {
			return b.Edit(testCtx(t), room(discordtest.ChannelID), own, strings.Repeat("x", 2001), "")
		}, "discord edit:", 400, 50035, 1},
		{"delete a user's message in a DM", func(b *Bot, fake *discordtest.Server, _ string) error {
			id := fake.UserSays(discordtest.Say{Text: "hi"})
			return b.Delete(testCtx(t), dm(discordtest.UserID), id)
		}, "discord delete:", 403, 50003, 2}, // opening the DM, then the delete
		{"delete an unknown message", func(b *Bot, _ *discordtest.Server, _ string) error {
			return b.Delete(testCtx(t), room(discordtest.ChannelID), unknown)
		}, "discord delete:", 404, 10008, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			own := posted(t, b, room(discordtest.ChannelID))
			before := len(fake.Requests())
			err := tt.act(b, fake, own)
			var api *APIError
			if !errors.As(err, &api) || api.Status != tt.status || api.Code != tt.code || errors.Is(err, ErrUnconfirmed) {
				t.Fatalf("err = %v, want a %d refusal with code %d", err, tt.status, tt.code)
			}
			if !strings.HasPrefix(err.Error(), tt.step) {
				t.Errorf("err = %q, want it to start with %q", err, tt.step)
			}
			if n := len(fake.Requests()) - before; n != tt.requests {
				t.Errorf("%d requests, want %d: %v", n, tt.requests, fake.Requests())
			}
			if n := len(fake.Reactions()) + len(fake.Edits()) + len(fake.Deletions()); n != 0 {
				t.Errorf("%d actions done", n)
			}
		})
	}
}

// TestActionsRefuseBadInput: nothing that is not a snowflake or an emoji
// reaches a URL; no request is made.
func TestActionsRefuseBadInput(t *testing.T) {
	ok := "1600000000000000009"
	tests := []struct {
		name string
		act  func(b *Bot) error
	}{
		{"message id with a path", func(b *Bot) error { return b.Delete(testCtx(t), room(discordtest.ChannelID), ok+"/../../x") }},
		{"empty message id", func(b *Bot) error { return b.Edit(testCtx(t), room(discordtest.ChannelID), "", "x", "x") }},
		{"channel id not a snowflake", func(b *Bot) error { return b.Delete(testCtx(t), room("../users/@me"), ok) }},
		{"thread id not a snowflake", func(b *Bot) error {
			return b.React(testCtx(t), channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.ChannelID}, ThreadID: "x"}, ok, "👍", false)
		}},
		{"user id not a snowflake", func(b *Bot) error { return b.Delete(testCtx(t), dm("@alice"), ok) }},
		{"empty edit", func(b *Bot) error { return b.Edit(testCtx(t), room(discordtest.ChannelID), ok, " \n", "") }},
		{"slack's emoji name", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "thumbsup", false) }},
		{"empty emoji", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "", false) }},
		{"emoji with a path", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "👍/../../x", false) }},
		{"emoji with a query", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "👍?x=1", false) }},
		{"emoji with a space", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "👍 👍", false) }},
		{"custom id not a snowflake", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "talon:abc", false) }},
		{"custom name with a path", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "a/b:"+ok, false) }},
		{"custom unclosed", func(b *Bot) error { return b.React(testCtx(t), room(discordtest.ChannelID), ok, "<:talon:"+ok, false) }},
		{"too long", func(b *Bot) error {
			return b.React(testCtx(t), room(discordtest.ChannelID), ok, strings.Repeat("👍", 20), false)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			if err := tt.act(b); err == nil || !strings.HasPrefix(err.Error(), "discord ") {
				t.Fatalf("err = %v, want a refusal naming the step", err)
			}
			if r := fake.Requests(); len(r) != 0 {
				t.Errorf("requests made: %v", r)
			}
		})
	}
}

// TestActionsNeverRepeated: an action whose outcome is unknown is
// returned unconfirmed after one request; a 429 (nothing done) is waited
// out and the action done once.
func TestActionsNeverRepeated(t *testing.T) {
	type action struct {
		name string
		do   func(b *Bot, id string) error
		done func(fake *discordtest.Server) int
	}
	actions := []action{
		{"react", func(b *Bot, id string) error {
			return b.React(testCtx(t), room(discordtest.ChannelID), id, "👍", false)
		},
			func(f *discordtest.Server) int { return len(f.Reactions()) }},
		{"edit", func(b *Bot, id string) error {
			return b.Edit(testCtx(t), room(discordtest.ChannelID), id, "new", "new")
		},
			func(f *discordtest.Server) int { return len(f.Edits()) }},
		{"delete", func(b *Bot, id string) error { return b.Delete(testCtx(t), room(discordtest.ChannelID), id) },
			func(f *discordtest.Server) int { return len(f.Deletions()) }},
	}
	tests := []struct {
		name        string
		fail        []discordtest.SendFailure
		limit       []discordtest.RateLimit
		unconfirmed bool
		refused     int // an APIError status
		requests    int
		done        int
	}{
		{name: "answer lost", fail: []discordtest.SendFailure{discordtest.LoseAnswer}, unconfirmed: true, requests: 1, done: 1},
		{name: "server error", fail: []discordtest.SendFailure{discordtest.ServerError}, unconfirmed: true, requests: 1, done: 0},
		{name: "forbidden", fail: []discordtest.SendFailure{discordtest.Forbidden}, refused: 403, requests: 1, done: 0},
		{name: "rate limited", limit: []discordtest.RateLimit{{RetryAfter: 5 * time.Millisecond}}, requests: 2, done: 1},
		{name: "rate limited too long", limit: []discordtest.RateLimit{{RetryAfter: 10 * time.Minute}}, refused: 429, requests: 1, done: 0},
	}
	for _, a := range actions {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				fake := discordtest.Start(t)
				b := newBot(t, fake, nil)
				id := posted(t, b, room(discordtest.ChannelID))
				before := len(fake.Requests())
				fake.FailNextSend(tt.fail...)
				fake.RateLimitNext(tt.limit...)
				err := a.do(b, id)
				var api *APIError
				switch {
				case tt.unconfirmed && !errors.Is(err, ErrUnconfirmed):
					t.Errorf("err = %v, want unconfirmed", err)
				case tt.refused != 0 && (!errors.As(err, &api) || api.Status != tt.refused || errors.Is(err, ErrUnconfirmed)):
					t.Errorf("err = %v, want a %d refusal", err, tt.refused)
				case !tt.unconfirmed && tt.refused == 0 && err != nil:
					t.Errorf("err = %v", err)
				}
				if n := len(fake.Requests()) - before; n != tt.requests {
					t.Errorf("%d requests, want %d: %v", n, tt.requests, fake.Requests()[before:])
				}
				if n := a.done(fake); n != tt.done {
					t.Errorf("done %d times, want %d", n, tt.done)
				}
			})
		}
	}
}
