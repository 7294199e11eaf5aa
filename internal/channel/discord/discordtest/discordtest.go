// Package discordtest is a loopback fake of Discord for tests: the REST
// API v10 (the routes a bot uses to check its token, find the gateway,
// look up channels, post (JSON or multipart with files, polls, buttons),
// read history and reactions, edit and delete messages, react, type and
// answer interactions), its CDN for attachments, and the gateway WebSocket
// (HELLO, heartbeats, IDENTIFY with intent checks, READY, GUILD_CREATE,
// MESSAGE_CREATE with sequence numbers, RESUME replaying missed events,
// INVALID_SESSION, close codes). It speaks Discord's JSON shapes, status
// codes and error bodies, so a real Discord client would accept it.
//
// One Server is one bot in a small world: a guild with a text channel,
// a thread the gateway announces and one it does not, roles, and a group
// DM. Tests inject messages with UserSays, read what the bot posted with
// WaitSent (and its reactions, edits and deletions with Reactions, Edits
// and Deletions; its files, polls and buttons in Sent), attach files to
// a user's message (Say.Files, served at signed CDN URLs), add users'
// reactions (UserReacts), press the bot's buttons (Press, answered
// through Callbacks), drop the connection with Kick and inject failures.
// A Server is safe for concurrent use.
package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The fake's world.
const (
	Token          = "discordtest.bot-token.0123456789"
	BotID          = "1100000000000000001"
	BotName        = "talon-test"
	GuildID        = "1200000000000000001"
	ChannelID      = "1300000000000000001" // a text channel, #general
	ThreadID       = "1300000000000000002" // a public thread of ChannelID, in GUILD_CREATE
	HiddenThreadID = "1300000000000000003" // a thread of ChannelID the gateway never announces
	GroupDMID      = "1300000000000000004" // a group DM the bot is in
	BotRoleID      = "1400000000000000001" // the bot's managed role
	OtherRoleID    = "1400000000000000002"
	UserID         = "1500000000000000001" // alice
	OtherUserID    = "1500000000000000002" // bob
)

// Gateway intents as Discord numbers them.
const (
	IntentGuilds                 = 1 << 0
	IntentGuildMembers           = 1 << 1
	IntentGuildMessages          = 1 << 9
	IntentGuildMessageReactions  = 1 << 10
	IntentDirectMessages         = 1 << 12
	IntentDirectMessageReactions = 1 << 13
	IntentMessageContent         = 1 << 15
)

// DefaultHeartbeat is the heartbeat_interval HELLO asks for unless a test
// sets another; Discord's is 41.25 s.
const DefaultHeartbeat = 41250 * time.Millisecond

// Server is the fake Discord.
type Server struct {
	// URL is the REST base (…/api/v10); GatewayURL the WebSocket.
	URL        string
	GatewayURL string

	hs     *httptest.Server
	ctx    context.Context
	cancel context.CancelFunc

	mu          sync.Mutex
	changed     chan struct{}
	nextID      uint64
	channels    map[string]channel
	messages    map[string]message // every message, by id
	nonces      map[string]string  // nonce → message id (enforce_nonce)
	files       map[string]cdnFile // CDN path → the file
	uploadLimit int64
	downloads   []Download
	reacts      map[string][]reacted // message id → its reactions
	sent        []Sent
	pending     map[string]*pending // interaction id → its token
	callbacks   []Callback
	typing      []string
	reactions   []Reaction
	edits       []Edit
	deletions   []Deletion
	requests    []string
	conn        *websocket.Conn
	sess        *session
	identify    []Identify
	resumes     int
	dials       []string
	beatSeq     *int64
	resumeDown  bool
	readyCount  int
	beats       int
	connected   bool

	hold         chan struct{} // closed: gateway connections proceed
	heartbeat    time.Duration
	noACK        bool
	privileged   int // the privileged intents the "Developer Portal" enables
	rateLimits   []RateLimit
	sendFailures []SendFailure
}

type channel struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	Name     string `json:"name,omitempty"`
	hidden   bool   // left out of GUILD_CREATE
	dmUser   string // the recipient of a DM channel
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name,omitempty"`
	Bot        bool   `json:"bot,omitempty"`
}

