package discord

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"talon/internal/channel"
)

// discordEpoch is the first millisecond of 2015 in Unix milliseconds, the
// zero of a snowflake's time.
const discordEpoch = 1420070400000

// where is what a message's peer needs beyond the message itself: the
// bot's own identity and roles, and the channel's shape.
type where struct {
	account  string
	botID    string
	botRoles []string
	ch       chanInfo
}

// errSkip marks a message that is no conversation for the bot (its own,
// a group DM, a join notice); it is not accepted and never retried.
var errSkip = errors.New("skipped")

// validate checks every id of a MESSAGE_CREATE before it is used; a
// message that fails is dropped (retrying cannot fix it).
func validate(m *message) error {
	switch {
	case !snowflake(m.ID):
		return fmt.Errorf("message id %q is not a snowflake", m.ID)
	case !snowflake(m.ChannelID):
		return fmt.Errorf("message %s: channel_id %q is not a snowflake", m.ID, m.ChannelID)
	case !snowflake(m.Author.ID):
		return fmt.Errorf("message %s: author id %q is not a snowflake", m.ID, m.Author.ID)
	case m.GuildID != "" && !snowflake(m.GuildID):
		return fmt.Errorf("message %s: guild_id %q is not a snowflake", m.ID, m.GuildID)
	}
	return nil
}

// toEnvelope maps a validated MESSAGE_CREATE to the envelope (spec
// R13.3). It returns errSkip (wrapped with the reason) for messages the
// bot must not take.
func toEnvelope(m *message, w where) (channel.Envelope, error) {
	if m.Type != msgDefault && m.Type != msgReply {
		return channel.Envelope{}, fmt.Errorf("message type %d: %w", m.Type, errSkip)
	}
	if m.Author.ID == w.botID {
		return channel.Envelope{}, fmt.Errorf("own message: %w", errSkip)
	}
	e := channel.Envelope{
		Channel:    "discord",
		AccountID:  w.account,
		DeliveryID: m.ID,
		MessageID:  m.ID,
		Sender:     sender(m),
		Text:       m.Content,
		Media:      mediaOf(m),
		GuildID:    m.GuildID,
		Time:       messageTime(m),
	}
	switch {
	case m.GuildID == "" && w.ch.typ == chanGroupDM:
		return channel.Envelope{}, fmt.Errorf("group DM: %w", errSkip)
	case m.GuildID == "":
		e.Peer = channel.Peer{Kind: channel.Direct, ID: m.Author.ID}
	case w.ch.thread() && w.ch.parent != "":
		e.Peer = channel.Peer{Kind: channel.Room, ID: m.ChannelID}
		e.ParentPeer = &channel.Peer{Kind: channel.Room, ID: w.ch.parent}
		e.RoomLabel = w.ch.name
	default:
		e.Peer = channel.Peer{Kind: channel.Room, ID: m.ChannelID}
		e.RoomLabel = w.ch.name
	}
	if m.Member != nil && m.GuildID != "" {
		for _, r := range m.Member.Roles {
			if snowflake(r) {
				e.RoleIDs = append(e.RoleIDs, r)
			}
		}
	}
	e.ReplyTo = quote(m, w.botID)
	e.Mentioned, e.MentionsOthers = mentions(m, w)
	return e, nil
}

func sender(m *message) channel.Sender {
	s := channel.Sender{
		ID:       m.Author.ID,
		Username: m.Author.Username,
		Name:     m.Author.GlobalName,
		IsBot:    m.Author.Bot || m.WebhookID != "",
	}
	if m.Member != nil && m.Member.Nick != "" {
		s.Name = m.Member.Nick
	}
	if s.Name == "" {
		s.Name = s.Username
	}
	return s
}

// quote is the message m replies to; a reply whose original was deleted
// keeps only the id Discord still gives.
func quote(m *message, botID string) *channel.Quote {
	if r := m.ReferencedMessage; r != nil && snowflake(r.ID) {
		return &channel.Quote{ID: r.ID, Body: r.Content, SenderID: r.Author.ID, FromBot: r.Author.ID == botID}
	}
	if m.Type == msgReply && m.MessageReference != nil && snowflake(m.MessageReference.MessageID) {
		return &channel.Quote{ID: m.MessageReference.MessageID}
	}
	return nil
}

// mentions says whether m addresses the bot natively — the bot among
// mentions[], a mention of a role the bot has, a reply to the bot (spec
// R6.2) — and whether it mentions anyone else (R6.4). @everyone counts
// as mentioning others, not the bot: it is not addressed to the bot.
func mentions(m *message, w where) (bot, others bool) {
	for _, u := range m.Mentions {
		if u.ID == w.botID {
			bot = true
		} else if u.ID != m.Author.ID {
			others = true
		}
	}
	for _, r := range m.MentionRoles {
		if slices.Contains(w.botRoles, r) {
			bot = true
		} else {
			others = true
		}
	}
	if m.MentionEveryone {
		others = true
	}
	if r := m.ReferencedMessage; r != nil && r.Author.ID == w.botID && w.botID != "" {
		bot = true
		// Discord puts the replied-to author into mentions[] when the
		// reply pings them; that is the bot, not someone else.
	}
	return bot, others
}

// messageTime is the message's timestamp, or the time in its id when the
// timestamp is missing or malformed.
func messageTime(m *message) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil {
		return t.UTC()
	}
	n, err := strconv.ParseUint(m.ID, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + discordEpoch).UTC()
}
