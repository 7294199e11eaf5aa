// Package tgtest is a fake Telegram Bot API on a loopback httptest
// server, for tests of the telegram transport and end-to-end tests. It
// speaks the real wire shapes ({"ok":true,"result":…} and
// {"ok":false,"error_code":…,"description":…}), checks the token in the
// /bot<TOKEN>/<method> path, and implements getMe, getUpdates (long
// polling with offset and timeout, 409 when a second poller overlaps),
// deleteWebhook, setWebhook (then posts updates to the webhook with the
// secret header, redelivering on any answer but 200), sendMessage
// (validating HTML as Telegram does, and an inline keyboard's buttons),
// sendChatAction, editMessageText (the bot's own messages only),
// deleteMessage, setMessageReaction (one emoji of Telegram's default
// reaction list, or none), getFile and the file download path for files
// users sent (Say.File), sendPhoto, sendDocument and sendVoice
// (multipart, read back with Uploads), sendPoll (InputPollOption objects, open_period
// 5-600; Polls) and answerCallbackQuery for presses injected with
// UserPresses (Answers, WaitAnswers).
//
// Where it is simpler than Telegram: parse modes other than HTML are
// refused, any non-zero chat id exists, a webhook may be any https URL
// (Telegram also limits ports), a refused webhook delivery is retried
// after RetryDelay rather than Telegram's growing delays, an edit is
// "not modified" when its text and parse mode are the message's (not
// when only the markup differs but the entities agree), and any known
// message may be deleted (Telegram limits that by age and rights), a
// "photo" is any bytes that start as JPEG or PNG do (sized 1280×853
// whatever they hold), a voice note is an upload typed or named as Ogg
// Opus, MP3 or M4A (anything else sent with sendVoice comes back as a
// document, as Telegram says it may) whose duration is read only from
// an Ogg stream's last granule position, and a press is answered at any time (Telegram
// gives up after a while).
package tgtest

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// User is a Telegram user (or bot).
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a chat as Telegram describes it.
type Chat struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title,omitempty"`
	IsForum bool   `json:"is_forum,omitempty"`
}

// Entity is a MessageEntity; offsets and lengths count UTF-16 units.
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	User   *User  `json:"user,omitempty"`
}

// Message is a Telegram message.
type Message struct {
	MessageID       int64    `json:"message_id"`
	MessageThreadID int64    `json:"message_thread_id,omitempty"`
	IsTopicMessage  bool     `json:"is_topic_message,omitempty"`
	From            *User    `json:"from,omitempty"`
	Chat            Chat     `json:"chat"`
	Date            int64    `json:"date"`
	Text            string   `json:"text,omitempty"`
	Entities        []Entity `json:"entities,omitempty"`
	ReplyToMessage  *Message `json:"reply_to_message,omitempty"`
	Caption         string   `json:"caption,omitempty"`
	CaptionEntities []Entity `json:"caption_entities,omitempty"`
	Photo           []File   `json:"photo,omitempty"`
	Document        *File    `json:"document,omitempty"`
	Audio           *File    `json:"audio,omitempty"`
	Voice           *File    `json:"voice,omitempty"`
	Video           *File    `json:"video,omitempty"`
	VideoNote       *File    `json:"video_note,omitempty"`
	Sticker         *File    `json:"sticker,omitempty"`
	Poll            *Poll    `json:"poll,omitempty"`
	ReplyMarkup     *Markup  `json:"reply_markup,omitempty"`

	source string // parse mode and text as the bot sent them, for edits
}

// Sent is a message the bot sent, as the fake received it.
type Sent struct {
	MessageID     int64
	ChatID        string // the chat_id parameter as given: a number or @username
	ThreadID      int64
	Text          string // text as sent (HTML when ParseMode is "HTML")
	ParseMode     string
	ReplyTo       int64
	NoLinkPreview bool
	Buttons       [][]Button // reply_markup's inline_keyboard, rows of buttons
}

// Edit is an editMessageText the fake carried out.
type Edit struct {
	ChatID        string
	MessageID     int64
	Text          string // as sent (HTML when ParseMode is "HTML")
	ParseMode     string
	NoLinkPreview bool
}

