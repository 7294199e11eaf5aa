package telegram

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"talon/internal/channel"
)

// target is a Telegram chat and, in a forum, a topic.
type target struct {
	chat   any   // int64 chat id or "@channelusername"
	thread int64 // 0: none
}

var (
	chatUsername = regexp.MustCompile(`^@[A-Za-z0-9_]{5,32}$`)
	// "<chatId>:topic:<id>" (R11.5) or the short "<chatId>:<id>" (R8.2).
	topicID = regexp.MustCompile(`^(-?[0-9]{1,20})(?::topic)?:([0-9]{1,10})$`)
)

// parseTarget reads a peer id: a chat id, @username or a topic.
func parseTarget(t channel.Target) (target, error) {
	id := t.Peer.ID
	if m := topicID.FindStringSubmatch(id); m != nil {
		chat, err1 := strconv.ParseInt(m[1], 10, 64)
		thread, err2 := strconv.ParseInt(m[2], 10, 64)
		if err1 == nil && err2 == nil && chat != 0 && thread > 0 {
			return target{chat: chat, thread: thread}, nil
		}
	}
	if chat, err := strconv.ParseInt(id, 10, 64); err == nil && chat != 0 {
		return target{chat: chat}, nil
	}
	if chatUsername.MatchString(id) {
		return target{chat: id}, nil
	}
	return target{}, fmt.Errorf("target %q is not a chat id, @username or <chatId>:topic:<id>", id)
}

type sendAttempt struct {
	html, reply bool
}

// Send implements channel.Transport: sendMessage with HTML, falling back
// to the plain text when Telegram cannot parse the HTML (better #3) and
// to no reply when the replied-to message is gone. A send is retried
// only when it provably did not happen (a refusal, or a request that
// never reached the wire); one whose answer was lost is "unconfirmed".
func (b *Bot) Send(ctx context.Context, m channel.Outbound) (channel.Sent, error) {
	t, err := parseTarget(m.Target)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("telegram: send: %w", err)
	}
	if m.Text == "" && m.Plain == "" {
		return channel.Sent{}, errors.New("telegram: send: empty message")
	}
	var replyTo int64
	if m.ReplyTo != "" {
		if replyTo, err = messageID("send", "reply", m.ReplyTo); err != nil {
			return channel.Sent{}, err
		}
	}
	if err := checkButtons(m.Buttons); err != nil {
		return channel.Sent{}, fmt.Errorf("telegram: send: %w", err)
	}
	var out message
	at := sendAttempt{html: m.Text != "", reply: replyTo != 0}
	params := func(at sendAttempt) map[string]any { return b.sendParams(m, t, replyTo, at) }
	if err := b.call(ctx, "send", "sendMessage", t, at, m.Plain != "", params, &out); err != nil {
		return channel.Sent{}, err
	}
	return b.sent(out)
}

// call makes one message request (send, edit, react, delete) under
// Send's rules: it is repeated only when it provably did not happen,
// and HTML Telegram cannot parse goes again as plain text. step names
// the request in errors.
func (b *Bot) call(ctx context.Context, step, method string, t target, at sendAttempt, hasPlain bool,
	params func(sendAttempt) map[string]any, out any) error {
	for n := 0; ; n++ {
		err := b.api.call(ctx, method, params(at), out)
		if err == nil {
			return nil
		}
		wait, next, retry := b.sendFailed(err, t, at, hasPlain)
		if !retry || n >= 4 {
			return stepError(step, err)
		}
		if wait > 0 && !b.timing.sleep(ctx, wait) {
			return fmt.Errorf("telegram: %s: %w", step, ctx.Err())
		}
		at = next
	}
}

// messageID reads a Telegram message id (what of it: "reply", "message").
func messageID(step, what, id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("telegram: %s: %s id %q is not a message id", step, what, id)
	}
	return n, nil
}

func (b *Bot) sendParams(m channel.Outbound, t target, replyTo int64, at sendAttempt) map[string]any {
	p := map[string]any{"chat_id": t.chat, "text": m.Plain}
	if at.html {
		p["text"], p["parse_mode"] = m.Text, "HTML"
	}
	// Telegram refuses message_thread_id for the General topic (R11.6).
	if t.thread != 0 && t.thread != generalTopic {
		p["message_thread_id"] = t.thread
	}
	if at.reply {
		p["reply_parameters"] = map[string]any{"message_id": replyTo}
	}
	if !b.preview {
		p["link_preview_options"] = map[string]any{"is_disabled": true}
	}
	if len(m.Buttons) > 0 {
		p["reply_markup"] = keyboard(m.Buttons)
	}
	return p
}

// sendFailed decides what follows a failed message request: how long to wait
// and the next attempt, or no retry.
func (b *Bot) sendFailed(err error, t target, at sendAttempt, hasPlain bool) (time.Duration, sendAttempt, bool) {
	var ae *APIError
	if errors.As(err, &ae) {
		d := strings.ToLower(ae.Description)
		switch {
		case ae.Code == 429 && ae.RetryAfter > 0 && ae.RetryAfter <= b.timing.maxWait:
			return ae.RetryAfter, at, true
		case ae.Code == 400 && at.html && hasPlain && strings.Contains(d, "can't parse entities"):
			b.log.Warn("telegram refused the HTML of a reply; sending it as plain text", "err", ae.Description)
			at.html = false
			return 0, at, true
		case ae.Code == 400 && at.reply && strings.Contains(d, "message to be replied not found"):
			at.reply = false
			return 0, at, true
		case ae.MigrateTo != 0:
			if chat, ok := t.chat.(int64); ok {
				b.migrated(chat, ae.MigrateTo)
			}
		}
		return 0, at, false
	}
	var te *transportError
	if errors.As(err, &te) && !te.written && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return b.timing.backoff(0), at, true
	}
	return 0, at, false
}

// ErrUnconfirmed marks a request (a send, edit, reaction or deletion)
// that reached Telegram but whose answer was lost: Telegram may have
// carried it out, so it is not retried.
var ErrUnconfirmed = fmt.Errorf("telegram: the request was sent but no answer came: %w", channel.ErrUnconfirmed)

func stepError(step string, err error) error {
	var te *transportError
	if errors.As(err, &te) && te.written {
		return fmt.Errorf("%w: %w", ErrUnconfirmed, err)
	}
	return fmt.Errorf("telegram: %s: %w", step, err)
}

// Typing implements channel.Transport: sendChatAction typing, with the
// topic even when it is General (R8.6).
func (b *Bot) Typing(ctx context.Context, t channel.Target) error {
	tg, err := parseTarget(t)
	if err != nil {
		return fmt.Errorf("telegram: typing: %w", err)
	}
	p := map[string]any{"chat_id": tg.chat, "action": "typing"}
	if tg.thread != 0 {
		p["message_thread_id"] = tg.thread
	}
	if err := b.api.call(ctx, "sendChatAction", p, nil); err != nil {
		return fmt.Errorf("telegram: typing: %w", err)
	}
	return nil
}
