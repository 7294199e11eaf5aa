package channel

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"talon/internal/config"
)

func TestAccounts(t *testing.T) {
	cfg := cfgOf(t, `{
		messages: {groupChat: {historyLimit: 30}},
		channels: {
			telegram: {botToken: "root", dmPolicy: "allowlist", allowFrom: ["1"], groups: {"-1": {}}, historyLimit: 500,
				accounts: {Zed: {allowFrom: ["*", "2"]}, alpha: {botToken: "a", dmPolicy: "pairing", groups: {}}, off: {enabled: false}}},
			slack: {mode: "http", botToken: "x", signingSecret: "s"},
			discord: {enabled: false, token: "d"},
		}}`)
	accts := Accounts(cfg, "telegram")
	var ids []string
	for _, a := range accts {
		ids = append(ids, a.ID)
	}
	if diff := cmp.Diff([]string{"alpha", "zed"}, ids); diff != "" {
		t.Fatalf("ids (-want +got):\n%s", diff)
	}
	alpha, zed := accts[0], accts[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"alpha's own token", alpha.BotToken.Text, "a"},
		{"zed inherits the root token", zed.BotToken.Text, "root"},
		{"alpha's policy", alpha.DMPolicy, "pairing"},
		{"zed inherits the root policy", zed.DMPolicy, "allowlist"},
		{"the root list bounds zed's star", zed.AllowFrom, []string{"1", "2"}},
		{"an empty account map isolates", len(alpha.Groups), 0},
		{"zed inherits the root groups", len(zed.Groups), 1},
		{"history capped at 200", zed.HistoryLimit, 200},
		{"telegram DM history default", zed.DMHistoryLimit, 10},
		{"default api root", zed.APIRoot, "https://api.telegram.org"},
		{"group policy default", zed.GroupPolicy, "allowlist"},
		{"key as written", zed.Key, "Zed"},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	sl := Accounts(cfg, "slack")
	if len(sl) != 1 || sl[0].ID != "default" || sl[0].Mode != "http" || sl[0].TextChunkLimit != 8000 || sl[0].HistoryLimit != 30 ||
		!sl[0].DMEnabled || sl[0].GroupDMEnabled || sl[0].ThreadInitialHistory != 20 || sl[0].APIURL != "https://slack.com/api" {
		t.Errorf("slack: %+v", sl)
	}
	if got := Accounts(cfg, "discord"); got != nil {
		t.Errorf("disabled discord: %+v", got)
	}
	cfg = cfgOf(t, `{channels: {discord: {token: "d", accounts: {b: {}, c: {}}}, slack: {defaultAccount: "C", accounts: {b: {}, c: {}}}}}`)
	dc := Accounts(cfg, "discord")[0]
	if dc.TextChunkLimit != 2000 || dc.MaxLines != 17 || dc.HistoryLimit != 20 || !dc.MessageContent || dc.GuildMembers || !dc.SuppressEmbeds {
		t.Errorf("discord defaults: %+v", dc)
	}
	if bot, app := Accounts(cfgOf(t, `{channels: {slack: {}}}`), "slack")[0].FallbackEnv(); bot != "SLACK_BOT_TOKEN" || app != "SLACK_APP_TOKEN" {
		t.Errorf("slack default account env: %q %q", bot, app)
	}
	if bot, _ := dc.FallbackEnv(); bot != "" {
		t.Errorf("account %q takes env %q", dc.ID, bot)
	}
	for _, tc := range []struct {
		ch, want  string
		ambiguous bool
	}{{"discord", "b", true}, {"slack", "c", false}, {"telegram", "", false}} {
		if id, amb := DefaultAccountID(cfg, tc.ch); id != tc.want || amb != tc.ambiguous {
			t.Errorf("DefaultAccountID(%s) = %q, %v", tc.ch, id, amb)
		}
	}
}

