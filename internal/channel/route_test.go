package channel

import (
	"errors"
	"strings"
	"testing"
)

func TestResolveTiers(t *testing.T) {
	const cfgSrc = `{
		agents: {list: [{id: "main", default: true}, {id: "peer"}, {id: "parent"}, {id: "any"}, {id: "roles"}, {id: "guild"},
			{id: "team"}, {id: "acct"}, {id: "chan"}, {id: "topic"}]},
		bindings: [
			{agentId: "chan", match: {channel: "discord", accountId: "*"}},
			{agentId: "acct", match: {channel: "discord", accountId: "Work"}},
			{agentId: "guild", match: {channel: "discord", accountId: "*", guildId: "1"}},
			{agentId: "roles", match: {channel: "discord", accountId: "*", guildId: "1", roles: ["r1"]}},
			{agentId: "parent", match: {channel: "discord", accountId: "*", peer: {kind: "channel", id: "333"}}},
			{agentId: "peer", match: {channel: "discord", accountId: "*", peer: {kind: "group", id: "444"}}},
			{agentId: "any", match: {channel: "telegram", accountId: "*", peer: {kind: "dm", id: "*"}}},
			{agentId: "team", match: {channel: "slack", teamId: "T1"}},
			{agentId: "nobody", match: {channel: "slack", accountId: "*"}},
			{agentId: "peer", match: {channel: "telegram", peer: {kind: "group", id: "-100:topic:9"}}},
		],
		channels: {telegram: {groups: {"-100": {topics: {"3": {agentId: "topic"}}}}}},
	}`
	cfg := cfgOf(t, cfgSrc)
	d := func(acct, guild, ch string, roles ...string) Envelope {
		return Envelope{Channel: "discord", AccountID: acct, GuildID: guild, Peer: Peer{Kind: Room, ID: ch}, RoleIDs: roles, Sender: Sender{ID: "u"}}
	}
	tests := []struct {
		name      string
		e         Envelope
		agent, by string
		key, pkey string
	}{
		{"exact peer; group and channel kinds match", d("x", "1", "444", "r1"), "peer", ByPeer, "agent:peer:discord:channel:444", ""},
		{"thread inherits its parent's binding", func() Envelope {
			e := d("x", "1", "777")
			e.ParentPeer = &Peer{Kind: Room, ID: "333"}
			return e
		}(), "parent", ByParentPeer, "agent:parent:discord:channel:777", "agent:parent:discord:channel:333"},
		{"guild and roles", d("x", "1", "9", "r1"), "roles", ByGuildRoles, "agent:roles:discord:channel:9", ""},
		{"guild", d("x", "1", "9", "r2"), "guild", ByGuild, "agent:guild:discord:channel:9", ""},
		{"account", d("WORK", "2", "9"), "acct", ByAccount, "agent:acct:discord:channel:9", ""},
		{"channel-wide", d("other", "2", "9"), "chan", ByChannel, "agent:chan:discord:channel:9", ""},
		{"peer wildcard of a kind", Envelope{Channel: "telegram", Peer: Peer{Kind: Direct, ID: "5"}, Sender: Sender{ID: "5"}}, "any", ByPeerAny, "agent:any:main", ""},
		{"team", Envelope{Channel: "slack", TeamID: "T1", Peer: Peer{Kind: Room, ID: "C1"}}, "team", ByTeam, "agent:team:slack:channel:c1", ""},
		{"a binding to an unknown agent is skipped", Envelope{Channel: "slack", AccountID: "b", Peer: Peer{Kind: Room, ID: "C1"}}, "main", ByDefault, "agent:main:slack:channel:c1", ""},
		{"topic agentId", Envelope{Channel: "telegram", Peer: Peer{Kind: Group, ID: "-100:topic:3"}}, "topic", ByTopic, "agent:topic:telegram:group:-100:topic:3", ""},
		{"topic binding beats the topic agentId", Envelope{Channel: "telegram", Peer: Peer{Kind: Group, ID: "-100:topic:9"}}, "peer", ByPeer, "agent:peer:telegram:group:-100:topic:9", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Resolve(cfg, tc.e, "")
			if err != nil {
				t.Fatal(err)
			}
			if r.AgentID != tc.agent || r.MatchedBy != tc.by || r.SessionKey != tc.key || r.ParentSessionKey != tc.pkey {
				t.Errorf("got %+v\nwant agent %s by %s key %s parent %q", r, tc.agent, tc.by, tc.key, tc.pkey)
			}
		})
	}
}

