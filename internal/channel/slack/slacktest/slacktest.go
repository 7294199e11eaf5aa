// Package slacktest is a loopback fake of Slack for tests: the Web API
// methods Talon calls (auth.test, apps.connections.open, chat.postMessage
// with Block Kit buttons, chat.update, chat.delete, reactions.add,
// reactions.remove, reactions.get, conversations.info, conversations.open,
// conversations.history, conversations.replies, files.getUploadURLExternal
// with its upload URL, files.completeUploadExternal) over the history it
// keeps (what people said, what the bot posted, what Hold seeded); files
// people share, served at their url_private to the bot token; a Socket
// Mode WebSocket server that says hello, delivers event and interactive
// envelopes, records acknowledgements and redelivers unacknowledged
// envelopes on the next connection as Slack does; and an Events API client
// that POSTs signed events and button presses (or badly signed, or stale,
// or marked as retries) to a Request URL.
//
// It speaks Slack's wire format — JSON shapes, ok:false error bodies, 429
// with Retry-After, WebSocket frames — closely enough that a real Slack
// client accepts it. All methods are safe for concurrent use; the waiting
// helpers take a context and never sleep.
package slacktest

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The identities the fake workspace has.
const (
	BotToken      = "xoxb-1-talon-test-bot-token"
	AppToken      = "xapp-1-A0TEST-talon-test-app-token"
	SigningSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	TeamID        = "T0TEST"
	BotUserID     = "U0BOT"
	BotID         = "B0BOT"
	BotName       = "talonbot"
	AppID         = "A0TEST"
)

// Server is a fake Slack workspace with one installed app.
type Server struct {
	// URL is the Web API base to give the adapter as apiUrl (ends in "/api/").
	URL string

	srv *httptest.Server

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	seq         int
	revoked     map[string]bool // tokens answered token_revoked
	failures    map[string][]Failure
	posted      []Posted
	authors     map[string]string // ts → author user id
	messages    map[string]string // "<conversation>/<ts>" → author, while not deleted
	ims         map[string]string // user id → DM conversation id
	reactions   []Reaction
	updates     []Update
	deletes     []Deletion
	kinds       map[string]string // conversation id → channel_type
	pending     []*queued         // envelopes not acknowledged yet, in order
	acked       []string
	conns       map[*websocket.Conn]bool // live connections; true if it reads
	order       []*websocket.Conn        // live connections, oldest first
	opened      int                      // WebSocket connections accepted so far
	tickets     map[string]bool
	silentNext  bool
	numConns    int // hello's num_connections override; 0 = live count
	requestURL  string
	httpClient  *http.Client
	closed      chan struct{}
	closeOnce   sync.Once
	deliveredTo map[string]int
	files       map[string]*hosted // file id → the file
	uploads     []Uploaded
	// pendingUploads are upload URLs handed out, by file id.
	pendingUploads map[string]*pendingUpload
	history        map[string][]*stored // conversation id → its messages, oldest first
	peopleReacted  []Reaction           // reactions people put on messages
}

// queued is an envelope waiting for its ack.
type queued struct {
	id      string
	typ     string // events_api or interactive
	payload json.RawMessage
	sent    int // how many times it was written to a connection
}

// Posted is one chat.postMessage Slack took.
type Posted struct {
	Channel     string `json:"channel"`
	Text        string `json:"text"`
	ThreadTS    string `json:"thread_ts,omitempty"`
	Mrkdwn      *bool  `json:"mrkdwn,omitempty"`
	UnfurlLinks *bool  `json:"unfurl_links,omitempty"`
	UnfurlMedia *bool  `json:"unfurl_media,omitempty"`
	TS          string `json:"ts"`
	// Sections are the texts of its section blocks and Buttons the
	// buttons of its actions blocks, when it was posted with blocks.
	Sections []string `json:"sections,omitempty"`
	Buttons  []Button `json:"buttons,omitempty"`
}

// Failure is an answer to inject into the next call of a method.
type Failure struct {
	// Error makes the answer {"ok":false,"error":Error}.
	Error  string
	Needed string // with Error "missing_scope"
	// Status answers this HTTP status with an empty body (429 takes
	// RetryAfter seconds).
	Status     int
	RetryAfter int
	// DropResponse does the call (a post is recorded) and then closes
	// the connection without answering: a lost response.
	DropResponse bool
}

