package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"talon/internal/channel"
)

// ErrCannotAct says an account's platform adapter does not implement
// channel.Actor.
var ErrCannotAct = errors.New("this channel cannot react to, edit or delete messages")

// actor is the running account that acts, and its adapter's Actor.
func (h *Hub) actor(channelID, accountID string) (*account, channel.Actor, error) {
	acc, err := h.sender(channelID, accountID)
	if err != nil {
		return nil, nil, err
	}
	a, ok := acc.transport().(channel.Actor)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %w", channelID, ErrCannotAct)
	}
	return acc, a, nil
}

// React adds emoji to a message in t, or takes the bot's off (remove).
func (h *Hub) React(ctx context.Context, channelID, accountID string, t channel.Target, messageID, emoji string, remove bool) error {
	_, a, err := h.actor(channelID, accountID)
	if err != nil {
		return fmt.Errorf("react: %w", err)
	}
	if strings.TrimSpace(messageID) == "" || strings.TrimSpace(emoji) == "" {
		return errors.New("react: a message id and an emoji are required")
	}
	return a.React(ctx, t, messageID, emoji, remove)
}

// Edit replaces the text of one of the bot's messages in t, rendered as a
// reply is; a text that would need more than one message is refused.
func (h *Hub) Edit(ctx context.Context, channelID, accountID string, t channel.Target, messageID, text string) error {
	acc, a, err := h.actor(channelID, accountID)
	if err != nil {
		return fmt.Errorf("edit: %w", err)
	}
	if strings.TrimSpace(messageID) == "" || strings.TrimSpace(text) == "" {
		return errors.New("edit: a message id and the new text are required")
	}
	chunks := render(acc.a, text, t)
	if len(chunks) != 1 {
		return fmt.Errorf("edit: the text needs %d messages on %s; an edit replaces one", len(chunks), channelID)
	}
	return a.Edit(ctx, t, messageID, chunks[0].Text, chunks[0].Plain)
}

// Delete removes a message in t.
func (h *Hub) Delete(ctx context.Context, channelID, accountID string, t channel.Target, messageID string) error {
	_, a, err := h.actor(channelID, accountID)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if strings.TrimSpace(messageID) == "" {
		return errors.New("delete: a message id is required")
	}
	return a.Delete(ctx, t, messageID)
}

// toolSends are what the message tool sent during a session's turn, so
// that the turn's answer, when it is one of them, is not delivered a
// second time to the same chat (R9.6; a cron job's announce, spec
// automation.md vector 12).
type toolSends struct {
	mu sync.Mutex
	m  map[string][]ToolSend // session key → sends
}

// ToolSend is one text the message tool sent, and where.
type ToolSend struct {
	Channel string
	Target  channel.Target
	Text    string // trimmed
}

// maxToolSends bounds what one session's turn remembers.
const maxToolSends = 50

// NoteToolSend records that the message tool of sessionKey's running turn
// sent text to t on channelID.
func (h *Hub) NoteToolSend(sessionKey, channelID string, t channel.Target, text string) {
	h.sent.mu.Lock()
	defer h.sent.mu.Unlock()
	if h.sent.m == nil {
		h.sent.m = map[string][]ToolSend{}
	}
	if len(h.sent.m[sessionKey]) < maxToolSends {
		h.sent.m[sessionKey] = append(h.sent.m[sessionKey], ToolSend{Channel: channelID, Target: t, Text: strings.TrimSpace(text)})
	}
}

// TakeToolSends returns and forgets what the tool sent in sessionKey's
// turn.
func (h *Hub) TakeToolSends(sessionKey string) []ToolSend {
	h.sent.mu.Lock()
	defer h.sent.mu.Unlock()
	out := h.sent.m[sessionKey]
	delete(h.sent.m, sessionKey)
	return out
}

// Sent says the tool sent text to t on channelID.
func Sent(sends []ToolSend, channelID string, t channel.Target, text string) bool {
	text = strings.TrimSpace(text)
	for _, s := range sends {
		if s.Channel == channelID && s.Target == t && s.Text == text {
			return true
		}
	}
	return false
}
