package discordtest

import (
	"encoding/json"
	"strings"
	"time"
)

// Say is a message a user writes.
type Say struct {
	// ChannelID is where: a guild channel or thread id, GroupDMID, or ""
	// for a DM between the author and the bot.
	ChannelID string
	// From is the author's id; UserID when empty.
	From string
	Text string
	// MentionBot puts <@BotID> in front of the text and the bot in
	// mentions[].
	MentionBot   bool
	MentionUsers []string
	MentionRoles []string
	// ReplyTo is the id of the message this one replies to (a user's or
	// one the bot posted); the reply pings its author.
	ReplyTo string
	// Roles are the author's roles in the guild.
	Roles []string
	// Bot marks the author as a bot.
	Bot bool
	// Files are the message's attachments, served by the fake's CDN.
	Files []File
	// Voice makes the message a voice message (flag IS_VOICE_MESSAGE;
	// its one file gets a duration and a waveform).
	Voice bool
}

// UserSays posts m as a user and dispatches MESSAGE_CREATE in the live
// gateway session (kept for RESUME when the bot is disconnected; lost,
// as on Discord, when there is no session). It returns the message id.
// Without the Message Content intent a guild message that does not
// mention the bot arrives with empty content and no attachments, as on
// Discord.
func (s *Server) UserSays(m Say) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := m.From
	if from == "" {
		from = UserID
	}
	author := user{ID: from, Username: "user" + from[len(from)-2:], GlobalName: "User " + from[len(from)-2:], Bot: m.Bot}
	chID := m.ChannelID
	if chID == "" {
		chID = s.dmWith(from).ID
	}
	ch := s.channels[chID]
	msg := message{
		ID: s.id(), ChannelID: chID, GuildID: ch.GuildID, Author: author, Content: m.Text,
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Mentions: []user{}, MentionRoles: []string{},
		Attachments: []attachment{},
	}
	for _, f := range m.Files {
		a := s.attach(chID, f)
		if m.Voice {
			a.DurationSecs, a.Waveform = 2.5, voiceWaveform
		}
		msg.Attachments = append(msg.Attachments, a)
	}
	if m.Voice {
		msg.Flags |= 1 << 13 // IS_VOICE_MESSAGE
	}
	var prefix []string
	if m.MentionBot {
		prefix = append(prefix, "<@"+BotID+">")
		msg.Mentions = append(msg.Mentions, user{ID: BotID, Username: BotName, Bot: true})
	}
	for _, u := range m.MentionUsers {
		prefix = append(prefix, "<@"+u+">")
		msg.Mentions = append(msg.Mentions, user{ID: u, Username: "user" + u[len(u)-2:]})
	}
	for _, r := range m.MentionRoles {
		prefix = append(prefix, "<@&"+r+">")
		msg.MentionRoles = append(msg.MentionRoles, r)
	}
	if len(prefix) > 0 {
		msg.Content = strings.Join(prefix, " ") + " " + m.Text
	}
	if ch.GuildID != "" {
		msg.Member = &member{Roles: append([]string{}, m.Roles...)}
	}
	if orig, ok := s.messages[m.ReplyTo]; ok {
		msg.Type = 19
		msg.MessageReference = &messageRef{MessageID: orig.ID, ChannelID: orig.ChannelID, GuildID: orig.GuildID}
		msg.ReferencedMessage, _ = json.Marshal(orig)
		if orig.Author.ID != from {
			msg.Mentions = append(msg.Mentions, orig.Author)
		}
	}
	s.messages[msg.ID] = msg
	wire := msg
	if s.sess != nil && s.sess.intents&IntentMessageContent == 0 && ch.GuildID != "" && !mentions(msg, BotID) {
		wire.Content, wire.Attachments = "", []attachment{}
	}
	s.emit("MESSAGE_CREATE", wire)
	s.change()
	return msg.ID
}

func mentions(m message, id string) bool {
	for _, u := range m.Mentions {
		if u.ID == id {
			return true
		}
	}
	return false
}
