package discordtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// maxLog bounds the events a session keeps for RESUME.
const maxLog = 1000

// privilegedIntents are the intents the Developer Portal must enable.
const privilegedIntents = IntentGuildMembers | 1<<8 | IntentMessageContent // 1<<8 is GUILD_PRESENCES

// allIntents is every intent bit Discord defines (up to 1<<25).
const allIntents = 1<<26 - 1

// session is a gateway session: what a RESUME replays.
type session struct {
	id      string
	seq     int64
	intents int
	log     []event
}

type event struct {
	seq int64
	t   string
	d   json.RawMessage
}

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}

func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	hold := s.hold
	s.mu.Unlock()
	select {
	case <-hold:
	case <-s.ctx.Done():
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	s.mu.Lock()
	s.dials = append(s.dials, path)
	broken := s.resumeDown && path == "/gateway-resume"
	s.mu.Unlock()
	if broken {
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.SetReadLimit(1 << 20)
	if q := r.URL.Query(); q.Get("v") != "10" || q.Get("encoding") != "json" {
		c.Close(4012, "Invalid API version.")
		return
	}
	s.mu.Lock()
	if s.conn != nil {
		s.conn.CloseNow()
	}
	s.conn, s.connected = c, false
	hb := s.heartbeat
	s.change()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.conn == c {
			s.conn, s.connected = nil, false
			s.change()
		}
		s.mu.Unlock()
		c.CloseNow()
	}()
	if write(s.ctx, c, 10, map[string]int64{"heartbeat_interval": hb.Milliseconds()}, nil, "") != nil {
		return
	}
	for {
		_, data, err := c.Read(s.ctx)
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(data, &f) != nil {
			c.Close(4002, "Error while decoding payload.")
			return
		}
		if !s.handle(c, f) {
			return
		}
	}
}

// handle answers one frame from the bot; false ends the connection.
func (s *Server) handle(c *websocket.Conn, f frame) bool {
	switch f.Op {
	case 1:
		var seq *int64
		json.Unmarshal(f.D, &seq) // null or a number; anything else counts as null
		s.mu.Lock()
		s.beats++
		s.beatSeq = seq
		noACK := s.noACK
		s.change()
		s.mu.Unlock()
		return noACK || write(s.ctx, c, 11, nil, nil, "") == nil
	case 2:
		return s.identified(c, f.D)
	case 6:
		return s.resumed(c, f.D)
	default:
		c.Close(4001, "Unknown opcode.")
		return false
	}
}

