package channel

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseLegacyName(t *testing.T) {
	cfg := cfgOf(t, `{channels: {
		telegram: {defaultAccount: "work", accounts: {work: {botToken: "a"}, home: {botToken: "b"}}},
		slack: {botToken: "x", appToken: "y"}}}`)
	cases := []struct {
		name string
		want LegacyFile
		ok   bool
	}{
		{"telegram-pairing.json", LegacyFile{Kind: LegacyRequests, Channel: "telegram"}, true},
		{"discord-pairing.json", LegacyFile{Kind: LegacyRequests, Channel: "discord"}, true},
		{"telegram-allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "telegram", AccountID: "work"}, true},
		{"slack-allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "slack", AccountID: "default"}, true},
		{"discord-allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "discord", AccountID: "default"}, true},
		{"telegram-home-allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "telegram", AccountID: "home"}, true},
		{"slack-My Team-allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "slack", AccountID: "my-team"}, true},
		{"telegram--allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "telegram",
			Skip: "the name has no account id between the channel and -allowFrom.json"}, true},
		{"whatsapp-pairing.json", LegacyFile{Kind: LegacyRequests, Channel: "whatsapp",
			Skip: `"whatsapp" is not a channel Talon runs (telegram, slack, discord)`}, true},
		{"whatsapp-work-allowFrom.json", LegacyFile{Kind: LegacyAllowFrom, Channel: "whatsapp-work",
			Skip: `"whatsapp-work" is not a channel Talon runs (telegram, slack, discord)`}, true},
		{"Telegram-pairing.json", LegacyFile{Kind: LegacyRequests, Channel: "Telegram",
			Skip: `"Telegram" is not a channel Talon runs (telegram, slack, discord)`}, true},
		{"-pairing.json", LegacyFile{Kind: LegacyRequests, Skip: `"" is not a channel Talon runs (telegram, slack, discord)`}, true},
		{"telegram-pairing.json.bak", LegacyFile{}, false},
		{"oauth.json", LegacyFile{}, false},
		{"telegram-allowfrom.json", LegacyFile{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseLegacyName(c.name, cfg)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if ok {
				c.want.Name = c.name
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	t.Run("no config", func(t *testing.T) {
		if got, _ := ParseLegacyName("telegram-allowFrom.json", nil); got.AccountID != "default" || got.Skip != "" {
			t.Errorf("got %+v, want the default account", got)
		}
	})
}

func TestParseLegacyPairing(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	f := LegacyFile{Name: "telegram-pairing.json", Kind: LegacyRequests, Channel: "telegram"}
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	cases := []struct {
		name, json string
		want       LegacyPairing
		err        string
	}{
		{"full request", `{"version":1,"requests":[{"id":"58466","code":"abcd2345","createdAt":"2026-11-27T05:30:00.000Z",
			"lastSeenAt":"2026-11-27T05:45:00.123Z","meta":{"accountId":"Work","username":" ann ","name":"","n":3}}]}`,
			LegacyPairing{Requests: []LegacyRequest{{Index: 0, Entry: "requests[0]", AccountID: "work", SenderID: "58466", Code: "ABCD2345",
				CreatedAt: at(30 * time.Minute), LastSeenAt: at(15*time.Minute - 123*time.Millisecond),
				Meta: map[string]string{"accountId": "work", "username": "ann"}}}}, ""},
		{"defaults: account, lastSeenAt", `{"requests":[{"id":"U1","code":"ZZZZ2222","createdAt":"2026-11-27T06:50:00+01:00"}]}`,
			LegacyPairing{Requests: []LegacyRequest{{Index: 0, Entry: "requests[0]", AccountID: "default", SenderID: "U1", Code: "ZZZZ2222",
				CreatedAt: at(10 * time.Minute), LastSeenAt: at(10 * time.Minute), Meta: map[string]string{"accountId": "default"}}}}, ""},
		{"lastSeenAt kept between createdAt and now", `{"requests":[
			{"id":"1","code":"AAAA2222","createdAt":"2026-11-27T05:50:00Z","lastSeenAt":"2026-11-27T05:00:00Z"},
			{"id":"2","code":"BBBB2222","createdAt":"2026-11-27T05:50:00Z","lastSeenAt":"2026-11-27T07:00:00Z"}]}`,
			LegacyPairing{Requests: []LegacyRequest{
				{Index: 0, Entry: "requests[0]", AccountID: "default", SenderID: "1", Code: "AAAA2222", CreatedAt: at(10 * time.Minute), LastSeenAt: at(10 * time.Minute), Meta: map[string]string{"accountId": "default"}},
				{Index: 1, Entry: "requests[1]", AccountID: "default", SenderID: "2", Code: "BBBB2222", CreatedAt: at(10 * time.Minute), LastSeenAt: now, Meta: map[string]string{"accountId": "default"}}}}, ""},
		{"expired counted", `{"requests":[{"id":"1","code":"AAAA2222","createdAt":"2026-11-27T05:00:00Z"},
			{"id":"2","code":"AAAA2223","createdAt":"2026-11-20T05:00:00Z"}]}`, LegacyPairing{Expired: 2}, ""},
		{"bad entries skipped", `{"requests":[
			3,
			{"code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"1","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"1","code":"AAAA2222"},
			{"id":7,"code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"1","code":"ABCD0123","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"1","code":"ABCD234","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"1","code":"AAAA2222","createdAt":"yesterday"},
			{"id":"1","code":"AAAA2222","createdAt":"2026-11-27T07:00:00Z"},
			{"id":"1","code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z","lastSeenAt":"soon"},
			{"id":"a b","code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"accessGroup:ops","code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"slack:U1","code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z"},
			{"id":"*","code":"AAAA2222","createdAt":"2026-11-27T05:30:00Z"}]}`,
			LegacyPairing{Skipped: []LegacySkip{
				{0, "requests[0]", "not a JSON object"},
				{1, "requests[1]", "no id"},
				{2, "requests[2]", "no code"},
				{3, "requests[3]", "no createdAt"},
				{4, "requests[4]", "id is not a string"},
				{5, "requests[5]", `code "ABCD0123" is not 8 characters of ABCDEFGHJKLMNPQRSTUVWXYZ23456789`},
				{6, "requests[6]", `code "ABCD234" is not 8 characters of ABCDEFGHJKLMNPQRSTUVWXYZ23456789`},
				{7, "requests[7]", `createdAt "yesterday" is not an ISO 8601 time`},
				{8, "requests[8]", `createdAt 2026-11-27T07:00:00Z is in the future`},
				{9, "requests[9]", `lastSeenAt "soon" is not an ISO 8601 time`},
				{10, "requests[10]", `sender id: "a b" has spaces, control characters or invalid UTF-8`},
				{11, "requests[11]", `sender id: "accessGroup:ops" is an access group: those belong in the config's allowFrom`},
				{12, "requests[12]", `sender id: "slack:U1" has a prefix this channel does not use`},
				{13, "requests[13]", `sender id: "*" (anyone) is not imported: dmPolicy "open" in the config says that`},
			}}, ""},
		{"empty list", `{"version":1,"requests":[]}`, LegacyPairing{}, ""},
		{"not JSON", `{"requests":[`, LegacyPairing{}, "parsing telegram-pairing.json: not a JSON object: unexpected end of JSON input"},
		{"a list", `[]`, LegacyPairing{}, "parsing telegram-pairing.json: not a JSON object: json: cannot unmarshal array into Go value of type map[string]json.RawMessage"},
		{"no requests", `{"version":1}`, LegacyPairing{}, `parsing telegram-pairing.json: no "requests" list`},
		{"requests not a list", `{"requests":{"id":"1"}}`, LegacyPairing{}, `parsing telegram-pairing.json: no "requests" list`},
		{"requests null", `{"requests":null}`, LegacyPairing{}, `parsing telegram-pairing.json: no "requests" list`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseLegacyPairing(f, []byte(c.json), now)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestParseLegacyAllowFrom(t *testing.T) {
	cases := []struct {
		name, ch, json string
		want           LegacyAllow
		err            string
	}{
		{"list with telegram prefixes", "telegram", `["telegram:123", "TG:456", " 789 ", 1234, "", "  ", "@ann", "123"]`,
			LegacyAllow{SenderIDs: []string{"123", "456", "789", "1234", "@ann"}}, ""},
		{"object", "slack", `{"version":1,"allowFrom":["user:U1","slack:U2","U3"]}`,
			LegacyAllow{SenderIDs: []string{"U1", "U2", "U3"}}, ""},
		{"discord mentions and snowflakes", "discord", `["<@111>","<@!222>","discord:333",1234567890123456789]`,
			LegacyAllow{SenderIDs: []string{"111", "222", "333", "1234567890123456789"}}, ""},
		{"skipped entries", "telegram", `["*","telegram:*",true,null,{"id":"1"},1.5,"accessGroup:ops","slack:U1","a\tb"]`,
			LegacyAllow{Skipped: []LegacySkip{
				{0, "allowFrom[0]", `"*" (anyone) is not imported: dmPolicy "open" in the config says that`},
				{1, "allowFrom[1]", `"*" (anyone) is not imported: dmPolicy "open" in the config says that`},
				{2, "allowFrom[2]", "true is not a string or a number"},
				{3, "allowFrom[3]", "null is not a string or a number"},
				{4, "allowFrom[4]", `{"id":"1"} is not a string or a number`},
				{5, "allowFrom[5]", "1.5 is not an integer id"},
				{6, "allowFrom[6]", `"accessGroup:ops" is an access group: those belong in the config's allowFrom`},
				{7, "allowFrom[7]", `"slack:U1" has a prefix this channel does not use`},
				{8, "allowFrom[8]", `"a\tb" has spaces, control characters or invalid UTF-8`},
			}}, ""},
		{"too long", "slack", `["` + strings.Repeat("U", 257) + `"]`,
			LegacyAllow{Skipped: []LegacySkip{{0, "allowFrom[0]", "longer than 256 bytes"}}}, ""},
		{"empty", "slack", `[]`, LegacyAllow{}, ""},
		{"not JSON", "slack", `["U1"`, LegacyAllow{}, "parsing slack-allowFrom.json: not a JSON list or object: unexpected end of JSON input"},
		{"a string", "slack", `"U1"`, LegacyAllow{}, "parsing slack-allowFrom.json: not a JSON list or object: json: cannot unmarshal string into Go value of type []json.RawMessage"},
		{"object without list", "slack", `{"allow":["U1"]}`, LegacyAllow{}, `parsing slack-allowFrom.json: no "allowFrom" list`},
		{"allowFrom not a list", "slack", `{"allowFrom":"U1"}`, LegacyAllow{}, `parsing slack-allowFrom.json: no "allowFrom" list`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := LegacyFile{Name: c.ch + "-allowFrom.json", Kind: LegacyAllowFrom, Channel: c.ch, AccountID: "default"}
			got, err := ParseLegacyAllowFrom(f, []byte(c.json))
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestValidCode(t *testing.T) {
	for code, want := range map[string]bool{
		"ABCD2345": true, "ZZZZ9999": true, PairingCode([]byte("01234567")): true,
		"abcd2345": false, "ABCD234": false, "ABCD23456": false, "ABCD0345": false, "ABCD1345": false,
		"ABCDO345": false, "ABCDI345": false, "": false, "ABCD 345": false,
	} {
		if got := ValidCode(code); got != want {
			t.Errorf("ValidCode(%q) = %v, want %v", code, got, want)
		}
	}
}
