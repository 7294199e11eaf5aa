package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"talon/internal/channel"
)

// maxFrame bounds one gateway frame; GUILD_CREATE of a large guild is the
// biggest Discord sends without compression.
const maxFrame = 8 << 20

// Gateway close codes (Discord "Gateway Close Event Codes") that decide
// what happens next.
const (
	closeAuthFailed        = 4004
	closeInvalidSeq        = 4007
	closeSessionTimedOut   = 4009
	closeInvalidShard      = 4010
	closeShardingRequired  = 4011
	closeInvalidAPIVersion = 4012
	closeInvalidIntents    = 4013
	closeDisallowedIntents = 4014
)

// The heartbeat interval HELLO names is held to these bounds (Discord's
// is 41.25 s): a gateway cannot make the bot beat more than ten times a
// second, nor so rarely that a dead connection goes unnoticed.
const (
	minHeartbeat = 100 * time.Millisecond
	maxHeartbeat = 5 * time.Minute
)

// permanent marks a failure no retry can fix: Run returns it.
type permanent struct{ err error }

func (e *permanent) Error() string { return e.err.Error() }
func (e *permanent) Unwrap() error { return e.err }

// errAgain asks for an immediate reconnect (op 7, invalid session).
var errAgain = errors.New("gateway asked to reconnect")

// session is what a RESUME needs. seq is the last sequence number whose
// event was fully handled — for a message, accepted — so a RESUME asks
// Discord to replay everything after it.
type session struct {
	id        string
	resumeURL string
	seq       atomic.Int64
}

func (s *session) reset() {
	s.id, s.resumeURL = "", ""
	s.seq.Store(0)
}

// Run checks the token, connects to the gateway and hands every message
// to accept until ctx ends (channel.Transport).
//
// Durability: Discord's gateway has no acknowledgement; an event counts
// as handled when its sequence number is the one a RESUME sends. Run
// advances that number past a message only after accept returned nil; a
// failing accept is retried, and if it keeps failing the connection is
// dropped and resumed, so Discord replays the message. A RESUME replays
// only within the live session (Discord keeps it a few minutes): after a
// crash or kill -9, messages Discord sent that accept had not stored, and
// messages sent while the process was down, are not redelivered.
func (b *Bot) Run(ctx context.Context, accept channel.Accept) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("discord: the account is already running")
	}
	defer b.running.Store(false)
	defer b.update(func(s *channel.Status) { s.Connected = false })
	err := b.loop(ctx, accept)
	if ctx.Err() != nil {
		return nil
	}
	b.setError(err)
	return fmt.Errorf("discord account %s: %w", b.account, err)
}

