package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"talon/internal/channel"
	"talon/internal/config"
)

// Chat is where a session's conversation is: the account and target of
// the last message that started one of its turns.
type Chat struct {
	Channel, AccountID string
	Target             channel.Target
	// Approvers are the senders whose /approve the chat takes (their
	// platform ids): the account's concrete allowFrom entries and the
	// channel's commands.ownerAllowFrom owners — never a wildcard, a
	// pairing approval or a group's sender list.
	Approvers []string
}

// ChatOf finds the conversation of a channel session; ok is false for a
// session no channel message started, or whose account is not running.
func (h *Hub) ChatOf(ctx context.Context, sessionKey string) (Chat, bool) {
	r, err := h.o.Store.LatestInbound(ctx, sessionKey)
	if err != nil {
		return Chat{}, false
	}
	e := r.Envelope
	acc, err := h.account(e.Channel, e.AccountID)
	if err != nil || !acc.isRunning() {
		return Chat{}, false
	}
	return Chat{Channel: e.Channel, AccountID: e.AccountID, Target: channel.Target{Peer: e.Peer, ThreadID: e.ThreadID},
		Approvers: approvers(h.config(), acc.a)}, true
}

// approvers are a channel account's exec approvers (see Chat).
func approvers(cfg *config.Config, a Account) []string {
	var out []string
	for _, id := range a.AllowFrom {
		id = strings.TrimSpace(id)
		if id != "" && id != "*" && !strings.HasPrefix(id, "accessGroup:") {
			out = append(out, channel.EntryID(a.Channel, id))
		}
	}
	out = append(out, channel.Owners(cfg, a.Channel)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// IsApprover says whether sender may answer the exec approvals of chat.
func (c Chat) IsApprover(senderID string) bool {
	return senderID != "" && slices.Contains(c.Approvers, senderID)
}

// Notify sends text, with buttons under it, to a session's conversation
// once per key (an exec approval's prompt and its outcome).
func (h *Hub) Notify(ctx context.Context, sessionKey, text, key string, buttons ...channel.Button) error {
	c, ok := h.ChatOf(ctx, sessionKey)
	if !ok {
		return fmt.Errorf("session %q has no running channel conversation", sessionKey)
	}
	_, err := h.Send(ctx, SendRequest{Channel: c.Channel, AccountID: c.AccountID, Target: c.Target, Text: text, IdempotencyKey: key, Buttons: buttons})
	return err
}
