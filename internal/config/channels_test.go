package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeChannels: the keys of spec channels.md decode into their
// fields, an account's keys apart from the root's, secrets in their
// three spellings.
func TestDecodeChannels(t *testing.T) {
	c, warns, err := decodeJSON5(t, `{
		session: {dmScope: "per-channel-peer", groupScope: "main", identityLinks: {alice: ["telegram:111", "slack:U1"]}},
		bindings: [{agentId: "ops", match: {channel: "discord", guildId: "1", roles: ["2"], peer: {kind: "channel", id: "3"}},
			session: {dmScope: "main"}}, {agentId: "a", match: {channel: "telegram", accountId: "*"}}],
		messages: {groupChat: {mentionPatterns: ["\\btalon\\b"], historyLimit: 30}},
		commands: {ownerAllowFrom: ["telegram:111"]},
		accessGroups: {ops: {members: {telegram: ["111"], "*": ["x"]}}},
		agents: {list: [{id: "a", groupChat: {mentionPatterns: []}}, {id: "ops"}]},
		channels: {
			defaults: {groupPolicy: "open"},
			telegram: {botToken: {source: "env", id: "TG"}, dmPolicy: "allowlist", allowFrom: ["111"],
				webhookUrl: "https://h/tg", webhookSecret: "${TG_SECRET}", linkPreview: false,
				groups: {"-100": {requireMention: false, topics: {"3": {agentId: "ops", requireMention: true}}}},
				accounts: {Work: {botToken: "123:abc", dmPolicy: "pairing", responsePrefix: ""}}},
			slack: {mode: "http", botToken: "xoxb-1", signingSecret: "s", apiUrl: "http://127.0.0.1:9/api",
				channels: {C1: {requireMention: true, users: ["U1"], replyToMode: "all"}},
				dm: {enabled: true, groupEnabled: false}, replyToModeByChatType: {direct: "first"},
				thread: {historyScope: "channel", initialHistoryLimit: 5}},
			discord: {token: "d", applicationId: "9", gatewayUrl: "wss://gw/", allowBots: "mentions",
				guilds: {"1": {roles: ["2"], channels: {"3": {enabled: true}}}},
				intents: {messageContent: false}, maxLinesPerMessage: 17, suppressEmbeds: true},
		},
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Errorf("warnings: %v", warns)
	}
	no, yes := false, true
	tg, dc := c.Channels["telegram"], c.Channels["discord"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"dmScope", c.Session.DMScope, "per-channel-peer"},
		{"identityLinks", c.Session.IdentityLinks["alice"], List{"telegram:111", "slack:U1"}},
		{"binding peer", *c.Bindings[0].Match.Peer, BindingPeer{Kind: "channel", ID: "3"}},
		{"binding account omitted", c.Bindings[0].Match.AccountID == nil, true},
		{"binding account *", *c.Bindings[1].Match.AccountID, "*"},
		{"binding session", c.Bindings[0].Session.DMScope, "main"},
		{"messages patterns", c.Messages.GroupChat.MentionPatterns, List{`\btalon\b`}},
		{"agent patterns empty, not absent", c.Agents.List[0].GroupChat.MentionPatterns, List{}},
		{"defaults", c.ChannelDefaults().GroupPolicy, "open"},
		{"telegram token ref", *tg.BotToken, Secret{Env: "TG"}},
		{"telegram webhook secret", tg.WebhookSecret.EnvName(), "TG_SECRET"},
		{"link preview", *tg.LinkPreview, no},
		{"topic agent", tg.Groups["-100"].Topics["3"].AgentID, "ops"},
		{"account token", *tg.Accounts["Work"].BotToken, Secret{Text: "123:abc"}},
		{"account prefix present and empty", *tg.Accounts["Work"].ResponsePrefix, ""},
		{"account inherits nothing itself", tg.Accounts["Work"].AllowFrom == nil, true},
		{"slack room", c.Channels["slack"].Channels["C1"].Users, List{"U1"}},
		{"slack thread", c.Channels["slack"].Thread.HistoryScope, "channel"},
		{"slack by chat type", c.Channels["slack"].ReplyToModeByChatType.Direct, "first"},
		{"discord guild channel", *c.Channels["discord"].Guilds["1"].Channels["3"].Enabled, yes},
		{"discord intents", *c.Channels["discord"].Intents.MessageContent, no},
		{"discord allowBots", dc.AllowBotsMode(), "mentions"},
		{"access group", c.AccessGroups["ops"].Members["*"], List{"x"}},
	}
	for _, tc := range checks {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestValidateChannels: each value rule fails with the key it is about.
func TestValidateChannels(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // "path: message prefix"
	}{
		{"enums", `{channels: {telegram: {dmPolicy: "public", groupPolicy: "all", replyToMode: "always",
				accounts: {b: {dmPolicy: "pairing", replyToMode: "x"}}},
			slack: {mode: "relay", thread: {historyScope: "all"}}},
			session: {dmScope: "per-user", groupScope: "per-topic"}}`,
			[]string{`session.dmScope: expected one of main, per-peer`, `session.groupScope: expected one of per-group, main`,
				`channels.slack.mode: expected one of socket, http (got "relay")`,
				`channels.slack.thread.historyScope: expected one of thread, channel`,
				`channels.telegram.dmPolicy: expected one of pairing`, `channels.telegram.groupPolicy: expected one of allowlist`,
				`channels.telegram.replyToMode: expected one of off`, `channels.telegram.accounts.b.replyToMode: expected one of off`}},
		{"allowlist without senders", `{channels: {telegram: {dmPolicy: "allowlist"}}}`,
			[]string{`channels.telegram.allowFrom: dmPolicy "allowlist" with an empty allowFrom admits nobody`}},
		{"allowlist inherited by an account that empties it", `{channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["1"], accounts: {b: {allowFrom: []}}}}}`,
			[]string{`channels.telegram.accounts.b.allowFrom: dmPolicy "allowlist" with an empty allowFrom`}},
		{"open without a star", `{channels: {slack: {dmPolicy: "open", allowFrom: ["U1"]}}}`,
			[]string{`channels.slack.allowFrom: dmPolicy "open" requires "*" in allowFrom`}},
		{"open with a star", `{channels: {slack: {dmPolicy: "open", allowFrom: ["*"]}}}`, nil},
		{"broadcast refused", `{broadcast: {"telegram:-100": ["a", "b"]}}`,
			[]string{`broadcast: broadcast groups (several agents answering one room) are not supported by Talon`}},
		{"urls", `{channels: {telegram: {apiRoot: "file:///etc/passwd", webhookUrl: "https://h/x", webhookSecret: "s"},
				slack: {apiUrl: "notaurl"}, discord: {apiUrl: "http://h/api", gatewayUrl: "https://gw"}}}`,
			[]string{`channels.discord.gatewayUrl: expected a ws:// or wss:// URL`, `channels.slack.apiUrl: expected a http:// or https:// URL`,
				`channels.telegram.apiRoot: expected a http:// or https:// URL`}},
		{"telegram webhook needs its secret", `{channels: {telegram: {webhookUrl: "https://h/x"}}}`,
			[]string{`channels.telegram.webhookSecret: required with webhookUrl`}},
		{"secret sources", `{channels: {telegram: {botToken: {source: "file", id: "/etc/shadow"}},
				slack: {botToken: {source: "env", id: "1BAD"}, appToken: 5, signingSecret: {source: "env", id: "S", extra: 1}}}}`,
			[]string{`channels.slack.botToken.id: expected an environment variable name`, `channels.slack.appToken: expected a string, "${NAME}"`,
				`channels.slack.signingSecret.extra: unknown key of a secret reference`,
				`channels.telegram.botToken: secret source "file" is not supported`}},
		{"allowBots", `{channels: {slack: {allowBots: "mentions"}, discord: {allowBots: "all"}}}`,
			[]string{`channels.discord.allowBots: expected true, false or "mentions"`, `channels.slack.allowBots: expected true or false`}},
		{"patterns", `{messages: {groupChat: {mentionPatterns: ["(unclosed", "ok"]}}, agents: {list: [{id: "a", groupChat: {mentionPatterns: ["["]}}]}}`,
			[]string{`agents.list[0].groupChat.mentionPatterns[0]: invalid regular expression`,
				`messages.groupChat.mentionPatterns[0]: invalid regular expression`}},
		{"bindings", `{bindings: [{match: {channel: "slack", peer: {kind: "room", id: ""}}, session: {dmScope: "x"}}, {agentId: "a", match: {}}]}`,
			[]string{`bindings[0].agentId: missing agentId`, `bindings[0].match.peer.kind: expected one of direct, dm, group, channel`,
				`bindings[0].match.peer.id: missing id`, `bindings[0].session.dmScope: expected one of main`, `bindings[1].match.channel: missing channel`}},
		{"default account", `{channels: {discord: {defaultAccount: "Work", accounts: {work: {}}}, slack: {defaultAccount: "x"}}}`,
			[]string{`channels.slack.defaultAccount: names no account`}},
		{"too many patterns", `{messages: {groupChat: {mentionPatterns: [` + strings.Repeat(`"a",`, 65) + `]}}}`,
			[]string{`messages.groupChat.mentionPatterns: at most 64 patterns (got 65)`}},
		{"group policy of a group", `{channels: {telegram: {groups: {"-1": {groupPolicy: "everyone"}}}}}`,
			[]string{`channels.telegram.groups.-1.groupPolicy: expected one of allowlist, open, disabled`}},
		{"limits", `{channels: {discord: {textChunkLimit: 0, historyLimit: -1}}}`,
			[]string{`channels.discord.historyLimit: expected an integer from 0`, `channels.discord.textChunkLimit: expected an integer from 1`}},
		{"media limit", `{channels: {slack: {mediaMaxMb: 0, accounts: {a: {mediaMaxMb: 4096}}}}}`,
			[]string{`channels.slack.mediaMaxMb: expected more than 0 and at most 100`, `channels.slack.accounts.a.mediaMaxMb: expected more than 0 and at most 100`}},
		{"debounce", `{messages: {inbound: {debounceMs: -1, byChannel: {telegram: 600000}}}}`,
			[]string{`messages.inbound.debounceMs: expected milliseconds from 0`, `messages.inbound.byChannel.telegram: expected milliseconds from 0`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeJSON5(t, tc.src)
			var got []string
			for _, is := range issuesOf(t, err) {
				got = append(got, is.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d issues, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no issue %q in:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// TestForeignChannelKeys: another platform's key in a block is reported,
// not silently ignored.
func TestForeignChannelKeys(t *testing.T) {
	_, warns, err := decodeJSON5(t, `{channels: {telegram: {guilds: {}, botToken: "t"}, discord: {botToken: "x", token: "y"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Issue{
		{"channels.telegram.guilds", "not a telegram key (read by discord only): kept, not used"},
		{"channels.discord.botToken", "not a discord key (read by slack, telegram only): kept, not used"},
	}
	if diff := cmp.Diff(want, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestBindingToUnknownAgent(t *testing.T) {
	_, warns, err := decodeJSON5(t, `{agents: {list: [{id: "a"}]}, bindings: [{agentId: "A", match: {channel: "slack"}}, {agentId: "zed", match: {channel: "slack"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Issue{{"bindings[1].agentId", `names no agent of agents.list ("zed"): the binding is skipped`}}
	if diff := cmp.Diff(want, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestSecretResolve(t *testing.T) {
	env := map[string]string{"TG": "from-env"}
	get := func(k string) string { return env[k] }
	tests := []struct {
		s       *Secret
		want    string
		wantErr string
	}{
		{nil, "", ""},
		{&Secret{Text: "plain"}, "plain", ""},
		{&Secret{Text: "${TG}"}, "from-env", ""},
		{&Secret{Env: "TG"}, "from-env", ""},
		{&Secret{Env: "MISSING"}, "", "environment variable MISSING is not set"},
		{&Secret{Text: "${ not a ref }"}, "${ not a ref }", ""},
	}
	for _, tc := range tests {
		got, err := tc.s.Resolve(get)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("Resolve(%+v) = %q, %v; want %q, %q", tc.s, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestRedactChannelSecrets: every credential a channel block holds is
// hidden when the config is shown; ids, paths and env names are not.
func TestRedactChannelSecrets(t *testing.T) {
	const R = RedactedSentinel
	got := Redact(mustJSON5(t, `{channels: {
		telegram: {botToken: "123:abcdef", webhookSecret: "ws", webhookUrl: "https://h/x", apiRoot: "https://api.telegram.org",
			accounts: {b: {botToken: {source: "env", id: "TG_B"}}}},
		slack: {botToken: "xoxb-1", appToken: "xapp-1", signingSecret: "sig", apiUrl: "https://slack.com/api"},
		discord: {token: "d.t.x", applicationId: "9", gatewayUrl: "wss://gateway.discord.gg"}}}`))
	want := mustJSON5(t, `{channels: {
		telegram: {botToken: "`+R+`", webhookSecret: "`+R+`", webhookUrl: "`+R+`", apiRoot: "https://api.telegram.org",
			accounts: {b: {botToken: {source: "env", id: "TG_B"}}}},
		slack: {botToken: "`+R+`", appToken: "`+R+`", signingSecret: "`+R+`", apiUrl: "https://slack.com/api"},
		discord: {token: "`+R+`", applicationId: "9", gatewayUrl: "wss://gateway.discord.gg"}}}`)
	if diff := cmp.Diff(string(want.Indented()), string(got.Indented())); diff != "" {
		t.Errorf("Redact (-want +got):\n%s", diff)
	}
}
