package channel

import (
	"regexp"
	"slices"
	"strings"

	"talon/internal/config"
)

// Decision is what happens to an inbound message after the gates of
// R2.1 steps 1, 3 and 4. Allow starts a run. Pairing means a DM sender
// under dmPolicy "pairing" is not on the list: the caller creates or
// refreshes a pairing request (§7) and runs nothing. History means the
// message was admitted to a group but does not address the bot: it is
// kept as pending history (R6.5) and runs nothing. Reason is the code of
// the deciding gate, for logs and diagnostics.
type Decision struct {
	Allow, Pairing, History bool
	Reason                  string
}

// Reason codes. The dm_policy_* and group_policy_* ones are OpenClaw's
// (DM_GROUP_ACCESS_REASON); the others are Talon's names for the room
// gates and mention gating, which OpenClaw logs without a code.
const (
	ReasonDMDisabled         = "dm_policy_disabled"
	ReasonDMOpen             = "dm_policy_open"
	ReasonDMAllowlisted      = "dm_policy_allowlisted"
	ReasonPairingRequired    = "dm_policy_pairing_required"
	ReasonDMNotAllowlisted   = "dm_policy_not_allowlisted"
	ReasonGroupAllowed       = "group_policy_allowed"
	ReasonGroupDisabled      = "group_policy_disabled"
	ReasonGroupNotAllowed    = "group_policy_not_allowlisted"
	ReasonGroupEmptyList     = "group_policy_empty_allowlist"
	ReasonDMsOff             = "dm_disabled"           // Slack/Discord dm.enabled false
	ReasonGroupDMsOff        = "group_dm_disabled"     // dm.groupEnabled false
	ReasonRoomNotAllowed     = "group_not_allowlisted" // the room is not in groups/channels/guilds
	ReasonRoomDisabled       = "group_disabled"        // the room's entry says enabled: false
	ReasonGuildNotAllowed    = "guild_not_allowlisted"
	ReasonGuildChannelDenied = "channel_not_allowlisted"
	ReasonBot                = "bot_not_allowed"
	ReasonOtherMention       = "mentions_other"
	ReasonMentionRequired    = "mention_required"
	ReasonMentioned          = "mentioned"
	ReasonMentionNotRequired = "mention_not_required"
)

// Admit applies access control and mention gating to an inbound message
// for account a. approved are the pairing-store senders of a's channel
// and account; they count for DMs under dmPolicy "pairing" only (R5.1)
// and never for groups (R5.8). Own messages are the adapter's to drop
// (it knows the bot's id); other bots pass only as allowBots says.
func Admit(cfg *config.Config, a Account, e Envelope, approved []string) Decision {
	// An Account not made by Accounts fails closed (R5.9).
	a.DMPolicy = cmpOr(a.DMPolicy, "pairing")
	a.GroupPolicy = cmpOr(a.GroupPolicy, "allowlist")
	a.AllowBots = cmpOr(a.AllowBots, "off")
	if e.Peer.Kind == Direct {
		return admitDM(cfg, a, e, approved)
	}
	r, d, ok := roomOf(a, e)
	if !ok {
		return d
	}
	if d, ok := senderGate(cfg, a, e, r); !ok {
		return d
	}
	needMention := false
	if e.Sender.IsBot {
		switch mode := botMode(a, r); {
		case mode == "off":
			return block(ReasonBot)
		case mode == "on" && a.Channel == "slack" && !matchIDs(e.Sender.ID, r.users):
			// R12.6: a room admits a bot it lists; the owner-membership
			// alternative needs a lookup, which is the adapter's.
			return block(ReasonBot)
		case mode == "mentions":
			needMention = true
		}
	}
	mentioned := e.Mentioned || (e.ReplyTo != nil && e.ReplyTo.FromBot) || patternMentioned(cfg, a, e)
	if r.ignoreOthers && e.MentionsOthers && !mentioned {
		return block(ReasonOtherMention)
	}
	require := true
	for _, p := range append(r.requireMention, a.RequireMention) {
		if p != nil {
			require = *p
			break
		}
	}
	switch {
	case mentioned:
		return Decision{Allow: true, Reason: ReasonMentioned}
	case require || needMention:
		return Decision{History: true, Reason: ReasonMentionRequired}
	}
	return Decision{Allow: true, Reason: ReasonMentionNotRequired}
}

func block(reason string) Decision { return Decision{Reason: reason} }