// Start runs a fake Slack on loopback until t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		changed:        make(chan struct{}),
		revoked:        map[string]bool{},
		failures:       map[string][]Failure{},
		authors:        map[string]string{},
		messages:       map[string]string{},
		ims:            map[string]string{},
		kinds:          map[string]string{},
		conns:          map[*websocket.Conn]bool{},
		tickets:        map[string]bool{},
		closed:         make(chan struct{}),
		deliveredTo:    map[string]int{},
		files:          map[string]*hosted{},
		pendingUploads: map[string]*pendingUpload{},
		history:        map[string][]*stored{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/auth.test", s.authTest)
	mux.HandleFunc("POST /api/apps.connections.open", s.connectionsOpen)
	mux.HandleFunc("POST /api/chat.postMessage", s.postMessage)
	mux.HandleFunc("POST /api/conversations.info", s.conversationsInfo)
	mux.HandleFunc("POST /api/conversations.open", s.conversationsOpen)
	mux.HandleFunc("POST /api/chat.update", s.chatUpdate)
	mux.HandleFunc("POST /api/chat.delete", s.chatDelete)
	mux.HandleFunc("POST /api/reactions.add", func(w http.ResponseWriter, r *http.Request) { s.react(w, r, "reactions.add") })
	mux.HandleFunc("POST /api/reactions.remove", func(w http.ResponseWriter, r *http.Request) { s.react(w, r, "reactions.remove") })
	mux.HandleFunc("GET /link/", s.socket)
	mux.HandleFunc("POST /api/files.getUploadURLExternal", s.getUploadURL)
	mux.HandleFunc("POST /upload/v1/{id}", s.upload)
	mux.HandleFunc("POST /api/files.completeUploadExternal", s.completeUpload)
	mux.HandleFunc("POST /api/conversations.history", s.conversationsHistory)
	mux.HandleFunc("POST /api/conversations.replies", s.conversationsReplies)
	mux.HandleFunc("POST /api/reactions.get", s.reactionsGet)
	mux.HandleFunc("GET /files-pri/{file}/{name}", s.download)
	mux.HandleFunc("GET /files-pri/{file}/download/{name}", s.download)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/api/"
	s.httpClient = s.srv.Client()
	t.Cleanup(s.Close)
	return s
}

// Close drops every connection and stops the server.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.mu.Lock()
		for c := range s.conns {
			c.CloseNow()
		}
		s.mu.Unlock()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Client is an HTTP client for the fake (plain loopback).
func (s *Server) Client() *http.Client { return s.httpClient }

// notify wakes every waiter; s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond (called with s.mu held) is true or ctx ends.
func (s *Server) waitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slacktest: waiting for %s: %w", what, ctx.Err())
		case <-ch:
		}
	}
}

// Fail makes the next call of method (e.g. "chat.postMessage") answer f.
// Several calls queue in order.
func (s *Server) Fail(method string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f)
}

// Revoke makes every later call with token answer token_revoked.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[token] = true
}

// SetNumConnections makes hello report n connections (as when other
// gateways share the app); 0 reports the live count.
func (s *Server) SetNumConnections(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.numConns = n
}

// SetRequestURL switches event delivery to the HTTP Events API: UserSays
// then POSTs signed events to u instead of sending them over Socket Mode.
func (s *Server) SetRequestURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestURL = u
}

// Sent is every message the bot posted, in order.
func (s *Server) Sent() []Posted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Posted(nil), s.posted...)
}

// WaitSent waits until the bot posted at least n messages and returns them.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Posted, error) {
	err := s.waitFor(ctx, fmt.Sprintf("%d posted messages", n), func() bool { return len(s.posted) >= n })
	return s.Sent(), err
}

// Acked is every envelope_id the app acknowledged, in order.
func (s *Server) Acked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.acked...)
}

// WaitAcked waits until envelopeID was acknowledged.
func (s *Server) WaitAcked(ctx context.Context, envelopeID string) error {
	return s.waitFor(ctx, "ack of "+envelopeID, func() bool {
		for _, id := range s.acked {
			if id == envelopeID {
				return true
			}
		}
		return false
	})
}

// Deliveries is how many times the envelope was written to a connection.
func (s *Server) Deliveries(envelopeID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliveredTo[envelopeID]
}