// Reaction is a setMessageReaction the fake carried out; Emoji "" took
// the bot's reaction off.
type Reaction struct {
	ChatID    string
	MessageID int64
	Emoji     string
}

// Deletion is a deleteMessage the fake carried out.
type Deletion struct {
	ChatID    string
	MessageID int64
}

// Action is a sendChatAction call.
type Action struct {
	ChatID   string
	ThreadID int64
	Action   string
}

// Failure is an answer the fake gives instead of the real one.
type Failure struct {
	Code            int
	Description     string
	RetryAfter      int   // parameters.retry_after
	MigrateToChatID int64 // parameters.migrate_to_chat_id
	// Drop reads the request, carries it out (a sendMessage is
	// delivered, an edit, deletion or reaction made), then closes the
	// connection without an answer.
	Drop bool
	// Stall holds a getUpdates without an answer until the client gives
	// up on it.
	Stall bool
}

// Server is the fake Bot API. URL is the API root to give the bot
// (without /bot<TOKEN>); Token the token it accepts; Bot the bot's user.
type Server struct {
	URL   string
	Token string
	Bot   User
	// RetryDelay is the wait before redelivering a webhook update that
	// was not answered 200.
	RetryDelay time.Duration

	srv  *httptest.Server
	done chan struct{}

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change
	canReadAll bool
	topics     bool
	revoked    bool
	queue      []json.RawMessage // pending updates, oldest first
	queueIDs   []int64
	nextUpdate int64
	nextMsg    int64
	messages   map[string]*Message // "<chat>/<id>" → message, for replies
	chats      map[int64]Chat      // groups users spoke in, as they last were
	pollGen    int
	polls      int // getUpdates calls answered
	waiting    int // getUpdates calls waiting for an update
	conflicts  int // getUpdates answered 409
	webhook    string
	secret     string
	delivering bool // the deliver goroutine runs
	hookClient *http.Client
	sent       []Sent
	actions    []Action
	edits      []Edit
	reactions  []Reaction
	deletions  []Deletion
	files      map[string]*stored // by file_id: what users sent, served by getFile
	uploads    []Upload           // what the bot sent with sendPhoto, sendDocument and sendVoice
	sentPolls  []SentPoll
	presses    map[string]bool // callback query ids not yet answered
	answers    []Answer
	failures   map[string][]Failure // by method
	deliveries []int                // webhook delivery answers, in order
	requests   int                  // Bot API requests of any kind
}

// Start runs a fake Bot API on loopback until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := New(false)
	t.Cleanup(s.Close)
	return s
}

// New runs a fake Bot API on loopback, over TLS when tls is set (then
// Certificate is its certificate); Close ends it.
func New(tls bool) *Server {
	s := &Server{
		Token:      newToken(),
		Bot:        User{ID: 7000000001, IsBot: true, FirstName: "Talon Test", Username: "talon_test_bot"},
		RetryDelay: 20 * time.Millisecond,
		done:       make(chan struct{}),
		changed:    make(chan struct{}),
		nextUpdate: 100000,
		nextMsg:    1000,
		messages:   map[string]*Message{},
		failures:   map[string][]Failure{},
		files:      map[string]*stored{},
		chats:      map[int64]Chat{},
		presses:    map[string]bool{},
		hookClient: http.DefaultClient,
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	if tls {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL
	return s
}

// Certificate is the TLS server's certificate, nil without TLS.
func (s *Server) Certificate() *x509.Certificate { return s.srv.Certificate() }

// Client is an HTTP client that trusts the server's certificate.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close ends waiting polls and deliveries, then the server.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func newToken() string {
	b := make([]byte, 26)
	_, _ = rand.Read(b)
	return "7000000001:" + base64.RawURLEncoding.EncodeToString(b)
}

// notify wakes every waiter; call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// SetPrivacy sets what getMe says: canReadAll false is BotFather's
// privacy mode (the default of a new bot).
func (s *Server) SetPrivacy(canReadAll bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canReadAll = canReadAll
}

// SetTopicsEnabled sets getMe's has_topics_enabled.
func (s *Server) SetTopicsEnabled(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topics = on
}

// RevokeToken makes every request answer 401, as after /revoke.
func (s *Server) RevokeToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
}

