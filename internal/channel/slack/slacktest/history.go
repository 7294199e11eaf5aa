package slacktest

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// stored is one message of a conversation's history.
type stored struct {
	ts, user, botID, text, threadTS string
	files                           []map[string]any
}

// record appends m to conv's history; s.mu is held.
func (s *Server) record(conv string, m *stored) {
	s.history[conv] = append(s.history[conv], m)
}

// find is the stored message conv/ts, nil if none; s.mu is held.
func (s *Server) find(conv, ts string) *stored {
	for _, m := range s.history[conv] {
		if m.ts == ts {
			return m
		}
	}
	return nil
}

// forget removes conv/ts from the history; s.mu is held.
func (s *Server) forget(conv, ts string) {
	s.history[conv] = slices.DeleteFunc(s.history[conv], func(m *stored) bool { return m.ts == ts })
}

// UserReacts puts a person's reaction on the message ts of channel, as
// if they had clicked it: reactions.get and the history list it.
func (s *Server) UserReacts(channel, ts, name, user string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.find(channel, ts) == nil {
		return fmt.Errorf("slacktest: no message %s in %s", ts, channel)
	}
	s.peopleReacted = append(s.peopleReacted, Reaction{Channel: channel, TS: ts, Name: name, User: user})
	s.notify()
	return nil
}

// reactionsOf lists the reactions on conv/ts as Slack does: by name in
// the order first added, with count and users; s.mu is held.
func (s *Server) reactionsOf(conv, ts string) []map[string]any {
	var names []string
	users := map[string][]string{}
	add := func(name, user string) {
		if _, ok := users[name]; !ok {
			names = append(names, name)
		}
		users[name] = append(users[name], user)
	}
	for _, n := range s.reactedNow(conv + "/" + ts) {
		add(n, BotUserID)
	}
	for _, r := range s.peopleReacted {
		if r.Channel == conv && r.TS == ts {
			add(r.Name, r.User)
		}
	}
	var out []map[string]any
	for _, n := range names {
		out = append(out, map[string]any{"name": n, "users": users[n], "count": len(users[n])})
	}
	return out
}

// messageJSON is m as the history methods answer it; s.mu is held.
func (s *Server) messageJSON(conv string, m *stored) map[string]any {
	j := map[string]any{"type": "message", "text": m.text, "ts": m.ts}
	if m.user != "" {
		j["user"] = m.user
	}
	if m.botID != "" {
		j["bot_id"] = m.botID
	}
	if m.threadTS != "" {
		j["thread_ts"] = m.threadTS
	}
	if len(m.files) > 0 {
		j["files"] = m.files
	}
	if rs := s.reactionsOf(conv, m.ts); len(rs) > 0 {
		j["reactions"] = rs
	}
	return j
}

// tsLess orders two ts by their value, not their spelling.
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		return ai < bi
	}
	return (af + "000000000")[:9] < (bf + "000000000")[:9]
}

// window keeps the messages inside latest/oldest (exclusive unless
// inclusive) of the call's arguments.
func window(ms []*stored, a map[string]any) []*stored {
	latest, _ := a["latest"].(string)
	oldest, _ := a["oldest"].(string)
	inclusive := fmt.Sprint(a["inclusive"]) == "true" || fmt.Sprint(a["inclusive"]) == "1"
	var out []*stored
	for _, m := range ms {
		if latest != "" && (tsLess(latest, m.ts) || (!inclusive && m.ts == latest)) {
			continue
		}
		if oldest != "" && (tsLess(m.ts, oldest) || (!inclusive && m.ts == oldest)) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// page cuts one page from ms at the call's cursor and limit (default
// 100, at most 999) and answers it with has_more and next_cursor.
func (s *Server) page(w http.ResponseWriter, conv string, ms []*stored, a map[string]any) {
	limit, err := strconv.Atoi(fmt.Sprint(a["limit"]))
	if err != nil || limit < 1 {
		limit = 100
	}
	limit = min(limit, 999)
	from := 0
	if c, _ := a["cursor"].(string); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(raw), "next:"))
		if err != nil || err2 != nil || n < 0 || n > len(ms) {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_cursor"})
			return
		}
		from = n
	}
	to := min(from+limit, len(ms))
	var out []map[string]any
	for _, m := range ms[from:to] {
		out = append(out, s.messageJSON(conv, m))
	}
	next := ""
	if to < len(ms) {
		next = base64.StdEncoding.EncodeToString([]byte("next:" + strconv.Itoa(to)))
	}
	writeJSON(w, map[string]any{"ok": true, "messages": out, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}})
}

// readable checks the channel argument of a history call; s.mu is held
// on return when ok.
func (s *Server) readable(w http.ResponseWriter, a map[string]any) (conv string, ok bool) {
	conv, _ = a["channel"].(string)
	s.mu.Lock()
	if _, known := s.kinds[conv]; !known {
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return "", false
	}
	return conv, true
}

// conversationsHistory answers the conversation's top-level messages
// (and thread broadcasts), newest first.
func (s *Server) conversationsHistory(w http.ResponseWriter, r *http.Request) {
	a, _, ok := s.begin(w, r, "conversations.history")
	if !ok {
		return
	}
	conv, ok := s.readable(w, a)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	var top []*stored
	for _, m := range window(s.history[conv], a) {
		if m.threadTS == "" || m.threadTS == m.ts {
			top = append(top, m)
		}
	}
	slices.Reverse(top)
	s.page(w, conv, top, a)
}

// conversationsReplies answers a thread, its parent first, oldest first.
func (s *Server) conversationsReplies(w http.ResponseWriter, r *http.Request) {
	a, _, ok := s.begin(w, r, "conversations.replies")
	if !ok {
		return
	}
	conv, ok := s.readable(w, a)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	ts, _ := a["ts"].(string)
	if s.find(conv, ts) == nil {
		writeJSON(w, map[string]any{"ok": false, "error": "thread_not_found"})
		return
	}
	var thread []*stored
	for _, m := range window(s.history[conv], a) {
		if m.ts == ts || m.threadTS == ts {
			thread = append(thread, m)
		}
	}
	s.page(w, conv, thread, a)
}

func (s *Server) reactionsGet(w http.ResponseWriter, r *http.Request) {
	a, _, ok := s.begin(w, r, "reactions.get")
	if !ok {
		return
	}
	conv, ts, _, ok := s.target(w, a, "timestamp")
	if !ok {
		return
	}
	defer s.mu.Unlock()
	m := s.find(conv, ts)
	if m == nil {
		writeJSON(w, map[string]any{"ok": false, "error": "message_not_found"})
		return
	}
	writeJSON(w, map[string]any{"ok": true, "type": "message", "channel": conv, "message": s.messageJSON(conv, m)})
}

// Hold puts m in its conversation's history without delivering it, as a
// message written before the app was installed, and returns its ts.
func (s *Server) Hold(m Message) string {
	m.User = cmp.Or(m.User, "U0ALICE")
	m.Kind = cmp.Or(m.Kind, "im")
	m.Channel = cmp.Or(m.Channel, defaultChannels[m.Kind])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds[m.Channel] = m.Kind
	ts := s.nextTS()
	s.authors[ts] = m.User
	s.messages[m.Channel+"/"+ts] = m.User
	var files []map[string]any
	for _, f := range m.Files {
		files = append(files, s.share(f))
	}
	s.record(m.Channel, &stored{ts: ts, user: m.User, text: m.Text, threadTS: m.ThreadTS, files: files})
	s.notify()
	return ts
}