func (s *Server) identified(c *websocket.Conn, d json.RawMessage) bool {
	var id struct {
		Token      string          `json:"token"`
		Intents    *int            `json:"intents"`
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(d, &id) != nil || id.Intents == nil || len(id.Properties) == 0 {
		c.Close(4002, "Error while decoding payload.")
		return false
	}
	s.mu.Lock()
	s.identify = append(s.identify, Identify{Token: id.Token, Intents: *id.Intents})
	privileged := s.privileged
	s.change()
	s.mu.Unlock()
	switch {
	case !tokenOK(id.Token):
		c.Close(4004, "Authentication failed.")
		return false
	case *id.Intents&^allIntents != 0 || *id.Intents < 0:
		c.Close(4013, "Invalid intent(s).")
		return false
	case *id.Intents&privilegedIntents&^privileged != 0:
		c.Close(4014, "Disallowed intent(s).")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c {
		return false
	}
	s.sess = &session{id: newSessionID(), intents: *id.Intents}
	s.connected = true
	s.emit("READY", map[string]any{
		"v":                  10,
		"user":               user{ID: BotID, Username: BotName, Bot: true},
		"session_id":         s.sess.id,
		"resume_gateway_url": s.GatewayURL + "-resume",
		"guilds":             []map[string]any{{"id": GuildID, "unavailable": true}},
		"application":        map[string]any{"id": BotID, "flags": s.appFlags()},
	})
	s.emit("GUILD_CREATE", s.guildCreate())
	s.readyCount++
	s.change()
	return true
}

func (s *Server) resumed(c *websocket.Conn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if json.Unmarshal(d, &rs) != nil {
		c.Close(4002, "Error while decoding payload.")
		return false
	}
	if !tokenOK(rs.Token) {
		c.Close(4004, "Authentication failed.")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != c {
		return false
	}
	if s.sess == nil || s.sess.id != rs.SessionID {
		return write(s.ctx, c, 9, false, nil, "") == nil
	}
	for _, e := range s.sess.log {
		if e.seq > rs.Seq && write(s.ctx, c, 0, e.d, &e.seq, e.t) != nil {
			return false
		}
	}
	s.connected = true
	s.emit("RESUMED", map[string]any{})
	s.resumes++
	s.change()
	return true
}

// emit dispatches an event in the live session, keeping it for RESUME;
// with nobody connected it is only kept. Call with s.mu held.
func (s *Server) emit(t string, d any) {
	if s.sess == nil {
		return
	}
	data, err := json.Marshal(d)
	if err != nil {
		return // the fake's own types always encode
	}
	s.sess.seq++
	e := event{seq: s.sess.seq, t: t, d: data}
	s.sess.log = append(s.sess.log, e)
	if len(s.sess.log) > maxLog {
		s.sess.log = s.sess.log[1:]
	}
	if s.connected && s.conn != nil {
		if write(s.ctx, s.conn, 0, e.d, &e.seq, t) != nil {
			s.conn.CloseNow()
		}
	}
}

func write(ctx context.Context, c *websocket.Conn, op int, d any, seq *int64, t string) error {
	f := struct {
		Op int     `json:"op"`
		D  any     `json:"d"`
		S  *int64  `json:"s"`
		T  *string `json:"t"`
	}{Op: op, D: d, S: seq}
	if t != "" {
		f.T = &t
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, data)
}

// tokenOK checks a gateway token; Discord takes it with or without the
// "Bot " prefix the REST header needs (discordgo sends it).
func tokenOK(t string) bool {
	return strings.TrimPrefix(t, "Bot ") == Token
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) guildCreate() map[string]any {
	var chans, threads []channel
	for _, ch := range s.channels {
		switch {
		case ch.GuildID != GuildID || ch.hidden:
		case ch.Type == 11 || ch.Type == 12:
			threads = append(threads, ch)
		default:
			chans = append(chans, ch)
		}
	}
	return map[string]any{
		"id":           GuildID,
		"name":         "Test Guild",
		"unavailable":  false,
		"member_count": 3,
		"roles": []map[string]any{
			{"id": GuildID, "name": "@everyone"},
			{"id": BotRoleID, "name": BotName, "managed": true},
			{"id": OtherRoleID, "name": "humans"},
		},
		"channels": chans,
		"threads":  threads,
		"members": []map[string]any{
			{"user": user{ID: BotID, Username: BotName, Bot: true}, "roles": []string{BotRoleID}},
		},
	}
}

// appFlags are the application flags GET /applications/@me shows for the
// enabled privileged intents. Call with s.mu held.
func (s *Server) appFlags() int {
	f := 0
	if s.privileged&IntentGuildMembers != 0 {
		f |= 1 << 15 // GATEWAY_GUILD_MEMBERS_LIMITED
	}
	if s.privileged&IntentMessageContent != 0 {
		f |= 1 << 19 // GATEWAY_MESSAGE_CONTENT_LIMITED
	}
	return f
}

// Kick drops the bot's gateway connection without a close frame, as a
// network failure would; the session stays resumable.
func (s *Server) Kick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.CloseNow()
		s.conn, s.connected = nil, false
		s.change()
	}
}

// Hold makes new gateway connections wait until release is called, so a
// test can act while the bot is away.
func (s *Server) Hold() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.hold = ch
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// CloseWith closes the bot's gateway connection with a close code.
func (s *Server) CloseWith(code int, reason string) {
	s.mu.Lock()
	c := s.conn
	s.connected = false
	s.change()
	s.mu.Unlock()
	if c != nil {
		c.Close(websocket.StatusCode(code), reason)
	}
}

// InvalidateSession sends INVALID_SESSION; a non-resumable one is
// forgotten, so the bot must IDENTIFY again.
func (s *Server) InvalidateSession(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !resumable {
		s.sess = nil
	}
	if s.conn != nil {
		s.connected = false
		write(s.ctx, s.conn, 9, resumable, nil, "")
		s.change()
	}
}

// SendRaw writes a text frame as it is to the bot's connection, for
// tests of what the bot does with a malformed one. With seq > 0 it is
// also kept in the session as a dispatch of type t for RESUME.
func (s *Server) SendRaw(frame string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		defer cancel()
		s.conn.Write(ctx, websocket.MessageText, []byte(frame))
	}
}

// Dispatch sends an event of type t with data d (any JSON, valid for
// Discord or not) in the live session, with the next sequence number.
func (s *Server) Dispatch(t string, d json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(t, d)
}

// Heartbeats is how many heartbeats the gateway received, and the
// sequence number the last one carried (nil for null).
func (s *Server) Heartbeats() (int, *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.beats, s.beatSeq
}

// Seq is the sequence number of the live session's last event.
func (s *Server) Seq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return 0
	}
	return s.sess.seq
}

// BreakResumeURL makes READY's resume_gateway_url refuse connections
// (503), as a gateway node that went away would.
func (s *Server) BreakResumeURL() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resumeDown = true
}

// Dials is the path of every gateway connection the bot opened
// ("/gateway", or "/gateway-resume" for READY's resume_gateway_url).
func (s *Server) Dials() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.dials...)
}

// Reconnect sends op 7 RECONNECT.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		write(s.ctx, s.conn, 7, nil, nil, "")
	}
}

// ExpireSession forgets the session, as Discord does some minutes after a
// disconnect: a RESUME then gets INVALID_SESSION.
func (s *Server) ExpireSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess = nil
}
