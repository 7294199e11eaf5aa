package policy

import "testing"

// R10.3 of spec channels.md: where the rooms of Telegram topics, Slack
// and Discord keep their tool policies. Every entry denies read, so the
// key of the step that removed it says which entry won.
func TestRulesGroupRooms(t *testing.T) {
	deny := `{"tools":{"deny":["read"]}}`
	cfg := `{"channels":{
		"telegram":{"groups":{"-100":{"tools":{"deny":["read"]},"topics":{"3":` + deny + `,"4":{}}},"*":` + deny + `}},
		"slack":{"channels":{"C0ABC":` + deny + `,"C0NONE":{"requireMention":true},"*":` + deny + `},
			"accounts":{"iso":{"channels":{}},"other":{"botToken":"x"}}},
		"discord":{"guilds":{
			"1":{"tools":{"deny":["read"]},"channels":{"333":` + deny + `,"555":{"toolsBySender":{"id:u7":{"deny":["read"]}}}}},
			"*":` + deny + `}}}}`
	c := func(key string, mod func(*Context)) Context {
		ctx := Context{SessionKey: key, SenderIsOwner: true}
		if mod != nil {
			mod(&ctx)
		}
		return ctx
	}
	guild := func(g, parent string) func(*Context) {
		return func(x *Context) { x.GuildID, x.ParentID = g, parent }
	}
	cases := []struct {
		name string
		ctx  Context
		want string
	}{
		{"telegram topic entry", c("agent:main:telegram:group:-100:topic:3", nil), "channels.telegram.groups.-100.topics.3.tools.deny"},
		{"telegram topic without tools: its group", c("agent:main:telegram:group:-100:topic:4", nil), "channels.telegram.groups.-100.tools.deny"},
		{"telegram unknown group: star", c("agent:main:telegram:group:-200", nil), `channels.telegram.groups["*"].tools.deny`},
		{"slack room, key lower-case", c("agent:main:slack:channel:c0abc:thread:1777.0001", nil), "channels.slack.channels.C0ABC.tools.deny"},
		{"slack room without tools: star", c("agent:main:slack:channel:c0none", nil), `channels.slack.channels["*"].tools.deny`},
		{"slack account map replaces the root", c("agent:main:slack:channel:c0abc", func(x *Context) { x.AccountID = "iso" }), ""},
		{"slack account without a map inherits", c("agent:main:slack:channel:c0abc", func(x *Context) { x.AccountID = "other" }), "channels.slack.channels.C0ABC.tools.deny"},
		{"discord channel entry", c("agent:main:discord:channel:333", guild("1", "")), "channels.discord.guilds.1.channels.333.tools.deny"},
		{"discord thread falls back to its parent", c("agent:main:discord:channel:999", guild("1", "333")), "channels.discord.guilds.1.channels.333.tools.deny"},
		{"discord unlisted channel: the guild", c("agent:main:discord:channel:444", guild("1", "")), "channels.discord.guilds.1.tools.deny"},
		{"discord sender entry", c("agent:main:discord:channel:555", func(x *Context) { x.GuildID, x.Sender = "1", Sender{ID: "U7"} }),
			`channels.discord.guilds.1.channels.555.toolsBySender["id:u7"].deny`},
		{"discord channel entry without a match: the guild", c("agent:main:discord:channel:555", guild("1", "")), "channels.discord.guilds.1.tools.deny"},
		{"discord other guild: star", c("agent:main:discord:channel:333", guild("2", "")), `channels.discord.guilds["*"].tools.deny`},
		{"discord without a guild id: star", c("agent:main:discord:channel:333", nil), `channels.discord.guilds["*"].tools.deny`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := groupKey(t, cfg, tc.ctx); got != tc.want {
				t.Errorf("group step key = %q, want %q", got, tc.want)
			}
		})
	}
}