func TestPairingCode(t *testing.T) {
	random := []byte{0, 31, 32, 255, 8, 13, 100, 200}
	code := PairingCode(random)
	if code != "A9A9JPEJ" {
		t.Errorf("code %q", code)
	}
	for _, r := range code {
		if !strings.ContainsRune(PairingAlphabet, r) || strings.ContainsRune("01OI", r) {
			t.Errorf("letter %q not allowed", r)
		}
	}
	if PairingCode(random[:7]) != "" {
		t.Error("a code from too few bytes")
	}
	if NormalizeCode(" a9a9jpej ") != code {
		t.Error("NormalizeCode")
	}
}

func TestRequestID(t *testing.T) {
	at := time.Date(2026, 11, 27, 3, 0, 0, 123456789, time.UTC)
	// base64url(sha256("telegram\0default\058466\02026-11-27T03:00:00.123Z"))[:32], by Python's hashlib.
	if got := RequestID("telegram", "default", "58466", at.In(time.FixedZone("x", 3600))); got != "dO32dmp0IC0uzqMIZCV88GsCB4JC4jfi" {
		t.Errorf("RequestID = %q", got)
	}
}

func TestPairingReply(t *testing.T) {
	msg := PairingReply("telegram", "58466", "ABCD2345", time.Date(2026, 11, 27, 4, 5, 0, 0, time.FixedZone("x", 3600)))
	for _, want := range []string{"not configured", "Your Telegram user id:\n```\n58466\n```",
		"```\nABCD2345\n```", "```\ntalon pairing approve telegram ABCD2345\n```", "03:05 UTC on 2026-11-27"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reply lacks %q:\n%s", want, msg)
		}
	}
}

func TestSharedDMIssues(t *testing.T) {
	tests := []struct {
		name, cfg string
		want      int
	}{
		{"pairing under main", `{channels: {telegram: {}}}`, 1},
		{"one owner", `{channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["1"]}, slack: {dmPolicy: "allowlist", allowFrom: ["U1"]}}}`, 0},
		{"two allowed", `{channels: {discord: {dmPolicy: "allowlist", allowFrom: ["1", "2"]}}}`, 1},
		{"open", `{channels: {slack: {dmPolicy: "open", allowFrom: ["*"]}}}`, 1},
		{"DMs disabled", `{channels: {telegram: {dmPolicy: "disabled"}, slack: {dm: {enabled: false}}}}`, 0},
		{"per-channel-peer", `{session: {dmScope: "per-channel-peer"}, channels: {telegram: {}}}`, 0},
		{"per account", `{channels: {telegram: {accounts: {a: {}, b: {dmPolicy: "allowlist", allowFrom: ["1"]}}}}}`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SharedDMIssues(cfgOf(t, tc.cfg))
			if len(got) != tc.want {
				t.Fatalf("got %+v", got)
			}
			for _, is := range got {
				if is.Kind != "config" || !strings.Contains(is.Message, "session.dmScope") || !strings.Contains(is.Fix, "per-channel-peer") {
					t.Errorf("issue %+v", is)
				}
			}
		})
	}
}

func TestResponsePrefix(t *testing.T) {
	cfg := cfgOf(t, `{agents: {list: [{id: "main", identity: {name: "Somi"}}, {id: "ops", name: "Ops desk"}, {id: "bare"}]},
		channels: {telegram: {responsePrefix: "auto", accounts: {a: {}, t: {responsePrefix: "[{name} · {model}]"}, off: {responsePrefix: ""}}}}}`)
	for _, tc := range []struct{ account, agent, model, want string }{
		{"a", "main", "openai/gpt-5", "[Somi]"},
		{"a", "ops", "", "[Ops desk]"},
		{"a", "bare", "", "[bare]"},
		{"t", "main", "openai/gpt-5", "[Somi · openai/gpt-5]"},
		{"off", "main", "m", ""},
	} {
		a, ok := FindAccount(cfg, "telegram", tc.account)
		if !ok {
			t.Fatalf("no account %s", tc.account)
		}
		if got := ResponsePrefix(cfg, a, tc.agent, tc.model); got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.account, tc.agent, got, tc.want)
		}
	}
}

