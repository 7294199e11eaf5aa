package config

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
)

var (
	dmPolicies    = []string{"pairing", "allowlist", "open", "disabled"}
	groupPolicies = []string{"allowlist", "open", "disabled"}
	replyToModes  = []string{"off", "first", "all", "batched"}
	slackModes    = []string{"socket", "http"}
	dmScopes      = []string{"main", "per-peer", "per-channel-peer", "per-account-channel-peer"}
	groupScopes   = []string{"per-group", "main"}
	ackScopes     = []string{"group-mentions", "group-all", "direct", "all", "off", "none"}
	peerKinds     = []string{"direct", "dm", "group", "channel"}
	historyScopes = []string{"thread", "channel"}
	mentionModes  = []string{"allow", "deny"}
)

// MaxMediaMB is the largest mediaMaxMb Talon takes: an attachment is
// held in memory while it is written to the workspace.
const MaxMediaMB = 100

// MaxDebounceMs bounds messages.inbound's quiet window: a message waits
// at most this long before its turn starts.
const MaxDebounceMs = 60_000

// BuiltChannels are the platforms Talon has an adapter for.
var BuiltChannels = []string{"telegram", "slack", "discord"}

// notBuiltChannels are OpenClaw's chat platforms Talon has no adapter
// for: their blocks are kept and reported as not used.
var notBuiltChannels = []string{"whatsapp", "signal", "imessage", "bluebubbles", "matrix", "msteams",
	"googlechat", "mattermost", "irc", "line", "feishu", "zalo", "nostr", "twitch", "voice-call", "synology-chat"}

// channelOnly are the keys of ChannelSettings that one platform reads;
// the others are read by every channel.
var channelOnly = map[string][]string{
	"telegram": {"tokenFile", "apiRoot", "webhookUrl", "webhookSecret", "webhookPath", "linkPreview", "direct"},
	"slack":    {"mode", "appToken", "signingSecret", "channels", "replyToModeByChatType", "thread", "webhookPath"},
	"discord":  {"token", "applicationId", "gatewayUrl", "guilds", "intents", "maxLinesPerMessage", "suppressEmbeds"},
}

// sharedOnly are keys two of the platforms read.
var sharedOnly = map[string][]string{
	"botToken": {"telegram", "slack"},
	"apiUrl":   {"slack", "discord"},
	"dm":       {"slack", "discord"},
}

// checkChannels validates channels.*, session's channel keys, bindings,
// messages.groupChat, agents' mention patterns, accessGroups and the
// refused broadcast section.
func (k *checker) checkChannels(c *Config) {
	k.oneOf("session.dmScope", c.Session.DMScope, dmScopes)
	k.oneOf("session.groupScope", c.Session.GroupScope, groupScopes)
	if c.Broadcast != nil {
		k.fail("broadcast", "broadcast groups (several agents answering one room) are not supported by Talon: "+
			"remove broadcast and route each room to one agent with bindings[]")
	}
	k.patterns("messages.groupChat.mentionPatterns", c.Messages.GroupChat.MentionPatterns)
	k.nonNegative("messages.groupChat.historyLimit", c.Messages.GroupChat.HistoryLimit)
	k.oneOf("messages.ackReactionScope", c.Messages.AckReactionScope, ackScopes)
	if ms := c.Messages.Inbound.DebounceMs; ms != nil {
		k.debounce("messages.inbound.debounceMs", *ms)
	}
	for _, ch := range sortedKeys(c.Messages.Inbound.ByChannel) {
		k.debounce(joinKey("messages.inbound.byChannel", ch), c.Messages.Inbound.ByChannel[ch])
	}
	for i, a := range c.Agents.List {
		k.patterns(joinIndex("agents.list", i)+".groupChat.mentionPatterns", a.GroupChat.MentionPatterns)
	}
	for i, b := range c.Bindings {
		k.binding(c, joinIndex("bindings", i), b)
	}
	for _, id := range sortedKeys(c.Channels) {
		ch, at := c.Channels[id], joinKey("channels", id)
		switch {
		case id == "defaults":
			k.oneOf(at+".groupPolicy", ch.GroupPolicy, groupPolicies)
			continue
		case id == "modelByChannel":
			continue
		case slices.Contains(notBuiltChannels, id):
			k.warns = append(k.warns, Issue{Path: at, Message: MsgUnused})
		}
		k.settings(id, at, &ch.ChannelSettings, nil)
		for _, acct := range sortedKeys(ch.Accounts) {
			a := ch.Accounts[acct]
			k.settings(id, joinKey(at+".accounts", acct), &a.ChannelSettings, &ch.ChannelSettings)
		}
		if d := ch.DefaultAccount; d != "" {
			if _, ok := ch.Accounts[NormalizeAccountID(d)]; !ok {
				if _, ok := ch.Accounts[d]; !ok {
					k.fail(at+".defaultAccount", fmt.Sprintf("names no account of %s.accounts (got %q)", at, d))
				}
			}
		}
	}
}

