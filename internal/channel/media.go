package channel

import (
	"context"
	"errors"
	"time"
)

// Media is one attachment of an inbound message (spec R8.9) as the
// platform announced it. The bytes are fetched later, when the turn runs,
// through the account's Fetcher: an inbox row holds only this reference.
type Media struct {
	// Ref is the adapter's own handle for the file (a Telegram file_id,
	// a Slack url_private, a Discord attachment URL); the hub hands it
	// back to Fetch unchanged and never shows it to the model.
	Ref  string `json:"ref"`
	Name string `json:"name,omitempty"` // the file name as sent, untrusted
	MIME string `json:"mime,omitempty"` // as the platform says, untrusted
	// Size is what the platform announced, 0 when it did not say.
	Size int64 `json:"size,omitempty"`
	// Kind is image, audio, voice, video, sticker or document.
	Kind string `json:"kind,omitempty"`
}

// Fetcher is implemented by a Transport that can download the
// attachments of inbound messages.
type Fetcher interface {
	// Fetch returns m's bytes. A file over max bytes (announced or
	// counted while reading) is an error wrapping ErrTooLarge; nothing
	// beyond max+1 bytes is read.
	Fetch(ctx context.Context, m Media, max int64) ([]byte, error)
}

// ErrTooLarge is wrapped by a Fetch or SendFile error for a file over the
// size limit.
var ErrTooLarge = errors.New("file is over the size limit")

// File is an outbound attachment: the message tool's sendAttachment.
type File struct {
	Name string // a base name, already checked by the caller
	MIME string // "" lets the adapter pick application/octet-stream
	Data []byte
	// Caption and CaptionPlain are the rendered caption and its plain
	// fallback (as Outbound's Text and Plain); "" for none.
	Caption      string
	CaptionPlain string
	// Voice asks for a voice note where the platform has one (Telegram's
	// sendVoice, for Ogg Opus, MP3 or M4A audio); elsewhere, or for
	// audio the platform cannot play as one, the file is sent as any
	// other.
	Voice bool
}

// Attacher is implemented by a Transport that can send files.
type Attacher interface {
	// SendFile posts f into t (replying natively to replyTo when not "").
	SendFile(ctx context.Context, t Target, f File, replyTo string) (Sent, error)
}

// Poll is a native poll (the message tool's poll action).
type Poll struct {
	Question string
	Options  []string // 2–12, checked by the caller
	// Duration is how long the poll stays open; 0 for the platform's
	// default. An adapter refuses a duration its platform cannot keep.
	Duration time.Duration
	Multi    bool // voters may pick several options
}

// Pollster is implemented by a Transport whose platform has polls
// (Telegram, Discord; Slack has none).
type Pollster interface {
	SendPoll(ctx context.Context, t Target, p Poll) (Sent, error)
}

// ReadQuery is the message tool's read action: up to Limit messages of a
// conversation, newest first, optionally before, after or around a
// message id (at most one of the three).
type ReadQuery struct {
	Limit                 int
	Before, After, Around string
}

// Message is one message of a conversation's history as read back from
// the platform. All of it is untrusted text written by chat members.
type Message struct {
	ID         string    `json:"id"`
	SenderID   string    `json:"senderId,omitempty"`
	SenderName string    `json:"senderName,omitempty"`
	IsBot      bool      `json:"isBot,omitempty"`
	Text       string    `json:"text"`
	ThreadID   string    `json:"threadId,omitempty"`
	Time       time.Time `json:"time"`
	Media      []Media   `json:"-"`
	// Attachments are the names of its files, for the model to see.
	Attachments []string `json:"attachments,omitempty"`
}

// Reaction is one emoji on a message and who put it there.
type Reaction struct {
	Emoji string   `json:"emoji"`
	Count int      `json:"count"`
	Users []string `json:"users,omitempty"` // platform ids, when the platform lists them
	Me    bool     `json:"me,omitempty"`    // the bot reacted with it
}

// Reader is implemented by a Transport whose platform lets a bot read a
// conversation's history and a message's reactions (Slack, Discord; the
// Telegram Bot API has neither).
type Reader interface {
	Read(ctx context.Context, t Target, q ReadQuery) ([]Message, error)
	Reactions(ctx context.Context, t Target, messageID string) ([]Reaction, error)
}

// Button is an inline button under an outbound message (an exec
// approval's allow-once / allow-always / deny). Pressing it arrives as an
// inbound Envelope from the presser, in the button's conversation, whose
// Text is Data, with Pressed set and Mentioned true; the adapter
// acknowledges the press to the platform (Telegram answerCallbackQuery,
// Slack's ack, Discord's interaction response) after accept returned.
type Button struct {
	Label string `json:"label"`
	// Data is at most 64 bytes (Telegram's callback_data limit): the
	// command the press stands for, such as "/approve 1a2b3c allow-once".
	Data string `json:"data"`
}

// MaxButtonData is the longest Button.Data every platform keeps.
const MaxButtonData = 64
