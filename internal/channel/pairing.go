package channel

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"talon/internal/config"
)

// Pairing rules of spec channels.md §7. The store (hub) keeps requests;
// these are the parts that must be the same everywhere.
const (
	// PairingTTL is how long a pairing request lives from its creation.
	PairingTTL = time.Hour
	// PendingPerAccount caps the pending requests of one channel account:
	// a further new sender gets no code and no reply (R7.2).
	PendingPerAccount = 3
	// PairingAlphabet has no 0, O, 1 or I, which people misread. Its 32
	// letters divide 256, so a random byte picks one without bias.
	PairingAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	// PairingCodeLen is the length of a code, and the random bytes
	// PairingCode needs.
	PairingCodeLen = 8
)

// PairingCode makes a code from PairingCodeLen bytes of crypto-random
// data the caller passes; "" when there are fewer. The caller retries
// with new bytes while the code equals a pending one (R7.1).
func PairingCode(random []byte) string {
	if len(random) < PairingCodeLen {
		return ""
	}
	b := make([]byte, PairingCodeLen)
	for i := range b {
		b[i] = PairingAlphabet[int(random[i])%len(PairingAlphabet)]
	}
	return string(b)
}

// NormalizeCode reads a code as a person types it: trimmed, upper-case.
func NormalizeCode(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

// ValidCode reports whether a normalised code is one PairingCode could
// have made: PairingCodeLen letters of PairingAlphabet.
func ValidCode(code string) bool {
	if len(code) != PairingCodeLen {
		return false
	}
	for i := range len(code) {
		if strings.IndexByte(PairingAlphabet, code[i]) < 0 {
			return false
		}
	}
	return true
}

// RequestID is the opaque id of a pairing request that the control
// plane shows instead of its code (R7.8): the first 32 characters of
// base64url(SHA-256(channel NUL account NUL senderId NUL createdAt)),
// createdAt written as JavaScript's toISOString does.
func RequestID(channel, account, senderID string, createdAt time.Time) string {
	iso := createdAt.UTC().Format("2006-01-02T15:04:05.000Z")
	sum := sha256.Sum256([]byte(channel + "\x00" + account + "\x00" + senderID + "\x00" + iso))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:32]
}

// PairingReply is the message a sender gets with a new code (R7.4, and
// spec "better" #5): access is not configured, their id, the code and the
// approve command each in a monospace block of their own (one tap copies
// them), and when the code expires.
func PairingReply(channel, senderID, code string, expires time.Time) string {
	label := channelLabel(channel)
	var b strings.Builder
	b.WriteString("I don't know you yet: access to this bot is not configured for you.\n\n")
	b.WriteString("Your " + label + " user id:\n```\n" + senderID + "\n```\n")
	b.WriteString("Pairing code:\n```\n" + code + "\n```\n")
	b.WriteString("Ask the bot's owner to approve it with:\n```\n")
	b.WriteString("talon pairing approve " + strings.ToLower(channel) + " " + code + "\n```\n")
	b.WriteString("The code expires at " + expires.UTC().Format("15:04 UTC on 2006-01-02") + ".")
	return b.String()
}

// channelLabel is a channel's name as people write it.
func channelLabel(channel string) string {
	switch c := strings.ToLower(channel); c {
	case "telegram", "slack", "discord", "whatsapp", "signal":
		return strings.ToUpper(c[:1]) + c[1:]
	case "":
		return "chat"
	default:
		return c
	}
}

// PairingRequest is a pending request as the store keeps it.
type PairingRequest struct {
	SenderID, Code        string
	CreatedAt, LastSeenAt time.Time
}

// Expired reports whether a request is past its TTL at now.
func (r PairingRequest) Expired(now time.Time) bool { return !now.Before(r.CreatedAt.Add(PairingTTL)) }

// PairingAction is what a DM that needs pairing does to the store.
type PairingAction int

// The pairing actions (R7.2, R7.3).
const (
	// PairingCreate: store a new request with a new code and send the
	// pairing reply, once.
	PairingCreate PairingAction = iota + 1
	// PairingRefresh: the sender already has a live request: update its
	// lastSeenAt, keep its code, send nothing.
	PairingRefresh
	// PairingFull: PendingPerAccount other senders wait already: no code,
	// no reply, until one expires or is approved.
	PairingFull
)

// NextPairing decides what a DM from senderID that needs pairing does,
// given the account's pending requests (expired ones do not count; the
// store prunes them). For PairingRefresh it returns the sender's request.
func NextPairing(pending []PairingRequest, senderID string, now time.Time) (PairingAction, PairingRequest) {
	live := 0
	for _, r := range pending {
		if r.Expired(now) {
			continue
		}
		if r.SenderID == senderID {
			return PairingRefresh, r
		}
		live++
	}
	if live >= PendingPerAccount {
		return PairingFull, PairingRequest{}
	}
	return PairingCreate, PairingRequest{}
}

// The outcomes of the first-owner bootstrap (R7.5), as
// channels.pairing.approve reports them.
const (
	OwnerNotRequested = "not-requested"
	OwnerConfigured   = "configured"
	OwnerAlready      = "already-configured"
	OwnerUnavailable  = "unavailable"
)

// BootstrapOwner is R7.5's first-owner bootstrap on a config tree: when
// cfg (the tree, loaded) names no command owner at all, the approved
// sender becomes the only one — commands.ownerAllowFrom is set to
// ["<channel>:<senderID>"] in tree — and it returns OwnerConfigured;
// with any owner already there it changes nothing (OwnerAlready), so a
// later approval never adds owners.
func BootstrapOwner(tree *config.Value, cfg *config.Config, ch, senderID string) string {
	ch, senderID = strings.TrimSpace(ch), strings.TrimSpace(senderID)
	if ch == "" || senderID == "" || senderID == "*" || strings.ContainsAny(senderID, ": \t\n") {
		return OwnerUnavailable
	}
	if len(cfg.Commands.OwnerAllowFrom) > 0 {
		return OwnerAlready
	}
	cmds := tree.Get("commands")
	if cmds == nil || cmds.Kind != config.Object {
		cmds = config.NewObject()
		tree.Set("commands", cmds)
	}
	cmds.Set("ownerAllowFrom", config.NewStrings(ch+":"+senderID))
	return OwnerConfigured
}
