package telegram

import (
	"context"
	"fmt"
	"time"
	"unicode/utf16"

	"talon/internal/channel"
)

var _ channel.Pollster = (*Bot)(nil)

// Telegram's limits on a poll (Bot API sendPoll).
const (
	maxQuestion   = 300 // characters
	maxOption     = 100 // characters
	minPollOption = 2
	maxPollOption = 12
	minOpenPeriod = 5 * time.Second
	maxOpenPeriod = 600 * time.Second
)

// SendPoll implements channel.Pollster: sendPoll, anonymous as
// Telegram's default (and OpenClaw's), open for Duration rounded up to
// whole seconds when it is set.
func (b *Bot) SendPoll(ctx context.Context, t channel.Target, p channel.Poll) (channel.Sent, error) {
	tg, err := parseTarget(t)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("telegram: poll: %w", err)
	}
	if err := checkPoll(p); err != nil {
		return channel.Sent{}, fmt.Errorf("telegram: poll: %w", err)
	}
	opts := make([]map[string]any, len(p.Options))
	for i, o := range p.Options {
		opts[i] = map[string]any{"text": o}
	}
	params := map[string]any{"chat_id": tg.chat, "question": p.Question, "options": opts,
		"is_anonymous": true, "allows_multiple_answers": p.Multi}
	if p.Duration > 0 {
		params["open_period"] = int64((p.Duration + time.Second - 1) / time.Second)
	}
	if tg.thread != 0 && tg.thread != generalTopic {
		params["message_thread_id"] = tg.thread
	}
	var out message
	err = b.call(ctx, "poll", "sendPoll", tg, sendAttempt{}, false, func(sendAttempt) map[string]any { return params }, &out)
	if err != nil {
		return channel.Sent{}, err
	}
	return b.sent(out)
}

// checkPoll applies Telegram's limits, which the model's choices may
// exceed, with an error that says which.
func checkPoll(p channel.Poll) error {
	if n := utf16Len(p.Question); n < 1 || n > maxQuestion {
		return fmt.Errorf("question must be 1-%d characters, not %d", maxQuestion, n)
	}
	if n := len(p.Options); n < minPollOption || n > maxPollOption {
		return fmt.Errorf("a poll needs %d-%d options, not %d", minPollOption, maxPollOption, n)
	}
	for i, o := range p.Options {
		if n := utf16Len(o); n < 1 || n > maxOption {
			return fmt.Errorf("option %d must be 1-%d characters, not %d", i+1, maxOption, n)
		}
	}
	switch {
	case p.Duration < 0:
		return fmt.Errorf("duration %s is negative", p.Duration)
	case p.Duration > 0 && p.Duration < minOpenPeriod, p.Duration > maxOpenPeriod:
		return fmt.Errorf("duration %s is outside Telegram's open_period of 5 s to 10 min; use 0 for a poll that stays open", p.Duration)
	}
	return nil
}

// utf16Len counts s as Telegram counts characters.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
