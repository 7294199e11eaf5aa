package discord

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

func TestRead(t *testing.T) {
	ctx := testCtx(t)
	fake := discordtest.Start(t)
	b := newBot(t, fake, nil)
	var ids []string // oldest first
	for _, text := range []string{"one", "two", "three"} {
		ids = append(ids, fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: text}))
	}
	ids = append(ids, fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, From: discordtest.OtherUserID, Text: "four",
		Files: []discordtest.File{{Name: "plan.pdf", MIME: "application/pdf", Data: []byte("%PDF")}}}))
	mine, err := b.Send(ctx, channel.Outbound{Target: room(discordtest.ChannelID), Text: "five", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, mine.MessageID)
	fake.UserSays(discordtest.Say{ChannelID: discordtest.ThreadID, Text: "elsewhere"})

	tests := []struct {
		name string
		q    channel.ReadQuery
		want []int // indexes into ids, newest first
	}{
		{"default limit", channel.ReadQuery{}, []int{4, 3, 2, 1, 0}},
		{"newest two", channel.ReadQuery{Limit: 2}, []int{4, 3}},
		{"before", channel.ReadQuery{Limit: 2, Before: ids[3]}, []int{2, 1}},
		{"after", channel.ReadQuery{Limit: 2, After: ids[0]}, []int{2, 1}},
		{"around", channel.ReadQuery{Limit: 3, Around: ids[2]}, []int{3, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Read(ctx, room(discordtest.ChannelID), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs, want []string
			for _, m := range got {
				gotIDs = append(gotIDs, m.ID)
			}
			for _, i := range tt.want {
				want = append(want, ids[i])
			}
			if diff := cmp.Diff(want, gotIDs); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("message fields", func(t *testing.T) {
		got, err := b.Read(ctx, room(discordtest.ChannelID), channel.ReadQuery{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		want := []channel.Message{
			{ID: ids[4], SenderID: discordtest.BotID, SenderName: discordtest.BotName, IsBot: true, Text: "five"},
			{ID: ids[3], SenderID: discordtest.OtherUserID, SenderName: "User 02", Text: "four", Attachments: []string{"plan.pdf"},
				Media: []channel.Media{{Name: "plan.pdf", MIME: "application/pdf", Size: 4, Kind: "document"}}},
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(channel.Message{}, "Time"), cmpopts.IgnoreFields(channel.Media{}, "Ref")); diff != "" {
			t.Errorf("messages (-want +got):\n%s", diff)
		}
		if got[0].Time.IsZero() {
			t.Error("no time")
		}
	})
}

func TestReadRefused(t *testing.T) {
	tests := []struct {
		name   string
		target channel.Target
		q      channel.ReadQuery
	}{
		{"limit over 100", room(discordtest.ChannelID), channel.ReadQuery{Limit: 101}},
		{"negative limit", room(discordtest.ChannelID), channel.ReadQuery{Limit: -1}},
		{"two anchors", room(discordtest.ChannelID), channel.ReadQuery{Before: "1", After: "2"}},
		{"anchor not a snowflake", room(discordtest.ChannelID), channel.ReadQuery{Around: "1&limit=5"}},
		{"channel not a snowflake", room("1/../../users"), channel.ReadQuery{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			if _, err := newBot(t, fake, nil).Read(testCtx(t), tt.target, tt.q); err == nil {
				t.Fatal("Read accepted it")
			}
			if r := fake.Requests(); len(r) != 0 {
				t.Errorf("requests made: %v", r)
			}
		})
	}
	t.Run("unknown channel", func(t *testing.T) {
		fake := discordtest.Start(t)
		if _, err := newBot(t, fake, nil).Read(testCtx(t), room("1999"), channel.ReadQuery{}); err == nil {
			t.Fatal("Read of an unknown channel succeeded")
		}
	})
}

func TestReactions(t *testing.T) {
	ctx := testCtx(t)
	fake := discordtest.Start(t)
	b := newBot(t, fake, nil)
	target := room(discordtest.ChannelID)
	msg, err := b.Send(ctx, channel.Outbound{Target: target, Text: "vote", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	custom := discordtest.EmojiName + ":" + discordtest.EmojiID
	for _, r := range []struct{ emoji, user string }{{"👍", discordtest.UserID}, {"👍", discordtest.OtherUserID}, {custom, discordtest.UserID}} {
		if err := fake.UserReacts(msg.MessageID, r.emoji, r.user); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.React(ctx, target, msg.MessageID, "👍", false); err != nil {
		t.Fatal(err)
	}
	got, err := b.Reactions(ctx, target, msg.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	want := []channel.Reaction{{Emoji: "👍", Count: 3, Me: true}, {Emoji: "<:" + custom + ">", Count: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reactions (-want +got):\n%s", diff)
	}
	for name, id := range map[string]string{"unknown message": "1999", "not a snowflake": "x/../1"} {
		t.Run(name, func(t *testing.T) {
			if _, err := b.Reactions(ctx, target, id); err == nil {
				t.Error("Reactions succeeded")
			}
		})
	}
}

func TestEmojiText(t *testing.T) {
	id := "1700000000000000001"
	tests := []struct {
		e    emoji
		want string
	}{
		{emoji{Name: "🔥"}, "🔥"},
		{emoji{ID: id, Name: "party"}, "<:party:" + id + ">"},
		{emoji{ID: id, Name: "party", Animated: true}, "<a:party:" + id + ">"},
		{emoji{ID: "x", Name: "party"}, ""},
		{emoji{ID: id, Name: "has space"}, ""},
		{emoji{Name: "plain text"}, ""},
		{emoji{}, ""},
	}
	for _, tt := range tests {
		if got := emojiText(tt.e); got != tt.want {
			t.Errorf("emojiText(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
