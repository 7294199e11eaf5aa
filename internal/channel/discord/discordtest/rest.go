package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func (s *Server) routes(mux *http.ServeMux) {
	// Clients add "/?v=10…" or "?v=10…" to the URL: serve both paths.
	for _, p := range []string{"/gateway", "/gateway/{$}", "/gateway-resume", "/gateway-resume/{$}"} {
		mux.HandleFunc("GET "+p, s.gateway) // -resume is READY's resume_gateway_url
	}
	mux.HandleFunc("GET /attachments/{cid}/{aid}/{name}", s.cdn) // the CDN: signed URLs, no token
	api := func(pattern string, h func(http.ResponseWriter, *http.Request)) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.HandleFunc(method+" /api/v10"+path, s.api(h))
	}
	api("GET /users/@me", s.me)
	api("GET /applications/@me", s.application)
	api("GET /gateway/bot", s.gatewayBot)
	mux.HandleFunc("GET /api/v10/gateway", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]string{"url": s.GatewayURL}) // needs no token, as on Discord
	})
	api("GET /channels/{id}", s.channel)
	api("POST /channels/{id}/messages", s.post)
	api("POST /channels/{id}/typing", s.typingIn)
	api("GET /channels/{id}/messages", s.history)
	api("GET /channels/{id}/messages/{mid}", s.getMessage)
	api("PATCH /channels/{id}/messages/{mid}", s.edit)
	api("DELETE /channels/{id}/messages/{mid}", s.deleteMessage)
	api("PUT /channels/{id}/messages/{mid}/reactions/{emoji}/@me", s.react)
	api("DELETE /channels/{id}/messages/{mid}/reactions/{emoji}/@me", s.react)
	api("POST /users/@me/channels", s.openDM)
	mux.HandleFunc("POST /api/v10/interactions/{id}/{token}/callback", s.callback)
	mux.HandleFunc("/api/v10/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, 0, "404: Not Found")
	})
}

// api checks the token and serves injected 429s before h.
func (s *Server) api(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+strings.TrimPrefix(r.URL.Path, "/api/v10"))
		var rl *RateLimit
		if len(s.rateLimits) > 0 {
			rl = &s.rateLimits[0]
			s.rateLimits = s.rateLimits[1:]
		}
		s.change()
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bot "+Token {
			fail(w, http.StatusUnauthorized, 0, "401: Unauthorized")
			return
		}
		if rl != nil {
			secs := rl.RetryAfter.Seconds()
			w.Header().Set("Retry-After", strconv.Itoa(int(secs+0.999)))
			if rl.Global {
				w.Header().Set("X-RateLimit-Global", "true")
				w.Header().Set("X-RateLimit-Scope", "global")
			} else {
				w.Header().Set("X-RateLimit-Scope", "user")
			}
			reply(w, http.StatusTooManyRequests, map[string]any{
				"message": "You are being rate limited.", "retry_after": secs, "global": rl.Global,
			})
			return
		}
		h(w, r)
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status, code int, msg string) {
	reply(w, status, map[string]any{"message": msg, "code": code})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, user{ID: BotID, Username: BotName, Bot: true})
}

func (s *Server) application(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	flags := s.appFlags()
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"id": BotID, "name": BotName, "flags": flags, "bot_public": false})
}

func (s *Server) gatewayBot(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, map[string]any{
		"url":    s.GatewayURL,
		"shards": 1,
		"session_start_limit": map[string]int{
			"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1,
		},
	})
}