func (b *Bot) loop(ctx context.Context, accept channel.Accept) error {
	sess := &session{}
	wait := b.timing.backoffMin
	loggedIn := false
	for {
		var err error
		if !loggedIn {
			err = b.login(ctx)
			loggedIn = err == nil
		}
		if loggedIn {
			err = b.connect(ctx, sess, accept, &wait)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p := (*permanent)(nil); errors.As(err, &p) {
			return err
		}
		if errors.Is(err, errAgain) {
			// Discord asked for it: no failure, but still a pause, so
			// a gateway that asks again and again cannot make us spin.
			b.update(func(s *channel.Status) { s.Connected = false })
		} else {
			b.log.Warn("discord gateway failed, reconnecting", "err", err, "in", wait)
			b.update(func(s *channel.Status) {
				s.Connected = false
				s.ReconnectAttempts++
				s.LastError = err.Error()
			})
		}
		if err := b.sleep(ctx, jitter(wait)); err != nil {
			return err
		}
		wait = min(wait*2, b.timing.backoffMax)
	}
}

// jitter spreads d over [d/2, d) so many accounts do not reconnect in step.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// login checks the token (GET /users/@me): a 401 is permanent and shown
// as an auth issue.
func (b *Bot) login(ctx context.Context) error {
	var me user
	if err := b.call(ctx, http.MethodGet, "/users/@me", nil, &me); err != nil {
		if api := (*APIError)(nil); errors.As(err, &api) && api.Status == http.StatusUnauthorized {
			b.setIssue("auth", &channel.Issue{Kind: "auth", Message: "Discord refused the bot token (401)",
				Fix: "copy the token again from the Discord Developer Portal (Bot → Reset Token) into channels.discord.token"})
			return &permanent{fmt.Errorf("checking the token: %w", err)}
		}
		return fmt.Errorf("checking the token: %w", err)
	}
	if !snowflake(me.ID) {
		return fmt.Errorf("checking the token: /users/@me answered without a valid id")
	}
	b.setIssue("auth", nil)
	b.mu.Lock()
	b.botID = me.ID
	b.status.BotID, b.status.BotName = me.ID, me.Username
	b.mu.Unlock()
	return nil
}

// gatewayAddr is where to connect: the resume URL of a live session, the
// configured gateway, or the one GET /gateway/bot names.
func (b *Bot) gatewayAddr(ctx context.Context, sess *session) (string, error) {
	raw := b.gatewayURL
	if sess.id != "" && sess.resumeURL != "" {
		raw = sess.resumeURL
	}
	if raw == "" {
		var gb gatewayBot
		if err := b.call(ctx, http.MethodGet, "/gateway/bot", nil, &gb); err != nil {
			return "", fmt.Errorf("asking for the gateway: %w", err)
		}
		if checkURL(gb.URL, "ws", "wss") != nil {
			return "", fmt.Errorf("asking for the gateway: %q is not a ws or wss URL", gb.URL)
		}
		if l := gb.SessionStartLimit; l.Remaining == 0 && l.ResetAfter > 0 {
			d := time.Duration(l.ResetAfter) * time.Millisecond
			b.log.Warn("discord session start limit reached, waiting", "for", d)
			b.setError(fmt.Errorf("session start limit reached, waiting %s", d))
			if err := b.sleep(ctx, d); err != nil {
				return "", err
			}
		}
		raw = gb.URL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("gateway url: %w", err)
	}
	q := u.Query()
	q.Set("v", "10")
	q.Set("encoding", "json")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// connect runs one gateway connection until it ends. It resets *wait to
// the shortest backoff once the connection is READY or RESUMED.
func (b *Bot) connect(ctx context.Context, sess *session, accept channel.Accept, wait *time.Duration) error {
	addr, err := b.gatewayAddr(ctx, sess)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, b.timing.helloTimeout)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, addr, &websocket.DialOptions{HTTPClient: b.client})
	if err != nil {
		sess.resumeURL = "" // the next try resumes through the main gateway
		return fmt.Errorf("dialing the gateway: %w", redact(err, b.token))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxFrame)

	p, err := readFrame(dctx, conn)
	if err != nil {
		return fmt.Errorf("waiting for HELLO: %w", err)
	}
	cancel() // the dial's deadline ends here; cctx governs the connection
	var h hello
	if p.Op != opHello || json.Unmarshal(p.D, &h) != nil || h.HeartbeatInterval <= 0 {
		return fmt.Errorf("waiting for HELLO: got op %d", p.Op)
	}
	every := min(max(time.Duration(h.HeartbeatInterval)*time.Millisecond, minHeartbeat), maxHeartbeat)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	g := &gwConn{bot: b, conn: conn, sess: sess, accept: accept, wait: wait}
	g.acked.Store(true)
	if err := g.hello(cctx); err != nil {
		return err
	}
	go g.heartbeat(cctx, stop, every)
	return g.read(cctx)
}

// gwConn is one live gateway connection.
type gwConn struct {
	bot    *Bot
	conn   *websocket.Conn
	sess   *session
	accept channel.Accept
	wait   *time.Duration
	acked  atomic.Bool // the last heartbeat was acknowledged
	missed atomic.Bool // the connection was dropped for a missing ACK
}

// hello sends RESUME for a live session, else IDENTIFY.
func (g *gwConn) hello(ctx context.Context) error {
	b := g.bot
	if g.sess.id != "" {
		return g.send(ctx, opResume, resume{Token: b.token, SessionID: g.sess.id, Seq: g.sess.seq.Load()})
	}
	return g.send(ctx, opIdentify, identify{Token: b.token, Intents: b.intents,
		Properties: identifyProperties{OS: "linux", Browser: "talon", Device: "talon"}})
}

func (g *gwConn) send(ctx context.Context, op int, d any) error {
	data, err := json.Marshal(struct {
		Op int `json:"op"`
		D  any `json:"d"`
	}{op, d})
	if err != nil {
		return fmt.Errorf("encoding op %d: %w", op, err)
	}
	if err := g.conn.Write(ctx, websocket.MessageText, data); err != nil {
		return fmt.Errorf("sending op %d: %w", op, err)
	}
	return nil
}

func (g *gwConn) sendHeartbeat(ctx context.Context) error {
	var d any // null until the first dispatch
	if s := g.sess.seq.Load(); s > 0 {
		d = s
	}
	return g.send(ctx, opHeartbeat, d)
}