// SetWebhookClient sets the client that posts to the webhook (for an
// httptest TLS server, its Client()).
func (s *Server) SetWebhookClient(c *http.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookClient = c
}

// Fail makes the next calls of method fail, one Failure each.
func (s *Server) Fail(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

// FailSends makes the next sendMessage calls fail, one Failure each.
func (s *Server) FailSends(f ...Failure) { s.Fail("sendMessage", f...) }

// FailPolls makes the next getUpdates calls fail, one Failure each.
func (s *Server) FailPolls(f ...Failure) { s.Fail("getUpdates", f...) }

// nextFailure takes the failure queued for method, nil for none.
func (s *Server) nextFailure(method string) *Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.failures[method]
	if len(q) == 0 {
		return nil
	}
	s.failures[method] = q[1:]
	return &q[0]
}

// Webhook is the URL setWebhook registered, "" for none.
func (s *Server) Webhook() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook
}

// Pending is how many updates are not yet acknowledged.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Conflicts is how many getUpdates calls were answered 409.
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// Deliveries are the HTTP statuses the webhook answered, in order.
func (s *Server) Deliveries() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliveries)
}

// Requests counts the Bot API requests the server got, of any method.
func (s *Server) Requests() int { return s.count(&s.requests) }

// Sent is what the bot has sent so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// Actions are the chat actions the bot has sent so far.
func (s *Server) Actions() []Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.actions)
}

// Edits are the edits the fake carried out, in order.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.edits)
}

// Reactions are the reactions the bot set or took off, in order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactions)
}

// Deletions are the messages the bot deleted, in order.
func (s *Server) Deletions() []Deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deletions)
}

// WaitSent waits until the bot has sent at least n messages and returns
// them all.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	err := s.Wait(ctx, func() bool { return len(s.Sent()) >= n })
	if err != nil {
		return s.Sent(), fmt.Errorf("tgtest: waiting for %d sent messages: %w", n, err)
	}
	return s.Sent(), nil
}

// Wait waits until cond is true, evaluating it after every change of
// the server's state (cond may call the Server's methods).
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return fmt.Errorf("tgtest: server closed")
		case <-ch:
		}
	}
}

// Idle is how many getUpdates calls wait for an update now.
func (s *Server) Idle() int { return s.count(&s.waiting) }

// WaitIdle waits until n getUpdates calls are waiting for updates at
// once: n pollers are connected and idle.
func (s *Server) WaitIdle(ctx context.Context, n int) error {
	return s.Wait(ctx, func() bool { return s.count(&s.waiting) >= n })
}

// WaitPolls waits until n getUpdates calls were answered in all.
func (s *Server) WaitPolls(ctx context.Context, n int) error {
	return s.Wait(ctx, func() bool { return s.count(&s.polls) >= n })
}

func (s *Server) count(n *int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *n
}

// Say is an inbound message to inject.
type Say struct {
	From User
	// Chat is the group's id (negative); 0 is the private chat with From.
	Chat      int64
	ChatTitle string
	// Topic is a forum topic id; non-zero makes the chat a forum.
	Topic int64
	Text  string
	// ReplyTo is the id of a message in the chat this one replies to.
	ReplyTo int64
	// TextMentions adds a text_mention entity on the first occurrence of
	// each key, naming the user.
	TextMentions map[string]User
	// File makes the message carry a file; Text is then its caption.
	File *Attachment
}

var mentionRE = regexp.MustCompile(`@[A-Za-z0-9_]{5,32}`)
var commandRE = regexp.MustCompile(`^/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{5,32})?`)

