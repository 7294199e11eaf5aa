package slacktest

import (
	"net/http"
	"slices"
	"strings"
)

// Reaction is one reactions.add or reactions.remove Slack took.
type Reaction struct {
	Channel string `json:"channel"`
	TS      string `json:"timestamp"`
	Name    string `json:"name"`
	Remove  bool   `json:"remove,omitempty"`
	User    string `json:"user,omitempty"` // who, for a person's reaction
}

// Update is one chat.update Slack took.
type Update struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	Text    string `json:"text"`
}

// Deletion is one chat.delete Slack took.
type Deletion struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// emojiNames are the standard emoji the fake knows; Slack answers
// invalid_name for a name it has no emoji for. The list is written here
// again rather than taken from the adapter.
var emojiNames = map[string]bool{
	"thumbsup": true, "+1": true, "thumbsdown": true, "-1": true, "eyes": true,
	"white_check_mark": true, "heavy_check_mark": true, "heart": true, "tada": true,
	"fire": true, "rocket": true, "joy": true, "pray": true, "x": true, "warning": true,
	"ok_hand": true, "clap": true, "100": true, "thinking_face": true, "smile": true,
	"wave": true, "raised_hands": true, "sparkles": true, "hourglass_flowing_sand": true,
}

// knownEmoji reports whether Slack has an emoji called name, with or
// without a skin tone.
func knownEmoji(name string) bool {
	base, tone, toned := strings.Cut(name, "::skin-tone-")
	if toned && (len(tone) != 1 || tone < "2" || tone > "6") {
		return false
	}
	return emojiNames[base]
}

// Reactions is every reaction the bot added or removed, in order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactions)
}

// ReactionsOn is the names of the bot's reactions now on a message, in the
// order they were added.
func (s *Server) ReactionsOn(channel, ts string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reactedNow(channel + "/" + ts)
}

// reactedNow replays the log for one message; s.mu is held.
func (s *Server) reactedNow(key string) []string {
	var on []string
	for _, r := range s.reactions {
		if r.Channel+"/"+r.TS != key {
			continue
		}
		if r.Remove {
			on = slices.DeleteFunc(on, func(n string) bool { return n == r.Name })
		} else {
			on = append(on, r.Name)
		}
	}
	return on
}

// Updates is every edit the bot made, in order.
func (s *Server) Updates() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updates)
}

// Deletions is every message the bot deleted, in order.
func (s *Server) Deletions() []Deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deletes)
}

// imOf is the DM conversation with user, opened if there is none; s.mu is
// held.
func (s *Server) imOf(user string) string {
	if id, ok := s.ims[user]; ok {
		return id
	}
	id := "D" + user[1:]
	s.ims[user] = id
	s.kinds[id] = "im"
	return id
}

func isUserID(id string) bool { return strings.HasPrefix(id, "U") || strings.HasPrefix(id, "W") }

func (s *Server) conversationsOpen(w http.ResponseWriter, r *http.Request) {
	if !s.token(w, r, BotToken) {
		return
	}
	if _, done := s.failure(w, "conversations.open"); done {
		return
	}
	a, _ := args(r)
	users, _ := a["users"].(string)
	if !isUserID(users) || strings.Contains(users, ",") {
		// Several users open a group DM, which the fake does not do.
		writeJSON(w, map[string]any{"ok": false, "error": "user_not_found"})
		return
	}
	s.mu.Lock()
	id := s.imOf(users)
	s.mu.Unlock()
	writeJSON(w, map[string]any{"ok": true, "channel": map[string]any{"id": id}})
}

// target reads the channel and ts a message call names and finds the
// message's author; ok is false when an answer was written. s.mu is held
// on return when ok.
func (s *Server) target(w http.ResponseWriter, a map[string]any, tsKey string) (channel, ts, author string, ok bool) {
	channel, _ = a["channel"].(string)
	ts, _ = a[tsKey].(string)
	if channel == "" || ts == "" {
		writeJSON(w, map[string]any{"ok": false, "error": "no_item_specified"})
		return "", "", "", false
	}
	s.mu.Lock()
	// Slack wants the DM's conversation id here, not the user's id, so a
	// user id is not found, as on Slack.
	if _, known := s.kinds[channel]; !known {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return "", "", "", false
	}
	author, found := s.messages[channel+"/"+ts]
	if !found {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "message_not_found"})
		return "", "", "", false
	}
	return channel, ts, author, true
}

// begin checks the token, reads the arguments and pops an injected
// failure; ok is false when an answer was written.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, method string) (a map[string]any, drop, ok bool) {
	if !s.token(w, r, BotToken) {
		return nil, false, false
	}
	a, err := args(r)
	if err != nil {
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_json"})
		return nil, false, false
	}
	drop, done := s.failure(w, method)
	return a, drop, !done
}

// answer writes ok, or drops the connection after the work was done.
func answer(w http.ResponseWriter, drop bool, body map[string]any) {
	if drop {
		dropResponse(w)
		return
	}
	body["ok"] = true
	writeJSON(w, body)
}

func (s *Server) react(w http.ResponseWriter, r *http.Request, method string) {
	a, drop, ok := s.begin(w, r, method)
	if !ok {
		return
	}
	name, _ := a["name"].(string)
	channel, ts, _, ok := s.target(w, a, "timestamp")
	if !ok {
		return
	}
	remove := method == "reactions.remove"
	on := slices.Contains(s.reactedNow(channel+"/"+ts), name)
	code := ""
	switch {
	case !knownEmoji(name):
		code = "invalid_name"
	case !remove && on:
		code = "already_reacted"
	case remove && !on:
		code = "no_reaction"
	}
	if code != "" {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": code})
		return
	}
	s.reactions = append(s.reactions, Reaction{Channel: channel, TS: ts, Name: name, Remove: remove})
	s.notify()
	s.mu.Unlock()
	answer(w, drop, map[string]any{})
}

func (s *Server) chatUpdate(w http.ResponseWriter, r *http.Request) {
	a, drop, ok := s.begin(w, r, "chat.update")
	if !ok {
		return
	}
	text, _ := a["text"].(string)
	channel, ts, author, ok := s.target(w, a, "ts")
	if !ok {
		return
	}
	code := ""
	switch {
	case author != BotUserID:
		code = "cant_update_message"
	case text == "":
		code = "no_text"
	case len([]rune(text)) > 40000:
		code = "msg_too_long"
	}
	if code != "" {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": code})
		return
	}
	s.updates = append(s.updates, Update{Channel: channel, TS: ts, Text: text})
	if m := s.find(channel, ts); m != nil {
		m.text = text
	}
	s.notify()
	s.mu.Unlock()
	answer(w, drop, map[string]any{"channel": channel, "ts": ts, "text": text})
}

func (s *Server) chatDelete(w http.ResponseWriter, r *http.Request) {
	a, drop, ok := s.begin(w, r, "chat.delete")
	if !ok {
		return
	}
	channel, ts, author, ok := s.target(w, a, "ts")
	if !ok {
		return
	}
	if author != BotUserID {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "cant_delete_message"})
		return
	}
	delete(s.messages, channel+"/"+ts)
	s.forget(channel, ts)
	s.deletes = append(s.deletes, Deletion{Channel: channel, TS: ts})
	s.notify()
	s.mu.Unlock()
	answer(w, drop, map[string]any{"channel": channel, "ts": ts})
}
