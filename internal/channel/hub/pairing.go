package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"talon/internal/channel"
	"talon/internal/store"
)

// PairingRequest is a pending request as channels.pairing.list shows it
// (spec §16): never its code, only an opaque RequestID (R7.8). Times are
// epoch milliseconds.
type PairingRequest struct {
	RequestID       string          `json:"requestId"`
	Channel         string          `json:"channel"`
	AccountID       string          `json:"accountId"`
	SenderID        string          `json:"senderId"`
	SenderLabel     string          `json:"senderLabel"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	CreatedAt       int64           `json:"createdAt"`
	LastSeenAt      int64           `json:"lastSeenAt"`
	ExpiresAt       int64           `json:"expiresAt"`
	NotifySupported bool            `json:"notifySupported"`
}

// PairingLimits are the rules a listing applies.
type PairingLimits struct {
	PendingPerAccount int   `json:"pendingPerAccount"`
	TTLMs             int64 `json:"ttlMs"`
}

// PairingList is channels.pairing.list's result, less
// commandOwnerConfigured, which the gateway knows.
type PairingList struct {
	Requests []PairingRequest `json:"requests"`
	Limits   PairingLimits    `json:"limits"`
}

// Notification outcomes of an approval (spec §16).
const (
	NotifyNotRequested = "not-requested"
	NotifySent         = "sent"
	NotifyUnsupported  = "unsupported"
	NotifyFailed       = "failed"
)

// PairingDecision is what channels.pairing.approve and .dismiss return.
type PairingDecision struct {
	RequestID    string `json:"requestId"`
	SenderID     string `json:"senderId"`
	Notification string `json:"notification,omitempty"`
}

// ErrUnknownRequest says no pending request has the id: approved,
// dismissed or expired meanwhile.
var ErrUnknownRequest = errors.New("no pending pairing request has this id (approved, dismissed or expired)")

func (h *Hub) view(r store.PairingRequest) PairingRequest {
	var meta struct{ Username, Name string }
	json.Unmarshal(r.Meta, &meta)
	lbl := label(channel.Sender{ID: r.SenderID, Username: meta.Username, Name: meta.Name})
	_, err := h.account(r.Channel, r.AccountID)
	return PairingRequest{RequestID: channel.RequestID(r.Channel, r.AccountID, r.SenderID, r.CreatedAt),
		Channel: r.Channel, AccountID: r.AccountID, SenderID: r.SenderID, SenderLabel: lbl, Metadata: r.Meta,
		CreatedAt: r.CreatedAt.UnixMilli(), LastSeenAt: r.LastSeenAt.UnixMilli(),
		ExpiresAt: r.CreatedAt.Add(channel.PairingTTL).UnixMilli(), NotifySupported: err == nil}
}

// Pairing lists the pending requests of a channel and account ("" for
// all), expired ones pruned.
func (h *Hub) Pairing(ctx context.Context, channelID, accountID string) (PairingList, error) {
	rs, err := h.o.Store.PairingRequests(ctx, channelID, accountID, h.o.Clock.Now(), channel.PairingTTL)
	if err != nil {
		return PairingList{}, fmt.Errorf("channels.pairing.list: %w", err)
	}
	out := PairingList{Requests: []PairingRequest{}, Limits: PairingLimits{channel.PendingPerAccount, channel.PairingTTL.Milliseconds()}}
	for _, r := range rs {
		out.Requests = append(out.Requests, h.view(r))
	}
	return out, nil
}

// find is the pending request of a channel account with requestID.
func (h *Hub) find(ctx context.Context, channelID, accountID, requestID string) (store.PairingRequest, error) {
	if channelID == "" || accountID == "" || requestID == "" {
		return store.PairingRequest{}, errors.New("channel, accountId and requestId are required")
	}
	rs, err := h.o.Store.PairingRequests(ctx, channelID, accountID, h.o.Clock.Now(), channel.PairingTTL)
	if err != nil {
		return store.PairingRequest{}, err
	}
	for _, r := range rs {
		if channel.RequestID(r.Channel, r.AccountID, r.SenderID, r.CreatedAt) == strings.TrimSpace(requestID) {
			return r, nil
		}
	}
	return store.PairingRequest{}, ErrUnknownRequest
}

// ApprovePairing approves a pending request (R7.5): its sender may DM
// the account from the next message on. With notify, the sender is told
// so in a DM, sent once however often the approval is retried.
func (h *Hub) ApprovePairing(ctx context.Context, channelID, accountID, requestID string, notify bool) (PairingDecision, error) {
	r, err := h.find(ctx, channelID, accountID, requestID)
	if err != nil {
		return PairingDecision{}, fmt.Errorf("channels.pairing.approve: %w", err)
	}
	m := store.PairingMatch{Channel: r.Channel, AccountID: r.AccountID, SenderID: r.SenderID}
	if _, err := h.o.Store.ApprovePairing(ctx, m, h.o.Clock.Now(), channel.PairingTTL); err != nil {
		return PairingDecision{}, fmt.Errorf("channels.pairing.approve: %w", err)
	}
	out := PairingDecision{RequestID: requestID, SenderID: r.SenderID, Notification: NotifyNotRequested}
	if notify {
		out.Notification = h.notifyApproved(ctx, r, requestID)
	}
	return out, nil
}

func (h *Hub) notifyApproved(ctx context.Context, r store.PairingRequest, requestID string) string {
	if _, err := h.account(r.Channel, r.AccountID); err != nil {
		return NotifyUnsupported
	}
	_, err := h.Send(ctx, SendRequest{Channel: r.Channel, AccountID: r.AccountID,
		Target:         channel.Target{Peer: channel.Peer{Kind: channel.Direct, ID: r.SenderID}},
		Text:           "Access approved: you can message this bot now.",
		IdempotencyKey: "pairing-approved:" + requestID})
	if err != nil {
		h.log.Warn("pairing approval notice not sent", "channel", r.Channel, "account", r.AccountID, "err", err)
		return NotifyFailed
	}
	return NotifySent
}

// DismissPairing deletes a pending request without blocking its sender
// (R7.6).
func (h *Hub) DismissPairing(ctx context.Context, channelID, accountID, requestID string) (PairingDecision, error) {
	r, err := h.find(ctx, channelID, accountID, requestID)
	if err != nil {
		return PairingDecision{}, fmt.Errorf("channels.pairing.dismiss: %w", err)
	}
	m := store.PairingMatch{Channel: r.Channel, AccountID: r.AccountID, SenderID: r.SenderID}
	if _, err := h.o.Store.DismissPairing(ctx, m, h.o.Clock.Now(), channel.PairingTTL); err != nil {
		return PairingDecision{}, fmt.Errorf("channels.pairing.dismiss: %w", err)
	}
	return PairingDecision{RequestID: requestID, SenderID: r.SenderID}, nil
}
