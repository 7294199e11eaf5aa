package discord

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"talon/internal/channel"
	"talon/internal/channel/discord/discordtest"
)

var approval = []channel.Button{
	{Label: "Allow once", Data: "/approve 1a2b allow-once"},
	{Label: "Allow always", Data: "/approve 1a2b allow-always"},
	{Label: "Deny", Data: "/approve 1a2b deny"},
}

func TestSendButtons(t *testing.T) {
	fake := discordtest.Start(t)
	b := newBot(t, fake, nil)
	if _, err := b.Send(testCtx(t), channel.Outbound{Target: room(discordtest.ChannelID), Text: "run `rm -rf build`?", Buttons: approval, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	want := []discordtest.Button{
		{Label: "Allow once", Style: 1, CustomID: "/approve 1a2b allow-once"},
		{Label: "Allow always", Style: 2, CustomID: "/approve 1a2b allow-always"},
		{Label: "Deny", Style: 4, CustomID: "/approve 1a2b deny"},
	}
	sent := fake.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d", len(sent))
	}
	if diff := cmp.Diff(want, sent[0].Buttons); diff != "" {
		t.Errorf("buttons (-want +got):\n%s", diff)
	}
	if sent[0].Content != "run `rm -rf build`?" {
		t.Errorf("content %q", sent[0].Content)
	}
}

func TestSendButtonsRefused(t *testing.T) {
	six := make([]channel.Button, 6)
	for i := range six {
		six[i] = channel.Button{Label: "b", Data: strings.Repeat("d", i+1)}
	}
	tests := []struct {
		name    string
		buttons []channel.Button
	}{
		{"six buttons", six},
		{"empty label", []channel.Button{{Label: " ", Data: "x"}}},
		{"label over 80", []channel.Button{{Label: strings.Repeat("é", 81), Data: "x"}}},
		{"no data", []channel.Button{{Label: "a"}}},
		{"data over 100", []channel.Button{{Label: "a", Data: strings.Repeat("x", 101)}}},
		{"same data twice", []channel.Button{{Label: "a", Data: "x"}, {Label: "b", Data: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := discordtest.Start(t)
			b := newBot(t, fake, nil)
			if _, err := b.Send(testCtx(t), channel.Outbound{Target: room(discordtest.ChannelID), Text: "x", Buttons: tt.buttons}); err == nil {
				t.Fatal("Send accepted it")
			}
			if r := fake.Requests(); len(r) != 0 {
				t.Errorf("requests made: %v", r)
			}
		})
	}
}

// pressRun is a running bot whose accept notes how many interaction
// responses the fake had seen when each envelope arrived.
type pressRun struct {
	*running
	mu     sync.Mutex
	before map[string]int // envelope message id → callbacks seen then
}

func startPressRun(t *testing.T) (*discordtest.Server, *pressRun) {
	t.Helper()
	fake := discordtest.Start(t)
	b := newBot(t, fake, nil)
	ctx, cancel := context.WithCancel(context.Background())
	p := &pressRun{running: &running{bot: b, in: newInbox(), stop: cancel, done: make(chan error, 1)}, before: map[string]int{}}
	accept := func(ctx context.Context, e channel.Envelope) error {
		n := len(fake.Callbacks())
		if err := p.in.accept(ctx, e); err != nil {
			return err
		}
		p.mu.Lock()
		p.before[e.MessageID] = n
		p.mu.Unlock()
		return nil
	}
	go func() { p.done <- b.Run(ctx, accept) }()
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	if err := fake.WaitReady(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	return fake, p
}

// TestPress: a press arrives as an envelope from the presser in the
// button's conversation and is acknowledged after accept took it.
func TestPress(t *testing.T) {
	roomPeer := channel.Peer{Kind: channel.Room, ID: discordtest.ChannelID}
	tests := []struct {
		name   string
		target channel.Target
		from   string
		want   channel.Envelope // ids, sender and text filled in
	}{
		{name: "guild channel", target: room(discordtest.ChannelID), from: discordtest.OtherUserID,
			want: channel.Envelope{Peer: roomPeer, GuildID: discordtest.GuildID, RoomLabel: "general"}},
		{name: "thread", target: room(discordtest.ThreadID),
			want: channel.Envelope{Peer: channel.Peer{Kind: channel.Room, ID: discordtest.ThreadID}, ParentPeer: &roomPeer, GuildID: discordtest.GuildID, RoomLabel: "a-thread"}},
		{name: "DM", target: dm(discordtest.UserID),
			want: channel.Envelope{Peer: channel.Peer{Kind: channel.Direct, ID: discordtest.UserID}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake, r := startPressRun(t)
			msg, err := r.bot.Send(ctx, channel.Outbound{Target: tt.target, Text: "allow?", Buttons: approval, Key: "k"})
			if err != nil {
				t.Fatal(err)
			}
			id, err := fake.Press(discordtest.Press{MessageID: msg.MessageID, CustomID: approval[2].Data, From: tt.from})
			if err != nil {
				t.Fatal(err)
			}
			got := r.in.wait(t, ctx, id)
			from := tt.from
			if from == "" {
				from = discordtest.UserID
			}
			want := tt.want
			want.Channel, want.AccountID, want.DeliveryID, want.MessageID = "discord", "main", id, id
			want.Sender = channel.Sender{ID: from, Username: "user" + from[len(from)-2:], Name: "User " + from[len(from)-2:]}
			want.Text, want.Pressed, want.Mentioned = approval[2].Data, true, true
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(channel.Envelope{}, "Time"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			cbs, err := fake.WaitCallbacks(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]discordtest.Callback{{InteractionID: id, Type: 6}}, cbs); diff != "" {
				t.Errorf("callbacks (-want +got):\n%s", diff)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.before[id] != 0 {
				t.Error("the press was acknowledged before accept took it")
			}
		})
	}
}

// TestPressNotAckedWhileAcceptFails: a press accept refuses is retried,
// not acknowledged; once accept takes it, it is.
func TestPressNotAckedWhileAcceptFails(t *testing.T) {
	ctx := testCtx(t)
	fake, r := startPressRun(t)
	msg, err := r.bot.Send(ctx, channel.Outbound{Target: room(discordtest.ChannelID), Text: "allow?", Buttons: approval, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	r.in.setFailing(true)
	id, err := fake.Press(discordtest.Press{MessageID: msg.MessageID, CustomID: approval[0].Data})
	if err != nil {
		t.Fatal(err)
	}
	r.in.waitFor(t, ctx, "three refused tries", func(_ []channel.Envelope, tries int) bool { return tries >= 3 })
	if cbs := fake.Callbacks(); len(cbs) != 0 {
		t.Fatalf("acknowledged while accept failed: %+v", cbs)
	}
	r.in.setFailing(false)
	r.in.wait(t, ctx, id)
	if _, err := fake.WaitCallbacks(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// TestPressUnmapped: a press without a message or a user is
// acknowledged and dropped; the connection carries on.
func TestPressUnmapped(t *testing.T) {
	tests := []struct {
		name  string
		strip []string
	}{
		{"no message", []string{"message"}},
		{"no member in a guild", []string{"member"}},
		{"no channel at all", []string{"channel_id", "message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			fake, r := startPressRun(t)
			msg, err := r.bot.Send(ctx, channel.Outbound{Target: room(discordtest.ChannelID), Text: "allow?", Buttons: approval, Key: "k"})
			if err != nil {
				t.Fatal(err)
			}
			id, err := fake.Press(discordtest.Press{MessageID: msg.MessageID, CustomID: approval[0].Data, Strip: tt.strip})
			if err != nil {
				t.Fatal(err)
			}
			cbs, err := fake.WaitCallbacks(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if cbs[0] != (discordtest.Callback{InteractionID: id, Type: 6}) {
				t.Errorf("callback %+v", cbs[0])
			}
			next := fake.UserSays(discordtest.Say{Text: "still there?"})
			got := r.in.waitFor(t, ctx, "the next message", func(g []channel.Envelope, _ int) bool { return find(g, next) >= 0 })
			if len(got) != 1 {
				t.Errorf("accepted %+v, want only %s", got, next)
			}
		})
	}
}

func TestButtonStyle(t *testing.T) {
	tests := []struct {
		i    int
		data string
		want int
	}{
		{0, "/approve 1 allow-once", stylePrimary},
		{1, "/approve 1 allow-always", styleSecondary},
		{2, "/approve 1 DENY", styleDanger},
		{0, "/approve 1 deny", styleDanger},
		{1, "cancel", styleDanger},
		{1, "", styleSecondary},
	}
	for _, tt := range tests {
		if got := buttonStyle(tt.i, tt.data); got != tt.want {
			t.Errorf("buttonStyle(%d, %q) = %d, want %d", tt.i, tt.data, got, tt.want)
		}
	}
}

func TestInteractionToken(t *testing.T) {
	tests := map[string]bool{
		"aW50ZXJhY3Rpb246MTIz.abc-_": true,
		"":                           false,
		"a/../b":                     false,
		"a?b":                        false,
		strings.Repeat("a", 1001):    false,
	}
	for tok, want := range tests {
		if got := interactionToken(tok); got != want {
			t.Errorf("interactionToken(%q) = %v", tok, got)
		}
	}
}
