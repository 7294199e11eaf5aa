package discordtest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// reactionOut is a reaction as a message object shows it.
type reactionOut struct {
	Count        int            `json:"count"`
	CountDetails map[string]int `json:"count_details"`
	Me           bool           `json:"me"`
	MeBurst      bool           `json:"me_burst"`
	Emoji        emojiOut       `json:"emoji"`
	BurstColors  []string       `json:"burst_colors"`
}

type emojiOut struct {
	ID       *string `json:"id"`
	Name     string  `json:"name"`
	Animated bool    `json:"animated,omitempty"`
}

// reacted is who reacted to a message with one emoji ("👍" or
// "name:id"), in order.
type reacted struct {
	emoji string
	users []string
}

// UserReacts adds a user's reaction to a message (a Unicode emoji, or
// EmojiName+":"+EmojiID for the guild's custom one).
func (s *Server) UserReacts(messageID, emoji, userID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.messages[messageID]; !ok {
		return fmt.Errorf("discordtest: no message %s", messageID)
	}
	if !knownEmoji(emoji) {
		return fmt.Errorf("discordtest: unknown emoji %q", emoji)
	}
	s.addReaction(messageID, emoji, userID)
	s.change()
	return nil
}

// addReaction records userID's reaction; call with s.mu held.
func (s *Server) addReaction(mid, emoji, userID string) {
	rs := s.reacts[mid]
	i := slices.IndexFunc(rs, func(r reacted) bool { return r.emoji == emoji })
	if i < 0 {
		rs, i = append(rs, reacted{emoji: emoji}), len(rs)
	}
	if !slices.Contains(rs[i].users, userID) {
		rs[i].users = append(rs[i].users, userID)
	}
	s.reacts[mid] = rs
}

// removeReaction takes userID's reaction off; call with s.mu held.
func (s *Server) removeReaction(mid, emoji, userID string) {
	rs := s.reacts[mid]
	for i := range rs {
		if rs[i].emoji == emoji {
			rs[i].users = slices.DeleteFunc(rs[i].users, func(u string) bool { return u == userID })
		}
	}
	s.reacts[mid] = slices.DeleteFunc(rs, func(r reacted) bool { return len(r.users) == 0 })
}

// render is m as Discord returns it, with its reactions; call with s.mu
// held.
func (s *Server) render(m message) message {
	for _, r := range s.reacts[m.ID] {
		e := emojiOut{Name: r.emoji}
		if name, id, ok := strings.Cut(r.emoji, ":"); ok {
			e = emojiOut{ID: &id, Name: name}
		}
		m.Reactions = append(m.Reactions, reactionOut{
			Count: len(r.users), CountDetails: map[string]int{"burst": 0, "normal": len(r.users)},
			Me: slices.Contains(r.users, BotID), Emoji: e, BurstColors: []string{},
		})
	}
	return m
}

// getMessage is GET /channels/{id}/messages/{mid}.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, m, ok := s.target(w, r); ok {
		reply(w, http.StatusOK, s.render(m))
	}
}

// history is GET /channels/{id}/messages: limit 1–100 (50 by default)
// messages, newest first; before gives the newest older than the
// anchor, after the oldest newer than it, around those nearest it.
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			fail(w, http.StatusBadRequest, 50035, "Invalid Form Body: limit: int value should be between 1 and 100.")
			return
		}
		limit = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chID := r.PathValue("id")
	if _, ok := s.channels[chID]; !ok {
		fail(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	var all []message // oldest first
	for _, m := range s.messages {
		if m.ChannelID == chID {
			all = append(all, m)
		}
	}
	slices.SortFunc(all, func(a, b message) int { return byID(a.ID, b.ID) })
	page := window(all, q.Get("before"), q.Get("after"), q.Get("around"), limit)
	out := make([]message, 0, len(page))
	for i := len(page) - 1; i >= 0; i-- {
		out = append(out, s.render(page[i]))
	}
	reply(w, http.StatusOK, out)
}

// window picks the page of all (oldest first) that a query asks for.
func window(all []message, before, after, around string, limit int) []message {
	first := func(anchor string, inclusive bool) int { // index of the first message after anchor
		return slices.IndexFunc(all, func(m message) bool {
			c := byID(m.ID, anchor)
			return c > 0 || inclusive && c == 0
		})
	}
	switch {
	case after != "":
		i := first(after, false)
		if i < 0 {
			return nil
		}
		return all[i:min(len(all), i+limit)]
	case around != "":
		i := first(around, true)
		if i < 0 {
			i = len(all)
		}
		lo := max(0, i-limit/2)
		return all[lo:min(len(all), lo+limit)]
	case before != "":
		i := first(before, true)
		if i < 0 {
			i = len(all)
		}
		return all[max(0, i-limit):i]
	}
	return all[max(0, len(all)-limit):]
}

func byID(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}
