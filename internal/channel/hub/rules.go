package hub

import (
	"crypto/sha256"
	"encoding/base32"
	"io"
	"strconv"

	"talon/internal/channel"
	"talon/internal/config"
	"talon/internal/store"
)

// This file is where the hub meets the pure rules of packages channel
// (accounts, gates, routes, pairing text) and channel/format (rendering,
// chunking, reply tags, silent replies).

// Account is one account's resolved settings (channel.Account).
type Account = chAccount

// Route is where an inbound message goes (channel.Route, R3.7).
type Route = chRoute

// accountsOf resolves the accounts of cfg and what is wrong with them,
// the shared-DM warning included (improvement 1).
func accountsOf(cfg *config.Config) ([]Account, []channel.Issue) {
	var accounts []Account
	for _, ch := range []string{"telegram", "slack", "discord"} {
		accounts = append(accounts, chAccounts(cfg, ch)...)
	}
	return accounts, chSharedDMIssues(cfg)
}

// enabled says the account may run: Apply keeps a disabled one listed,
// stopped.
func enabled(a Account) bool { return a.Enabled }

// tokenOf is the credential that identifies an account's bot to its
// platform: one connection per token in the process.
func tokenOf(a Account) string { return a.Token }

// admit runs the gates of R2.1 steps 3–4 with the pairing store's
// approved senders.
func admit(cfg *config.Config, a Account, e channel.Envelope, paired []string) chDecision {
	return chAdmit(cfg, a, e, paired)
}

// needsPairingStore says whether the gate reads the pairing store for e:
// only a DM under dmPolicy pairing (R5.1).
func needsPairingStore(a Account, e channel.Envelope) bool {
	return e.Peer.Kind == channel.Direct && a.DMPolicy == "pairing"
}

func route(cfg *config.Config, a Account, e channel.Envelope) (Route, error) {
	return chResolve(cfg, e, "")
}

// newCode draws a pairing code from r (crypto/rand in production).
func newCode(r io.Reader) (string, error) {
	b := make([]byte, chPairingCodeLen)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return chPairingCode(b), nil
}

func historyLimit(a Account) int { return min(max(a.HistoryLimit, 0), 200) }

// reply is what a turn's text becomes: the chunks to send, rendered for
// the account's platform, with the reply references replyToMode and the
// model's reply tags ask for (R8.5). A silent reply has none (R8.8).
func reply(a Account, text string, t channel.Target, current string) []store.Chunk {
	body, d := fmtTakeDirectives(fmtStripHeartbeat(text))
	if body == "" || fmtIsSilent(body) {
		return nil
	}
	ref := ""
	switch {
	case a.Channel == "slack" && (a.ReplyToMode == "" || a.ReplyToMode == "off"):
		// Slack ignores reply tags in off mode: threads hide messages.
	case d.ReplyTo != "":
		ref = d.ReplyTo
	case d.ReplyToCurrent || a.ReplyToMode == "first" || a.ReplyToMode == "all":
		ref = current
	}
	chunks := render(a, body, t)
	for i := range chunks {
		if i == 0 || a.ReplyToMode == "all" {
			chunks[i].ReplyTo = ref
		}
	}
	return chunks
}

// render cuts Markdown text into chunks for a's platform, at its limits
// (R8.3) lowered by the account's textChunkLimit.
func render(a Account, text string, t channel.Target) []store.Chunk {
	o := fmtDefaults(a.Channel)
	if a.TextChunkLimit > 0 && a.TextChunkLimit < o.Limit {
		o.Limit = a.TextChunkLimit
	}
	var out []store.Chunk
	for _, c := range fmtChunks(text, o) {
		out = append(out, store.Chunk{Channel: a.Channel, AccountID: a.ID,
			Outbound: channel.Outbound{Target: t, Text: c.Text, Plain: c.Plain}})
	}
	return out
}

// answerKeys names an answer's chunks for the platform: "i<inbox id in
// base 36>.<index>", at most 25 characters (Discord's nonce).
func answerKeys(id int64, chunks []store.Chunk) {
	for i := range chunks {
		chunks[i].Key = "i" + strconv.FormatInt(id, 36) + "." + strconv.Itoa(i)
	}
}

// sendKeys names a send's chunks from its idempotency key, which may be
// long: "s<16 base32 digits of its hash>.<index>".
func sendKeys(idem string, chunks []store.Chunk) {
	sum := sha256.Sum256([]byte(idem))
	h := base32.StdEncoding.EncodeToString(sum[:10])
	for i := range chunks {
		chunks[i].Key = "s" + h + "." + strconv.Itoa(i)
	}
}