// UserSays queues a message from a user, with the entities Telegram
// would compute (mentions, a leading command), and returns it with the
// update id.
func (s *Server) UserSays(m Say) (Message, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextMsg++
	from := m.From
	msg := Message{MessageID: s.nextMsg, From: &from, Date: time.Now().Unix(), Text: m.Text}
	switch {
	case m.Chat == 0:
		msg.Chat = Chat{ID: m.From.ID, Type: "private"}
	default:
		msg.Chat = Chat{ID: m.Chat, Type: "supergroup", Title: m.ChatTitle, IsForum: m.Topic != 0}
		s.chats[m.Chat] = msg.Chat
	}
	if m.Topic != 0 {
		msg.MessageThreadID = m.Topic
		msg.IsTopicMessage = m.Topic != 1
		if m.Topic != 1 && m.ReplyTo == 0 {
			// Telegram makes every topic message reply to the topic's
			// creation message.
			msg.ReplyToMessage = &Message{MessageID: m.Topic, Chat: msg.Chat, Date: msg.Date, MessageThreadID: m.Topic, IsTopicMessage: true}
		}
	}
	if m.ReplyTo != 0 {
		if r, ok := s.messages[msgKey(msg.Chat.ID, m.ReplyTo)]; ok {
			msg.ReplyToMessage = r
		}
	}
	if m.File != nil {
		s.attachLocked(&msg, *m.File)
		msg.Text, msg.Caption, msg.CaptionEntities = "", m.Text, entities(m.Text, m.TextMentions)
	} else {
		msg.Entities = entities(m.Text, m.TextMentions)
	}
	s.messages[msgKey(msg.Chat.ID, msg.MessageID)] = &msg
	id := s.enqueueLocked(map[string]any{"message": msg})
	return msg, id
}

// Inject queues a raw update (its update_id is set here), for what
// UserSays does not build: edits, reactions, migrations, odd presses. A
// callback_query given as a map with a string id may be answered.
func (s *Server) Inject(fields map[string]any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := fields["callback_query"].(map[string]any); ok {
		if id, ok := q["id"].(string); ok {
			s.presses[id] = true
		}
	}
	return s.enqueueLocked(fields)
}

func (s *Server) enqueueLocked(fields map[string]any) int64 {
	s.nextUpdate++
	u := map[string]any{"update_id": s.nextUpdate}
	for k, v := range fields {
		if k != "update_id" {
			u[k] = v
		}
	}
	raw, _ := json.Marshal(u)
	s.queue = append(s.queue, raw)
	s.queueIDs = append(s.queueIDs, s.nextUpdate)
	s.notify()
	return s.nextUpdate
}

func msgKey(chat, id int64) string {
	return strconv.FormatInt(chat, 10) + "/" + strconv.FormatInt(id, 10)
}

// entities computes mention, bot_command and text_mention entities with
// UTF-16 offsets, as Telegram does for a typed message.
func entities(text string, textMentions map[string]User) []Entity {
	var out []Entity
	u16 := func(byteOff int) int { return utf16Len(text[:byteOff]) }
	if loc := commandRE.FindStringIndex(text); loc != nil {
		out = append(out, Entity{Type: "bot_command", Offset: 0, Length: u16(loc[1])})
	}
	for _, loc := range mentionRE.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && !isSpace(text[loc[0]-1]) {
			continue // part of a command or a word
		}
		out = append(out, Entity{Type: "mention", Offset: u16(loc[0]), Length: u16(loc[1]) - u16(loc[0])})
	}
	for sub, u := range textMentions {
		if i := strings.Index(text, sub); i >= 0 && sub != "" {
			u := u
			out = append(out, Entity{Type: "text_mention", Offset: u16(i), Length: utf16Len(sub), User: &u})
		}
	}
	slices.SortFunc(out, func(a, b Entity) int { return a.Offset - b.Offset })
	return out
}