// debounce checks a quiet window in milliseconds; 0 turns batching off.
func (k *checker) debounce(path string, ms int) {
	if ms < 0 || ms > MaxDebounceMs {
		k.fail(path, fmt.Sprintf("expected milliseconds from 0 (no batching) to %d (got %d)", MaxDebounceMs, ms))
	}
}

// settings checks one channel's or account's keys; root is the channel's
// when s is an account's, for the keys an account inherits.
func (k *checker) settings(channel, at string, s, root *ChannelSettings) {
	k.oneOf(at+".dmPolicy", s.DMPolicy, dmPolicies)
	k.oneOf(at+".groupPolicy", s.GroupPolicy, groupPolicies)
	k.oneOf(at+".replyToMode", s.ReplyToMode, replyToModes)
	k.oneOf(at+".mode", s.Mode, slackModes)
	k.allowBots(at+".allowBots", s.AllowBots, channel)
	k.nonNegative(at+".historyLimit", s.HistoryLimit)
	k.nonNegative(at+".dmHistoryLimit", s.DMHistoryLimit)
	k.between(at+".textChunkLimit", s.TextChunkLimit, 40000)
	k.between(at+".maxLinesPerMessage", s.MaxLinesPerMessage, 1000)
	if m := s.MediaMaxMB; m != nil && (*m <= 0 || *m > MaxMediaMB) {
		k.fail(at+".mediaMaxMb", fmt.Sprintf("expected more than 0 and at most %d (megabytes of one inbound attachment), got %g", MaxMediaMB, *m))
	}
	for _, u := range []struct{ key, v string }{
		{"apiRoot", s.APIRoot}, {"apiUrl", s.APIURL}, {"webhookUrl", s.WebhookURL},
	} {
		k.httpURL(at+"."+u.key, u.v, "http", "https")
	}
	k.httpURL(at+".gatewayUrl", s.GatewayURL, "ws", "wss")
	if p := s.WebhookPath; p != "" && !strings.HasPrefix(p, "/") {
		k.fail(at+".webhookPath", fmt.Sprintf("expected a path starting with / (got %q)", p))
	}
	if m := s.MentionPatterns; m != nil {
		k.oneOf(at+".mentionPatterns.mode", m.Mode, mentionModes)
	}
	if t := s.Thread; t != nil {
		k.oneOf(at+".thread.historyScope", t.HistoryScope, historyScopes)
		k.nonNegative(at+".thread.initialHistoryLimit", t.InitialHistoryLimit)
	}
	if r := s.ReplyToModeByChatType; r != nil {
		k.oneOf(at+".replyToModeByChatType.direct", r.Direct, replyToModes)
		k.oneOf(at+".replyToModeByChatType.group", r.Group, replyToModes)
		k.oneOf(at+".replyToModeByChatType.channel", r.Channel, replyToModes)
	}
	for _, id := range sortedKeys(s.Groups) {
		k.oneOf(joinKey(at+".groups", id)+".groupPolicy", s.Groups[id].GroupPolicy, groupPolicies)
	}
	for _, id := range sortedKeys(s.Channels) {
		k.oneOf(joinKey(at+".channels", id)+".replyToMode", s.Channels[id].ReplyToMode, replyToModes)
	}
	k.dmAccess(at, s, root)
	if slices.Contains(BuiltChannels, channel) {
		k.foreignKeys(channel, at, s)
	}
	if channel == "telegram" && s.WebhookURL != "" && s.WebhookSecret == nil && (root == nil || root.WebhookSecret == nil) {
		k.fail(at+".webhookSecret", "required with webhookUrl: Telegram's webhook calls are checked against it")
	}
}

// dmAccess refuses the DM policies that cannot mean what they say
// (R5.1, §5.1): allowlist with nobody on the list, and open without "*"
// (which OpenClaw requires, so that opening DMs to everyone is written
// out). An account is checked with what it inherits.
func (k *checker) dmAccess(at string, s, root *ChannelSettings) {
	policy, allow := s.DMPolicy, s.AllowFrom
	if root != nil {
		if s.DMPolicy == "" && s.AllowFrom == nil {
			return // the channel's own check covers it
		}
		policy = cmpOr(policy, root.DMPolicy)
		if allow == nil {
			allow = root.AllowFrom
		}
	}
	switch {
	case policy == "allowlist" && len(allow) == 0:
		k.fail(at+".allowFrom", `dmPolicy "allowlist" with an empty allowFrom admits nobody: list the sender ids, or use dmPolicy "pairing"`)
	case policy == "open" && !slices.Contains(allow, "*"):
		k.fail(at+".allowFrom", `dmPolicy "open" requires "*" in allowFrom (to admit everyone); to admit listed senders only use dmPolicy "allowlist"`)
	}
}

