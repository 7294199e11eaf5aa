package policy

import (
	"sort"
	"strings"

	"talon/internal/config"
)

// Sender identifies who sent the message a run answers, for toolsBySender.
type Sender struct {
	ID       string `json:"id,omitempty"`
	E164     string `json:"e164,omitempty"`
	Username string `json:"username,omitempty"`
	Name     string `json:"name,omitempty"`
}

// groupOf derives {channel, groupId} from a session key (§4.5 step 1).
func groupOf(key string) (channel, group string, ok bool) {
	k := strings.TrimSpace(key)
	lk := strings.ToLower(k)
	if i := max(strings.LastIndex(lk, ":thread:"), strings.LastIndex(lk, ":topic:")); i >= 0 {
		k = k[:i]
	}
	parts := strings.FieldsFunc(k, func(r rune) bool { return r == ':' })
	if len(parts) >= 2 && strings.EqualFold(parts[0], "agent") {
		parts = parts[2:]
	}
	if len(parts) >= 1 && strings.EqualFold(parts[0], "subagent") {
		parts = parts[1:]
	}
	if len(parts) < 3 {
		return "", "", false
	}
	kind := strings.ToLower(parts[1])
	if kind != "group" && kind != "channel" {
		return "", "", false
	}
	return strings.ToLower(strings.TrimSpace(parts[0])), strings.Join(parts[2:], ":"), true
}

// groupPolicy finds the channel group policy for a run and the config key it
// came from; ok is false when there is none.
func groupPolicy(cfg *config.Config, ctx *Context) (config.ToolPolicy, string, bool) {
	sessCh, sessGroup, sessOK := groupOf(ctx.SessionKey)
	spCh, spGroup, spOK := groupOf(ctx.SpawnedBy)
	groupID := strings.TrimSpace(ctx.GroupID)
	switch {
	case groupID != "":
	case sessOK:
		groupID = sessGroup
	case spOK:
		groupID = spGroup
	}
	channel := normalizeName(ctx.MessageProvider)
	switch {
	case channel != "":
	case sessOK:
		channel = sessCh
	case spOK:
		channel = spCh
	}
	if groupID == "" || channel == "" {
		return config.ToolPolicy{}, "", false
	}
	ch, ok := cfg.Channels[channel]
	if !ok {
		return config.ToolPolicy{}, "", false
	}
	root := "channels" + keySegment(channel)
	settings := &ch.ChannelSettings
	if key, acct, ok := account(ch.Accounts, ctx.AccountID); ok {
		// Account maps replace the channel's, never merge (R10.3).
		if acct.Groups != nil && channel != "slack" && channel != "discord" ||
			channel == "slack" && acct.Channels != nil || channel == "discord" && acct.Guilds != nil {
			settings, root = &acct.ChannelSettings, root+".accounts"+keySegment(key)
		}
	}
	var rooms []room
	switch channel {
	case "slack":
		rooms = slackRooms(settings, root, groupID)
	case "discord":
		rooms = discordRooms(settings, root, ctx.GuildID, groupID, ctx.ParentID)
	case "telegram":
		rooms = telegramRooms(settings, root, groupID, topicOf(ctx))
	default:
		rooms = groupRooms(settings.Groups, root+".groups", groupID, "")
	}
	for _, r := range rooms {
		if p, key, ok := senderPolicy(r.bySender, &ctx.Sender); ok {
			return p, r.key + ".toolsBySender" + keySegment(key), true
		}
		if hasPolicy(r.tools) {
			return r.tools, r.key + ".tools", true
		}
	}
	return config.ToolPolicy{}, "", false
}

// room is one entry of a channel's room maps that may hold a group tool
// policy, and its config key.
type room struct {
	key      string
	tools    config.ToolPolicy
	bySender map[string]config.ToolPolicy
}

// groupRooms are the generic entries: the exact group id (case-sensitive,
// as in OpenClaw), then "*".
func groupRooms(groups map[string]config.Group, base, id, _ string) []room {
	var out []room
	for _, k := range []string{id, "*"} {
		if g, ok := groups[k]; ok {
			out = append(out, room{base + keySegment(k), g.Tools, g.ToolsBySender})
		}
	}
	return out
}

// telegramRooms: the topic entry, then the group entry, then "*"; the
// group id is the chat id without its :topic: suffix.
func telegramRooms(s *config.ChannelSettings, root, id, topic string) []room {
	if i := strings.Index(strings.ToLower(id), ":topic:"); i >= 0 {
		id = id[:i]
	}
	base := root + ".groups"
	var out []room
	if g, ok := s.Groups[id]; ok && topic != "" {
		if t, ok := g.Topics[topic]; ok {
			out = append(out, room{base + keySegment(id) + ".topics" + keySegment(topic), t.Tools, t.ToolsBySender})
		}
	}
	return append(out, groupRooms(s.Groups, base, id, "")...)
}