// heartbeat beats at the server's interval, the first after a random
// part of it (Discord asks for the jitter). A beat whose predecessor was
// not acknowledged drops the connection: it is a zombie, and the loop
// resumes on a fresh one.
func (g *gwConn) heartbeat(ctx context.Context, stop context.CancelFunc, every time.Duration) {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(every))))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !g.acked.Swap(false) {
			g.missed.Store(true)
			stop()
			return
		}
		if err := g.sendHeartbeat(ctx); err != nil {
			stop()
			return
		}
		t.Reset(every)
	}
}

// read handles frames until the connection ends.
func (g *gwConn) read(ctx context.Context) error {
	for {
		p, err := readFrame(ctx, g.conn)
		if err != nil {
			if g.missed.Load() {
				return errors.New("the gateway did not acknowledge a heartbeat")
			}
			return g.bot.closed(ctx, g.sess, err)
		}
		switch p.Op {
		case opHeartbeat:
			if err := g.sendHeartbeat(ctx); err != nil {
				return err
			}
		case opHeartbeatACK:
			g.acked.Store(true)
		case opReconnect:
			return errAgain
		case opInvalidSession:
			return g.invalid(ctx, p.D)
		case opDispatch:
			if err := g.dispatch(ctx, p); err != nil {
				if g.missed.Load() {
					return fmt.Errorf("the gateway did not acknowledge a heartbeat while a message was pending: %w", err)
				}
				return err
			}
		}
	}
}

// invalid handles op 9: a non-resumable session is forgotten; either way
// Discord asks for a pause of 1–5 s before the next IDENTIFY or RESUME.
func (g *gwConn) invalid(ctx context.Context, d json.RawMessage) error {
	var resumable bool
	_ = json.Unmarshal(d, &resumable) // anything but true means not resumable
	if !resumable {
		g.sess.reset()
	}
	t := g.bot.timing
	pause := t.invalidMin
	if span := t.invalidMax - t.invalidMin; span > 0 {
		pause += rand.N(span)
	}
	g.bot.log.Info("discord gateway invalidated the session", "resumable", resumable)
	if err := g.bot.sleep(ctx, pause); err != nil {
		return err
	}
	return errAgain
}

func readFrame(ctx context.Context, conn *websocket.Conn) (payload, error) {
	typ, data, err := conn.Read(ctx)
	if err != nil {
		return payload{}, err
	}
	if typ != websocket.MessageText {
		return payload{}, errors.New("the gateway sent a binary frame (compression was not asked for)")
	}
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return payload{}, fmt.Errorf("decoding a gateway frame: %w", err)
	}
	return p, nil
}

// closed turns the end of a connection into what happens next: a close
// code Discord documents as final is permanent (with an issue that says
// the fix); a lost session is forgotten; anything else is resumed.
func (b *Bot) closed(ctx context.Context, sess *session, err error) error {
	code := websocket.CloseStatus(err)
	switch code {
	case closeAuthFailed:
		b.setIssue("auth", &channel.Issue{Kind: "auth", Message: "the Discord gateway refused the bot token (close 4004)",
			Fix: "copy the token again from the Discord Developer Portal (Bot → Reset Token) into channels.discord.token"})
		return &permanent{fmt.Errorf("gateway: authentication failed (4004)")}
	case closeDisallowedIntents:
		iss := b.intentIssue(ctx)
		b.setIssue("intent", &iss)
		return &permanent{fmt.Errorf("gateway: disallowed intents (4014): %s", iss.Message)}
	case closeInvalidShard, closeShardingRequired, closeInvalidAPIVersion, closeInvalidIntents:
		msg := fmt.Sprintf("the Discord gateway closed with %d (%s)", code, closeReason(err))
		b.setIssue("config", &channel.Issue{Kind: "config", Message: msg,
			Fix: "a bot in more than 2,500 guilds needs sharding, which Talon does not do; otherwise report this as a bug"})
		return &permanent{errors.New("gateway: " + msg)}
	case closeInvalidSeq, closeSessionTimedOut:
		sess.reset()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("reading the gateway: %w", redact(err, b.token))
}

func closeReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Reason != "" {
		return ce.Reason
	}
	return "no reason given"
}