func TestAckReaction(t *testing.T) {
	group := Envelope{Channel: "telegram", Peer: Peer{Kind: Group, ID: "-1"}, Mentioned: true}
	quiet := Envelope{Channel: "telegram", Peer: Peer{Kind: Group, ID: "-1"}}
	direct := Envelope{Channel: "telegram", Peer: Peer{Kind: Direct, ID: "5"}}
	for _, tc := range []struct {
		name, cfg, agent string
		e                Envelope
		want             string // "" for none
	}{
		{"default: a mention in a group", `{channels: {telegram: {}}}`, "main", group, "👀"},
		{"default: not a DM", `{channels: {telegram: {}}}`, "main", direct, ""},
		{"default: not unmentioned", `{channels: {telegram: {}}}`, "main", quiet, ""},
		{"the agent's emoji", `{agents: {list: [{id: "main", identity: {emoji: "🦅"}}]}, channels: {telegram: {}}}`, "main", group, "🦅"},
		{"messages.ackReaction", `{messages: {ackReaction: "✅"}, agents: {list: [{id: "main", identity: {emoji: "🦅"}}]}, channels: {telegram: {}}}`, "main", group, "✅"},
		{"the channel's over messages'", `{messages: {ackReaction: "✅"}, channels: {telegram: {ackReaction: "👍"}}}`, "main", group, "👍"},
		{"turned off by the channel", `{messages: {ackReaction: "✅"}, channels: {telegram: {ackReaction: ""}}}`, "main", group, ""},
		{"scope group-all", `{messages: {ackReactionScope: "group-all"}, channels: {telegram: {}}}`, "main", quiet, "👀"},
		{"scope direct", `{messages: {ackReactionScope: "direct"}, channels: {telegram: {}}}`, "main", direct, "👀"},
		{"scope direct: not groups", `{messages: {ackReactionScope: "direct"}, channels: {telegram: {}}}`, "main", group, ""},
		{"scope all", `{messages: {ackReactionScope: "all"}, channels: {telegram: {}}}`, "main", direct, "👀"},
		{"scope off", `{messages: {ackReactionScope: "off"}, channels: {telegram: {}}}`, "main", group, ""},
		{"Slack's name", `{channels: {slack: {}}}`, "main", Envelope{Channel: "slack", Peer: Peer{Kind: Room, ID: "C1"}, Mentioned: true}, "eyes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgOf(t, tc.cfg)
			a := Accounts(cfg, tc.e.Channel)[0]
			got, ok := AckReaction(cfg, a, tc.e, tc.agent)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("got %q %v, want %q", got, ok, tc.want)
			}
		})
	}
}

func TestBootstrapOwner(t *testing.T) {
	for _, tc := range []struct {
		name, src, ch, sender, want, wantOwners string
	}{
		{"no owners: the sender becomes one", `{channels: {telegram: {}}}`, "telegram", "58466", OwnerConfigured, `["telegram:58466"]`},
		{"empty list counts as none", `{commands: {native: "auto", ownerAllowFrom: []}}`, "slack", "U1", OwnerConfigured, `["slack:U1"]`},
		{"owners exist: nothing added", `{commands: {ownerAllowFrom: ["discord:9"]}}`, "telegram", "1", OwnerAlready, `["discord:9"]`},
		{"a sender id that is not one", `{}`, "telegram", "1:2", OwnerUnavailable, ``},
		{"a wildcard is never an owner", `{}`, "telegram", "*", OwnerUnavailable, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse("t.json5", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := BootstrapOwner(f.Tree, f.Config, tc.ch, tc.sender); got != tc.want {
				t.Errorf("BootstrapOwner = %q, want %q", got, tc.want)
			}
			got := ""
			if v := f.Tree.Lookup("commands", "ownerAllowFrom"); v != nil {
				b, _ := v.MarshalJSON()
				got = string(b)
			}
			if got != tc.wantOwners {
				t.Errorf("commands.ownerAllowFrom = %s, want %s", got, tc.wantOwners)
			}
			if tc.want == OwnerConfigured && f.Tree.Lookup("commands", "native") == nil && strings.Contains(tc.src, "native") {
				t.Error("the other commands keys were lost")
			}
		})
	}
}
