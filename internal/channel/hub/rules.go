package hub

import (
	"crypto/sha256"
	"encoding/base32"
	"io"
	"strconv"

	"talon/internal/channel"
	"talon/internal/channel/format"
	"talon/internal/config"
	"talon/internal/store"
)

// This file is where the hub meets the pure rules of packages channel
// (accounts, gates, routes, pairing text) and channel/format (rendering,
// chunking, reply tags, silent replies).

// Account is one account's resolved settings.
type Account = channel.Account

// Route is where an inbound message goes (R3.7).
type Route = channel.Route

// accountsOf resolves the accounts of cfg (disabled ones are not
// listed) and what is wrong with them: the shared-DM warning
// (improvement 1).
func accountsOf(cfg *config.Config) ([]Account, []channel.Issue) {
	var accounts []Account
	for _, ch := range config.BuiltChannels {
		accounts = append(accounts, channel.Accounts(cfg, ch)...)
	}
	return accounts, channel.SharedDMIssues(cfg)
}

// tokenOf is the credential that identifies an account's bot to its
// platform — Telegram's and Slack's bot token, Discord's token, the
// default account's environment fallback (R1.2), a token file by its
// path — read through env: one connection per token in the process.
func tokenOf(a Account, env func(string) string) (string, error) {
	s := a.BotToken
	if a.Channel == "discord" {
		s = a.Token
	}
	if s != nil {
		return s.Resolve(env)
	}
	if a.TokenFile != "" {
		return "file:" + a.TokenFile, nil
	}
	if name, _ := a.FallbackEnv(); name != "" && env != nil {
		return env(name), nil
	}
	return "", nil
}

// admit runs the gates of R2.1 steps 1 (other bots), 3 and 4 with the
// pairing store's approved senders.
func admit(cfg *config.Config, a Account, e channel.Envelope, paired []string) channel.Decision {
	return channel.Admit(cfg, a, e, paired)
}

// needsPairingStore says whether the gate reads the pairing store for e:
// only a DM under dmPolicy pairing (R5.1).
func needsPairingStore(a Account, e channel.Envelope) bool {
	return e.Peer.Kind == channel.Direct && a.DMPolicy == "pairing"
}

func route(cfg *config.Config, e channel.Envelope) (Route, error) {
	return channel.Resolve(cfg, e, "")
}

// newCode draws a pairing code from r (crypto/rand in production).
func newCode(r io.Reader) (string, error) {
	b := make([]byte, channel.PairingCodeLen)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return channel.PairingCode(b), nil
}

// historyLimit is how many pending group messages a turn sees (R6.5;
// Accounts holds it to 0–200).
func historyLimit(a Account) int { return max(a.HistoryLimit, 0) }

// reply is what a turn's text becomes: the chunks to send, rendered for
// the account's platform, with the reply references replyToMode and the
// model's reply tags ask for (R8.5); batched says the turn answers a
// debounced batch. A silent reply has none (R8.8).
func reply(a Account, text string, t channel.Target, current string, batched bool) []store.Chunk {
	body, d := format.TakeDirectives(format.StripHeartbeat(text))
	if body == "" || format.IsSilent(body) {
		return nil
	}
	mode := replyMode(a, t.Peer, batched)
	ref := ""
	switch {
	case a.Channel == "slack" && mode == "off":
		// Slack ignores reply tags in off mode: threads hide messages.
	case d.ReplyTo != "":
		ref = d.ReplyTo
	case d.ReplyToCurrent || mode == "first" || mode == "all":
		ref = current
	}
	chunks := render(a, body, t)
	for i := range chunks {
		if i == 0 || mode == "all" {
			chunks[i].ReplyTo = ref
		}
	}
	return chunks
}

// replyMode is the replyToMode for a conversation (R8.5): on Slack the
// room's own, else the one for its chat type, else the account's.
// "batched" replies natively to the first message of a debounced batch
// and acts as "off" for a single message.
func replyMode(a Account, p channel.Peer, batched bool) string {
	mode := a.ReplyToMode
	if a.Channel == "slack" {
		byType := map[channel.Kind]string{channel.Direct: a.ReplyByChatType.Direct,
			channel.Group: a.ReplyByChatType.Group, channel.Room: a.ReplyByChatType.Channel}
		if m := byType[p.Kind]; m != "" {
			mode = m
		}
		if r, ok := a.SlackRooms[p.ID]; ok && r.ReplyToMode != "" {
			mode = r.ReplyToMode
		}
	}
	switch {
	case mode == "first" || mode == "all":
		return mode
	case mode == "batched" && batched:
		return "first"
	}
	return "off"
}

// render cuts Markdown text into chunks for a's platform, at its limits
// (R8.3) lowered by the account's textChunkLimit, and on Discord at its
// maxLinesPerMessage.
func render(a Account, text string, t channel.Target) []store.Chunk {
	o := format.Defaults(a.Channel)
	if a.TextChunkLimit > 0 && a.TextChunkLimit < o.Limit {
		o.Limit = a.TextChunkLimit
	}
	if a.MaxLines > 0 {
		o.MaxLines = a.MaxLines // Discord's maxLinesPerMessage
	}
	var out []store.Chunk
	for _, c := range format.Chunks(text, o) {
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