// topicOf is a Telegram forum topic id named by the run's group id or
// session key.
func topicOf(ctx *Context) string {
	for _, k := range []string{ctx.GroupID, ctx.SessionKey} {
		lk := strings.ToLower(k)
		if i := strings.LastIndex(lk, ":topic:"); i >= 0 {
			t := k[i+len(":topic:"):]
			if j := strings.IndexByte(t, ':'); j >= 0 {
				t = t[:j]
			}
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// slackRooms: channels.<C…> (ids compared without case: session keys
// are lower-case, Slack ids upper), then channels."*".
func slackRooms(s *config.ChannelSettings, root, id string) []room {
	base := root + ".channels"
	var out []room
	if k, ok := foldKey(s.Channels, id); ok {
		out = append(out, room{base + keySegment(k), s.Channels[k].Tools, s.Channels[k].ToolsBySender})
	}
	if c, ok := s.Channels["*"]; ok {
		out = append(out, room{base + keySegment("*"), c.Tools, c.ToolsBySender})
	}
	return out
}

// discordRooms: guilds.<g>.channels.<c> (a thread: its own entry, then
// its parent channel's), then guilds.<g>, then guilds."*".
func discordRooms(s *config.ChannelSettings, root, guild, id, parent string) []room {
	base := root + ".guilds"
	var out []room
	if gk, ok := foldKey(s.Guilds, guild); ok && guild != "" {
		g := s.Guilds[gk]
		for _, c := range []string{id, parent} {
			if ck, ok := foldKey(g.Channels, c); ok && c != "" {
				out = append(out, room{base + keySegment(gk) + ".channels" + keySegment(ck), g.Channels[ck].Tools, g.Channels[ck].ToolsBySender})
				break
			}
		}
		out = append(out, room{base + keySegment(gk), g.Tools, g.ToolsBySender})
	}
	if g, ok := s.Guilds["*"]; ok {
		out = append(out, room{base + keySegment("*"), g.Tools, g.ToolsBySender})
	}
	return out
}

// foldKey finds a map key equal to id, exactly first, then ignoring case
// (in sorted order, so the choice is stable).
func foldKey[V any](m map[string]V, id string) (string, bool) {
	if _, ok := m[id]; ok {
		return id, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.EqualFold(k, id) {
			return k, true
		}
	}
	return "", false
}

// account finds a channel account by its normalised id ("default" when the
// run names none), exactly first and then ignoring case.
func account(accounts map[string]config.ChannelAccount, id string) (string, config.ChannelAccount, bool) {
	n := config.NormalizeAccountID(id)
	if a, ok := accounts[n]; ok {
		return n, a, true
	}
	keys := make([]string, 0, len(accounts))
	for k := range accounts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.EqualFold(k, n) {
			return k, accounts[k], true
		}
	}
	return "", config.ChannelAccount{}, false
}

func hasPolicy(p config.ToolPolicy) bool {
	return p.Allow != nil || p.AlsoAllow != nil || p.Deny != nil
}

// senderPolicy looks a sender up in toolsBySender: id, then E.164, then
// username, then display name, then the "*" wildcard.
func senderPolicy(bySender map[string]config.ToolPolicy, s *Sender) (config.ToolPolicy, string, bool) {
	if len(bySender) == 0 {
		return config.ToolPolicy{}, "", false
	}
	keys := make([]string, 0, len(bySender))
	for k := range bySender {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	find := func(kind, value string) (string, bool) {
		v := strings.ToLower(strings.TrimSpace(value))
		if kind == "username" {
			v = strings.TrimPrefix(v, "@")
		}
		if v == "" {
			return "", false
		}
		for _, k := range keys {
			if kk, kv := senderKey(k); kk == kind && kv == v {
				return k, true
			}
		}
		return "", false
	}
	for _, q := range [][2]string{{"id", s.ID}, {"e164", s.E164}, {"username", s.Username}, {"name", s.Name}} {
		if k, ok := find(q[0], q[1]); ok {
			return bySender[k], k, true
		}
	}
	if p, ok := bySender["*"]; ok {
		return p, "*", true
	}
	return config.ToolPolicy{}, "", false
}

// senderKey splits a toolsBySender key into its kind and lower-cased value.
// Keys without a known prefix are ids (OpenClaw warns that this form is
// deprecated).
func senderKey(k string) (kind, value string) {
	t := strings.TrimSpace(k)
	if t == "*" {
		return "*", "*"
	}
	lt := strings.ToLower(t)
	for _, p := range []string{"id:", "e164:", "username:", "name:"} {
		if strings.HasPrefix(lt, p) {
			v := strings.TrimSpace(lt[len(p):])
			if p == "username:" {
				v = strings.TrimPrefix(v, "@")
			}
			return strings.TrimSuffix(p, ":"), v
		}
	}
	return "id", strings.TrimPrefix(lt, "@")
}
