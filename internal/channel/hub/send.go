package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"talon/internal/channel"
	"talon/internal/channel/format"
	"talon/internal/store"
)

// SendRequest is a message not answering an inbound one: the gateway's
// send method, the message tool, a pairing approval notice.
type SendRequest struct {
	Channel   string
	AccountID string // "" for the channel's default account (R1.1)
	Target    channel.Target
	Text      string // Markdown, rendered for the platform
	ReplyTo   string // platform id of a message to reply to natively
	// Buttons go under the last chunk (channel.Button), on the platforms
	// that have them.
	Buttons []channel.Button
	// IdempotencyKey names the send: a request repeated with the same
	// key sends nothing more and returns the first one's result.
	IdempotencyKey string
	// Ack is a heartbeat's acknowledgement that the channel's showOk
	// asks to see: its HEARTBEAT_OK is sent as it is.
	Ack bool
}

// SendResult is what was sent.
type SendResult struct {
	Channel    string   `json:"channel"`
	AccountID  string   `json:"accountId"`
	MessageIDs []string `json:"messageIds"` // of the chunks the platform confirmed, in order
	// Unconfirmed counts chunks the platform took without an id, or whose
	// send a crash interrupted (R8.12).
	Unconfirmed int  `json:"unconfirmed,omitempty"`
	Repeated    bool `json:"repeated,omitempty"` // an earlier request with the key sent it
}

// Send renders, chunks and delivers a message through a running account,
// each chunk at most once across retries of the request and restarts.
func (h *Hub) Send(ctx context.Context, r SendRequest) (SendResult, error) {
	if strings.TrimSpace(r.Text) == "" {
		return SendResult{}, errors.New("send: empty message")
	}
	// HEARTBEAT_OK never reaches a chat, whoever sends it (spec
	// automation.md, better-item 3): a reply's, a heartbeat's and the
	// message tool's text pass here.
	if r.Ack {
		r.Text = format.HeartbeatToken
	} else if r.Text = format.StripHeartbeat(r.Text); strings.TrimSpace(r.Text) == "" {
		return SendResult{}, errors.New("send: the message is only HEARTBEAT_OK, which is never sent to a chat")
	}
	if r.Target.Peer.ID == "" || r.Target.Peer.Kind == "" {
		return SendResult{}, errors.New("send: no target")
	}
	acc, err := h.sender(r.Channel, r.AccountID)
	if err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	chunks := render(acc.a, r.Text, r.Target)
	if len(chunks) > 0 {
		chunks[0].ReplyTo = r.ReplyTo
		chunks[len(chunks)-1].Buttons = r.Buttons
	}
	sendKeys(r.IdempotencyKey, chunks)
	queued, repeated, err := h.o.Store.QueueSend(ctx, r.IdempotencyKey, chunks)
	if err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	out := SendResult{Channel: acc.a.Channel, AccountID: acc.a.ID, Repeated: repeated, MessageIDs: []string{}}
	if len(queued) == 0 {
		return out, nil
	}
	if queued[0].Channel != acc.a.Channel || queued[0].AccountID != acc.a.ID {
		return SendResult{}, fmt.Errorf("send: idempotency key %q was used for a send on %s/%s", r.IdempotencyKey, queued[0].Channel, queued[0].AccountID)
	}
	derr := acc.deliver(ctx, queued[0].Batch)
	final, err := h.o.Store.Chunks(context.WithoutCancel(ctx), queued[0].Batch)
	if err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	for _, c := range final {
		switch c.State {
		case store.SendSent:
			out.MessageIDs = append(out.MessageIDs, c.MessageID)
		case store.SendUnconfirmed, store.SendSending:
			out.Unconfirmed++
		}
	}
	if derr != nil {
		return out, fmt.Errorf("send on %s/%s: %w", acc.a.Channel, acc.a.ID, derr)
	}
	return out, nil
}

// sender is the running account a send goes through.
func (h *Hub) sender(channelID, accountID string) (*account, error) {
	if accountID == "" {
		accountID = h.defaultAccount(channelID)
	}
	acc, err := h.account(channelID, accountID)
	if err != nil {
		return nil, err
	}
	if !acc.isRunning() {
		return nil, fmt.Errorf("%s account %q is not running", channelID, accountID)
	}
	return acc, nil
}

// defaultAccount is R1.1's choice: the account named default, else the
// first in sorted order.
func (h *Hub) defaultAccount(channelID string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for k := range h.accounts {
		if k.channel == channelID {
			ids = append(ids, k.account)
		}
	}
	if slices.Contains(ids, "default") || len(ids) == 0 {
		return "default"
	}
	slices.Sort(ids)
	return ids[0]
}
