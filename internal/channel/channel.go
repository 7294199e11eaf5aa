package channel

import (
	"context"
	"errors"
	"time"
)

// Kind is the kind of a conversation (spec §1): a direct message, a group
// (Telegram groups, Slack multi-person DMs) or a channel (Slack and
// Discord rooms, Discord threads).
type Kind string

// The kinds of conversation.
const (
	Direct Kind = "direct"
	Group  Kind = "group"
	Room   Kind = "channel"
)

// Peer is a conversation: its kind and the platform's id of it (a
// Telegram chat id, with ":topic:<id>" for a forum topic; a Slack channel
// id; a Discord channel or thread id; the sender's id for a DM).
type Peer struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"`
}

// Sender is who wrote a message. Only ID is trusted for access control;
// the names are what the platform says and are shown, never matched,
// unless dangerouslyAllowNameMatching says so.
type Sender struct {
	ID       string `json:"id"`
	E164     string `json:"e164,omitempty"`
	Username string `json:"username,omitempty"`
	Name     string `json:"name,omitempty"`
	IsBot    bool   `json:"isBot,omitempty"`
}

// Quote is the message an inbound one replies to.
type Quote struct {
	ID       string `json:"id"`
	Body     string `json:"body,omitempty"`
	SenderID string `json:"senderId,omitempty"`
	// FromBot says the quoted message is this bot's own: a reply to it
	// counts as a mention (spec R6.2).
	FromBot bool `json:"fromBot,omitempty"`
}

// Envelope is one inbound message as an adapter hands it over (spec §2),
// the same shape whatever the platform.
type Envelope struct {
	Channel   string `json:"channel"`   // "telegram", "slack", "discord"
	AccountID string `json:"accountId"` // normalised (config.NormalizeAccountID)
	// DeliveryID is the platform's id of this delivery — Telegram's
	// update_id, Slack's event_id, Discord's message id — so that a
	// redelivery of the same event is recognised.
	DeliveryID string `json:"deliveryId"`
	MessageID  string `json:"messageId"`
	Peer       Peer   `json:"peer"`
	ParentPeer *Peer  `json:"parentPeer,omitempty"` // a Discord thread's channel
	ThreadID   string `json:"threadId,omitempty"`   // a Slack thread_ts; Telegram topics are in Peer.ID
	Sender     Sender `json:"sender"`
	// Text is the message, or the caption of its media: it may be ""
	// when Media is not empty.
	Text    string  `json:"text"`
	Media   []Media `json:"media,omitempty"`
	ReplyTo *Quote  `json:"replyTo,omitempty"`
	// Batched are the ids of the messages of the same sender folded into
	// this one by the inbound debounce (R2.1 step 6), in order; its Text
	// holds all of theirs.
	Batched []string `json:"batched,omitempty"`
	// Pressed says the message is the press of one of the bot's Buttons:
	// Text is the button's Data and MessageID the press's own id.
	Pressed bool `json:"pressed,omitempty"`
	// Mentioned says the platform addressed the bot natively: an
	// @-mention of it, a reply to it, or (Slack) a thread it is in.
	// Mention patterns are applied later, by the gate.
	Mentioned bool `json:"mentioned,omitempty"`
	// MentionsOthers says the message mentions someone other than the
	// bot (for ignoreOtherMentions).
	MentionsOthers bool     `json:"mentionsOthers,omitempty"`
	GuildID        string   `json:"guildId,omitempty"`
	TeamID         string   `json:"teamId,omitempty"`
	RoleIDs        []string `json:"roleIds,omitempty"`
	// RoomLabel is the room's name as the platform gives it: untrusted,
	// shown to the model only as fenced metadata.
	RoomLabel string    `json:"roomLabel,omitempty"`
	Time      time.Time `json:"time"`
}

// Target is where a message goes: a conversation and, within it, a
// thread (Slack thread_ts; Telegram topics are part of the peer id).
type Target struct {
	Peer     Peer   `json:"peer"`
	ThreadID string `json:"threadId,omitempty"`
}

