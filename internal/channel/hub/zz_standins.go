package hub

// Removed when helpers A and B land.
//
// Minimal stand-ins for the pure rules of package channel (helper A:
// accounts, access control, routing, pairing text) and package
// channel/format (helper B: rendering, chunking, reply tags, NO_REPLY),
// under the names those packages export, prefixed ch/fmt. They implement
// the spec's rules only as far as the hub's tests need them; the hub
// reaches them only through the functions of rules.go, so swapping in the
// real packages changes that file and this one.

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"talon/internal/channel"
	"talon/internal/config"
)

// chAccount is channel.Account: one account's resolved settings.
type chAccount struct {
	Channel, ID     string
	Enabled         bool
	Token           string
	DMPolicy        string
	AllowFrom       []string
	GroupPolicy     string
	GroupAllowFrom  []string
	RequireMention  map[string]bool // by group id, "*" for any
	TextChunkLimit  int
	ReplyToMode     string
	HistoryLimit    int
	AllowBots       bool
	MentionPatterns []string
}

func strOf(v *config.Value, key string) string {
	if x := v.Get(key); x != nil && x.Kind == config.String {
		return x.Str
	}
	return ""
}

func listOf(v *config.Value, key string) []string {
	x := v.Get(key)
	if x == nil || x.Kind != config.Array {
		return nil
	}
	var out []string
	for _, it := range x.Items {
		if it.Kind == config.String {
			out = append(out, it.Str)
		} else if it.Kind == config.Number {
			out = append(out, it.Num)
		}
	}
	return out
}

func intOf(v *config.Value, key string, def int) int {
	if x := v.Get(key); x != nil && x.Kind == config.Number {
		if n, err := strconv.Atoi(x.Num); err == nil {
			return n
		}
	}
	return def
}

func rest(r *config.Raw) *config.Value {
	if r == nil {
		return nil
	}
	return r.Value
}

// chAccounts is channel.Accounts: the configured accounts of a
// channel, sorted.
func chAccounts(cfg *config.Config, name string) []chAccount {
	var out []chAccount
	{
		ch, ok := cfg.Channels[name]
		if !ok {
			return nil
		}
		root := rest(ch.Rest)
		ids := []string{}
		for id := range ch.Accounts {
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			ids = []string{"default"}
		}
		slices.Sort(ids)
		for _, id := range ids {
			acc := rest(ch.Accounts[id].Rest)
			get := func(k string) string {
				if s := strOf(acc, k); s != "" {
					return s
				}
				return strOf(root, k)
			}
			list := func(k string) []string {
				if l := listOf(acc, k); l != nil {
					return l
				}
				return listOf(root, k)
			}
			a := chAccount{Channel: name, ID: strings.ToLower(id), Enabled: ch.Enabled == nil || *ch.Enabled,
				DMPolicy: get("dmPolicy"), AllowFrom: list("allowFrom"), GroupPolicy: get("groupPolicy"),
				GroupAllowFrom: list("groupAllowFrom"), ReplyToMode: get("replyToMode"),
				TextChunkLimit:  intOf(acc, "textChunkLimit", intOf(root, "textChunkLimit", 0)),
				HistoryLimit:    intOf(acc, "historyLimit", intOf(root, "historyLimit", 50)),
				MentionPatterns: list("mentionPatterns"), RequireMention: map[string]bool{}}
			for _, k := range []string{"botToken", "token"} {
				if a.Token == "" {
					a.Token = get(k)
				}
			}
			if a.DMPolicy == "" {
				a.DMPolicy = "pairing"
			}
			if a.GroupPolicy == "" {
				a.GroupPolicy = "allowlist"
			}
			for gid, g := range ch.Groups {
				req := true
				if x := rest(g.Rest).Get("requireMention"); x != nil && x.Kind == config.Bool {
					req = x.Bool
				}
				a.RequireMention[gid] = req
			}
			out = append(out, a)
		}
	}
	return out
}