type message struct {
	ID                string          `json:"id"`
	ChannelID         string          `json:"channel_id"`
	GuildID           string          `json:"guild_id,omitempty"`
	Author            user            `json:"author"`
	Member            *member         `json:"member,omitempty"`
	Content           string          `json:"content"`
	Timestamp         string          `json:"timestamp"`
	EditedTimestamp   *string         `json:"edited_timestamp"`
	Type              int             `json:"type"`
	Flags             int             `json:"flags"`
	Nonce             string          `json:"nonce,omitempty"`
	Mentions          []user          `json:"mentions"`
	MentionRoles      []string        `json:"mention_roles"`
	MentionEveryone   bool            `json:"mention_everyone"`
	MessageReference  *messageRef     `json:"message_reference,omitempty"`
	ReferencedMessage json.RawMessage `json:"referenced_message,omitempty"`
	Attachments       []attachment    `json:"attachments"`
	Components        json.RawMessage `json:"components,omitempty"`
	Poll              json.RawMessage `json:"poll,omitempty"`
	Reactions         []reactionOut   `json:"reactions,omitempty"`
}

type member struct {
	Roles []string `json:"roles"`
	Nick  string   `json:"nick,omitempty"`
}

type messageRef struct {
	MessageID       string `json:"message_id,omitempty"`
	ChannelID       string `json:"channel_id,omitempty"`
	GuildID         string `json:"guild_id,omitempty"`
	FailIfNotExists *bool  `json:"fail_if_not_exists,omitempty"`
}

// Sent is a message the bot posted, as Discord received it.
type Sent struct {
	ID              string
	ChannelID       string
	Content         string
	Nonce           string
	EnforceNonce    bool
	Flags           int
	ReplyTo         string
	FailIfNotExists *bool
	AllowedMentions *AllowedMentions
	Files           []File   // a multipart post's files[n], in order
	Poll            *Poll    // a poll message's poll
	Buttons         []Button // the buttons of its action rows, in order
}

// AllowedMentions is the allowed_mentions object of a post.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	RepliedUser bool     `json:"replied_user"`
}

// Identify is an IDENTIFY the gateway received.
type Identify struct {
	Token   string
	Intents int
}

// RateLimit is a 429 the next REST request gets.
type RateLimit struct {
	RetryAfter time.Duration
	Global     bool
}

// SendFailure is what the next message write (a post, an edit, a
// delete, a reaction) does instead of answering normally.
type SendFailure int

const (
	// LoseAnswer posts the message (edits, deletes, reacts), then drops
	// the connection unanswered.
	LoseAnswer SendFailure = iota + 1
	// ServerError answers 500 without posting (or acting).
	ServerError
	// NoID posts (or edits) the message and answers 200 with a body
	// without an id; other writes answer as usual.
	NoID
	// Forbidden answers 403 Missing Permissions (code 50013).
	Forbidden
)

// Start runs the fake on loopback until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	return s
}

// New runs the fake on loopback; Close stops it. (Start is the form for
// tests; New serves a fake outside one, e.g. in a helper process.)
func New() *Server {
	s := &Server{
		changed:     make(chan struct{}),
		nextID:      1600000000000000000,
		messages:    map[string]message{},
		nonces:      map[string]string{},
		reacts:      map[string][]reacted{},
		pending:     map[string]*pending{},
		files:       map[string]cdnFile{},
		uploadLimit: MaxUpload,
		heartbeat:   DefaultHeartbeat,
		hold:        closed(),
		privileged:  IntentMessageContent | IntentGuildMembers,
		channels: map[string]channel{
			ChannelID:      {ID: ChannelID, Type: 0, GuildID: GuildID, Name: "general"},
			ThreadID:       {ID: ThreadID, Type: 11, GuildID: GuildID, ParentID: ChannelID, Name: "a-thread"},
			HiddenThreadID: {ID: HiddenThreadID, Type: 11, GuildID: GuildID, ParentID: ChannelID, Name: "old-thread", hidden: true},
			GroupDMID:      {ID: GroupDMID, Type: 3, Name: "friends"},
		},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	s.routes(mux)
	s.hs = httptest.NewServer(mux)
	s.URL = s.hs.URL + "/api/v10"
	s.GatewayURL = "ws" + strings.TrimPrefix(s.hs.URL, "http") + "/gateway"
	return s
}

// Close stops the fake and its connections.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	if s.conn != nil {
		s.conn.CloseNow()
	}
	s.mu.Unlock()
	s.hs.Close()
}