// WaitDeliveries waits until the envelope was written n times.
func (s *Server) WaitDeliveries(ctx context.Context, envelopeID string, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d deliveries of %s", n, envelopeID), func() bool { return s.deliveredTo[envelopeID] >= n })
}

// Connections is how many Socket Mode connections were accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

// WaitConnections waits until n connections were accepted and are said
// hello to.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d Socket Mode connections", n), func() bool { return s.opened >= n })
}

// Disconnect sends Slack's disconnect message (reason "refresh_requested",
// "warning", "link_disabled") on every connection and closes them.
func (s *Server) Disconnect(reason string) {
	msg, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]string{"host": "applink-fake"}})
	s.mu.Lock()
	conns := s.detach()
	s.mu.Unlock()
	for _, c := range conns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.Write(ctx, websocket.MessageText, msg)
		cancel()
		c.Close(websocket.StatusNormalClosure, "disconnect")
	}
}

// Drop closes every Socket Mode connection without a word, as a network
// failure does.
func (s *Server) Drop() {
	s.mu.Lock()
	conns := s.detach()
	s.mu.Unlock()
	for _, c := range conns {
		c.CloseNow()
	}
}

// detach forgets every live connection at once, so the next hello counts
// only the connections made after it; s.mu is held.
func (s *Server) detach() []*websocket.Conn {
	conns := s.order
	s.order = nil
	clear(s.conns)
	s.notify()
	return conns
}

// SilenceNext makes the next Socket Mode connection say hello and then
// never read again: no pongs, no acks, as a half-dead connection.
func (s *Server) SilenceNext() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silentNext = true
}

// ---- Web API ----

// token checks the Authorization header against want and answers Slack's
// error when it does not fit; ok is false when an answer was written.
func (s *Server) token(w http.ResponseWriter, r *http.Request, want string) bool {
	h := r.Header.Get("Authorization")
	tok, found := strings.CutPrefix(h, "Bearer ")
	if !found {
		if err := r.ParseForm(); err == nil {
			tok = r.PostForm.Get("token")
		}
	}
	s.mu.Lock()
	revoked := s.revoked[tok]
	s.mu.Unlock()
	switch {
	case tok == "":
		writeJSON(w, map[string]any{"ok": false, "error": "not_authed"})
	case revoked:
		writeJSON(w, map[string]any{"ok": false, "error": "token_revoked"})
	case tok == want:
		return true
	case strings.HasPrefix(tok, "xoxb-") && want == AppToken, strings.HasPrefix(tok, "xapp-") && want == BotToken:
		writeJSON(w, map[string]any{"ok": false, "error": "not_allowed_token_type"})
	default:
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
	}
	return false
}

// failure pops the next injected failure of method and answers it; done
// is true when the answer was written. A DropResponse failure is returned
// for the caller to do the work first.
func (s *Server) failure(w http.ResponseWriter, method string) (drop, done bool) {
	s.mu.Lock()
	q := s.failures[method]
	if len(q) == 0 {
		s.mu.Unlock()
		return false, false
	}
	f := q[0]
	s.failures[method] = q[1:]
	s.mu.Unlock()
	switch {
	case f.DropResponse:
		return true, false
	case f.Status == http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(max(f.RetryAfter, 1)))
		w.WriteHeader(f.Status)
	case f.Status != 0:
		w.WriteHeader(f.Status)
	default:
		body := map[string]any{"ok": false, "error": f.Error}
		if f.Needed != "" {
			body["needed"], body["provided"] = f.Needed, "chat:write"
		}
		writeJSON(w, body)
	}
	return false, true
}

