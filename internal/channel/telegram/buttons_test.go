package telegram

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/channel"
	"talon/internal/channel/telegram/tgtest"
)

var approve = []channel.Button{
	{Label: "Allow once", Data: "/approve 1a2b allow-once"},
	{Label: "Always", Data: "/approve 1a2b allow-always"},
	{Label: "Deny", Data: "/approve 1a2b deny"},
}

func TestSendButtons(t *testing.T) {
	tests := []struct {
		name     string
		buttons  []channel.Button
		want     [][]tgtest.Button
		errMatch string
	}{
		{
			name:    "one row of callback buttons",
			buttons: approve,
			want: [][]tgtest.Button{{{Text: "Allow once", CallbackData: "/approve 1a2b allow-once"},
				{Text: "Always", CallbackData: "/approve 1a2b allow-always"}, {Text: "Deny", CallbackData: "/approve 1a2b deny"}}},
		},
		{name: "data over 64 bytes", buttons: []channel.Button{{Label: "x", Data: strings.Repeat("d", 65)}}, errMatch: "button 1: data must be 1-64 bytes, not 65"},
		{name: "no data", buttons: []channel.Button{{Label: "x"}}, errMatch: "data must be 1-64 bytes, not 0"},
		{name: "no label", buttons: []channel.Button{approve[0], {Label: " ", Data: "d"}}, errMatch: "button 2 has no label"},
		{name: "nine buttons", buttons: make([]channel.Button, 9), errMatch: "9 buttons; at most 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			o := out("42", "<b>run ls?</b>", "run ls?")
			o.Buttons = tt.buttons
			_, err := b.Send(context.Background(), o)
			if tt.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMatch) {
					t.Fatalf("Send = %v, want %q", err, tt.errMatch)
				}
				if s.Requests() != 0 {
					t.Fatal("asked Telegram")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := s.Sent()
			if len(got) != 1 {
				t.Fatalf("sent %+v", got)
			}
			if diff := cmp.Diff(tt.want, got[0].Buttons); diff != "" {
				t.Fatalf("buttons (-want +got):\n%s", diff)
			}
		})
	}
}

// pressInbox is an Accept that records, at each call, how many presses
// the fake had seen answered: none may be answered before it is stored.
type pressInbox struct {
	*inbox
	s        *tgtest.Server
	mu       sync.Mutex
	answered []int
}

func (p *pressInbox) accept(ctx context.Context, e channel.Envelope) error {
	p.mu.Lock()
	p.answered = append(p.answered, len(p.s.Answers()))
	p.mu.Unlock()
	return p.inbox.accept(ctx, e)
}

