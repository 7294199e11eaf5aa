package discord

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"talon/internal/channel"
)

// maxNonce is the longest nonce Discord takes.
const maxNonce = 25

// Send posts one chunk (spec R13.6). The chunk carries a nonce derived
// from m.Key with enforce_nonce, so Discord itself refuses to post the
// same chunk twice within its nonce window (a few minutes): a send whose
// answer was lost is repeated once here and Discord answers with the
// message it already posted. An outcome still unknown after that is
// returned wrapped in ErrUnconfirmed and never repeated again.
// m.Buttons go under the text as one action row (see buttonRow).
func (b *Bot) Send(ctx context.Context, m channel.Outbound) (channel.Sent, error) {
	text, err := b.text(m.Text)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("discord send: %w", err)
	}
	ref, err := replyRef(m.ReplyTo)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("discord send: %w", err)
	}
	row, err := buttonRow(m.Buttons)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("discord send: %w", err)
	}
	chID, err := b.channelFor(ctx, m.Target)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("discord send: %w", err)
	}
	body := createMessage{messageText: text, MessageReference: ref, Components: row}
	if m.Key != "" {
		body.Nonce, body.EnforceNonce = Nonce(m.Key), true
	}
	return b.postJSON(ctx, "discord send", chID, body)
}

// postJSON posts a message body as JSON; see post.
func (b *Bot) postJSON(ctx context.Context, step, chID string, body createMessage) (channel.Sent, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("%s: encoding: %w", step, err)
	}
	return b.post(ctx, step, chID, data, "application/json", body.EnforceNonce)
}

// post creates a message in chID. With an enforced nonce (repeat) a post
// whose outcome is unknown is repeated once, and Discord answers with
// the message it already created; without one it is never repeated. An
// outcome still unknown is ErrUnconfirmed (spec R8.12).
func (b *Bot) post(ctx context.Context, step, chID string, body []byte, contentType string, repeat bool) (channel.Sent, error) {
	var got message
	path := "/channels/" + chID + "/messages"
	err := b.callBody(ctx, http.MethodPost, path, body, contentType, &got)
	if err != nil && repeat && unknownOutcome(err) && ctx.Err() == nil {
		b.log.Warn("discord send outcome unknown, repeating with the same nonce", "err", err)
		got = message{}
		err = b.callBody(ctx, http.MethodPost, path, body, contentType, &got)
	}
	if err != nil {
		b.setError(err)
		if unknownOutcome(err) {
			return channel.Sent{}, fmt.Errorf("%s to %s: %w: %w", step, chID, ErrUnconfirmed, err)
		}
		return channel.Sent{}, fmt.Errorf("%s to %s: %w", step, chID, err)
	}
	if !snowflake(got.ID) {
		return channel.Sent{}, fmt.Errorf("%s to %s: %w: the answer has no message id", step, chID, ErrUnconfirmed)
	}
	b.update(func(s *channel.Status) { s.LastOutboundAt = b.now() })
	return channel.Sent{MessageID: got.ID}, nil
}

// replyRef is the message_reference of a native reply to id ("" for
// none). fail_if_not_exists false posts even when the original was
// deleted meanwhile, rather than losing the message.
func replyRef(id string) (*messageRef, error) {
	if id == "" {
		return nil, nil
	}
	if !snowflake(id) {
		return nil, fmt.Errorf("reply-to id %q is not a snowflake", id)
	}
	no := false
	return &messageRef{MessageID: id, FailIfNotExists: &no}, nil
}

// text is the content of a post or an edit with the rules both follow:
// the text may ping users only — never @everyone, @here or a role,
// whatever the model writes — and link previews are hidden unless
// suppressEmbeds is off.
func (b *Bot) text(content string) (messageText, error) {
	if strings.TrimSpace(content) == "" {
		return messageText{}, errors.New("empty message")
	}
	return b.textOf(content), nil
}

// textOf is text without the check that there is some: a file or a poll
// is a message of its own.
func (b *Bot) textOf(content string) messageText {
	t := messageText{
		Content:         content,
		AllowedMentions: allowedMentions{Parse: []string{"users"}, RepliedUser: true},
	}
	if b.suppressEmbeds {
		t.Flags = flagSuppressEmbeds
	}
	return t
}

// unknownOutcome says Discord may have acted on a request that failed:
// the answer was lost or unreadable, or Discord failed with a 5xx. A 4xx
// (429 included) is a refusal: nothing was posted.
func unknownOutcome(err error) bool {
	var api *APIError
	if errors.As(err, &api) {
		return api.Status >= 500
	}
	var lost *answerLost
	return errors.As(err, &lost)
}

// Typing shows "bot is typing" in t for about ten seconds (Discord's
// own duration); the caller repeats it.
func (b *Bot) Typing(ctx context.Context, t channel.Target) error {
	chID, err := b.channelFor(ctx, t)
	if err != nil {
		return fmt.Errorf("discord typing: %w", err)
	}
	if err := b.call(ctx, http.MethodPost, "/channels/"+chID+"/typing", nil, nil); err != nil {
		return fmt.Errorf("discord typing in %s: %w", chID, err)
	}
	return nil
}

// Nonce is the ≤25-character form of an outbound key Discord dedupes
// on: the key itself when it fits, else a hash of it.
func Nonce(key string) string {
	if len(key) <= maxNonce && !strings.ContainsFunc(key, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:maxNonce]
}

// channelFor is the channel id a target posts into: a room's (or a
// thread's, which is a channel of its own) id, or the DM channel with a
// user, opened once and cached.
func (b *Bot) channelFor(ctx context.Context, t channel.Target) (string, error) {
	switch t.Peer.Kind {
	case channel.Room:
		id := t.Peer.ID
		if t.ThreadID != "" {
			id = t.ThreadID // a Discord thread is a channel
		}
		if !snowflake(id) {
			return "", fmt.Errorf("channel id %q is not a snowflake", id)
		}
		return id, nil
	case channel.Direct:
		if !snowflake(t.Peer.ID) {
			return "", fmt.Errorf("user id %q is not a snowflake", t.Peer.ID)
		}
		return b.openDM(ctx, t.Peer.ID)
	default:
		return "", fmt.Errorf("discord has no %q conversations", t.Peer.Kind)
	}
}

func (b *Bot) openDM(ctx context.Context, userID string) (string, error) {
	if id, ok := b.cache.dm(userID); ok {
		return id, nil
	}
	var ch channelObj
	err := b.call(ctx, http.MethodPost, "/users/@me/channels", map[string]string{"recipient_id": userID}, &ch)
	if err != nil {
		return "", fmt.Errorf("opening the DM with %s: %w", userID, err)
	}
	if !snowflake(ch.ID) {
		return "", fmt.Errorf("opening the DM with %s: the answer has no channel id", userID)
	}
	b.cache.setDM(userID, ch.ID)
	return ch.ID, nil
}

// nonceWindow is how long Discord answers a repeated enforced nonce with
// the message it already created ("a few minutes"; the lower end is taken).
const nonceWindow = 2 * time.Minute

// IdempotencyWindow tells the hub that a chunk whose send a crash
// interrupted less than this ago may be sent again: its nonce makes
// Discord return the first message rather than post a second.
func (b *Bot) IdempotencyWindow() time.Duration { return nonceWindow }
