package discord

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/channel"
)

var _ channel.Pollster = (*Bot)(nil)

// Discord's poll limits ("Poll Create Request Object").
const (
	maxPollQuestion = 300
	maxPollAnswer   = 55
	maxPollAnswers  = 10
	maxPollHours    = 768 // 32 days
)

// SendPoll posts a native poll (channel.Pollster): a message whose poll
// object has the question, the answers, the duration in whole hours
// (rounded up; Discord's default of 24 h when p.Duration is 0) and
// allow_multiselect. Having no key, it is never repeated.
func (b *Bot) SendPoll(ctx context.Context, t channel.Target, p channel.Poll) (channel.Sent, error) {
	const step = "discord poll"
	req, err := pollOf(p)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("%s: %w", step, err)
	}
	chID, err := b.channelFor(ctx, t)
	if err != nil {
		return channel.Sent{}, fmt.Errorf("%s: %w", step, err)
	}
	return b.postJSON(ctx, step, chID, createMessage{messageText: b.textOf(""), Poll: req})
}

// pollOf checks p against Discord's limits and builds the poll object.
func pollOf(p channel.Poll) (*pollRequest, error) {
	if strings.TrimSpace(p.Question) == "" || utf8.RuneCountInString(p.Question) > maxPollQuestion {
		return nil, fmt.Errorf("the question must be 1–%d characters, not %d", maxPollQuestion, utf8.RuneCountInString(p.Question))
	}
	if len(p.Options) < 1 || len(p.Options) > maxPollAnswers {
		return nil, fmt.Errorf("%d answers: Discord takes 1–%d", len(p.Options), maxPollAnswers)
	}
	req := &pollRequest{Question: pollMedia{Text: p.Question}, AllowMultiselect: p.Multi, LayoutType: 1}
	for i, o := range p.Options {
		if strings.TrimSpace(o) == "" || utf8.RuneCountInString(o) > maxPollAnswer {
			return nil, fmt.Errorf("answer %d must be 1–%d characters, not %d", i+1, maxPollAnswer, utf8.RuneCountInString(o))
		}
		req.Answers = append(req.Answers, pollAnswer{PollMedia: pollMedia{Text: o}})
	}
	switch {
	case p.Duration < 0:
		return nil, fmt.Errorf("the duration %s is negative", p.Duration)
	case p.Duration > maxPollHours*time.Hour:
		return nil, fmt.Errorf("the duration %s is over Discord's %d hours (32 days)", p.Duration, maxPollHours)
	case p.Duration > 0:
		h := int((p.Duration + time.Hour - 1) / time.Hour)
		req.Duration = &h
	}
	return req, nil
}
