package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"talon/internal/channel"
)

// maxText bounds a message's text: Slack cuts messages at 40,000
// characters, which is at most four times as many bytes.
const maxText = 4 * 40000

// callback is the outer payload of the Events API, the same over HTTP and
// inside a Socket Mode envelope.
type callback struct {
	Type      string          `json:"type"`
	TeamID    string          `json:"team_id"`
	EventID   string          `json:"event_id"`
	EventTime int64           `json:"event_time"`
	Event     json.RawMessage `json:"event"`
	Challenge string          `json:"challenge"`
}

// message is a message or app_mention event.
type message struct {
	Type         string `json:"type"`
	Subtype      string `json:"subtype"`
	Hidden       bool   `json:"hidden"`
	Channel      string `json:"channel"`
	ChannelType  string `json:"channel_type"`
	User         string `json:"user"`
	BotID        string `json:"bot_id"`
	Team         string `json:"team"`
	Text         string `json:"text"`
	TS           string `json:"ts"`
	ThreadTS     string `json:"thread_ts"`
	ParentUserID string `json:"parent_user_id"`
	Files        []file `json:"files"`
	UserProfile  *struct {
		Name        string `json:"name"`
		DisplayName string `json:"display_name"`
		RealName    string `json:"real_name"`
	} `json:"user_profile"`
}

// userSubtypes are the message subtypes a person writes; every other
// subtype (edits, deletions, joins, topic changes, …) is not a new message.
var userSubtypes = map[string]bool{
	"": true, "thread_broadcast": true, "file_share": true, "me_message": true, "bot_message": true,
}

var (
	idRE   = regexp.MustCompile(`^[A-Za-z0-9]+$`) // at most 64: validID
	tsRE   = regexp.MustCompile(`^[0-9]{1,12}\.[0-9]{1,9}$`)
	userRE = regexp.MustCompile(`<@([A-Za-z0-9]+)(?:\|[^>]*)?>`)
	teamRE = regexp.MustCompile(`<!subteam\^[A-Za-z0-9]+(?:\|[^>]*)?>`)
)

func validID(s string) bool { return len(s) <= 64 && idRE.MatchString(s) }

// decodeCallback reads the outer payload.
func decodeCallback(raw []byte) (callback, error) {
	var cb callback
	if err := json.Unmarshal(raw, &cb); err != nil {
		return cb, fmt.Errorf("decoding the event payload: %w", err)
	}
	return cb, nil
}

// decodeMessage reads cb's event when it is a message or an app_mention;
// ok is false for any other event type.
func decodeMessage(cb callback) (m message, ok bool, err error) {
	if cb.Type != "event_callback" || len(cb.Event) == 0 {
		return m, false, nil
	}
	if err := json.Unmarshal(cb.Event, &m); err != nil {
		return m, false, fmt.Errorf("decoding the event: %w", err)
	}
	return m, m.Type == "message" || m.Type == "app_mention", nil
}

// skipReason says why m is not a message for the agent, "" when it is.
func skipReason(m message, bot identity) string {
	switch {
	case !userSubtypes[m.Subtype]:
		return "subtype " + m.Subtype
	case m.Hidden:
		return "hidden"
	case m.User != "" && m.User == bot.UserID:
		return "own message"
	case m.BotID != "" && m.BotID == bot.BotID:
		return "own message"
	case strings.TrimSpace(m.Text) == "" && len(mediaOf(m.Files)) == 0:
		return "no text and no file to fetch"
	}
	return ""
}

// kindOf maps Slack's channel_type; ok is false when it is absent or unknown.
func kindOf(channelType string) (channel.Kind, bool) {
	switch channelType {
	case "im":
		return channel.Direct, true
	case "mpim":
		return channel.Group, true
	case "channel", "group":
		return channel.Room, true
	}
	return "", false
}

// envelope turns a validated-on-the-way message into what the hub accepts.
// joined says the bot has posted in m's thread: a reply there addresses it
// (spec R12.7, thread participation).
func envelope(account string, bot identity, cb callback, m message, kind channel.Kind, joined bool) (channel.Envelope, error) {
	if !validID(cb.EventID) {
		return channel.Envelope{}, errors.New("event_id is missing or invalid")
	}
	if !validID(m.Channel) {
		return channel.Envelope{}, errors.New("event.channel is missing or invalid")
	}
	if !tsRE.MatchString(m.TS) {
		return channel.Envelope{}, errors.New("event.ts is missing or invalid")
	}
	if m.ThreadTS != "" && !tsRE.MatchString(m.ThreadTS) {
		return channel.Envelope{}, errors.New("event.thread_ts is invalid")
	}
	isBot := m.Subtype == "bot_message" || m.BotID != ""
	sender := m.User
	if sender == "" && isBot {
		sender = m.BotID
	}
	if !validID(sender) {
		return channel.Envelope{}, errors.New("event.user is missing or invalid")
	}
	for _, id := range []string{m.BotID, m.ParentUserID, m.Team, cb.TeamID} {
		if id != "" && !validID(id) {
			return channel.Envelope{}, errors.New("an id in the event is invalid")
		}
	}
	if len(m.Text) > maxText || !utf8.ValidString(m.Text) {
		return channel.Envelope{}, errors.New("event.text is too long or not UTF-8")
	}
	peer := channel.Peer{Kind: kind, ID: m.Channel}
	if kind == channel.Direct {
		peer.ID = sender
	}
	e := channel.Envelope{
		Channel:    "slack",
		AccountID:  account,
		DeliveryID: cb.EventID,
		MessageID:  m.TS,
		Peer:       peer,
		Sender:     channel.Sender{ID: sender, IsBot: isBot},
		Text:       m.Text,
		Media:      mediaOf(m.Files),
		TeamID:     cmpOr(m.Team, cb.TeamID),
		Time:       tsTime(m.TS),
	}
	if p := m.UserProfile; p != nil {
		e.Sender.Username = clip(p.Name, 200)
		e.Sender.Name = clip(cmpOr(p.DisplayName, p.RealName), 200)
	}
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		e.ThreadID = m.ThreadTS
		if m.ParentUserID != "" {
			e.ReplyTo = &channel.Quote{ID: m.ThreadTS, SenderID: m.ParentUserID, FromBot: m.ParentUserID == bot.UserID}
		}
	}
	e.Mentioned, e.MentionsOthers = mentions(m.Text, bot.UserID)
	if m.Type == "app_mention" || (e.ReplyTo != nil && e.ReplyTo.FromBot) || (e.ThreadID != "" && joined) {
		e.Mentioned = true
	}
	return e, nil
}