func TestResolveSelectionRequired(t *testing.T) {
	cfg := cfgOf(t, `{agents: {list: [{id: "a"}, {id: "b"}]}}`)
	e := Envelope{Channel: "telegram", Peer: Peer{Kind: Group, ID: "-100"}}
	_, err := Resolve(cfg, e, "")
	if !errors.Is(err, ErrAgentSelection) || !strings.Contains(err.Error(), `match: {channel: "telegram", accountId: "default", peer: {kind: "group", id: "-100"}}`) {
		t.Errorf("err = %v", err)
	}
	r, err := Resolve(cfg, e, "B")
	if err != nil || r.AgentID != "b" || r.MatchedBy != ByDefault {
		t.Errorf("with an owner: %+v %v", r, err)
	}
	cfg = cfgOf(t, `{agents: {list: [{id: "a"}, {id: "b", default: true}]}}`)
	if r, err := Resolve(cfg, e, ""); err != nil || r.AgentID != "b" {
		t.Errorf("with a default agent: %+v %v", r, err)
	}
}

func TestSessionKeys(t *testing.T) {
	dm := Envelope{Channel: "Telegram", AccountID: "Work", Peer: Peer{Kind: Direct, ID: "ABC"}, Sender: Sender{ID: "ABC"}}
	tests := []struct {
		name, cfg string
		e         Envelope
		key       string
		policy    string
	}{
		{"per-peer lower-cased", `{session: {dmScope: "per-peer"}}`, dm, "agent:main:direct:abc", "session"},
		{"per-channel-peer", `{session: {dmScope: "per-channel-peer"}}`, dm, "agent:main:telegram:direct:abc", "session"},
		{"binding overrides dmScope", `{session: {dmScope: "per-peer"}, bindings: [{agentId: "main", match: {channel: "telegram", accountId: "*"}, session: {dmScope: "main"}}]}`,
			dm, "agent:main:main", "main"},
		{"identity link by raw id", `{session: {dmScope: "per-channel-peer", identityLinks: {Bob: ["abc"]}}}`, dm, "agent:main:telegram:direct:bob", "session"},
		{"custom main key", `{session: {mainKey: "Home"}}`, dm, "agent:main:home", "main"},
		{"empty sender falls back to main", `{session: {dmScope: "per-peer"}}`, Envelope{Channel: "telegram", Peer: Peer{Kind: Direct}}, "agent:main:main", "main"},
		{"groupScope main", `{session: {groupScope: "main"}}`, Envelope{Channel: "slack", Peer: Peer{Kind: Room, ID: "C1"}, ThreadID: "1.2"}, "agent:main:main", "main"},
		{"group keys carry no account", `{}`, Envelope{Channel: "telegram", AccountID: "Work", Peer: Peer{Kind: Group, ID: "-5"}}, "agent:main:telegram:group:-5", "session"},
		{"slack DM threads stay on the DM", `{session: {dmScope: "per-channel-peer"}}`, Envelope{Channel: "slack", Peer: Peer{Kind: Direct, ID: "U1"}, Sender: Sender{ID: "U1"}, ThreadID: "1.2"},
			"agent:main:slack:direct:u1", "session"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Resolve(cfgOf(t, tc.cfg), tc.e, "")
			if err != nil {
				t.Fatal(err)
			}
			if r.SessionKey != tc.key || r.LastRoutePolicy != tc.policy {
				t.Errorf("got %+v, want %s (%s)", r, tc.key, tc.policy)
			}
		})
	}
}

func TestSkipLastRoute(t *testing.T) {
	tests := []struct {
		name, cfg, sender string
		want              bool
	}{
		{"owner", `{channels: {telegram: {allowFrom: ["tg:1"]}}}`, "1", false},
		{"someone approved by pairing", `{channels: {telegram: {allowFrom: ["tg:1"]}}}`, "2", true},
		{"two owners", `{channels: {telegram: {allowFrom: ["1", "2"]}}}`, "2", false},
		{"open", `{channels: {telegram: {dmPolicy: "open", allowFrom: ["*", "1"]}}}`, "2", false},
		{"per-peer sessions", `{session: {dmScope: "per-peer"}, channels: {telegram: {allowFrom: ["1"]}}}`, "2", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Envelope{Channel: "telegram", Peer: Peer{Kind: Direct, ID: tc.sender}, Sender: Sender{ID: tc.sender}}
			r, err := Resolve(cfgOf(t, tc.cfg), e, "")
			if err != nil || r.SkipLastRoute != tc.want {
				t.Errorf("got %+v, %v; want SkipLastRoute %v", r, err, tc.want)
			}
		})
	}
}