// reply writes a Bot API answer.
func reply(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func refuse(w http.ResponseWriter, f Failure) {
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	params := map[string]any{}
	if f.RetryAfter > 0 {
		params["retry_after"] = f.RetryAfter
	}
	if f.MigrateToChatID != 0 {
		params["migrate_to_chat_id"] = f.MigrateToChatID
	}
	if len(params) > 0 {
		body["parameters"] = params
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Code)
	_ = json.NewEncoder(w).Encode(body)
}

func badRequest(desc string) Failure { return Failure{Code: 400, Description: "Bad Request: " + desc} }

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = c.Close()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, r, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		refuse(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	s.mu.Lock()
	revoked := s.revoked
	s.mu.Unlock()
	if token != s.Token || revoked {
		refuse(w, Failure{Code: 401, Description: "Unauthorized"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequest)
	p, err := params(r)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		refuse(w, Failure{Code: 413, Description: "Request Entity Too Large"})
		return
	}
	if err != nil {
		refuse(w, badRequest(err.Error()))
		return
	}
	if method != "getUpdates" && !carriesOut[method] {
		if f := s.nextFailure(method); f != nil {
			if f.Drop {
				drop(w)
			} else {
				refuse(w, *f)
			}
			return
		}
	}
	switch method {
	case "getMe":
		s.getMe(w)
	case "getUpdates":
		s.getUpdates(w, r, p)
	case "deleteWebhook":
		s.deleteWebhook(w, p)
	case "setWebhook":
		s.setWebhook(w, p)
	case "sendMessage":
		s.sendMessage(w, p)
	case "sendChatAction":
		s.sendChatAction(w, p)
	case "editMessageText":
		s.editMessageText(w, p)
	case "deleteMessage":
		s.deleteMessage(w, p)
	case "setMessageReaction":
		s.setMessageReaction(w, p)
	case "getFile":
		s.getFile(w, p)
	case "sendPhoto", "sendDocument", "sendVoice":
		s.sendFile(w, r, method, p)
	case "sendPoll":
		s.sendPoll(w, p)
	case "answerCallbackQuery":
		s.answerCallbackQuery(w, p)
	default:
		refuse(w, Failure{Code: 404, Description: "Not Found: method not found"})
	}
}

// carriesOut are the methods whose Failure.Drop carries the request out
// before dropping the connection; they take their failure themselves.
var carriesOut = map[string]bool{"sendMessage": true, "editMessageText": true, "deleteMessage": true, "setMessageReaction": true,
	"sendPhoto": true, "sendDocument": true, "sendVoice": true, "sendPoll": true}

// answer ends a request that was carried out: with result, or with no
// answer at all when f drops it.
func answer(w http.ResponseWriter, f *Failure, result any) {
	if f != nil && f.Drop {
		drop(w)
		return
	}
	reply(w, result)
}

// params reads a request's parameters: a JSON body, a form (multipart
// for uploads, whose files stay in r.MultipartForm), or the query.
func params(r *http.Request) (map[string]json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseMultipartForm(maxMemory); err != nil {
			return nil, fmt.Errorf("can't parse multipart form: %w", err)
		}
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return nil, err
		}
		if len(body) > 0 {
			if err := json.Unmarshal(body, &p); err != nil {
				return nil, fmt.Errorf("can't parse JSON object")
			}
		}
		return p, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, fmt.Errorf("can't parse request form")
	}
	for k, v := range r.Form {
		if json.Valid([]byte(v[0])) {
			p[k] = json.RawMessage(v[0])
		} else {
			p[k], _ = json.Marshal(v[0])
		}
	}
	return p, nil
}

func intParam(p map[string]json.RawMessage, k string) int64 {
	var n json.Number
	if json.Unmarshal(p[k], &n) != nil {
		var s string
		if json.Unmarshal(p[k], &s) != nil {
			return 0
		}
		n = json.Number(s)
	}
	v, _ := n.Int64()
	return v
}

func strParam(p map[string]json.RawMessage, k string) string {
	var s string
	if json.Unmarshal(p[k], &s) == nil {
		return s
	}
	return string(p[k])
}