// dropResponse closes the request's connection without an answer.
func dropResponse(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (s *Server) authTest(w http.ResponseWriter, r *http.Request) {
	if !s.token(w, r, BotToken) {
		return
	}
	if _, done := s.failure(w, "auth.test"); done {
		return
	}
	writeJSON(w, map[string]any{
		"ok": true, "url": "https://talon-test.slack.com/", "team": "Talon Test", "user": BotName,
		"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID, "is_enterprise_install": false,
	})
}

func (s *Server) connectionsOpen(w http.ResponseWriter, r *http.Request) {
	if !s.token(w, r, AppToken) {
		return
	}
	if _, done := s.failure(w, "apps.connections.open"); done {
		return
	}
	s.mu.Lock()
	s.seq++
	ticket := fmt.Sprintf("ticket-%d", s.seq)
	s.tickets[ticket] = true
	s.mu.Unlock()
	u := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/link/?ticket=" + ticket + "&app_id=" + AppID
	writeJSON(w, map[string]any{"ok": true, "url": u})
}

// args reads a Web API call's arguments, JSON or form.
func args(r *http.Request) (map[string]any, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if ct == "application/json" {
		err := json.Unmarshal(body, &out)
		return out, err
	}
	v, err := url.ParseQuery(string(body))
	for k := range v {
		out[k] = v.Get(k)
	}
	return out, err
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	if !s.token(w, r, BotToken) {
		return
	}
	a, err := args(r)
	if err != nil {
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_json"})
		return
	}
	drop, done := s.failure(w, "chat.postMessage")
	if done {
		return
	}
	var p Posted
	p.Channel, _ = a["channel"].(string)
	p.Text, _ = a["text"].(string)
	p.ThreadTS, _ = a["thread_ts"].(string)
	p.Mrkdwn, p.UnfurlLinks, p.UnfurlMedia = boolArg(a["mrkdwn"]), boolArg(a["unfurl_links"]), boolArg(a["unfurl_media"])
	if b, ok := a["blocks"]; ok {
		var err error
		if p.Sections, p.Buttons, err = parseBlocks(b); err != nil {
			writeJSON(w, map[string]any{"ok": false, "error": "invalid_blocks", "errors": []string{err.Error()}})
			return
		}
	}
	s.mu.Lock()
	_, known := s.kinds[p.Channel]
	isUser := strings.HasPrefix(p.Channel, "U") || strings.HasPrefix(p.Channel, "W")
	switch {
	case p.Channel == "" || (!known && !isUser):
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	case p.Text == "":
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "no_text"})
		return
	case len([]rune(p.Text)) > 40000:
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ok": false, "error": "msg_too_long"})
		return
	}
	p.TS = s.nextTS()
	s.authors[p.TS] = BotUserID
	conv := p.Channel
	if isUser {
		conv = s.imOf(p.Channel)
	}
	s.messages[conv+"/"+p.TS] = BotUserID
	s.record(conv, &stored{ts: p.TS, user: BotUserID, botID: BotID, text: p.Text, threadTS: p.ThreadTS})
	s.posted = append(s.posted, p)
	s.notify()
	s.mu.Unlock()
	if drop {
		dropResponse(w)
		return
	}
	writeJSON(w, map[string]any{"ok": true, "channel": conv, "ts": p.TS, "message": map[string]any{
		"type": "message", "user": BotUserID, "bot_id": BotID, "text": p.Text, "ts": p.TS, "thread_ts": p.ThreadTS,
	}})
}

func boolArg(v any) *bool {
	switch x := v.(type) {
	case bool:
		return &x
	case string:
		b := x == "true" || x == "1"
		return &b
	}
	return nil
}

func (s *Server) conversationsInfo(w http.ResponseWriter, r *http.Request) {
	if !s.token(w, r, BotToken) {
		return
	}
	if _, done := s.failure(w, "conversations.info"); done {
		return
	}
	a, _ := args(r)
	id, _ := a["channel"].(string)
	if id == "" {
		id = r.URL.Query().Get("channel")
	}
	s.mu.Lock()
	kind, ok := s.kinds[id]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	writeJSON(w, map[string]any{"ok": true, "channel": map[string]any{
		"id": id, "is_channel": kind == "channel", "is_group": kind == "group", "is_im": kind == "im",
		"is_mpim": kind == "mpim", "is_private": kind != "channel",
	}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}

// nextTS is a fresh message ts; s.mu is held.
func (s *Server) nextTS() string {
	s.seq++
	return fmt.Sprintf("%d.%06d", 1777000000+s.seq, s.seq)
}

// ---- Socket Mode ----

func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket]
	delete(s.tickets, ticket)
	silent := s.silentNext
	s.silentNext = false
	s.mu.Unlock()
	if !valid {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	s.mu.Lock()
	s.conns[c] = !silent
	s.order = append(s.order, c)
	s.opened++
	n := s.numConns
	if n == 0 {
		n = len(s.conns)
	}
	hello, _ := json.Marshal(map[string]any{
		"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "applink-fake", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]string{"app_id": AppID},
	})
	// Hello, then every envelope not acknowledged on an earlier
	// connection, under the lock so a new event cannot overtake them.
	err = c.Write(r.Context(), websocket.MessageText, hello)
	for _, q := range s.pending {
		if err == nil {
			err = s.write(r.Context(), c, q)
		}
	}
	s.notify()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		for i, o := range s.order {
			if o == c {
				s.order = append(s.order[:i:i], s.order[i+1:]...)
				break
			}
		}
		s.notify()
		s.mu.Unlock()
	}()
	if err != nil {
		return
	}
	if silent {
		<-s.closed
		return
	}
	s.readAcks(r.Context(), c)
}

