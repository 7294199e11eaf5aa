package discordtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// The guild's one custom emoji: a reaction names it as EmojiName:EmojiID.
const (
	EmojiName = "talon"
	EmojiID   = "1700000000000000001"
)

// Reaction is a reaction the bot added to a message or took off it.
type Reaction struct {
	ChannelID string
	MessageID string
	Emoji     string // as decoded from the URL: "👍" or "name:id"
	Removed   bool
}

// Edit is an edit of one of the bot's messages, as Discord received it.
type Edit struct {
	ChannelID       string
	MessageID       string
	Content         string
	Flags           *int // nil: the edit left the flags alone
	AllowedMentions *AllowedMentions
}

// Deletion is a message the bot deleted.
type Deletion struct {
	ChannelID string
	MessageID string
}

// Reactions is every reaction the bot added or removed, in order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// Edits is every edit the bot made, in order.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}

// Deletions is every message the bot deleted, in order.
func (s *Server) Deletions() []Deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Deletion(nil), s.deletions...)
}

// target finds the message a request names, answering Discord's 404s
// when the channel or the message (in that channel) is unknown. Call
// with s.mu held.
func (s *Server) target(w http.ResponseWriter, r *http.Request) (channel, message, bool) {
	ch, ok := s.channels[r.PathValue("id")]
	if !ok {
		fail(w, http.StatusNotFound, 10003, "Unknown Channel")
		return channel{}, message{}, false
	}
	m, ok := s.messages[r.PathValue("mid")]
	if !ok || m.ChannelID != ch.ID {
		fail(w, http.StatusNotFound, 10008, "Unknown Message")
		return channel{}, message{}, false
	}
	return ch, m, true
}

// edit is PATCH /channels/{id}/messages/{mid}: only the author may edit.
func (s *Server) edit(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content         *string          `json:"content"`
		Flags           *int             `json:"flags"`
		AllowedMentions *AllowedMentions `json:"allowed_mentions"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, m, ok := s.target(w, r)
	if !ok {
		return
	}
	if m.Author.ID != BotID {
		fail(w, http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
		return
	}
	if in.Content != nil {
		switch {
		case strings.TrimSpace(*in.Content) == "":
			fail(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
			return
		case utf8.RuneCountInString(*in.Content) > 2000:
			fail(w, http.StatusBadRequest, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length.")
			return
		}
	}
	failure, refused := s.nextFailure(w)
	if refused {
		return
	}
	e := Edit{ChannelID: m.ChannelID, MessageID: m.ID, Flags: in.Flags, AllowedMentions: in.AllowedMentions}
	if in.Content != nil {
		m.Content, e.Content = *in.Content, *in.Content
	}
	if in.Flags != nil {
		m.Flags = *in.Flags
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	m.EditedTimestamp = &now
	s.messages[m.ID] = m
	s.edits = append(s.edits, e)
	s.emit("MESSAGE_UPDATE", m)
	s.change()
	switch {
	case failure == LoseAnswer && hangUp(w):
	case failure == NoID:
		reply(w, http.StatusOK, map[string]any{"channel_id": m.ChannelID, "content": m.Content})
	default:
		reply(w, http.StatusOK, m)
	}
}

// deleteMessage is DELETE /channels/{id}/messages/{mid}. The bot may
// delete its own messages anywhere and others' in the guild (it has
// Manage Messages there), never a user's in a DM.
func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m, ok := s.target(w, r)
	if !ok {
		return
	}
	if m.Author.ID != BotID && ch.GuildID == "" {
		fail(w, http.StatusForbidden, 50003, "Cannot execute action on a DM channel")
		return
	}
	failure, refused := s.nextFailure(w)
	if refused {
		return
	}
	delete(s.messages, m.ID)
	delete(s.reacts, m.ID)
	s.deletions = append(s.deletions, Deletion{ChannelID: m.ChannelID, MessageID: m.ID})
	s.emit("MESSAGE_DELETE", map[string]string{"id": m.ID, "channel_id": m.ChannelID, "guild_id": m.GuildID})
	s.change()
	if failure == LoseAnswer && hangUp(w) {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// react is PUT (add) and DELETE (remove) of
// /channels/{id}/messages/{mid}/reactions/{emoji}/@me. Both answer 204,
// also when there was nothing to remove, as on Discord.
func (s *Server) react(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, m, ok := s.target(w, r)
	if !ok {
		return
	}
	emoji := r.PathValue("emoji")
	if !knownEmoji(emoji) {
		fail(w, http.StatusBadRequest, 10014, "Unknown Emoji")
		return
	}
	failure, refused := s.nextFailure(w)
	if refused {
		return
	}
	s.reactions = append(s.reactions, Reaction{ChannelID: m.ChannelID, MessageID: m.ID, Emoji: emoji, Removed: r.Method == http.MethodDelete})
	if r.Method == http.MethodDelete {
		s.removeReaction(m.ID, emoji, BotID)
	} else {
		s.addReaction(m.ID, emoji, BotID)
	}
	s.change()
	if failure == LoseAnswer && hangUp(w) {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// knownEmoji is the fake's stand-in for Discord's emoji list: the
// guild's custom emoji by its id, or text with a non-ASCII rune and no
// ASCII letters (a Unicode emoji; "thumbsup" is not one).
func knownEmoji(e string) bool {
	if _, id, ok := strings.Cut(e, ":"); ok {
		return id == EmojiID
	}
	wide := false
	for _, r := range e {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
		wide = wide || r >= utf8.RuneSelf
	}
	return wide
}
