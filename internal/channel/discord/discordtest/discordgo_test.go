package discordtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"talon/internal/channel/discord/discordtest"
)

// pointAt aims discordgo's process-wide endpoints at the fake (the
// reason Talon's client is its own; in a test it is what we want).
func pointAt(fake *discordtest.Server) {
	api := fake.URL + "/"
	discordgo.APIVersion = "10"
	discordgo.EndpointAPI = api
	discordgo.EndpointGateway = api + "gateway"
	discordgo.EndpointGatewayBot = api + "gateway/bot"
	discordgo.EndpointUsers = api + "users/"
	discordgo.EndpointChannels = api + "channels/"
	discordgo.EndpointUser = func(id string) string { return api + "users/" + id }
	discordgo.EndpointUserChannels = func(id string) string { return api + "users/" + id + "/channels" }
	discordgo.EndpointChannel = func(id string) string { return api + "channels/" + id }
	discordgo.EndpointChannelMessages = func(id string) string { return api + "channels/" + id + "/messages" }
	discordgo.EndpointChannelTyping = func(id string) string { return api + "channels/" + id + "/typing" }
}

func recv[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatal("discordgo received nothing")
		var zero T
		return zero
	}
}

// TestDiscordgoAcceptsTheFake runs a Discord client nobody here wrote,
// bwmarrin/discordgo, against the fake: its REST shapes, the gateway
// handshake, dispatches, RESUME and 429s must be what a real client
// expects, or the fake would prove nothing about Talon's client.
func TestDiscordgoAcceptsTheFake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fake := discordtest.Start(t)
	pointAt(fake)
	s, err := discordgo.New("Bot " + discordtest.Token)
	if err != nil {
		t.Fatal(err)
	}
	s.LogLevel = -1
	s.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentMessageContent
	readies := make(chan *discordgo.Ready, 1)
	messages := make(chan *discordgo.MessageCreate, 10)
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) { readies <- r })
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { messages <- m })

	if u, err := s.User("@me"); err != nil || u.ID != discordtest.BotID || !u.Bot {
		t.Fatalf("User(@me) = %+v, %v", u, err)
	}
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := recv(t, ctx, readies); r.User.ID != discordtest.BotID || r.SessionID == "" || len(r.Guilds) != 1 {
		t.Errorf("READY = %+v", r)
	}
	if err := fake.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}

	id := fake.UserSays(discordtest.Say{ChannelID: discordtest.ThreadID, Text: "hello", MentionBot: true, Roles: []string{discordtest.OtherRoleID}})
	m := recv(t, ctx, messages)
	if m.ID != id || m.ChannelID != discordtest.ThreadID || m.GuildID != discordtest.GuildID || len(m.Mentions) != 1 ||
		m.Member == nil || len(m.Member.Roles) != 1 || m.Content != "<@"+discordtest.BotID+"> hello" {
		t.Errorf("MESSAGE_CREATE = %+v", m.Message)
	}
	if th, err := s.State.Channel(discordtest.ThreadID); err != nil || th.ParentID != discordtest.ChannelID {
		t.Errorf("GUILD_CREATE's thread in discordgo's state = %+v, %v", th, err)
	}

	sent, err := s.ChannelMessageSendComplex(discordtest.ChannelID, &discordgo.MessageSend{Content: "hi", Reference: &discordgo.MessageReference{MessageID: id}})
	if err != nil || sent.ID == "" || sent.Author.ID != discordtest.BotID {
		t.Fatalf("send = %+v, %v", sent, err)
	}
	if echo := recv(t, ctx, messages); echo.ID != sent.ID || !echo.Author.Bot {
		t.Errorf("echo of the bot's message = %+v", echo.Message)
	}
	if err := s.ChannelTyping(discordtest.ChannelID); err != nil {
		t.Error(err)
	}
	if dm, err := s.UserChannelCreate(discordtest.OtherUserID); err != nil || dm.Type != discordgo.ChannelTypeDM {
		t.Errorf("DM channel = %+v, %v", dm, err)
	}
	if c, err := s.Channel(discordtest.HiddenThreadID); err != nil || c.ParentID != discordtest.ChannelID || c.Type != discordgo.ChannelTypeGuildPublicThread {
		t.Errorf("GET channel = %+v, %v", c, err)
	}
	if _, err := s.Channel("1"); err == nil {
		t.Error("an unknown channel was found")
	}

	fake.Kick()
	if err := fake.WaitResumed(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fake.RateLimitNext(discordtest.RateLimit{RetryAfter: 10 * time.Millisecond})
	if _, err := s.ChannelMessageSend(discordtest.ChannelID, "after a 429"); err != nil {
		t.Fatal(err)
	}
	if got := fake.Sent(); len(got) != 2 || got[1].Content != "after a 429" {
		t.Errorf("sent = %+v", got)
	}
}