// intentIssue names the privileged intents the Developer Portal has not
// enabled (asking GET /applications/@me; when that fails, every one the
// account asked for) and the two ways out (spec R13.2, better #4).
func (b *Bot) intentIssue(ctx context.Context) channel.Issue {
	var missing []string
	var app application
	probed := b.call(ctx, http.MethodGet, "/applications/@me", nil, &app) == nil
	if b.intents&intentMessageContent != 0 && (!probed || app.Flags&(appFlagMessageContent|appFlagMessageContentLimited) == 0) {
		missing = append(missing, "Message Content Intent")
	}
	if b.intents&intentGuildMembers != 0 && (!probed || app.Flags&(appFlagGuildMembers|appFlagGuildMembersLimited) == 0) {
		missing = append(missing, "Server Members Intent")
	}
	if len(missing) == 0 {
		missing = []string{"the privileged intents it asks for (a bot in 100 or more servers needs Discord's approval for them)"}
	}
	names := strings.Join(missing, " and ")
	fix := "enable " + names + " in the Discord Developer Portal (your application → Bot → Privileged Gateway Intents) and restart the account"
	if b.intents&intentMessageContent != 0 {
		fix += ", or set channels.discord.intents.messageContent: false and requireMention: true on every guild and channel (the bot then sees only messages that mention it)"
	}
	return channel.Issue{Kind: "intent", Message: "Discord refused the gateway intents (close 4014): " + names + " not enabled for this bot", Fix: fix}
}

// dispatch handles one event; the sequence number advances only when it
// is handled.
func (g *gwConn) dispatch(ctx context.Context, p payload) error {
	b := g.bot
	switch p.T {
	case "READY":
		var r ready
		if err := json.Unmarshal(p.D, &r); err != nil || r.SessionID == "" || !snowflake(r.User.ID) {
			return fmt.Errorf("decoding READY: invalid payload")
		}
		g.sess.id = r.SessionID
		g.sess.resumeURL = ""
		if checkURL(r.ResumeGatewayURL, "ws", "wss") == nil {
			g.sess.resumeURL = r.ResumeGatewayURL
		}
		b.mu.Lock()
		b.botID = r.User.ID
		b.status.BotID, b.status.BotName = r.User.ID, r.User.Username
		b.mu.Unlock()
		g.up()
	case "RESUMED":
		g.up()
	case "MESSAGE_CREATE":
		if err := g.message(ctx, p.D); err != nil {
			return err
		}
	case "INTERACTION_CREATE":
		if err := g.interaction(ctx, p.D); err != nil {
			return err
		}
	default:
		b.track(p.T, p.D)
	}
	if p.S != nil && *p.S > 0 {
		g.sess.seq.Store(*p.S)
	}
	return nil
}

// up marks the connection live and resets the backoff.
func (g *gwConn) up() {
	*g.wait = g.bot.timing.backoffMin
	g.bot.setIssue("intent", contentIssue(g.bot.intents))
	g.bot.update(func(s *channel.Status) {
		s.Connected = true
		s.ReconnectAttempts = 0
		s.LastConnectedAt = g.bot.now()
		s.LastError = ""
	})
}

// track keeps the channel and role caches current; a malformed event is
// ignored (the cache is a hint).
func (b *Bot) track(t string, d json.RawMessage) {
	switch t {
	case "GUILD_CREATE":
		var gc guildCreate
		if json.Unmarshal(d, &gc) != nil || !snowflake(gc.ID) || gc.Unavailable {
			return
		}
		for _, ch := range gc.Channels {
			b.cache.addChannel(ch)
		}
		for _, th := range gc.Threads {
			b.cache.addChannel(th)
		}
		me := b.self()
		for _, m := range gc.Members {
			if m.User != nil && m.User.ID == me {
				b.cache.setBotRoles(gc.ID, m.Roles)
			}
		}
	case "GUILD_DELETE":
		var gc guildCreate
		if json.Unmarshal(d, &gc) == nil && !gc.Unavailable {
			b.cache.forgetGuild(gc.ID)
		}
	case "CHANNEL_CREATE", "CHANNEL_UPDATE", "THREAD_CREATE", "THREAD_UPDATE":
		var ch channelObj
		if json.Unmarshal(d, &ch) == nil {
			b.cache.addChannel(ch)
		}
	case "CHANNEL_DELETE", "THREAD_DELETE":
		var ch channelObj
		if json.Unmarshal(d, &ch) == nil {
			b.cache.removeChannel(ch.ID)
		}
	case "THREAD_LIST_SYNC":
		var s threadListSync
		if json.Unmarshal(d, &s) == nil {
			for _, th := range s.Threads {
				b.cache.addChannel(th)
			}
		}
	case "GUILD_MEMBER_UPDATE":
		var m memberUpdate
		if json.Unmarshal(d, &m) == nil && snowflake(m.GuildID) && m.User.ID == b.self() {
			b.cache.setBotRoles(m.GuildID, m.Roles)
		}
	}
}
