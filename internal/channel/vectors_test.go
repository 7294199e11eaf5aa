package channel

import (
	"testing"
	"time"

	"talon/internal/config"
)

// cfgOf decodes a JSON5 config the way the gateway does, validation
// included.
func cfgOf(t testing.TB, src string) *config.Config {
	t.Helper()
	tree, err := config.ParseJSON5([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var c config.Config
	if _, err := config.Decode(tree, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func account(t *testing.T, cfg *config.Config, channel, id string) Account {
	t.Helper()
	a, ok := FindAccount(cfg, channel, id)
	if !ok {
		t.Fatalf("no account %s/%s", channel, id)
	}
	return a
}

// TestConformanceVectors are spec channels.md §18's vectors 1–10 (11 and
// 12 are the formatting and delivery ones, tested with those parts).
func TestConformanceVectors(t *testing.T) {
	dm := func(ch, acct, sender string) Envelope {
		return Envelope{Channel: ch, AccountID: acct, Peer: Peer{Kind: Direct, ID: sender}, Sender: Sender{ID: sender}, Text: "hi"}
	}
	group := func(ch, id, sender string) Envelope {
		return Envelope{Channel: ch, AccountID: "default", Peer: Peer{Kind: Group, ID: id}, Sender: Sender{ID: sender, E164: sender}, Text: "hi", Mentioned: true}
	}
	key := func(t *testing.T, cfg *config.Config, e Envelope) Route {
		t.Helper()
		r, err := Resolve(cfg, e, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	t.Run("1 dmScope per-account-channel-peer and main", func(t *testing.T) {
		cfg := cfgOf(t, `{session: {dmScope: "per-account-channel-peer"}, channels: {telegram: {accounts: {Work: {}}}}}`)
		if got := key(t, cfg, dm("telegram", "Work", "12345")).SessionKey; got != "agent:main:telegram:work:direct:12345" {
			t.Errorf("per-account-channel-peer: %q", got)
		}
		cfg = cfgOf(t, `{session: {dmScope: "main"}}`)
		r := key(t, cfg, dm("telegram", "Work", "12345"))
		if r.SessionKey != "agent:main:main" || r.LastRoutePolicy != "main" {
			t.Errorf("main: %+v", r)
		}
	})
	t.Run("2 identityLinks", func(t *testing.T) {
		cfg := cfgOf(t, `{session: {dmScope: "per-peer", identityLinks: {alice: ["Telegram:111"]}}}`)
		if got := key(t, cfg, dm("telegram", "", "111")).SessionKey; got != "agent:main:direct:alice" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("3 slack thread", func(t *testing.T) {
		e := Envelope{Channel: "slack", Peer: Peer{Kind: Room, ID: "C0ABC"}, ThreadID: "1777.0001", Sender: Sender{ID: "U1"}}
		r := key(t, cfgOf(t, `{}`), e)
		if r.SessionKey != "agent:main:slack:channel:c0abc:thread:1777.0001" || r.ParentSessionKey != "agent:main:slack:channel:c0abc" {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("4 telegram topic", func(t *testing.T) {
		e := Envelope{Channel: "telegram", Peer: Peer{Kind: Group, ID: "-100123:topic:42"}, Sender: Sender{ID: "1"}}
		if got := key(t, cfgOf(t, `{}`), e).SessionKey; got != "agent:main:telegram:group:-100123:topic:42" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("5 account and channel bindings", func(t *testing.T) {
		cfg := cfgOf(t, `{agents: {list: [{id: "a"}, {id: "b"}]},
			bindings: [{agentId: "a", match: {channel: "discord"}}, {agentId: "b", match: {channel: "discord", accountId: "*"}}]}`)
		e := Envelope{Channel: "discord", AccountID: "alt", Peer: Peer{Kind: Room, ID: "9"}, GuildID: "1", Sender: Sender{ID: "u"}}
		if r := key(t, cfg, e); r.AgentID != "b" || r.MatchedBy != ByChannel {
			t.Errorf("alt: %+v", r)
		}
		e.AccountID = "default"
		if r := key(t, cfg, e); r.AgentID != "a" || r.MatchedBy != ByAccount {
			t.Errorf("default: %+v", r)
		}
	})
	t.Run("6 sender list alone admits rooms, not on Telegram", func(t *testing.T) {
		for _, tc := range []struct {
			ch, sender string
			want       Decision
		}{
			{"whatsapp", "+8", Decision{Reason: ReasonGroupNotAllowed}},
			{"whatsapp", "+7", Decision{Allow: true, Reason: ReasonMentioned}},
			{"telegram", "+7", Decision{Reason: ReasonRoomNotAllowed}},
		} {
			cfg := cfgOf(t, `{channels: {`+tc.ch+`: {groupPolicy: "allowlist", groupAllowFrom: ["+7"]}}}`)
			got := Admit(cfg, account(t, cfg, tc.ch, "default"), group(tc.ch, "120363@g.us", tc.sender), nil)
			if got != tc.want {
				t.Errorf("%s %s: %+v, want %+v", tc.ch, tc.sender, got, tc.want)
			}
		}
	})
	t.Run("7 absent channel block fails closed", func(t *testing.T) {
		cfg := cfgOf(t, `{channels: {defaults: {groupPolicy: "open"}}}`)
		if accts := Accounts(cfg, "telegram"); len(accts) != 0 {
			t.Fatalf("accounts of an absent block: %+v", accts)
		}
		// Whatever runs for it, an account of no block has no open policy.
		got := Admit(cfg, Account{Channel: "telegram", ID: "default"}, group("telegram", "-100", "1"), nil)
		if got != (Decision{Reason: ReasonRoomNotAllowed}) {
			t.Errorf("got %+v", got)
		}
		// With the block present, the default applies.
		cfg = cfgOf(t, `{channels: {defaults: {groupPolicy: "open"}, telegram: {}}}`)
		if a := account(t, cfg, "telegram", "default"); a.GroupPolicy != "open" {
			t.Errorf("groupPolicy with the block present: %q", a.GroupPolicy)
		}
	})
	t.Run("8 pending cap and repeat sender", func(t *testing.T) {
		now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
		var pending []PairingRequest
		for i, s := range []string{"1", "2", "3"} {
			act, _ := NextPairing(pending, s, now)
			if act != PairingCreate {
				t.Fatalf("sender %s: %v", s, act)
			}
			pending = append(pending, PairingRequest{SenderID: s, Code: PairingCode([]byte{byte(i), 1, 2, 3, 4, 5, 6, 7}), CreatedAt: now})
		}
		if act, _ := NextPairing(pending, "4", now.Add(59*time.Minute)); act != PairingFull {
			t.Errorf("4th sender: %v, want PairingFull", act)
		}
		act, r := NextPairing(pending, "1", now.Add(10*time.Minute))
		if act != PairingRefresh || r.Code != pending[0].Code {
			t.Errorf("1st sender again: %v %+v", act, r)
		}
		if act, _ := NextPairing(pending, "4", now.Add(time.Hour)); act != PairingCreate {
			t.Errorf("after the TTL: %v, want PairingCreate", act)
		}
	})
	t.Run("9 allowlist ignores the pairing store", func(t *testing.T) {
		cfg := cfgOf(t, `{channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["1"]}}}`)
		got := Admit(cfg, account(t, cfg, "telegram", "default"), dm("telegram", "", "42"), []string{"42"})
		if got != (Decision{Reason: ReasonDMNotAllowlisted}) {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("10 discord channel map is an allowlist", func(t *testing.T) {
		cfg := cfgOf(t, `{channels: {discord: {groupPolicy: "allowlist", guilds: {"1": {channels: {"333": {enabled: true}}}}}}}`)
		e := Envelope{Channel: "discord", Peer: Peer{Kind: Room, ID: "444"}, GuildID: "1", Sender: Sender{ID: "u"}, Mentioned: true}
		if got := Admit(cfg, account(t, cfg, "discord", "default"), e, nil); got != (Decision{Reason: ReasonGuildChannelDenied}) {
			t.Errorf("444: %+v", got)
		}
		e.Peer.ID = "333"
		if got := Admit(cfg, account(t, cfg, "discord", "default"), e, nil); !got.Allow {
			t.Errorf("333: %+v", got)
		}
	})
}
