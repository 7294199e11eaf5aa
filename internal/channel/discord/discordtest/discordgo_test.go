package discordtest_test

import (
	"context"
	"io"
	"strings"
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

// TestDiscordgoMediaPollsButtons runs discordgo through the fake's
// newer shapes: a multipart upload, a poll, buttons and a press answered
// through the interaction callback, history, reactions and an
// attachment on the CDN.
func TestDiscordgoMediaPollsButtons(t *testing.T) {
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
	messages := make(chan *discordgo.MessageCreate, 10)
	presses := make(chan *discordgo.InteractionCreate, 1)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { messages <- m })
	s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { presses <- i })
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := fake.WaitReady(ctx, 1); err != nil {
		t.Fatal(err)
	}

	withFile, err := s.ChannelMessageSendComplex(discordtest.ChannelID, &discordgo.MessageSend{Content: "report",
		Files: []*discordgo.File{{Name: "r.txt", ContentType: "text/plain", Reader: strings.NewReader("body")}}})
	if err != nil || len(withFile.Attachments) != 1 || withFile.Attachments[0].Filename != "r.txt" {
		t.Fatalf("file send = %+v, %v", withFile, err)
	}
	poll, err := s.ChannelMessageSendComplex(discordtest.ChannelID, &discordgo.MessageSend{Poll: &discordgo.Poll{
		Question: discordgo.PollMedia{Text: "lunch?"}, Answers: []discordgo.PollAnswer{{Media: &discordgo.PollMedia{Text: "yes"}}, {Media: &discordgo.PollMedia{Text: "no"}}},
		Duration: 2, LayoutType: discordgo.PollLayoutTypeDefault}})
	if err != nil || poll.Poll == nil || poll.Poll.Question.Text != "lunch?" {
		t.Fatalf("poll send = %+v, %v", poll, err)
	}
	withButton, err := s.ChannelMessageSendComplex(discordtest.ChannelID, &discordgo.MessageSend{Content: "ok?", Components: []discordgo.MessageComponent{
		discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.Button{Label: "Yes", Style: discordgo.PrimaryButton, CustomID: "yes"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 3 || string(sent[0].Files[0].Data) != "body" || sent[1].Poll.Duration != 2 || len(sent[1].Poll.Answers) != 2 ||
		len(sent[2].Buttons) != 1 || sent[2].Buttons[0] != (discordtest.Button{Label: "Yes", Style: 1, CustomID: "yes"}) {
		t.Errorf("sent = %+v", sent)
	}

	id, err := fake.Press(discordtest.Press{MessageID: withButton.ID, CustomID: "yes"})
	if err != nil {
		t.Fatal(err)
	}
	in := recv(t, ctx, presses)
	if in.ID != id || in.Type != discordgo.InteractionMessageComponent || in.MessageComponentData().CustomID != "yes" || in.Member == nil || in.Member.User.ID != discordtest.UserID {
		t.Errorf("INTERACTION_CREATE = %+v", in.Interaction)
	}
	if err := s.InteractionRespond(in.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); err != nil {
		t.Fatal(err)
	}
	if err := s.InteractionRespond(in.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); err == nil {
		t.Error("a second response was taken")
	}
	if cbs := fake.Callbacks(); len(cbs) != 1 || cbs[0] != (discordtest.Callback{InteractionID: id, Type: 6}) {
		t.Errorf("callbacks = %+v", cbs)
	}

	if err := s.MessageReactionAdd(discordtest.ChannelID, poll.ID, "👍"); err != nil {
		t.Fatal(err)
	}
	if err := fake.UserReacts(poll.ID, "👍", discordtest.UserID); err != nil {
		t.Fatal(err)
	}
	got, err := s.ChannelMessage(discordtest.ChannelID, poll.ID)
	if err != nil || len(got.Reactions) != 1 || got.Reactions[0].Count != 2 || !got.Reactions[0].Me || got.Reactions[0].Emoji.Name != "👍" {
		t.Errorf("message with reactions = %+v, %v", got, err)
	}
	page, err := s.ChannelMessages(discordtest.ChannelID, 2, "", "", "")
	if err != nil || len(page) != 2 || page[0].ID != withButton.ID || page[1].ID != poll.ID {
		t.Errorf("history = %+v, %v", page, err)
	}

	for range 3 {
		recv(t, ctx, messages) // the echoes of the bot's posts
	}
	fake.UserSays(discordtest.Say{ChannelID: discordtest.ChannelID, Text: "pic", Files: []discordtest.File{{Name: "a.png", MIME: "image/png", Data: []byte("png")}}})
	m := recv(t, ctx, messages)
	if len(m.Attachments) != 1 || m.Attachments[0].Size != 3 || m.Attachments[0].ContentType != "image/png" {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	resp, err := fake.Client().Get(m.Attachments[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(body) != "png" {
		t.Errorf("CDN answered %d %q", resp.StatusCode, body)
	}
}
