package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"talon/internal/channel"
	"talon/internal/channel/format"
)

// ErrUnsupported is wrapped by an error for a message tool action the
// channel's platform does not have (R9.2: "unsupported action for
// channel").
var ErrUnsupported = errors.New("unsupported action for channel")

// Allowed says whether the message tool may take action through an
// account: the channel's actions.<group> gates (R9.3).
func (h *Hub) Allowed(channelID, accountID, action string) error {
	acc, err := h.sender(channelID, accountID)
	if err != nil {
		return err
	}
	for _, g := range channel.ActionGroups(channelID, action) {
		if !acc.a.ActionOn(g) {
			return fmt.Errorf("%s is turned off on %s account %q (channels.%s.actions.%s is false)", action, channelID, acc.a.ID, channelID, g)
		}
	}
	return nil
}

// capable is the running account's adapter as a T, or ErrUnsupported.
func capable[T any](h *Hub, channelID, accountID, action string) (*account, T, error) {
	var zero T
	acc, err := h.sender(channelID, accountID)
	if err != nil {
		return nil, zero, fmt.Errorf("%s: %w", action, err)
	}
	t, ok := acc.transport().(T)
	if !ok {
		return nil, zero, fmt.Errorf("%s: %w %s", action, ErrUnsupported, channelID)
	}
	return acc, t, nil
}

// SendFile posts a file into t with an optional Markdown caption,
// rendered for the platform; a caption longer than one message is
// refused.
func (h *Hub) SendFile(ctx context.Context, channelID, accountID string, t channel.Target, f channel.File, caption, replyTo string) (channel.Sent, error) {
	acc, a, err := capable[channel.Attacher](h, channelID, accountID, "sendAttachment")
	if err != nil {
		return channel.Sent{}, err
	}
	if len(f.Data) == 0 {
		return channel.Sent{}, errors.New("sendAttachment: the file is empty")
	}
	if caption = format.StripHeartbeat(caption); strings.TrimSpace(caption) != "" {
		chunks := render(acc.a, caption, t)
		if len(chunks) != 1 {
			return channel.Sent{}, fmt.Errorf("sendAttachment: the caption needs %d messages on %s; send the text with send", len(chunks), channelID)
		}
		f.Caption, f.CaptionPlain = chunks[0].Text, chunks[0].Plain
	}
	return a.SendFile(ctx, t, f, replyTo)
}

// Poll limits of the message tool (R9.1).
const (
	MinPollOptions = 2
	MaxPollOptions = 12
)

// SendPoll posts a native poll into t.
func (h *Hub) SendPoll(ctx context.Context, channelID, accountID string, t channel.Target, p channel.Poll) (channel.Sent, error) {
	_, a, err := capable[channel.Pollster](h, channelID, accountID, "poll")
	if err != nil {
		return channel.Sent{}, err
	}
	if strings.TrimSpace(p.Question) == "" {
		return channel.Sent{}, errors.New("poll: the question is empty")
	}
	if n := len(p.Options); n < MinPollOptions || n > MaxPollOptions {
		return channel.Sent{}, fmt.Errorf("poll: %d options; a poll has %d to %d", n, MinPollOptions, MaxPollOptions)
	}
	if slices.ContainsFunc(p.Options, func(o string) bool { return strings.TrimSpace(o) == "" }) {
		return channel.Sent{}, errors.New("poll: an option is empty")
	}
	return a.SendPoll(ctx, t, p)
}

// MaxRead is the most messages one read returns.
const MaxRead = 100

// Read returns up to q.Limit messages of t, newest first.
func (h *Hub) Read(ctx context.Context, channelID, accountID string, t channel.Target, q channel.ReadQuery) ([]channel.Message, error) {
	_, a, err := capable[channel.Reader](h, channelID, accountID, "read")
	if err != nil {
		return nil, err
	}
	n := 0
	for _, s := range []string{q.Before, q.After, q.Around} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("read: give at most one of before, after and around")
	}
	if q.Limit <= 0 {
		q.Limit = 20
	}
	q.Limit = min(q.Limit, MaxRead)
	return a.Read(ctx, t, q)
}

// Reactions lists the reactions on a message of t.
func (h *Hub) Reactions(ctx context.Context, channelID, accountID string, t channel.Target, messageID string) ([]channel.Reaction, error) {
	_, a, err := capable[channel.Reader](h, channelID, accountID, "reactions")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(messageID) == "" {
		return nil, errors.New("reactions: a message id is required")
	}
	return a.Reactions(ctx, t, messageID)
}

// Fetched is one attachment of an inbound message, downloaded, or why
// not.
type Fetched struct {
	channel.Media
	Data []byte
	Err  error
}

// MaxMediaPerMessage bounds how many attachments of one message a turn
// downloads; the rest are noted as not downloaded.
const MaxMediaPerMessage = 10

// FetchMedia downloads the attachments of an inbound message through its
// account, together up to the account's mediaMaxMb (R8.9): they are held
// in memory until the turn writes them. It never fails as a whole: an
// attachment that cannot be had carries its reason.
func (h *Hub) FetchMedia(ctx context.Context, e channel.Envelope) []Fetched {
	if len(e.Media) == 0 {
		return nil
	}
	out := make([]Fetched, 0, len(e.Media))
	acc, err := h.account(e.Channel, e.AccountID)
	var f channel.Fetcher
	if err == nil {
		var ok bool
		if f, ok = acc.transport().(channel.Fetcher); !ok {
			err = fmt.Errorf("%s cannot download attachments", e.Channel)
		}
	}
	var left int64
	if err == nil {
		left = acc.a.MediaMax
	}
	for i, m := range e.Media {
		r := Fetched{Media: m}
		switch {
		case err != nil:
			r.Err = err
		case i >= MaxMediaPerMessage:
			r.Err = fmt.Errorf("more than %d attachments in one message", MaxMediaPerMessage)
		case m.Size > left:
			r.Err = fmt.Errorf("%w: %d bytes, %d left of the message's %d (mediaMaxMb)", channel.ErrTooLarge, m.Size, left, acc.a.MediaMax)
		default:
			r.Data, r.Err = f.Fetch(ctx, m, left)
			left -= int64(len(r.Data))
		}
		out = append(out, r)
	}
	return out
}