// foreignKeys warns about another platform's keys in a channel's block:
// kept, never read there.
func (k *checker) foreignKeys(channel, at string, s *ChannelSettings) {
	set := setKeys(s)
	for _, key := range set {
		owners := sharedOnly[key]
		for ch, keys := range channelOnly {
			if slices.Contains(keys, key) {
				owners = append(owners, ch)
			}
		}
		if len(owners) > 0 && !slices.Contains(owners, channel) {
			sort.Strings(owners)
			k.warns = append(k.warns, Issue{Path: at + "." + key,
				Message: fmt.Sprintf("not a %s key (read by %s only): kept, not used", channel, strings.Join(owners, ", "))})
		}
	}
}

// setKeys are the platform-specific keys s sets, in a fixed order.
func setKeys(s *ChannelSettings) []string {
	var out []string
	add := func(key string, set bool) {
		if set {
			out = append(out, key)
		}
	}
	add("botToken", s.BotToken != nil)
	add("tokenFile", s.TokenFile != "")
	add("apiRoot", s.APIRoot != "")
	add("webhookUrl", s.WebhookURL != "")
	add("webhookSecret", s.WebhookSecret != nil)
	add("linkPreview", s.LinkPreview != nil)
	add("direct", s.Direct != nil)
	add("mode", s.Mode != "")
	add("appToken", s.AppToken != nil)
	add("signingSecret", s.SigningSecret != nil)
	add("apiUrl", s.APIURL != "")
	add("channels", s.Channels != nil)
	add("dm", s.DM != nil)
	add("replyToModeByChatType", s.ReplyToModeByChatType != nil)
	add("thread", s.Thread != nil)
	add("token", s.Token != nil)
	add("applicationId", s.ApplicationID != "")
	add("gatewayUrl", s.GatewayURL != "")
	add("guilds", s.Guilds != nil)
	add("intents", s.Intents != nil)
	add("maxLinesPerMessage", s.MaxLinesPerMessage != nil)
	add("suppressEmbeds", s.SuppressEmbeds != nil)
	return out
}

func (k *checker) allowBots(at string, v *Raw, channel string) {
	if v == nil || v.Value == nil {
		return
	}
	switch {
	case v.Kind == Bool:
	case v.Kind == String && v.Str == "mentions" && channel == "discord":
	default:
		want := "true or false"
		if channel == "discord" {
			want = `true, false or "mentions"`
		}
		k.fail(at, "expected "+want)
	}
}

// httpURL checks an absolute URL with one of the schemes and a host.
func (k *checker) httpURL(at, v string, schemes ...string) {
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || !slices.Contains(schemes, strings.ToLower(u.Scheme)) || u.Host == "" {
		k.fail(at, fmt.Sprintf("expected a %s:// URL with a host (got %q)", strings.Join(schemes, ":// or "), redactURL(v)))
	}
}

func (k *checker) nonNegative(at string, v *int) {
	if v != nil && (*v < 0 || *v > 10000) {
		k.fail(at, fmt.Sprintf("expected an integer from 0 to 10000 (got %d)", *v))
	}
}

// patterns checks mention patterns compile as Go regular expressions.
// An invalid one fails here, where OpenClaw would skip it at runtime:
// Talon's config is checked before it is used.
func (k *checker) patterns(at string, list List) {
	if len(list) > MaxMentionPatterns {
		k.fail(at, fmt.Sprintf("at most %d patterns (got %d): each is tried on every group message", MaxMentionPatterns, len(list)))
		return
	}
	for i, p := range list {
		if _, err := CompileMention(p); err != nil {
			k.fail(joinIndex(at, i), fmt.Sprintf("invalid regular expression: %v", err))
		}
	}
}

func (k *checker) binding(c *Config, at string, b Binding) {
	if strings.TrimSpace(b.AgentID) == "" {
		k.fail(at+".agentId", "missing agentId")
	} else if !c.HasAgent(b.AgentID) {
		k.warns = append(k.warns, Issue{Path: at + ".agentId",
			Message: fmt.Sprintf("names no agent of agents.list (%q): the binding is skipped", b.AgentID)})
	}
	if strings.TrimSpace(b.Match.Channel) == "" {
		k.fail(at+".match.channel", "missing channel")
	}
	if p := b.Match.Peer; p != nil {
		if p.Kind == "" {
			k.fail(at+".match.peer.kind", "missing kind (direct, group or channel)")
		}
		k.oneOf(at+".match.peer.kind", p.Kind, peerKinds)
		if strings.TrimSpace(p.ID) == "" {
			k.fail(at+".match.peer.id", `missing id (a peer id, or "*" for every peer of the kind)`)
		}
	}
	if s := b.Session; s != nil {
		k.oneOf(at+".session.dmScope", s.DMScope, dmScopes)
		k.oneOf(at+".session.groupScope", s.GroupScope, groupScopes)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