// mentions reports whether text mentions the bot and whether it mentions
// anyone else (a user or a user group).
func mentions(text, botID string) (bot, others bool) {
	for _, m := range userRE.FindAllStringSubmatch(text, -1) {
		if m[1] == botID {
			bot = true
		} else {
			others = true
		}
	}
	if teamRE.MatchString(text) {
		others = true
	}
	return bot, others
}

// tsTime is a Slack ts ("1700000000.000100") as a time.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	frac = (frac + "000000000")[:9]
	ns, _ := strconv.ParseInt(frac, 10, 64)
	return time.Unix(s, ns).UTC()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// memo is a bounded map that starts over when full: what it forgets costs
// one lookup again (a conversation's kind) or one implicit mention (a
// thread the bot posted in).
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

// maxMemo bounds a memo.
const maxMemo = 4096

func (c *memo[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *memo[V]) put(k string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxMemo {
		c.m = map[string]V{}
	}
	c.m[k] = v
}

// conversationKind is the kind of the conversation m was written in.
func (a *App) conversationKind(ctx context.Context, m message) channel.Kind {
	if k, ok := kindOf(m.ChannelType); ok {
		a.kinds.put(m.Channel, k)
		return k
	}
	if k, ok := a.kinds.get(m.Channel); ok {
		return k
	}
	if strings.HasPrefix(m.Channel, "D") {
		return channel.Direct
	}
	var info struct {
		Channel struct {
			IsIM   bool `json:"is_im"`
			IsMPIM bool `json:"is_mpim"`
		} `json:"channel"`
	}
	if err := a.call(ctx, "conversations.info", a.botToken, url.Values{"channel": {m.Channel}}, &info); err != nil {
		// A mention must not be lost for want of a lookup: guess a room
		// (the only kind besides an mpim that gets app_mention) and say
		// how to make the answer certain.
		a.log.Warn("slack: conversations.info failed; treating the conversation as a channel", "channel", m.Channel, "err", err)
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == "missing_scope" {
			a.setIssue("permissions", channel.Issue{Kind: "permissions",
				Message: "conversations.info was refused for " + m.Channel + ": " + err.Error(),
				Fix:     "Add the scopes channels:read, groups:read, mpim:read and im:read under the Slack app's OAuth & Permissions page and reinstall the app, so a mention in a group DM is not taken for a channel message."})
		}
		return channel.Room
	}
	a.clearIssue("permissions")
	k := channel.Room
	switch {
	case info.Channel.IsIM:
		k = channel.Direct
	case info.Channel.IsMPIM:
		k = channel.Group
	}
	a.kinds.put(m.Channel, k)
	return k
}

// errMalformed marks a payload that no redelivery can make valid: it is
// acknowledged (and logged) so Slack does not send it again.
var errMalformed = errors.New("malformed event")

// handleCallback passes one Events API payload to accept when it is a
// message for the agent. It returns nil when the payload was taken or is
// not one to take, so the caller acknowledges it; an error wrapping
// errMalformed when it can never be taken; any other error means do not
// acknowledge, so Slack delivers it again.
func (a *App) handleCallback(ctx context.Context, raw []byte, accept channel.Accept) error {
	cb, err := decodeCallback(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	m, ok, err := decodeMessage(cb)
	if err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	if !ok {
		return nil
	}
	bot := a.botIdentity()
	if why := skipReason(m, bot); why != "" {
		a.log.Debug("slack: skipping event", "event_id", clip(cb.EventID, 64), "why", why)
		return nil
	}
	if !validID(m.Channel) {
		return fmt.Errorf("%w: event.channel is missing or invalid", errMalformed)
	}
	_, joined := a.threads.get(m.Channel + "/" + m.ThreadTS)
	e, err := envelope(a.account, bot, cb, m, a.conversationKind(ctx, m), joined)
	if err != nil {
		return fmt.Errorf("%w: slack event %s: %v", errMalformed, clip(cb.EventID, 64), err)
	}
	if e.Peer.Kind == channel.Direct {
		a.dms.put(e.Peer.ID, m.Channel)
	}
	if err := accept(ctx, e); err != nil {
		return fmt.Errorf("slack event %s: accept: %w", e.DeliveryID, err)
	}
	a.mu.Lock()
	a.st.LastInboundAt = a.now()
	a.mu.Unlock()
	return nil
}
