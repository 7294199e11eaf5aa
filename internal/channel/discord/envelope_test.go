package discord

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

// TestEnvelopes maps messages from the fake's gateway (spec R13.3).
func TestEnvelopes(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startReady(t, nil)
	settle(t, fake, r)
	botMsg, err := r.bot.Send(ctx, channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.ChannelID}}, Text: "hi all", Key: "run1:0"})
	if err != nil {
		t.Fatal(err)
	}
	userMsg := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, From: discordtest.OtherUserID, Text: "earlier"})
	r.in.wait(t, ctx, userMsg)

	room := channel.Peer{Kind: channel.Room, ID: discordtest.ChannelID}
	tests := []struct {
		name string
		say  discordtest.Say
		want channel.Envelope
	}{
		{
			name: "DM",
			say:  discordtest.Say{Text: "hello"},
			want: channel.Envelope{Peer: channel.Peer{Kind: channel.Direct, ID: discordtest.UserID}, Text: "hello"},
		},
		{
			name: "guild channel without a mention",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "chatter", Roles: []string{discordtest.OtherRoleID}},
			want: channel.Envelope{Peer: room, Text: "chatter", GuildID: discordtest.GuildID, RoleIDs: []string{discordtest.OtherRoleID}, RoomLabel: "general"},
		},
		{
			name: "mention of the bot",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "help", MentionBot: true},
			want: channel.Envelope{Peer: room, Text: "<@" + discordtest.BotID + "> help", GuildID: discordtest.GuildID, Mentioned: true, RoomLabel: "general"},
		},
		{
			name: "mention of the bot's role",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "help", MentionRoles: []string{discordtest.BotRoleID}},
			want: channel.Envelope{Peer: room, Text: "<@&" + discordtest.BotRoleID + "> help", GuildID: discordtest.GuildID, Mentioned: true, RoomLabel: "general"},
		},
		{
			name: "mention of another role",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "hey", MentionRoles: []string{discordtest.OtherRoleID}},
			want: channel.Envelope{Peer: room, Text: "<@&" + discordtest.OtherRoleID + "> hey", GuildID: discordtest.GuildID, MentionsOthers: true, RoomLabel: "general"},
		},
		{
			name: "mention of someone else",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "hey", MentionUsers: []string{discordtest.OtherUserID}},
			want: channel.Envelope{Peer: room, Text: "<@" + discordtest.OtherUserID + "> hey", GuildID: discordtest.GuildID, MentionsOthers: true, RoomLabel: "general"},
		},
		{
			name: "reply to the bot",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "thanks", ReplyTo: botMsg.MessageID},
			want: channel.Envelope{Peer: room, Text: "thanks", GuildID: discordtest.GuildID, Mentioned: true, RoomLabel: "general",
				ReplyTo: &channel.Quote{ID: botMsg.MessageID, Body: "hi all", SenderID: discordtest.BotID, FromBot: true}},
		},
		{
			name: "reply to someone else",
			say:  discordtest.Say{ChannelID: discordtest.ChannelID, Text: "agreed", ReplyTo: userMsg},
			want: channel.Envelope{Peer: room, Text: "agreed", GuildID: discordtest.GuildID, MentionsOthers: true, RoomLabel: "general",
				ReplyTo: &channel.Quote{ID: userMsg, Body: "earlier", SenderID: discordtest.OtherUserID}},
		},
		{
			name: "thread announced by GUILD_CREATE",
			say:  discordtest.Say{ChannelID: discordtest.ThreadID, Text: "in thread", MentionBot: true},
			want: channel.Envelope{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.ThreadID}, ParentPeer: &room,
				Text: "<@" + discordtest.BotID + "> in thread", GuildID: discordtest.GuildID, Mentioned: true, RoomLabel: "a-thread"},
		},
		{
			name: "thread looked up with GET /channels",
			say:  discordtest.Say{ChannelID: discordtest.HiddenThreadID, Text: "old thread"},
			want: channel.Envelope{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.HiddenThreadID}, ParentPeer: &room,
				Text: "old thread", GuildID: discordtest.GuildID, RoomLabel: "old-thread"},
		},
		{
			name: "another bot",
			say:  discordtest.Say{From: discordtest.OtherUserID, Text: "beep", Bot: true},
			want: channel.Envelope{Peer: channel.Peer{Kind: channel.Direct, ID: discordtest.OtherUserID}, Text: "beep"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fake.UserSays(tt.say)
			got := r.in.wait(t, ctx, id)
			want := tt.want
			want.Channel, want.AccountID, want.DeliveryID, want.MessageID = "discord", "main", id, id
			from := tt.say.From
			if from == "" {
				from = discordtest.UserID
			}
			want.Sender = channel.Sender{ID: from, Username: "user" + from[len(from)-2:], Name: "User " + from[len(from)-2:], IsBot: tt.say.Bot}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(channel.Envelope{}, "Time")); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			if got.Time.IsZero() || time.Since(got.Time) > time.Hour {
				t.Errorf("time = %v", got.Time)
			}
		})
	}
	t.Run("the hidden thread is looked up once", func(t *testing.T) {
		n := 0
		for _, req := range fake.Requests() {
			if req == "GET /channels/"+discordtest.HiddenThreadID {
				n++
			}
		}
		if n != 1 {
			t.Errorf("GET /channels/%s %d times, want 1", discordtest.HiddenThreadID, n)
		}
	})
}