// chDecision is channel.Decision.
type chDecision struct {
	Allow   bool   // run a turn
	Pairing bool   // an unknown DM sender: pairing flow
	History bool   // admitted but not addressed: pending history only
	Reason  string // the R5.2 reason code
}

// chAdmit is channel.Admit: DM policy with the pairing store's entries
// (R5.1, R5.2), the room and sender gates (R5.7, R5.8) and mention
// gating (R6.1, R6.2).
func chAdmit(cfg *config.Config, a chAccount, e channel.Envelope, paired []string) chDecision {
	if e.Sender.IsBot && !a.AllowBots {
		return chDecision{Reason: "bot_not_allowed"}
	}
	if e.Peer.Kind == channel.Direct {
		list := a.AllowFrom
		if a.DMPolicy == "pairing" {
			list = append(slices.Clone(list), paired...)
		}
		switch {
		case a.DMPolicy == "disabled":
			return chDecision{Reason: "dm_policy_disabled"}
		case a.DMPolicy == "open" && slices.Contains(list, "*"):
			return chDecision{Allow: true, Reason: "dm_policy_open"}
		case slices.Contains(list, e.Sender.ID):
			return chDecision{Allow: true, Reason: "dm_policy_allowlisted"}
		case a.DMPolicy == "pairing":
			return chDecision{Pairing: true, Reason: "dm_policy_pairing_required"}
		}
		return chDecision{Reason: "dm_policy_not_allowlisted"}
	}
	if a.GroupPolicy == "disabled" {
		return chDecision{Reason: "group_policy_disabled"}
	}
	req, listed := a.RequireMention[e.Peer.ID]
	if !listed {
		req, listed = a.RequireMention["*"]
	}
	if !listed && (a.GroupPolicy == "allowlist" || len(a.RequireMention) > 0) {
		return chDecision{Reason: "group_policy_room_not_allowlisted"}
	}
	senders := a.GroupAllowFrom
	if len(senders) == 0 {
		senders = a.AllowFrom
	}
	if a.GroupPolicy == "allowlist" && !slices.Contains(senders, "*") && !slices.Contains(senders, e.Sender.ID) {
		return chDecision{Reason: "group_policy_not_allowlisted"}
	}
	if !listed {
		req = true
	}
	mentioned := e.Mentioned
	for _, p := range a.MentionPatterns {
		if re, err := regexp.Compile("(?i)" + p); err == nil && re.MatchString(e.Text) {
			mentioned = true
		}
	}
	if req && !mentioned {
		return chDecision{History: true, Reason: "mention_required"}
	}
	return chDecision{Allow: true, Reason: "group_policy_allowed"}
}

// chRoute is channel.Route (R3.7).
type chRoute struct {
	AgentID        string `json:"agentId"`
	SessionKey     string `json:"sessionKey"`
	MainSessionKey string `json:"mainSessionKey"`
	MatchedBy      string `json:"matchedBy"`
}

// chResolve is channel.Resolve: no bindings here, the default agent and
// dmScope per-channel-peer.
func chResolve(cfg *config.Config, e channel.Envelope, defaultAgent string) (chRoute, error) {
	agent := cfg.DefaultAgentID()
	if defaultAgent != "" {
		agent = defaultAgent
	}
	if agent == "" {
		return chRoute{}, fmt.Errorf("AGENT_SELECTION_REQUIRED: add a binding for %s", e.Channel)
	}
	main := "agent:" + agent + ":main"
	key := "agent:" + agent + ":" + e.Channel + ":" + string(e.Peer.Kind) + ":" + strings.ToLower(e.Peer.ID)
	if e.Peer.Kind == channel.Direct {
		key = "agent:" + agent + ":" + e.Channel + ":direct:" + strings.ToLower(e.Sender.ID)
	}
	if e.ThreadID != "" {
		key += ":thread:" + strings.ToLower(e.ThreadID)
	}
	return chRoute{AgentID: agent, SessionKey: key, MainSessionKey: main, MatchedBy: "default"}, nil
}