// readAcks records the app's acknowledgements until the connection ends.
func (s *Server) readAcks(ctx context.Context, c *websocket.Conn) {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		for i, q := range s.pending {
			if q.id == ack.EnvelopeID {
				s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
				s.acked = append(s.acked, ack.EnvelopeID)
				break
			}
		}
		s.notify()
		s.mu.Unlock()
	}
}

// newest is the most recent connection that reads; s.mu is held.
func (s *Server) newest() *websocket.Conn {
	for i := len(s.order) - 1; i >= 0; i-- {
		if c := s.order[i]; s.conns[c] {
			return c
		}
	}
	return nil
}

// write sends one envelope; s.mu is held.
func (s *Server) write(ctx context.Context, c *websocket.Conn, q *queued) error {
	env := map[string]any{
		"envelope_id": q.id, "type": q.typ, "accepts_response_payload": q.typ == "interactive",
		"retry_attempt": q.sent, "payload": q.payload,
	}
	if q.sent > 0 {
		env["retry_reason"] = "timeout"
	}
	b, _ := json.Marshal(env)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Write(wctx, websocket.MessageText, b); err != nil {
		return err
	}
	q.sent++
	s.deliveredTo[q.id]++
	return nil
}

// enqueue queues one Events API payload for Socket Mode delivery and
// writes it to a live connection if there is one.
func (s *Server) enqueue(typ string, payload []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	q := &queued{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", s.seq), typ: typ, payload: payload}
	s.pending = append(s.pending, q)
	// Slack picks any connection; the fake picks the newest that
	// still reads, so a silenced one does not swallow new events.
	if c := s.newest(); c != nil {
		s.write(context.Background(), c, q)
	}
	s.notify()
	return q.id
}

// ---- Events ----

// Message is something a person writes.
type Message struct {
	User string // default "U0ALICE"
	// Kind is the conversation's channel_type: "im" (default), "mpim",
	// "channel" or "group" (a private channel).
	Kind    string
	Channel string // default "D0ALICE" for im, "G0MPIM", "C0GENERAL", "G0PRIVATE"
	Text    string
	// Mention puts "<@BOT> " in front of the text; outside a DM Slack
	// then also sends an app_mention event for the same message.
	Mention bool
	// ThreadTS makes the message a reply in that thread.
	ThreadTS string
	Subtype  string // e.g. "message_changed", "bot_message"
	BotID    string // set for a message another bot wrote
	// Files are shared with the message (subtype file_share), served
	// at their url_private to the bot token.
	Files []File
}

// Event is one event the fake delivered.
type Event struct {
	ID         string // event_id
	Type       string // "message" or "app_mention"
	TS         string // the message's ts
	Channel    string
	EnvelopeID string // Socket Mode
	Payload    []byte // the event_callback body
	// Status and Body are the Request URL's answer (HTTP mode).
	Status int
	Body   string
}

var defaultChannels = map[string]string{"im": "D0ALICE", "mpim": "G0MPIM", "channel": "C0GENERAL", "group": "G0PRIVATE"}

// UserSays delivers m as Slack would — over Socket Mode, or as signed POSTs
// to the Request URL once SetRequestURL was called — and returns the
// events: one, or two (message and app_mention) for a mention outside a
// DM.
func (s *Server) UserSays(ctx context.Context, m Message) ([]Event, error) {
	if m.User == "" && m.BotID == "" {
		m.User = "U0ALICE"
	}
	if m.Kind == "" {
		m.Kind = "im"
	}
	if m.Channel == "" {
		m.Channel = defaultChannels[m.Kind]
	}
	if m.Mention {
		m.Text = "<@" + BotUserID + "> " + m.Text
	}
	s.mu.Lock()
	s.kinds[m.Channel] = m.Kind
	ts := s.nextTS()
	s.authors[ts] = m.User
	s.messages[m.Channel+"/"+ts] = cmp.Or(m.User, m.BotID)
	if m.Kind == "im" && m.User != "" {
		s.ims[m.User] = m.Channel
	}
	parent := s.authors[m.ThreadTS]
	var files []map[string]any
	for _, f := range m.Files {
		files = append(files, s.share(f))
	}
	s.record(m.Channel, &stored{ts: ts, user: m.User, botID: m.BotID, text: m.Text, threadTS: m.ThreadTS, files: files})
	s.mu.Unlock()

	ev := map[string]any{
		"type": "message", "channel": m.Channel, "channel_type": m.Kind, "text": m.Text, "ts": ts,
		"event_ts": ts, "team": TeamID,
	}
	if m.User != "" {
		ev["user"] = m.User
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
	}
	if len(files) > 0 {
		ev["files"], ev["upload"] = files, false
		m.Subtype = cmp.Or(m.Subtype, "file_share")
	}
	if m.Subtype != "" {
		ev["subtype"] = m.Subtype
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
		if parent != "" {
			ev["parent_user_id"] = parent
		}
	}
	evs := []map[string]any{ev}
	if m.Mention && m.Kind != "im" && (m.Subtype == "" || m.Subtype == "file_share") {
		mention := map[string]any{}
		for k, v := range ev {
			mention[k] = v
		}
		mention["type"] = "app_mention"
		delete(mention, "channel_type") // Slack's app_mention has none
		evs = append(evs, mention)
	}
	var out []Event
	for _, e := range evs {
		got, err := s.Inject(ctx, e)
		if err != nil {
			return out, err
		}
		got.TS, got.Channel = ts, m.Channel
		out = append(out, got)
	}
	return out, nil
}

// Inject wraps an event object in an event_callback and delivers it as
// UserSays does; use it for events UserSays does not make.
func (s *Server) Inject(ctx context.Context, event map[string]any) (Event, error) {
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("Ev%08dTEST", s.seq)
	target := s.requestURL
	s.mu.Unlock()
	payload, err := json.Marshal(map[string]any{
		"token": "verification-token-unused", "team_id": TeamID, "api_app_id": AppID, "event": event,
		"type": "event_callback", "event_id": id, "event_time": 1777000000,
		"authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	})
	if err != nil {
		return Event{}, fmt.Errorf("slacktest: encoding the event: %w", err)
	}
	typ, _ := event["type"].(string)
	e := Event{ID: id, Type: typ, Payload: payload}
	if target == "" {
		e.EnvelopeID = s.enqueue("events_api", payload)
		return e, nil
	}
	e.Status, e.Body, err = s.Post(ctx, target, payload, PostOptions{})
	return e, err
}

// PostOptions shape one Events API request.
type PostOptions struct {
	// BadSignature signs with the wrong secret.
	BadSignature bool
	// Age makes the timestamp this much older than Now.
	Age time.Duration
	// RetryNum marks the request as Slack's retry number n (1–3).
	RetryNum int
	// Now is the sender's clock; default time.Now.
	Now func() time.Time
	// ContentType overrides application/json.
	ContentType string
}

// Post sends body to a Request URL signed as Slack signs it and returns
// the answer's status and body.
func (s *Server) Post(ctx context.Context, target string, body []byte, o PostOptions) (int, string, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	ts := strconv.FormatInt(now().Add(-o.Age).Unix(), 10)
	secret := SigningSecret
	if o.BadSignature {
		secret = "not-the-signing-secret"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(string(body)))
	if err != nil {
		return 0, "", fmt.Errorf("slacktest: building the request: %w", err)
	}
	ct := o.ContentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", Sign(secret, ts, body))
	if o.RetryNum > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(o.RetryNum))
		req.Header.Set("X-Slack-Retry-Reason", "http_error")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("slacktest: posting the event: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, "", errors.Join(errors.New("slacktest: reading the answer"), err)
	}
	return resp.StatusCode, string(b), nil
}

// Sign is Slack's X-Slack-Signature of body at timestamp ts: "v0=" + hex
// HMAC-SHA256(secret, "v0:<ts>:<body>"). It is written here again rather
// than taken from the adapter so a mistake there cannot hide in both.
func Sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