// Outbound is one chunk of a reply, already rendered for its platform.
type Outbound struct {
	Target
	// Text is the chunk in the platform's format (Telegram HTML, Slack
	// mrkdwn, Discord markdown); Plain is the same chunk without
	// formatting, sent instead when the platform refuses the formatting
	// (Telegram's "can't parse entities"), so no chunk is ever lost.
	Text  string `json:"text"`
	Plain string `json:"plain"`
	// ReplyTo is the platform id of the message this chunk replies to
	// natively, "" for none.
	ReplyTo string `json:"replyTo,omitempty"`
	// Buttons are inline buttons under the chunk (one row), for the
	// platforms that have them; an adapter without them sends the text
	// alone, which already says how to answer.
	Buttons []Button `json:"buttons,omitempty"`
	// Key names the chunk across retries and restarts (the run and the
	// chunk's index); a platform that takes an idempotency key gets it.
	Key string `json:"key"`
}

// Sent is what the platform answered to a delivered chunk. A send that
// returned no MessageID is unconfirmed and is never sent again blindly.
type Sent struct {
	MessageID string `json:"messageId"`
}

// ErrUnconfirmed is wrapped by a Send error when the request may have
// reached the platform (sent, but no answer came): the chunk is recorded
// unconfirmed, not failed, is never sent again blindly (R8.12), and the
// chunks after it are still delivered.
var ErrUnconfirmed = errors.New("send unconfirmed: the platform may have delivered it")

// Accept takes an inbound message. It returns once the message is stored
// durably; a Transport acknowledges the event to the platform (advances
// Telegram's offset, answers Slack's envelope or webhook) only after it
// returned nil, so that a crash loses no acknowledged message. An error
// means the event was not taken: the transport does not acknowledge it.
type Accept func(ctx context.Context, e Envelope) error

// Transport is one account's connection to its platform. Run, Send and
// Typing may be called concurrently; Status at any time.
type Transport interface {
	// Run connects (Telegram getMe, Slack auth.test, Discord identify),
	// then receives until ctx ends, passing each inbound message to
	// accept. It returns nil when ctx ended and an error when the account
	// cannot run (bad token, a permanent refusal); transient failures are
	// retried inside with backoff and shown in Status.
	Run(ctx context.Context, accept Accept) error
	// Send delivers one chunk.
	Send(ctx context.Context, m Outbound) (Sent, error)
	// Typing shows that the bot is working on an answer in t.
	Typing(ctx context.Context, t Target) error
	// Status is the account's state now.
	Status() Status
}

// Status is an account's connection state for channels.status (spec
// §16, AccountSnapshot). Times are zero when never.
type Status struct {
	Mode              string    `json:"mode,omitempty"` // "polling", "webhook", "socket", "http", "gateway"
	Connected         bool      `json:"connected"`
	BotID             string    `json:"botId,omitempty"`
	BotName           string    `json:"botName,omitempty"`
	ReconnectAttempts int       `json:"reconnectAttempts,omitempty"`
	LastConnectedAt   time.Time `json:"lastConnectedAt"`
	LastInboundAt     time.Time `json:"lastInboundAt"`
	LastOutboundAt    time.Time `json:"lastOutboundAt"`
	LastError         string    `json:"lastError,omitempty"`
	// Issues are what the account found wrong with itself and how to fix
	// it (Telegram privacy mode, a missing Discord intent, a 409 from a
	// second poller).
	Issues []Issue `json:"issues,omitempty"`
}

// Issue is one statusIssues entry: a problem and its fix.
type Issue struct {
	Kind    string `json:"kind"` // intent, permissions, config, auth, runtime
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Actor is implemented by a Transport that can act on a message already
// in the chat: the message tool's react, edit and delete actions (spec
// channels.md §9). messageID is the platform's id of the message in t.
type Actor interface {
	// React adds emoji (a Unicode emoji, or Slack's name such as
	// "thumbsup") to the message, or takes the bot's own off with remove.
	React(ctx context.Context, t Target, messageID, emoji string, remove bool) error
	// Edit replaces the text of one of the bot's own messages; plain is
	// the fallback as in Outbound.
	Edit(ctx context.Context, t Target, messageID, text, plain string) error
	// Delete removes a message (the bot's own; others' where the
	// platform lets the bot).
	Delete(ctx context.Context, t Target, messageID string) error
}