// admitDM is the DM policy (R5.1, R5.2).
func admitDM(cfg *config.Config, a Account, e Envelope, approved []string) Decision {
	if (a.Channel == "slack" || a.Channel == "discord") && !a.DMEnabled {
		return block(ReasonDMsOff)
	}
	if e.Sender.IsBot && a.AllowBots != "on" {
		return block(ReasonBot)
	}
	list := a.AllowFrom
	if a.DMPolicy == "pairing" {
		list = append(slices.Clone(list), approved...)
	}
	switch {
	case a.DMPolicy == "disabled":
		return block(ReasonDMDisabled)
	case a.DMPolicy == "open" && slices.Contains(list, "*"):
		return Decision{Allow: true, Reason: ReasonDMOpen}
	case senderIn(cfg, a, e.Sender, list, false):
		return Decision{Allow: true, Reason: ReasonDMAllowlisted}
	case a.DMPolicy == "pairing":
		return Decision{Pairing: true, Reason: ReasonPairingRequired}
	}
	return block(ReasonDMNotAllowlisted)
}

// room is what the room maps of a channel say about one conversation.
type room struct {
	requireMention []*bool // most specific first
	// senders is the room's own sender list (Telegram groups' allowFrom,
	// Slack rooms' and Discord guilds' users); roles are Discord's.
	senders, roles []string
	hasSenders     bool
	users          []string // Slack: who the room admits, bots included
	policy         string   // a Telegram group's own groupPolicy
	ignoreOthers   bool
	allowBots      *bool
}

// roomOf applies groupPolicy and the room gate (R5.6, R5.7, R11, R12.4,
// R13.4).
func roomOf(a Account, e Envelope) (room, Decision, bool) {
	if a.GroupPolicy == "disabled" {
		return room{}, block(ReasonGroupDisabled), false
	}
	switch a.Channel {
	case "slack":
		return slackRoom(a, e)
	case "discord":
		return discordRoom(a, e)
	}
	return groupRoom(a, e)
}

// groupRoom is the generic room gate on groups.<id>, which Telegram
// uses without its last clause (a sender list alone admitting every
// room), and with topics.
func groupRoom(a Account, e Envelope) (room, Decision, bool) {
	chatID, topicID, _ := strings.Cut(e.Peer.ID, ":topic:")
	has := len(a.Groups) > 0
	g, _, exact := lookupFold(a.Groups, chatID)
	star, hasStar := a.Groups["*"]
	allowed := a.GroupPolicy != "allowlist" && !has || exact || hasStar ||
		a.Channel != "telegram" && a.GroupPolicy == "allowlist" && !has && len(a.GroupAllowFrom) > 0
	if !allowed {
		return room{}, block(ReasonRoomNotAllowed), false
	}
	if exact && g.Enabled != nil && !*g.Enabled {
		return room{}, block(ReasonRoomDisabled), false
	}
	var r room
	if exact {
		if t, ok := g.Topics[topicID]; ok && topicID != "" {
			r.requireMention = append(r.requireMention, t.RequireMention)
		}
		r.requireMention = append(r.requireMention, g.RequireMention)
		r.policy = g.GroupPolicy
		r.senders, r.hasSenders = g.AllowFrom, g.AllowFrom != nil
	}
	if hasStar {
		r.requireMention = append(r.requireMention, star.RequireMention)
		r.policy = cmpOr(r.policy, star.GroupPolicy)
		if !r.hasSenders {
			r.senders, r.hasSenders = star.AllowFrom, star.AllowFrom != nil
		}
	}
	return r, Decision{}, true
}

// slackRoom gates on channels.<C>: ids, or "#name" keys when name
// matching is on (R12.4), then "*".
func slackRoom(a Account, e Envelope) (room, Decision, bool) {
	if e.Peer.Kind == Group && !a.GroupDMEnabled {
		return room{}, block(ReasonGroupDMsOff), false
	}
	entry, _, ok := lookupFold(a.SlackRooms, e.Peer.ID)
	if !ok && a.NameMatching && e.RoomLabel != "" {
		entry, _, ok = lookupFold(a.SlackRooms, "#"+strings.TrimPrefix(e.RoomLabel, "#"))
	}
	star, hasStar := a.SlackRooms["*"]
	if !ok && !hasStar && (a.GroupPolicy == "allowlist" || len(a.SlackRooms) > 0) {
		return room{}, block(ReasonRoomNotAllowed), false
	}
	var r room
	entries := []config.SlackRoom{}
	if ok {
		entries = append(entries, entry)
	}
	if hasStar {
		entries = append(entries, star)
	}
	if len(entries) == 0 {
		return r, Decision{}, true // groupPolicy open, no rooms listed
	}
	// The most specific entry decides enabled, users and allowBots; the
	// "*" entry still gives a default requireMention (R6.1).
	if first := entries[0]; first.Enabled != nil && !*first.Enabled {
		return room{}, block(ReasonRoomDisabled), false
	}
	for i, c := range entries {
		r.requireMention = append(r.requireMention, c.RequireMention)
		if i > 0 {
			continue
		}
		r.senders, r.users, r.hasSenders = c.Users, c.Users, c.Users != nil
		r.allowBots = c.AllowBots
		r.ignoreOthers = c.IgnoreOtherMentions != nil && *c.IgnoreOtherMentions
	}
	return r, Decision{}, true
}