const (
	chPairingTTL        = time.Hour
	chPendingPerAccount = 3
	chPairingAlphabet   = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	chPairingCodeLen    = 8
)

// chPairingCode is channel.PairingCode (R7.1): 32 letters divide 256,
// so a byte picks one without bias.
func chPairingCode(random []byte) string {
	if len(random) < chPairingCodeLen {
		return ""
	}
	out := make([]byte, chPairingCodeLen)
	for i := range out {
		out[i] = chPairingAlphabet[int(random[i])%len(chPairingAlphabet)]
	}
	return string(out)
}

// chRequestID is channel.RequestID (R7.8).
func chRequestID(ch, account, sender string, createdAt time.Time) string {
	sum := sha256.Sum256([]byte(ch + "\x00" + account + "\x00" + sender + "\x00" + strconv.FormatInt(createdAt.UnixMilli(), 10)))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:32]
}

// chPairingReply is channel.PairingReply (R7.4).
func chPairingReply(ch, senderID, code string, expires time.Time) string {
	return fmt.Sprintf("Access to this bot is not configured yet.\n\nYour %s user id: `%s`\nPairing code: `%s` (expires %s)\n\nAsk the owner to run:\n```\ntalon pairing approve %s %s\n```",
		ch, senderID, code, expires.UTC().Format("15:04 UTC"), ch, code)
}

// chSharedDMIssues is channel.SharedDMIssues (improvement 1): this
// stand-in has no dmScope, so it finds nothing.
func chSharedDMIssues(cfg *config.Config) []channel.Issue { return nil }

// fmtOptions is format.Options.
type fmtOptions struct {
	Limit    int
	MaxLines int
}

// fmtDefaults is format.Defaults (R8.3).
func fmtDefaults(ch string) fmtOptions {
	switch ch {
	case "discord":
		return fmtOptions{Limit: 2000, MaxLines: 17}
	case "slack":
		return fmtOptions{Limit: 8000}
	}
	return fmtOptions{Limit: 4000}
}

// fmtChunk is format.Chunk.
type fmtChunk struct{ Text, Plain string }

// fmtChunks is format.Chunks: plain text cut at the last paragraph
// break that fits, else at a rune boundary.
func fmtChunks(s string, o fmtOptions) []fmtChunk {
	var out []fmtChunk
	for s = strings.TrimSpace(s); s != ""; {
		n := min(len(s), max(o.Limit, 1))
		if n < len(s) {
			if i := strings.LastIndex(s[:n], "\n\n"); i > 0 {
				n = i
			}
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		c := strings.TrimSpace(s[:n])
		out = append(out, fmtChunk{Text: c, Plain: c})
		s = strings.TrimSpace(s[n:])
	}
	return out
}

// fmtDirectives is format.Directives (R8.5).
type fmtDirectives struct {
	ReplyToCurrent bool
	ReplyTo        string
}

var fmtTag = regexp.MustCompile(`\[\[\s*(reply_to_current|reply_to\s*:\s*([^\]\s]+))\s*\]\]`)

// fmtTakeDirectives is format.TakeDirectives.
func fmtTakeDirectives(s string) (string, fmtDirectives) {
	var d fmtDirectives
	for _, m := range fmtTag.FindAllStringSubmatch(s, -1) {
		if m[2] != "" {
			d.ReplyTo = m[2]
		} else {
			d.ReplyToCurrent = true
		}
	}
	return strings.TrimSpace(fmtTag.ReplaceAllString(s, "")), d
}

// fmtIsSilent is format.IsSilent (R8.8).
func fmtIsSilent(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "NO_REPLY") }

// fmtStripHeartbeat is format.StripHeartbeat (R8.8).
func fmtStripHeartbeat(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimPrefix(s, "HEARTBEAT_OK"))
	return strings.TrimSpace(strings.TrimSuffix(s, "HEARTBEAT_OK"))
}