func (s *Server) getMe(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply(w, map[string]any{
		"id": s.Bot.ID, "is_bot": true, "first_name": s.Bot.FirstName, "username": s.Bot.Username,
		"can_join_groups": true, "can_read_all_group_messages": s.canReadAll,
		"supports_inline_queries": false, "has_topics_enabled": s.topics,
	})
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]json.RawMessage) {
	if f := s.nextFailure("getUpdates"); f != nil {
		if f.Stall {
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			return
		}
		refuse(w, *f)
		return
	}
	s.mu.Lock()
	if s.webhook != "" {
		s.conflicts++
		s.notify()
		s.mu.Unlock()
		refuse(w, Failure{Code: 409, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		return
	}
	// A newer poll ends the one waiting (Telegram answers it 409).
	s.pollGen++
	gen := s.pollGen
	s.notify()
	s.mu.Unlock()

	offset, timeout, limit := intParam(p, "offset"), intParam(p, "timeout"), intParam(p, "limit")
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	deadline := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer deadline.Stop()
	counted := false
	defer func() {
		if counted {
			s.mu.Lock()
			s.waiting--
			s.notify()
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if gen != s.pollGen {
			s.conflicts++
			s.notify()
			s.mu.Unlock()
			refuse(w, Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})
			return
		}
		s.confirmLocked(offset)
		if len(s.queue) > 0 || timeout <= 0 {
			out := slices.Clone(s.queue[:min(int64(len(s.queue)), limit)])
			s.polls++
			s.notify()
			s.mu.Unlock()
			reply(w, out)
			return
		}
		if !counted {
			counted = true
			s.waiting++
			s.notify()
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}

// confirmLocked forgets the updates below offset: getUpdates with an
// offset acknowledges everything before it.
func (s *Server) confirmLocked(offset int64) {
	if offset <= 0 {
		return
	}
	n := 0
	for n < len(s.queueIDs) && s.queueIDs[n] < offset {
		n++
	}
	if n > 0 {
		s.queue, s.queueIDs = s.queue[n:], s.queueIDs[n:]
		s.notify()
	}
}

func (s *Server) deleteWebhook(w http.ResponseWriter, p map[string]json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhook, s.secret = "", ""
	if string(p["drop_pending_updates"]) == "true" {
		s.queue, s.queueIDs = nil, nil
	}
	s.notify()
	reply(w, true)
}

var secretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (s *Server) setWebhook(w http.ResponseWriter, p map[string]json.RawMessage) {
	u, secret := strParam(p, "url"), strParam(p, "secret_token")
	switch {
	case u == "":
		s.mu.Lock()
		s.webhook, s.secret = "", ""
		s.mu.Unlock()
		reply(w, true)
		return
	case !strings.HasPrefix(u, "https://"):
		refuse(w, badRequest("bad webhook: An HTTPS URL must be provided for webhook"))
		return
	case secret != "" && !secretRE.MatchString(secret):
		refuse(w, badRequest("secret token contains unallowed characters"))
		return
	}
	s.mu.Lock()
	start := !s.delivering
	s.delivering = true
	s.webhook, s.secret = u, secret
	s.pollGen++ // a waiting poll ends with 409
	s.notify()
	s.mu.Unlock()
	if start {
		go s.deliver()
	}
	reply(w, true)
}

// deliver posts pending updates to the webhook one at a time, oldest
// first, until it is deleted; an update leaves the queue on a 200.
func (s *Server) deliver() {
	for {
		s.mu.Lock()
		hook, secret, client, ch := s.webhook, s.secret, s.hookClient, s.changed
		var raw json.RawMessage
		var id int64
		if len(s.queue) > 0 {
			raw, id = s.queue[0], s.queueIDs[0]
		}
		if hook == "" {
			s.delivering = false
		}
		s.mu.Unlock()
		if hook == "" {
			return
		}
		if raw == nil {
			select {
			case <-ch:
				continue
			case <-s.done:
				return
			}
		}
		code := s.post(client, hook, secret, raw)
		s.mu.Lock()
		s.deliveries = append(s.deliveries, code)
		if code == http.StatusOK && len(s.queueIDs) > 0 && s.queueIDs[0] == id {
			s.queue, s.queueIDs = s.queue[1:], s.queueIDs[1:]
		}
		s.notify()
		s.mu.Unlock()
		if code != http.StatusOK {
			select {
			case <-time.After(s.RetryDelay):
			case <-s.done:
				return
			}
		}
	}
}

// post makes one webhook delivery; 0 is a failed connection.
func (s *Server) post(client *http.Client, hook, secret string, raw []byte) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, strings.NewReader(string(raw)))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]json.RawMessage) {
	f := s.nextFailure("sendMessage")
	if f != nil && !f.Drop {
		refuse(w, *f)
		return
	}
	chatID, ok := chatParam(p)
	if !ok {
		refuse(w, badRequest("chat not found"))
		return
	}
	text, mode := strParam(p, "text"), strParam(p, "parse_mode")
	thread := intParam(p, "message_thread_id")
	shown, bad := messageText(text, mode)
	switch {
	case bad != "":
		refuse(w, badRequest(bad))
		return
	case thread == 1:
		refuse(w, badRequest("message thread not found"))
		return
	}
	var rp struct {
		MessageID int64 `json:"message_id"`
	}
	_ = json.Unmarshal(p["reply_parameters"], &rp)
	if rp.MessageID == 0 {
		rp.MessageID = intParam(p, "reply_to_message_id")
	}
	var preview struct {
		IsDisabled bool `json:"is_disabled"`
	}
	_ = json.Unmarshal(p["link_preview_options"], &preview)
	markup, bad := replyMarkup(p)
	if bad != "" {
		refuse(w, badRequest(bad))
		return
	}

	s.mu.Lock()
	chatNum, _ := strconv.ParseInt(chatID, 10, 64)
	var replied *Message
	if rp.MessageID != 0 {
		replied = s.messages[msgKey(chatNum, rp.MessageID)]
		if replied == nil {
			s.mu.Unlock()
			refuse(w, badRequest("message to be replied not found"))
			return
		}
	}
	s.nextMsg++
	bot := s.Bot
	msg := Message{MessageID: s.nextMsg, From: &bot, Chat: s.botChatLocked(chatNum, thread),
		Date: time.Now().Unix(), Text: shown, MessageThreadID: thread, IsTopicMessage: thread != 0, ReplyToMessage: replied,
		ReplyMarkup: markup, source: mode + "\x00" + text}
	s.messages[msgKey(chatNum, msg.MessageID)] = &msg
	s.sent = append(s.sent, Sent{MessageID: msg.MessageID, ChatID: chatID, ThreadID: thread, Text: text,
		ParseMode: mode, ReplyTo: rp.MessageID, NoLinkPreview: preview.IsDisabled, Buttons: buttonRows(markup)})
	s.notify()
	s.mu.Unlock()
	answer(w, f, msg)
}

// messageText is the text Telegram shows for text in parse mode, or
// its refusal (after "Bad Request: ").
func messageText(text, mode string) (shown, refusal string) {
	shown = text
	switch mode {
	case "":
	case "HTML":
		var why string
		if shown, why = parseHTML(text); why != "" {
			return "", "can't parse entities: " + why
		}
	default:
		return "", "unsupported parse_mode"
	}
	switch {
	case strings.TrimSpace(shown) == "":
		return "", "message text is empty"
	case utf16Len(shown) > 4096:
		return "", "message is too long"
	}
	return shown, ""
}

// botChatLocked is the chat of a message the bot sends: as users last
// showed it (a group's title, a forum), or one made up from its id.
func (s *Server) botChatLocked(id, thread int64) Chat {
	c, ok := s.chats[id]
	if !ok {
		c = Chat{ID: id, Type: chatType(id)}
	}
	c.IsForum = c.IsForum || thread != 0
	return c
}

func chatType(id int64) string {
	if id > 0 {
		return "private"
	}
	return "supergroup"
}

// chatParam reads chat_id: an integer or "@username".
func chatParam(p map[string]json.RawMessage) (string, bool) {
	if id := intParam(p, "chat_id"); id != 0 {
		return strconv.FormatInt(id, 10), true
	}
	s := strParam(p, "chat_id")
	return s, strings.HasPrefix(s, "@") && len(s) > 1
}

func (s *Server) sendChatAction(w http.ResponseWriter, p map[string]json.RawMessage) {
	chatID, ok := chatParam(p)
	if !ok {
		refuse(w, badRequest("chat not found"))
		return
	}
	action := strParam(p, "action")
	if action == "" {
		refuse(w, badRequest("action is empty"))
		return
	}
	s.mu.Lock()
	s.actions = append(s.actions, Action{ChatID: chatID, ThreadID: intParam(p, "message_thread_id"), Action: action})
	s.notify()
	s.mu.Unlock()
	reply(w, true)
}

// messageParams reads the chat and message an action names: the
// message, its key and the chat_id as given, or Telegram's refusal.
// Call with s.mu held.
func (s *Server) messageLocked(p map[string]json.RawMessage, action string) (*Message, string, string) {
	chatID, ok := chatParam(p)
	if !ok {
		return nil, "", "chat not found"
	}
	id := intParam(p, "message_id")
	if id == 0 {
		return nil, chatID, "message identifier is not specified"
	}
	chatNum, _ := strconv.ParseInt(chatID, 10, 64)
	m := s.messages[msgKey(chatNum, id)]
	if m == nil {
		return nil, chatID, "message to " + action + " not found"
	}
	return m, chatID, ""
}

func (s *Server) editMessageText(w http.ResponseWriter, p map[string]json.RawMessage) {
	f := s.nextFailure("editMessageText")
	if f != nil && !f.Drop {
		refuse(w, *f)
		return
	}
	text, mode := strParam(p, "text"), strParam(p, "parse_mode")
	var preview struct {
		IsDisabled bool `json:"is_disabled"`
	}
	_ = json.Unmarshal(p["link_preview_options"], &preview)
	s.mu.Lock()
	m, chatID, bad := s.messageLocked(p, "edit")
	shown := ""
	if bad == "" {
		shown, bad = messageText(text, mode)
	}
	switch {
	case bad != "":
	case m.From == nil || m.From.ID != s.Bot.ID:
		bad = "message can't be edited"
	case m.source == mode+"\x00"+text:
		bad = "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
	}
	if bad != "" {
		s.mu.Unlock()
		refuse(w, badRequest(bad))
		return
	}
	m.Text, m.source = shown, mode+"\x00"+text
	s.edits = append(s.edits, Edit{ChatID: chatID, MessageID: m.MessageID, Text: text, ParseMode: mode, NoLinkPreview: preview.IsDisabled})
	s.notify()
	msg := *m
	s.mu.Unlock()
	answer(w, f, msg)
}

func (s *Server) deleteMessage(w http.ResponseWriter, p map[string]json.RawMessage) {
	f := s.nextFailure("deleteMessage")
	if f != nil && !f.Drop {
		refuse(w, *f)
		return
	}
	s.mu.Lock()
	m, chatID, bad := s.messageLocked(p, "delete")
	if bad != "" {
		s.mu.Unlock()
		refuse(w, badRequest(bad))
		return
	}
	delete(s.messages, msgKey(m.Chat.ID, m.MessageID))
	s.deletions = append(s.deletions, Deletion{ChatID: chatID, MessageID: m.MessageID})
	s.notify()
	s.mu.Unlock()
	answer(w, f, true)
}

// reactionEmoji is Telegram's default set of reaction emoji (Bot API
// ReactionTypeEmoji); a chat may allow fewer.
// "\u200d" (zero width joiner) joins the parts of three of them.
var reactionEmoji = func() map[string]bool {
	set := map[string]bool{}
	for _, e := range strings.Fields("👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 " +
		"❤\u200d🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨\u200d💻 👀 🎃 🙈 😇 😨 🤝 " +
		"✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷\u200d♂ 🤷 🤷\u200d♀ 😡") {
		set[e] = true
	}
	return set
}()

func (s *Server) setMessageReaction(w http.ResponseWriter, p map[string]json.RawMessage) {
	f := s.nextFailure("setMessageReaction")
	if f != nil && !f.Drop {
		refuse(w, *f)
		return
	}
	var reaction []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if raw, ok := p["reaction"]; ok && json.Unmarshal(raw, &reaction) != nil {
		refuse(w, badRequest("can't parse reaction types JSON object"))
		return
	}
	s.mu.Lock()
	m, chatID, bad := s.messageLocked(p, "react")
	switch {
	case bad != "":
	case len(reaction) > 1:
		bad = "REACTIONS_TOO_MANY"
	case len(reaction) == 1 && (reaction[0].Type != "emoji" || !reactionEmoji[reaction[0].Emoji]):
		bad = "REACTION_INVALID"
	}
	if bad != "" {
		s.mu.Unlock()
		refuse(w, badRequest(bad))
		return
	}
	r := Reaction{ChatID: chatID, MessageID: m.MessageID}
	if len(reaction) == 1 {
		r.Emoji = reaction[0].Emoji
	}
	s.reactions = append(s.reactions, r)
	s.notify()
	s.mu.Unlock()
	answer(w, f, true)
}