// discordRoom gates on guilds.<id> and its channels map (R13.4); a
// thread uses its parent channel's entry when it has none of its own.
func discordRoom(a Account, e Envelope) (room, Decision, bool) {
	if e.GuildID == "" {
		if !a.GroupDMEnabled {
			return room{}, block(ReasonGroupDMsOff), false
		}
		return room{}, Decision{}, true
	}
	g, _, ok := lookupFold(a.Guilds, e.GuildID)
	star, hasStar := a.Guilds["*"]
	if !ok && hasStar {
		g, ok, hasStar = star, true, false
	}
	if !ok {
		if a.GroupPolicy == "allowlist" || len(a.Guilds) > 0 {
			return room{}, block(ReasonGuildNotAllowed), false
		}
		return room{}, Decision{}, true
	}
	var r room
	if len(g.Channels) > 0 {
		ids := []string{e.Peer.ID}
		if e.ParentPeer != nil {
			ids = append(ids, e.ParentPeer.ID)
		}
		var c config.GuildChannel
		found := false
		for _, id := range append(ids, "*") {
			if c, _, found = lookupFold(g.Channels, id); found {
				break
			}
		}
		if !found {
			return room{}, block(ReasonGuildChannelDenied), false
		}
		if c.Enabled != nil && !*c.Enabled {
			return room{}, block(ReasonRoomDisabled), false
		}
		r.requireMention = append(r.requireMention, c.RequireMention)
		if c.Users != nil {
			r.senders, r.hasSenders = c.Users, true
		}
	}
	r.requireMention = append(r.requireMention, g.RequireMention)
	if hasStar {
		r.requireMention = append(r.requireMention, star.RequireMention)
	}
	if !r.hasSenders && (g.Users != nil || g.Roles != nil) {
		r.senders, r.hasSenders = g.Users, true
	}
	r.roles = g.Roles
	r.ignoreOthers = g.IgnoreOtherMentions != nil && *g.IgnoreOtherMentions
	return r, Decision{}, true
}

// senderGate is R5.8: who in an admitted room may talk to the bot.
// Pairing approvals never count here.
func senderGate(cfg *config.Config, a Account, e Envelope, r room) (Decision, bool) {
	switch {
	case r.hasSenders:
		if senderIn(cfg, a, e.Sender, r.senders, false) || matchRoles(e.RoleIDs, r.roles) {
			return Decision{}, true
		}
		return block(ReasonGroupNotAllowed), false
	case len(r.roles) > 0:
		if matchRoles(e.RoleIDs, r.roles) {
			return Decision{}, true
		}
		return block(ReasonGroupNotAllowed), false
	case a.Channel == "slack" || a.Channel == "discord":
		// Their room maps are the sender gate; groupAllowFrom narrows it
		// and does not fall back to the DM list.
		if len(a.GroupAllowFrom) == 0 || senderIn(cfg, a, e.Sender, a.GroupAllowFrom, false) {
			return Decision{}, true
		}
		return block(ReasonGroupNotAllowed), false
	}
	if cmpOr(r.policy, a.GroupPolicy) == "open" {
		return Decision{}, true
	}
	list := a.GroupAllowFrom
	if len(list) == 0 {
		list = a.AllowFrom
	}
	switch {
	case len(list) == 0:
		return block(ReasonGroupEmptyList), false
	case !senderIn(cfg, a, e.Sender, list, false):
		return block(ReasonGroupNotAllowed), false
	}
	return Decision{}, true
}

func botMode(a Account, r room) string {
	if r.allowBots != nil {
		if *r.allowBots {
			return "on"
		}
		return "off"
	}
	return a.AllowBots
}

// senderIn reports whether a sender is on an allowlist (R5.3, R5.4):
// "*", its id in the channel's syntax, an accessGroup:<name> entry, and
// usernames or display names only with dangerouslyAllowNameMatching.
func senderIn(cfg *config.Config, a Account, s Sender, list []string, nested bool) bool {
	for _, raw := range list {
		entry := strings.TrimSpace(raw)
		if entry == "*" {
			return true
		}
		if name, ok := cutPrefixFold(entry, "accessGroup:"); ok {
			if !nested && cfg != nil {
				g := cfg.AccessGroups[name]
				if senderIn(cfg, a, s, g.Members[a.Channel], true) || senderIn(cfg, a, s, g.Members["*"], true) {
					return true
				}
			}
			continue
		}
		id := EntryID(a.Channel, entry)
		switch {
		case id == "":
		case strings.EqualFold(id, s.ID):
			return true
		case strings.HasPrefix(id, "+") && id == s.E164:
			return true
		case a.NameMatching && nameMatches(id, s):
			return true
		}
	}
	return false
}

