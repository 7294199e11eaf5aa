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

// toolSends are the texts the message tool sent during a session's turn
// to the chat the turn answers (R9.6): the turn's answer, when it is one
// of them, is not sent a second time.
type toolSends struct {
	mu sync.Mutex
	m  map[string][]string // session key → texts
}

// NoteToolSend records that the message tool sent text to the chat of
// sessionKey's running turn.
func (h *Hub) NoteToolSend(sessionKey, text string) {
	h.sent.mu.Lock()
	defer h.sent.mu.Unlock()
	if h.sent.m == nil {
		h.sent.m = map[string][]string{}
	}
	h.sent.m[sessionKey] = append(h.sent.m[sessionKey], strings.TrimSpace(text))
}

// takeToolSends returns and forgets what the tool sent in sessionKey's
// turn.
func (h *Hub) takeToolSends(sessionKey string) []string {
	h.sent.mu.Lock()
	defer h.sent.mu.Unlock()
	out := h.sent.m[sessionKey]
	delete(h.sent.m, sessionKey)
	return out
}