// Client is an HTTP client for the fake, as the caller of discord.New
// passes one.
func (s *Server) Client() *http.Client { return s.hs.Client() }

// change wakes every waiter; call with s.mu held.
func (s *Server) change() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait blocks until cond (called with s.mu held) is true or ctx ends.
func (s *Server) wait(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("discordtest: waiting for %s: %w", what, ctx.Err())
		case <-ch:
		}
	}
}

func (s *Server) id() string {
	s.nextID++
	return strconv.FormatUint(s.nextID, 10)
}

// SetHeartbeat sets the heartbeat_interval of the next HELLO.
func (s *Server) SetHeartbeat(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeat = d
}

// StopACKs makes the gateway ignore heartbeats (a zombie connection);
// ResumeACKs undoes it.
func (s *Server) StopACKs()   { s.setNoACK(true) }
func (s *Server) ResumeACKs() { s.setNoACK(false) }

func (s *Server) setNoACK(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noACK = v
}

// SetPrivileged says which privileged intents the Developer Portal
// enables for the bot (both by default); an IDENTIFY asking for another
// is closed with 4014.
func (s *Server) SetPrivileged(messageContent, guildMembers bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.privileged = 0
	if messageContent {
		s.privileged |= IntentMessageContent
	}
	if guildMembers {
		s.privileged |= IntentGuildMembers
	}
}

// RateLimitNext answers the next REST requests with these 429s, in order.
func (s *Server) RateLimitNext(rl ...RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateLimits = append(s.rateLimits, rl...)
}

// FailNextSend makes the next message writes — posts, edits, deletes and
// reactions — fail these ways, in order.
func (s *Server) FailNextSend(f ...SendFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sendFailures = append(s.sendFailures, f...)
}

// Sent is every message the bot posted so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// WaitSent waits until the bot posted at least n messages and returns
// them all.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	err := s.wait(ctx, fmt.Sprintf("%d sent messages", n), func() bool { return len(s.sent) >= n })
	return s.Sent(), err
}

// Typing is the channels the bot typed in, in order.
func (s *Server) Typing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.typing...)
}

// Requests is every REST request so far, as "METHOD /path" below the API
// base.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// WaitRequests waits until the fake saw n REST requests.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.wait(ctx, fmt.Sprintf("%d requests", n), func() bool { return len(s.requests) >= n })
}

// Identifies is every IDENTIFY the gateway received.
func (s *Server) Identifies() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.identify...)
}

// WaitReady waits until n IDENTIFYs were answered with READY (counting
// every session since Start) and the bot is connected.
func (s *Server) WaitReady(ctx context.Context, n int) error {
	return s.wait(ctx, fmt.Sprintf("READY #%d", n), func() bool { return s.readyCount >= n && s.connected })
}

// WaitResumed waits until n RESUMEs succeeded and the bot is connected.
func (s *Server) WaitResumed(ctx context.Context, n int) error {
	return s.wait(ctx, fmt.Sprintf("RESUMED #%d", n), func() bool { return s.resumes >= n && s.connected })
}

// WaitHeartbeats waits until the gateway received n heartbeats.
func (s *Server) WaitHeartbeats(ctx context.Context, n int) error {
	return s.wait(ctx, fmt.Sprintf("%d heartbeats", n), func() bool { return s.beats >= n })
}

// WaitDisconnected waits until no bot is connected to the gateway.
func (s *Server) WaitDisconnected(ctx context.Context) error {
	return s.wait(ctx, "the bot to disconnect", func() bool { return !s.connected })
}

func closed() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
