package hub

import (
	"strings"
	"testing"

	"talon/internal/channel"
	"talon/internal/config"
)

func TestReplyThreading(t *testing.T) {
	cur := "42"
	tg := Account{Channel: "telegram", ID: "default", ReplyToMode: "off"}
	first, all, batched := tg, tg, tg
	first.ReplyToMode, all.ReplyToMode, batched.ReplyToMode = "first", "all", "batched"
	slack := Account{Channel: "slack", ID: "default", ReplyToMode: "off",
		ReplyByChatType: config.ReplyToModeByChatType{Direct: "all"},
		SlackRooms:      map[string]config.SlackRoom{"C1": {ReplyToMode: "first"}}}
	dmPeer := channel.Peer{Kind: channel.Direct, ID: "U1"}
	room := func(id string) channel.Peer { return channel.Peer{Kind: channel.Room, ID: id} }
	long := para("a") + "\n\n" + para("b")
	tests := []struct {
		name string
		a    Account
		p    channel.Peer
		text string
		want []string // ReplyTo of each chunk
		// batch says the turn answers a debounced batch.
		batch bool
	}{
		{"off: none", tg, dmPeer, long, []string{"", ""}, false},
		{"off: an explicit tag still applies on Telegram", tg, dmPeer, "[[reply_to:7]] hi", []string{"7"}, false},
		{"off: reply_to_current", tg, dmPeer, "[[reply_to_current]] hi", []string{cur}, false},
		{"first: the first chunk", first, dmPeer, long, []string{cur, ""}, false},
		{"all: every chunk", all, dmPeer, long, []string{cur, cur}, false},
		{"slack off ignores tags", slack, room("C2"), "[[reply_to:7]] hi", []string{""}, false},
		{"slack by chat type", slack, dmPeer, long, []string{cur, cur}, false},
		{"slack room's own mode", slack, room("C1"), long, []string{cur, ""}, false},
		{"silent", all, dmPeer, "NO_REPLY", nil, false},
		{"heartbeat only", all, dmPeer, "HEARTBEAT_OK", nil, false},
		{"batched: a single message", batched, dmPeer, long, []string{"", ""}, false},
		{"batched: a batch", batched, dmPeer, long, []string{cur, ""}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			a.TextChunkLimit = 100
			chunks := reply(a, tt.text, channel.Target{Peer: tt.p}, cur, tt.batch)
			var got []string
			for _, c := range chunks {
				got = append(got, c.ReplyTo)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d chunks %q, want %d", len(chunks), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("chunk %d replies to %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestApprovers(t *testing.T) {
	cfg := &config.Config{}
	cfg.Commands.OwnerAllowFrom = []string{"telegram:9", "discord:8", "*"}
	tests := []struct {
		name string
		a    Account
		want []string
	}{
		{"telegram prefixes", Account{Channel: "telegram", AllowFrom: []string{"tg:1", "Telegram:2", "*", "accessGroup:ops", " 3 ", "2", ""}},
			[]string{"1", "2", "3", "9"}},
		{"discord mentions", Account{Channel: "discord", AllowFrom: []string{"<@!5>", "<@6>", "user:7"}}, []string{"5", "6", "7", "8"}},
		{"slack", Account{Channel: "slack", AllowFrom: []string{"slack:U1", "user:U2", "tg:U3"}}, []string{"U1", "U2", "tg:U3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := approvers(cfg, tt.a)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("approvers = %q, want %q", got, tt.want)
			}
		})
	}
}