// TestSkipped: the bot's own messages (Discord echoes them) and group DMs
// are never accepted; the message after them is.
func TestSkipped(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startReady(t, nil)
	if _, err := r.bot.Send(ctx, channel.Outbound{Target: channel.Target{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.ChannelID}}, Text: "mine", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	group := fake.UserSays(discordtest.Say{ChannelID: discordtest.GroupDMID, Text: "group"})
	last := fake.UserSays(discordtest.Say{Text: "last"})
	got := r.in.waitFor(t, ctx, "last", func(g []channel.Envelope, _ int) bool { return find(g, last) >= 0 })
	if len(got) != 1 || find(got, group) >= 0 {
		t.Errorf("accepted %+v, want only %s", got, last)
	}
}

// TestWithoutMessageContent: guild messages arrive empty unless they
// mention the bot (R13.2); DMs keep their text.
func TestWithoutMessageContent(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startReady(t, func(o *Options) { o.Intents.MessageContent = ptr(false) })
	plain := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "chatter"})
	mention := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "help", MentionBot: true})
	dm := fake.UserSays(discordtest.Say{Text: "private"})
	for id, want := range map[string]string{plain: "", mention: "<@" + discordtest.BotID + "> help", dm: "private"} {
		if got := r.in.wait(t, ctx, id); got.Text != want {
			t.Errorf("message %s text = %q, want %q", id, got.Text, want)
		}
	}
	file := []discordtest.File{{Name: "a.png", MIME: "image/png", Data: []byte("x")}}
	hidden := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Files: file})
	shown := fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, MentionBot: true, Files: file})
	if got := r.in.wait(t, ctx, hidden); len(got.Media) != 0 {
		t.Errorf("an unmentioned guild message kept its attachments: %+v", got.Media)
	}
	if got := r.in.wait(t, ctx, shown); len(got.Media) != 1 {
		t.Errorf("a mention's attachments: %+v", got.Media)
	}
}

func TestToEnvelopeRejects(t *testing.T) {
	tests := []struct {
		name string
		m    message
	}{
		{"id not a snowflake", message{ID: "abc", ChannelID: "1", Author: user{ID: "2"}}},
		{"path in channel id", message{ID: "1", ChannelID: "../users/@me", Author: user{ID: "2"}}},
		{"no author", message{ID: "1", ChannelID: "1"}},
		{"guild id too long", message{ID: "1", ChannelID: "1", Author: user{ID: "2"}, GuildID: "123456789012345678901"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validate(&tt.m); err == nil {
				t.Error("validate accepted it")
			}
		})
	}
}

func TestMessageTime(t *testing.T) {
	tests := []struct {
		name string
		m    message
		want time.Time
	}{
		{"timestamp", message{ID: "1", Timestamp: "2026-11-27T03:00:00.123+00:00"}, time.Date(2026, 11, 27, 3, 0, 0, 123e6, time.UTC)},
		// 175928847299117063 is Discord's documented example snowflake.
		{"from the id", message{ID: "175928847299117063", Timestamp: "garbage"}, time.UnixMilli(1462015105796).UTC()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := messageTime(&tt.m); !got.Equal(tt.want) {
				t.Errorf("time = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := newCache()
	for i := range maxCached + 100 {
		c.addChannel(channelObj{ID: strconv.Itoa(1_000_000 + i), Type: chanGuildText, Name: string(make([]byte, 500))})
	}
	if n := len(c.channels); n > maxCached {
		t.Errorf("cache holds %d channels, bound %d", n, maxCached)
	}
	for _, info := range c.channels {
		if len(info.name) > maxNameLen {
			t.Fatalf("a name of %d bytes was kept", len(info.name))
		}
	}
}
