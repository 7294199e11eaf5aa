package telegram

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"talon/internal/channel"
)

// Info is what getMe said about the bot.
type Info struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Name     string `json:"name"`
	// CanReadAllGroupMessages is false while BotFather's privacy mode is
	// on: the bot then sees only commands, mentions and replies in groups.
	CanReadAllGroupMessages bool `json:"canReadAllGroupMessages"`
	// HasTopicsEnabled says private chats with the bot have topics, so a
	// DM's message_thread_id names a conversation of its own (R11.5).
	HasTopicsEnabled bool `json:"hasTopicsEnabled"`
}

// PrivacyIssue is the statusIssues entry for privacy mode. The hub shows
// it only when some group of the account has requireMention:false — with
// mentions required, privacy mode loses nothing (spec R11.8, #17405).
func (i Info) PrivacyIssue() (channel.Issue, bool) {
	if i.ID == 0 || i.CanReadAllGroupMessages {
		return channel.Issue{}, false
	}
	return channel.Issue{
		Kind:    "config",
		Message: "Telegram privacy mode is on for @" + i.Username + ": in groups the bot receives only commands, mentions and replies, so a group with requireMention:false sees no ordinary messages",
		Fix:     "In @BotFather send /setprivacy, choose @" + i.Username + ", select Disable, then remove the bot from each group and add it again",
	}, true
}

// toEnvelope turns an update into an inbound message. ok is false for an
// update Talon does not take (see doc.go); the caller acknowledges those
// without calling accept.
func toEnvelope(u update, bot Info, accountID string) (channel.Envelope, bool) {
	m := u.Message
	if m == nil || m.From == nil {
		return channel.Envelope{}, false
	}
	text, ents := m.Text, m.Entities
	if text == "" {
		text, ents = m.Caption, m.CaptionEntities
	}
	media := mediaOf(m)
	if text == "" && len(media) == 0 {
		return channel.Envelope{}, false
	}
	peer, ok := peerOf(m, bot)
	if !ok {
		return channel.Envelope{}, false
	}
	e := channel.Envelope{
		Channel:    "telegram",
		AccountID:  accountID,
		DeliveryID: strconv.FormatInt(u.UpdateID, 10),
		MessageID:  strconv.FormatInt(m.MessageID, 10),
		Peer:       peer,
		Sender:     senderOf(m.From),
		Text:       text,
		Media:      media,
		RoomLabel:  roomLabel(peer, m),
		Time:       time.Unix(m.Date, 0).UTC(),
	}
	e.ReplyTo = quoteOf(m, bot)
	e.Mentioned, e.MentionsOthers = mentions(text, ents, bot)
	if e.ReplyTo != nil && e.ReplyTo.FromBot {
		e.Mentioned = true
	}
	return e, true
}

func senderOf(u *user) channel.Sender {
	return channel.Sender{
		ID:       strconv.FormatInt(u.ID, 10),
		Username: u.Username,
		Name:     strings.TrimSpace(u.FirstName + " " + u.LastName),
		IsBot:    u.IsBot,
	}
}

// roomLabel is a group's title; a DM has none.
func roomLabel(p channel.Peer, m *message) string {
	if p.Kind == channel.Direct {
		return ""
	}
	return m.Chat.Title
}

// peerOf applies R11.5: a private chat is the sender, a group or
// supergroup the chat, a forum topic the chat with ":topic:<id>".
func peerOf(m *message, bot Info) (channel.Peer, bool) {
	switch m.Chat.Type {
	case "private":
		id := strconv.FormatInt(m.From.ID, 10)
		if bot.HasTopicsEnabled && m.MessageThreadID != 0 {
			id = topicPeer(id, m.MessageThreadID)
		}
		return channel.Peer{Kind: channel.Direct, ID: id}, true
	case "group", "supergroup":
		id := strconv.FormatInt(m.Chat.ID, 10)
		if m.Chat.IsForum {
			// A forum message outside any topic is in General (id 1).
			thread := m.MessageThreadID
			if !m.IsTopicMessage || thread == 0 {
				thread = generalTopic
			}
			id = topicPeer(id, thread)
		}
		return channel.Peer{Kind: channel.Group, ID: id}, true
	}
	return channel.Peer{}, false
}

// generalTopic is the id of a forum's General topic.
const generalTopic = 1

func topicPeer(chat string, thread int64) string {
	return chat + ":topic:" + strconv.FormatInt(thread, 10)
}

// quoteOf is the message m replies to. In a forum every topic message
// "replies" to the topic's creation message; that is not a reply.
func quoteOf(m *message, bot Info) *channel.Quote {
	r := m.ReplyToMessage
	if r == nil || r.ForumTopic != nil || (m.IsTopicMessage && r.MessageID == m.MessageThreadID) {
		return nil
	}
	q := &channel.Quote{ID: strconv.FormatInt(r.MessageID, 10), Body: r.Text}
	if q.Body == "" {
		q.Body = r.Caption
	}
	if r.From != nil {
		q.SenderID = strconv.FormatInt(r.From.ID, 10)
		q.FromBot = bot.ID != 0 && r.From.ID == bot.ID
	}
	return q
}

// mentions reads the entities Telegram computed: an @username mention or
// a text_mention of a user, or a command addressed as /cmd@username.
// Offsets count UTF-16 code units, so the text is sliced in those.
func mentions(text string, ents []entity, bot Info) (self, others bool) {
	var units []uint16
	for _, en := range ents {
		switch en.Type {
		case "mention", "bot_command":
			if units == nil {
				units = utf16.Encode([]rune(text))
			}
			if en.Offset < 0 || en.Length <= 0 || en.Offset+en.Length > len(units) {
				continue
			}
			s := string(utf16.Decode(units[en.Offset : en.Offset+en.Length]))
			name, isMention := mentionName(en.Type, s)
			switch {
			case name == "":
			case bot.Username != "" && strings.EqualFold(name, bot.Username):
				self = true
			case isMention:
				others = true
			}
		case "text_mention":
			if en.User == nil {
				continue
			}
			if en.User.ID == bot.ID {
				self = true
			} else {
				others = true
			}
		}
	}
	return self, others
}

// mentionName is the username an entity names: "@name" for a mention,
// "/cmd@name" for a command (a bare /cmd names nobody).
func mentionName(kind, s string) (name string, isMention bool) {
	if kind == "mention" {
		return strings.TrimPrefix(s, "@"), true
	}
	if _, after, ok := strings.Cut(s, "@"); ok {
		return after, false
	}
	return "", false
}
