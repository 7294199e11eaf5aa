package channel

import "testing"

func TestAdmitDM(t *testing.T) {
	tests := []struct {
		name, cfg string
		channel   string
		sender    Sender
		approved  []string
		want      Decision
	}{
		{"pairing by default, unknown sender", `{channels: {telegram: {}}}`, "telegram", Sender{ID: "9"}, nil,
			Decision{Pairing: true, Reason: ReasonPairingRequired}},
		{"pairing, approved in the store", `{channels: {telegram: {}}}`, "telegram", Sender{ID: "9"}, []string{"9"},
			Decision{Allow: true, Reason: ReasonDMAllowlisted}},
		{"pairing, in allowFrom with a tg: prefix", `{channels: {telegram: {allowFrom: ["TG:9"]}}}`, "telegram", Sender{ID: "9"}, nil,
			Decision{Allow: true, Reason: ReasonDMAllowlisted}},
		{"disabled", `{channels: {telegram: {dmPolicy: "disabled", allowFrom: ["9"]}}}`, "telegram", Sender{ID: "9"}, nil,
			Decision{Reason: ReasonDMDisabled}},
		{"open with star", `{channels: {slack: {dmPolicy: "open", allowFrom: ["*"]}}}`, "slack", Sender{ID: "U1"}, nil,
			Decision{Allow: true, Reason: ReasonDMOpen}},
		{"open ignores the store", `{channels: {slack: {dmPolicy: "open", allowFrom: ["*"], accounts: {b: {dmPolicy: "allowlist", allowFrom: ["U2"]}}}}}`,
			"slack", Sender{ID: "U1"}, []string{"U1"}, Decision{Reason: ReasonDMNotAllowlisted}},
		{"slack ids compare without case", `{channels: {slack: {dmPolicy: "allowlist", allowFrom: ["slack:u0alice"]}}}`, "slack", Sender{ID: "U0ALICE"}, nil,
			Decision{Allow: true, Reason: ReasonDMAllowlisted}},
		{"discord mention form", `{channels: {discord: {dmPolicy: "allowlist", allowFrom: ["<@!42>"]}}}`, "discord", Sender{ID: "42"}, nil,
			Decision{Allow: true, Reason: ReasonDMAllowlisted}},
		{"names never match by default", `{channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["@alice"]}}}`, "telegram", Sender{ID: "9", Username: "alice"}, nil,
			Decision{Reason: ReasonDMNotAllowlisted}},
		{"names match when dangerously allowed", `{channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["@Alice"], dangerouslyAllowNameMatching: true}}}`,
			"telegram", Sender{ID: "9", Username: "alice"}, nil, Decision{Allow: true, Reason: ReasonDMAllowlisted}},
		{"access group", `{accessGroups: {ops: {members: {telegram: ["7"], "*": ["8"]}}}, channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["accessGroup:ops"]}}}`,
			"telegram", Sender{ID: "8"}, nil, Decision{Allow: true, Reason: ReasonDMAllowlisted}},
		{"access group, not a member", `{accessGroups: {ops: {members: {discord: ["7"]}}}, channels: {telegram: {dmPolicy: "allowlist", allowFrom: ["accessGroup:ops"]}}}`,
			"telegram", Sender{ID: "7"}, nil, Decision{Reason: ReasonDMNotAllowlisted}},
		{"slack dm off", `{channels: {slack: {dm: {enabled: false}, dmPolicy: "open", allowFrom: ["*"]}}}`, "slack", Sender{ID: "U1"}, nil,
			Decision{Reason: ReasonDMsOff}},
		{"bots are dropped", `{channels: {discord: {dmPolicy: "open", allowFrom: ["*"]}}}`, "discord", Sender{ID: "5", IsBot: true}, nil,
			Decision{Reason: ReasonBot}},
		{"bots when allowed", `{channels: {discord: {dmPolicy: "open", allowFrom: ["*"], allowBots: true}}}`, "discord", Sender{ID: "5", IsBot: true}, nil,
			Decision{Allow: true, Reason: ReasonDMOpen}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgOf(t, tc.cfg)
			acct := "default"
			if tc.name == "open ignores the store" {
				acct = "b"
			}
			e := Envelope{Channel: tc.channel, AccountID: acct, Peer: Peer{Kind: Direct, ID: tc.sender.ID}, Sender: tc.sender, Text: "hi"}
			if got := Admit(cfg, account(t, cfg, tc.channel, acct), e, tc.approved); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAdmitGroup(t *testing.T) {
	type env = Envelope
	tg := func(id, sender string, mentioned bool, text string) env {
		return env{Channel: "telegram", Peer: Peer{Kind: Group, ID: id}, Sender: Sender{ID: sender}, Mentioned: mentioned, Text: text}
	}
	slack := func(id, sender string, mentioned bool) env {
		return env{Channel: "slack", Peer: Peer{Kind: Room, ID: id}, Sender: Sender{ID: sender}, Mentioned: mentioned, Text: "x"}
	}
	discord := func(guild, ch, sender string, roles []string) env {
		return env{Channel: "discord", Peer: Peer{Kind: Room, ID: ch}, GuildID: guild, Sender: Sender{ID: sender}, RoleIDs: roles, Mentioned: true, Text: "x"}
	}
	const owner = `{channels: {telegram: {allowFrom: ["1"], groups: {"-100": {requireMention: true}, "-200": {requireMention: false, topics: {"3": {requireMention: true}}}, "-300": {enabled: false}}}}}`
	tests := []struct {
		name, cfg, channel string
		e                  Envelope
		want               Decision
	}{
		{"owner, mentioned", owner, "telegram", tg("-100", "1", true, "hi"), Decision{Allow: true, Reason: ReasonMentioned}},
		{"owner, not mentioned: history", owner, "telegram", tg("-100", "1", false, "hi"), Decision{History: true, Reason: ReasonMentionRequired}},
		{"a reply to the bot is a mention", owner, "telegram", func() env {
			e := tg("-100", "1", false, "hi")
			e.ReplyTo = &Quote{ID: "5", FromBot: true}
			return e
		}(), Decision{Allow: true, Reason: ReasonMentioned}},
		{"other member: falls back to allowFrom", owner, "telegram", tg("-100", "2", true, "hi"), Decision{Reason: ReasonGroupNotAllowed}},
		{"unlisted group", owner, "telegram", tg("-999", "1", true, "hi"), Decision{Reason: ReasonRoomNotAllowed}},
		{"disabled group", owner, "telegram", tg("-300", "1", true, "hi"), Decision{Reason: ReasonRoomDisabled}},
		{"group without mention", owner, "telegram", tg("-200", "1", false, "hi"), Decision{Allow: true, Reason: ReasonMentionNotRequired}},
		{"topic requires it", owner, "telegram", tg("-200:topic:3", "1", false, "hi"), Decision{History: true, Reason: ReasonMentionRequired}},
		{"no sender list at all", `{channels: {telegram: {groups: {"*": {}}}}}`, "telegram", tg("-1", "1", true, "hi"), Decision{Reason: ReasonGroupEmptyList}},
		{"pairing approvals never count in groups", `{channels: {telegram: {groups: {"*": {}}}}}`, "telegram", tg("-1", "1", true, "hi"), Decision{Reason: ReasonGroupEmptyList}},
		{"group's own open policy", `{channels: {telegram: {groups: {"-1": {groupPolicy: "open"}}}}}`, "telegram", tg("-1", "5", true, "hi"), Decision{Allow: true, Reason: ReasonMentioned}},
		{"group's own sender list", `{channels: {telegram: {allowFrom: ["1"], groups: {"-1": {allowFrom: ["5"]}}}}}`, "telegram", tg("-1", "1", true, "hi"), Decision{Reason: ReasonGroupNotAllowed}},
		{"disabled policy", `{channels: {telegram: {groupPolicy: "disabled", groups: {"*": {}}}}}`, "telegram", tg("-1", "1", true, "hi"), Decision{Reason: ReasonGroupDisabled}},
		{"pattern mention", `{messages: {groupChat: {mentionPatterns: ["\\btalon\\b"]}}, channels: {telegram: {groupAllowFrom: ["*"], groups: {"*": {}}}}}`,
			"telegram", tg("-1", "1", false, "hey TALON, look"), Decision{Allow: true, Reason: ReasonMentioned}},
		{"pattern scoped off", `{messages: {groupChat: {mentionPatterns: ["talon"]}}, channels: {telegram: {groupAllowFrom: ["*"], groups: {"*": {}}, mentionPatterns: {mode: "deny", allowIn: ["-2"]}}}}`,
			"telegram", tg("-1", "1", false, "talon"), Decision{History: true, Reason: ReasonMentionRequired}},
		{"agent's patterns win", `{agents: {list: [{id: "main", groupChat: {mentionPatterns: ["jarvis"]}}]}, messages: {groupChat: {mentionPatterns: ["talon"]}},
				channels: {telegram: {groupAllowFrom: ["*"], groups: {"*": {}}}}}`,
			"telegram", tg("-1", "1", false, "talon"), Decision{History: true, Reason: ReasonMentionRequired}},
		{"derived from the agent's name", `{agents: {list: [{id: "main", identity: {name: "Nova"}}]}, channels: {telegram: {groupAllowFrom: ["*"], groups: {"*": {}}}}}`,
			"telegram", tg("-1", "1", false, "ok @nova do it"), Decision{Allow: true, Reason: ReasonMentioned}},

		{"slack room allowlist", `{channels: {slack: {channels: {C1: {users: ["U1"]}}}}}`, "slack", slack("C2", "U1", true), Decision{Reason: ReasonRoomNotAllowed}},
		{"slack room users", `{channels: {slack: {channels: {C1: {users: ["U1"]}}}}}`, "slack", slack("c1", "U2", true), Decision{Reason: ReasonGroupNotAllowed}},
		{"slack room, listed user", `{channels: {slack: {channels: {C1: {users: ["U1"]}}}}}`, "slack", slack("C1", "U1", true), Decision{Allow: true, Reason: ReasonMentioned}},
		{"slack room without users admits members", `{channels: {slack: {allowFrom: ["U9"], channels: {C1: {requireMention: false}}}}}`, "slack", slack("C1", "U1", false),
			Decision{Allow: true, Reason: ReasonMentionNotRequired}},
		{"slack star default requireMention", `{channels: {slack: {channels: {C1: {}, "*": {requireMention: false}}}}}`, "slack", slack("C1", "U1", false),
			Decision{Allow: true, Reason: ReasonMentionNotRequired}},
		{"slack name key needs name matching", `{channels: {slack: {channels: {"#general": {}}}}}`, "slack", func() env {
			e := slack("C1", "U1", true)
			e.RoomLabel = "general"
			return e
		}(), Decision{Reason: ReasonRoomNotAllowed}},
		{"slack name key with name matching", `{channels: {slack: {dangerouslyAllowNameMatching: true, channels: {"#general": {}}}}}`, "slack", func() env {
			e := slack("C1", "U1", true)
			e.RoomLabel = "general"
			return e
		}(), Decision{Allow: true, Reason: ReasonMentioned}},
		{"slack ignoreOtherMentions", `{channels: {slack: {channels: {C1: {ignoreOtherMentions: true, requireMention: false}}}}}`, "slack", func() env {
			e := slack("C1", "U1", false)
			e.MentionsOthers = true
			return e
		}(), Decision{Reason: ReasonOtherMention}},
		{"slack bot listed in the room", `{channels: {slack: {channels: {C1: {allowBots: true, users: ["B1"]}}}}}`, "slack", func() env {
			e := slack("C1", "B1", true)
			e.Sender.IsBot = true
			return e
		}(), Decision{Allow: true, Reason: ReasonMentioned}},
		{"slack bot not listed", `{channels: {slack: {allowBots: true, channels: {C1: {}}}}}`, "slack", func() env {
			e := slack("C1", "B1", true)
			e.Sender.IsBot = true
			return e
		}(), Decision{Reason: ReasonBot}},
		{"slack mpim needs groupEnabled", `{channels: {slack: {groupPolicy: "open"}}}`, "slack", func() env {
			e := slack("G1", "U1", true)
			e.Peer.Kind = Group
			return e
		}(), Decision{Reason: ReasonGroupDMsOff}},

		{"discord unlisted guild", `{channels: {discord: {guilds: {"1": {}}}}}`, "discord", discord("2", "9", "u", nil), Decision{Reason: ReasonGuildNotAllowed}},
		{"discord guild without channels map", `{channels: {discord: {guilds: {"1": {}}}}}`, "discord", discord("1", "9", "u", nil), Decision{Allow: true, Reason: ReasonMentioned}},
		{"discord roles", `{channels: {discord: {guilds: {"1": {roles: ["r1"]}}}}}`, "discord", discord("1", "9", "u", []string{"r0"}), Decision{Reason: ReasonGroupNotAllowed}},
		{"discord roles, member", `{channels: {discord: {guilds: {"1": {roles: ["r1"]}}}}}`, "discord", discord("1", "9", "u", []string{"r1"}), Decision{Allow: true, Reason: ReasonMentioned}},
		{"discord users or roles", `{channels: {discord: {guilds: {"1": {users: ["u"], roles: ["r1"]}}}}}`, "discord", discord("1", "9", "u", nil), Decision{Allow: true, Reason: ReasonMentioned}},
		{"discord star guild", `{channels: {discord: {guilds: {"*": {requireMention: false}}}}}`, "discord", func() env {
			e := discord("5", "9", "u", nil)
			e.Mentioned = false
			return e
		}(), Decision{Allow: true, Reason: ReasonMentionNotRequired}},
		{"discord thread uses its parent's entry", `{channels: {discord: {guilds: {"1": {channels: {"333": {requireMention: false}}}}}}}`, "discord", func() env {
			e := discord("1", "777", "u", nil)
			e.ParentPeer, e.Mentioned = &Peer{Kind: Room, ID: "333"}, false
			return e
		}(), Decision{Allow: true, Reason: ReasonMentionNotRequired}},
		{"discord disabled channel", `{channels: {discord: {guilds: {"1": {channels: {"333": {enabled: false}, "*": {}}}}}}}`, "discord", discord("1", "333", "u", nil),
			Decision{Reason: ReasonRoomDisabled}},
		{"discord bot by mention only", `{channels: {discord: {allowBots: "mentions", guilds: {"1": {requireMention: false}}}}}`, "discord", func() env {
			e := discord("1", "9", "b", nil)
			e.Sender.IsBot, e.Mentioned = true, false
			return e
		}(), Decision{History: true, Reason: ReasonMentionRequired}},
		{"discord group DM off", `{channels: {discord: {groupPolicy: "open"}}}`, "discord", discord("", "9", "u", nil), Decision{Reason: ReasonGroupDMsOff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgOf(t, tc.cfg)
			tc.e.AccountID = "default"
			if got := Admit(cfg, account(t, cfg, tc.channel, "default"), tc.e, []string{"1", "u"}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestInvalidPatternSkipped: a pattern that does not compile (validation
// refuses it in a file; a config built otherwise may hold one) is
// skipped, and the others still apply.
func TestInvalidPatternSkipped(t *testing.T) {
	cfg := cfgOf(t, `{channels: {telegram: {groupAllowFrom: ["*"], groups: {"*": {}}}}}`)
	cfg.Messages.GroupChat.MentionPatterns = []string{"(bad", "talon"}
	e := Envelope{Channel: "telegram", AccountID: "default", Peer: Peer{Kind: Group, ID: "-1"}, Sender: Sender{ID: "1"}, Text: "Talon?"}
	if got := Admit(cfg, account(t, cfg, "telegram", "default"), e, nil); got != (Decision{Allow: true, Reason: ReasonMentioned}) {
		t.Errorf("got %+v", got)
	}
}
