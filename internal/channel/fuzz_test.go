package channel

import (
	"errors"
	"strings"
	"testing"
)

// FuzzInbound: whatever an adapter hands over — any ids, kinds, threads,
// text — Admit decides without panicking and at most one of its outcomes
// holds; Resolve returns a lower-case key of the routed agent or
// ErrAgentSelection, and a DM never lands in a group's session.
func FuzzInbound(f *testing.F) {
	cfg := cfgOf(f, `{
		agents: {list: [{id: "main", default: true, identity: {name: "Nova"}}, {id: "ops"}]},
		session: {dmScope: "per-account-channel-peer", identityLinks: {al: ["telegram:1"]}},
		messages: {groupChat: {mentionPatterns: ["\\bnova\\b"]}},
		accessGroups: {g: {members: {"*": ["U1"]}}},
		bindings: [{agentId: "ops", match: {channel: "discord", accountId: "*", guildId: "1", roles: ["r"]}},
			{agentId: "ops", match: {channel: "telegram", peer: {kind: "group", id: "*"}}}],
		channels: {
			telegram: {allowFrom: ["1", "accessGroup:g"], groups: {"*": {requireMention: true}, "-1": {topics: {"2": {agentId: "ops"}}}}},
			slack: {dmPolicy: "open", allowFrom: ["*"], channels: {C1: {users: ["U1"]}, "*": {}}, dm: {groupEnabled: true}},
			discord: {allowBots: "mentions", guilds: {"1": {roles: ["r"], channels: {"3": {}}}, "*": {}}},
		}}`)
	f.Add("telegram", "default", "group", "-1:topic:2", "", "", "1", "hey nova", "", false, false)
	f.Add("slack", "b", "channel", "C1", "1.2", "", "U1", "x", "T", true, false)
	f.Add("discord", "x", "channel", "9", "", "3", "u", "<@1>", "1", false, true)
	f.Add("telegram", "", "direct", "", "", "", "", "", "", false, false)
	f.Fuzz(func(t *testing.T, ch, acct, kind, peer, thread, parent, sender, text, guild string, mentioned, bot bool) {
		e := Envelope{Channel: ch, AccountID: acct, Peer: Peer{Kind: Kind(kind), ID: peer}, ThreadID: thread,
			Sender: Sender{ID: sender, IsBot: bot}, Text: text, Mentioned: mentioned, GuildID: guild, RoleIDs: []string{"r"}}
		if parent != "" {
			e.ParentPeer = &Peer{Kind: Room, ID: parent}
		}
		for _, a := range append(Accounts(cfg, ch), Account{Channel: ch, ID: "x"}) {
			d := Admit(cfg, a, e, []string{sender})
			if n := btoi(d.Allow) + btoi(d.Pairing) + btoi(d.History); n > 1 || d.Reason == "" {
				t.Fatalf("decision %+v", d)
			}
		}
		r, err := Resolve(cfg, e, "")
		if err != nil {
			if !errors.Is(err, ErrAgentSelection) {
				t.Fatal(err)
			}
			return
		}
		if r.SessionKey != strings.ToLower(r.SessionKey) || !strings.HasPrefix(r.SessionKey, "agent:"+r.AgentID+":") {
			t.Fatalf("route %+v", r)
		}
		if e.Peer.Kind == Direct && r.SessionKey != r.MainSessionKey && !strings.Contains(r.SessionKey, ":direct:") {
			t.Fatalf("a DM in a group session: %+v", r)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