func (s *Server) channel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ch, ok := s.channels[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		fail(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	reply(w, http.StatusOK, ch)
}

func (s *Server) typingIn(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[r.PathValue("id")]; !ok {
		fail(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	s.typing = append(s.typing, r.PathValue("id"))
	s.change()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) openDM(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RecipientID string `json:"recipient_id"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil || in.RecipientID == "" {
		fail(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	s.mu.Lock()
	ch := s.dmWith(in.RecipientID)
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"id": ch.ID, "type": 1, "recipients": []user{{ID: in.RecipientID, Username: "user" + in.RecipientID}}})
}

// dmWith is the DM channel with a user, created on first use. Call with
// s.mu held.
func (s *Server) dmWith(userID string) channel {
	for _, ch := range s.channels {
		if ch.Type == 1 && ch.dmUser == userID {
			return ch
		}
	}
	ch := channel{ID: s.id(), Type: 1, dmUser: userID}
	s.channels[ch.ID] = ch
	return ch
}

// post is POST /channels/{id}/messages, honouring nonce + enforce_nonce
// as Discord does: a second post with the same nonce returns the first
// message and creates nothing.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	limit := s.uploadLimit
	s.mu.Unlock()
	in, files, ferr := readPost(r, limit)
	var poll *Poll
	var btns []Button
	if ferr == nil {
		poll, btns, ferr = in.check(files)
	}
	nonce, err := nonceText(in.Nonce)
	if ferr == nil && err != nil {
		ferr = invalid("nonce", err.Error())
	}
	if ferr != nil {
		fail(w, ferr.status, ferr.code, ferr.msg)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	chID := r.PathValue("id")
	ch, ok := s.channels[chID]
	if !ok {
		fail(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	if id, ok := s.nonces[nonce]; ok && in.EnforceNonce && nonce != "" {
		reply(w, http.StatusOK, s.messages[id])
		return
	}
	failure, refused := s.nextFailure(w)
	if refused {
		return
	}
	m := message{
		ID: s.id(), ChannelID: chID, GuildID: ch.GuildID, Author: user{ID: BotID, Username: BotName, Bot: true},
		Content: in.Content, Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Flags: in.Flags, Nonce: nonce,
		Mentions: []user{}, MentionRoles: []string{}, Attachments: []attachment{}, Components: in.Components,
	}
	if in.Poll != nil {
		m.Poll, _ = json.Marshal(in.Poll)
	}
	for _, f := range files {
		m.Attachments = append(m.Attachments, s.attach(chID, f))
	}
	sent := Sent{ID: m.ID, ChannelID: chID, Content: in.Content, Nonce: nonce, EnforceNonce: in.EnforceNonce,
		Flags: in.Flags, AllowedMentions: in.AllowedMentions, Files: files, Poll: poll, Buttons: btns}
	if ref := in.MessageReference; ref != nil {
		sent.ReplyTo, sent.FailIfNotExists = ref.MessageID, ref.FailIfNotExists
		if orig, ok := s.messages[ref.MessageID]; ok {
			m.Type = 19
			m.MessageReference = &messageRef{MessageID: orig.ID, ChannelID: orig.ChannelID, GuildID: orig.GuildID}
			m.ReferencedMessage, _ = json.Marshal(orig)
		} else if ref.FailIfNotExists == nil || *ref.FailIfNotExists {
			fail(w, http.StatusBadRequest, 50035, "Invalid Form Body: message_reference: Unknown message")
			return
		}
	}
	s.messages[m.ID] = m
	if nonce != "" && in.EnforceNonce {
		s.nonces[nonce] = m.ID
	}
	s.sent = append(s.sent, sent)
	s.emit("MESSAGE_CREATE", m) // Discord echoes the bot's own messages
	s.change()
	switch {
	case failure == LoseAnswer && hangUp(w):
		return
	case failure == NoID:
		reply(w, http.StatusOK, map[string]any{"channel_id": chID, "content": in.Content})
		return
	}
	reply(w, http.StatusOK, m)
}

// nextFailure takes the next injected failure of a message write; a
// refusal (ServerError, Forbidden) is answered here and reported true.
// Call with s.mu held.
func (s *Server) nextFailure(w http.ResponseWriter) (SendFailure, bool) {
	var f SendFailure
	if len(s.sendFailures) > 0 {
		f, s.sendFailures = s.sendFailures[0], s.sendFailures[1:]
	}
	switch f {
	case ServerError:
		fail(w, http.StatusInternalServerError, 0, "500: Internal Server Error")
		return f, true
	case Forbidden:
		fail(w, http.StatusForbidden, 50013, "Missing Permissions")
		return f, true
	}
	return f, false
}

// hangUp drops the connection unanswered, as when an answer is lost.
func hangUp(w http.ResponseWriter) bool {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

// nonceText reads a nonce as Discord takes it: a string of at most 25
// characters or an integer.
func nonceText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", fmt.Errorf("must be a string or an integer")
		}
		return strconv.FormatInt(n, 10), nil
	}
	if utf8.RuneCountInString(s) > 25 {
		return "", fmt.Errorf("must be 25 or fewer in length")
	}
	return s, nil
}