// entryID strips the prefixes an allowlist entry may carry in a
// channel's syntax: "<channel>:", Telegram's "tg:", "user:", and
// Discord's <@id> / <@!id> mention form.
func EntryID(channel, entry string) string {
	prefixes := []string{channel + ":", "user:"}
	if channel == "telegram" {
		prefixes = append(prefixes, "tg:")
	}
	for _, p := range prefixes {
		if rest, ok := cutPrefixFold(entry, p); ok {
			entry = rest
		}
	}
	if channel == "discord" && strings.HasPrefix(entry, "<@") && strings.HasSuffix(entry, ">") {
		entry = strings.TrimPrefix(strings.TrimSuffix(entry[2:], ">"), "!")
	}
	return strings.TrimSpace(entry)
}

func nameMatches(entry string, s Sender) bool {
	e := strings.TrimPrefix(entry, "@")
	u := strings.TrimPrefix(s.Username, "@")
	return u != "" && strings.EqualFold(e, u) || s.Name != "" && strings.EqualFold(entry, s.Name)
}

func matchIDs(id string, list []string) bool {
	for _, e := range list {
		if strings.EqualFold(strings.TrimSpace(e), id) && id != "" {
			return true
		}
	}
	return false
}

func matchRoles(have, want []string) bool {
	for _, h := range have {
		if matchIDs(h, want) {
			return true
		}
	}
	return false
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// patternMentioned applies the mention patterns (R6.3) of the agent the
// message routes to, where the channel's mentionPatterns scope allows.
func patternMentioned(cfg *config.Config, a Account, e Envelope) bool {
	if !patternsApply(a.MentionScope, e) || e.Text == "" {
		return false
	}
	agent := cfg.DefaultAgentID()
	if r, err := Resolve(cfg, e, agent); err == nil {
		agent = r.AgentID
	}
	for _, re := range MentionPatterns(cfg, agent) {
		if re.MatchString(e.Text) {
			return true
		}
	}
	return false
}

// patternsApply is the per-channel scoping of R6.3: mode "allow" (the
// default) everywhere but denyIn, "deny" only in allowIn; denyIn wins.
func patternsApply(s *config.MentionScope, e Envelope) bool {
	if s == nil {
		return true
	}
	ids := []string{e.Peer.ID}
	if chat, _, ok := strings.Cut(e.Peer.ID, ":topic:"); ok {
		ids = append(ids, chat)
	}
	if e.ParentPeer != nil {
		ids = append(ids, e.ParentPeer.ID)
	}
	in := func(list []string) bool {
		for _, id := range ids {
			if matchIDs(id, list) {
				return true
			}
		}
		return false
	}
	if in(s.DenyIn) {
		return false
	}
	return s.Mode != "deny" || in(s.AllowIn)
}

// MentionPatterns are an agent's compiled mention patterns (R6.3): its
// groupChat.mentionPatterns, else messages.groupChat.mentionPatterns,
// else derived from its identity's name and emoji; an explicit [] turns
// derivation off. Invalid patterns are skipped (validation reports them).
func MentionPatterns(cfg *config.Config, agentID string) []*regexp.Regexp {
	var src []string
	ag, _ := cfg.Agent(agentID)
	switch {
	case ag != nil && ag.GroupChat.MentionPatterns != nil:
		src = ag.GroupChat.MentionPatterns
	case cfg.Messages.GroupChat.MentionPatterns != nil:
		src = cfg.Messages.GroupChat.MentionPatterns
	case ag != nil && ag.Identity != nil && ag.Identity.Value != nil:
		if n := ag.Identity.Get("name"); n != nil && n.Kind == config.String && strings.TrimSpace(n.Str) != "" {
			src = append(src, `(?:^|\s)@?`+regexp.QuoteMeta(strings.TrimSpace(n.Str))+`\b`)
		}
		if em := ag.Identity.Get("emoji"); em != nil && em.Kind == config.String && strings.TrimSpace(em.Str) != "" {
			src = append(src, regexp.QuoteMeta(strings.TrimSpace(em.Str)))
		}
	}
	out := make([]*regexp.Regexp, 0, len(src))
	for _, p := range src {
		if re, err := config.CompileMention(p); err == nil {
			out = append(out, re)
		}
	}
	return out
}