func TestPressIn(t *testing.T) {
	tests := []struct {
		name     string
		chat     int64
		fail     int // accept refuses this many times first
		wantPeer channel.Peer
	}{
		{name: "in a DM", wantPeer: channel.Peer{Kind: channel.Direct, ID: "77"}},
		{name: "in a forum topic", chat: -1001, wantPeer: channel.Peer{Kind: channel.Group, ID: "-1001:topic:17"}},
		{name: "refused, then taken", chat: -1002, fail: 1, wantPeer: channel.Peer{Kind: channel.Group, ID: "-1002"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tgtest.Start(t)
			b := newBot(t, s, nil)
			ctx := testCtx(t)
			presser := tgtest.User{ID: 77, FirstName: "Bo", Username: "bo"}
			chat := tt.chat
			if chat == 0 {
				chat = presser.ID
			}
			o := out(tt.wantPeer.ID, "run ls?", "run ls?")
			o.Buttons = approve
			sent, err := b.Send(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			in := &pressInbox{inbox: newInbox(), s: s}
			in.fail = tt.fail
			run(t, b, in.accept)
			id, update, err := s.UserPresses(tgtest.Press{From: presser, Chat: chat, MessageID: mustID(t, sent.MessageID), Data: approve[2].Data})
			if err != nil {
				t.Fatal(err)
			}
			got := in.wait(ctx, t, 1)
			answers, err := s.WaitAnswers(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := channel.Envelope{Channel: "telegram", AccountID: "main", DeliveryID: itoa(update), MessageID: id,
				Peer: tt.wantPeer, Sender: channel.Sender{ID: "77", Username: "bo", Name: "Bo"}, Text: "/approve 1a2b deny",
				Pressed: true, Mentioned: true}
			got[0].Time = time.Time{}
			if diff := cmp.Diff([]channel.Envelope{want}, got); diff != "" {
				t.Fatalf("envelopes (-want +got):\n%s", diff)
			}
			if len(answers) != 1 || answers[0].ID != id {
				t.Fatalf("answers = %+v, want one for %s", answers, id)
			}
			in.mu.Lock()
			defer in.mu.Unlock()
			if len(in.answered) != tt.fail+1 || in.answered[len(in.answered)-1] != 0 {
				t.Fatalf("answers seen at each accept = %v, want %d zeros", in.answered, tt.fail+1)
			}
		})
	}
}

func mustID(t *testing.T, id string) int64 {
	t.Helper()
	n, err := messageID("test", "message", id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPressUnplaceableIsAnsweredAndDropped(t *testing.T) {
	s := tgtest.Start(t)
	b := newBot(t, s, nil)
	in := newInbox()
	run(t, b, in.accept)
	s.Inject(map[string]any{"callback_query": map[string]any{"id": "q-inline", "from": ann, "inline_message_id": "AAE", "chat_instance": "1", "data": "x"}})
	s.Inject(map[string]any{"callback_query": map[string]any{"id": "q-gone", "from": ann, "chat_instance": "1", "data": "x",
		"message": map[string]any{"message_id": 5, "date": 0, "chat": map[string]any{"id": 42, "type": "private"}}}})
	s.UserSays(tgtest.Say{From: ann, Text: "after"})
	ctx := testCtx(t)
	got := in.wait(ctx, t, 1)
	answers, err := s.WaitAnswers(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Text != "after" || answers[0].ID != "q-inline" || answers[1].ID != "q-gone" {
		t.Fatalf("envelopes %+v, answers %+v", got, answers)
	}
}

func TestPressEnvelope(t *testing.T) {
	bot := Info{ID: 7, Username: "talon_bot"}
	msg := `"message":{"message_id":5,"from":{"id":7,"is_bot":true,"first_name":"T"},"chat":{"id":-5,"type":"group","title":"Ops"},"date":1700000000,"text":"run?"}`
	tests := []struct {
		name, query string
		ok          bool
	}{
		{name: "a group press", query: `{"id":"q1","from":{"id":42,"first_name":"Ann"},` + msg + `,"data":"/approve x deny"}`, ok: true},
		{name: "no presser", query: `{"id":"q1",` + msg + `,"data":"d"}`},
		{name: "no data (a game)", query: `{"id":"q1","from":{"id":42,"first_name":"Ann"},` + msg + `,"game_short_name":"g"}`},
		{name: "no id", query: `{"from":{"id":42,"first_name":"Ann"},` + msg + `,"data":"d"}`},
		{name: "a channel's message", query: `{"id":"q1","from":{"id":42,"first_name":"Ann"},"message":{"message_id":5,"chat":{"id":-100,"type":"channel"},"date":1},"data":"d"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q callbackQuery
			if err := json.Unmarshal([]byte(tt.query), &q); err != nil {
				t.Fatal(err)
			}
			e, ok := pressEnvelope(9, &q, bot, "main", time.Unix(1700000001, 0))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, e)
			}
			if ok && (e.Peer != channel.Peer{Kind: channel.Group, ID: "-5"} || e.RoomLabel != "Ops" || e.Sender.ID != "42" ||
				e.DeliveryID != "9" || e.MessageID != "q1" || !e.Pressed || !e.Mentioned || e.Time.Unix() != 1700000001) {
				t.Fatalf("envelope = %+v", e)
			}
		})
	}
}
