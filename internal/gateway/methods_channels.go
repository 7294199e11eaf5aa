package gateway

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/hub"
	"talon/internal/config"
	"talon/protocol"
)

// The channels methods of spec channels.md §16.
func init() {
	register("channels.status", protocol.ScopeRead, channelsStatus)
	register("channels.start", protocol.ScopeAdmin, channelsStart)
	register("channels.stop", protocol.ScopeAdmin, channelsStop)
	register("channels.logout", protocol.ScopeAdmin, channelsLogout)
	register("channels.pairing.list", protocol.ScopePairing, pairingList)
	register("channels.pairing.approve", protocol.ScopePairing, pairingApprove)
	register("channels.pairing.dismiss", protocol.ScopePairing, pairingDismiss)
	register("send", protocol.ScopeWrite, channelSend)
}

// channelLabels are the channels' names as people write them.
var channelLabels = map[string]string{"telegram": "Telegram", "slack": "Slack", "discord": "Discord"}

// accountSnapshot is channels.status's AccountSnapshot (spec §16):
// epoch-ms times or null, never a secret.
type accountSnapshot struct {
	AccountID         string  `json:"accountId"`
	Enabled           bool    `json:"enabled"`
	Configured        bool    `json:"configured"`
	Running           bool    `json:"running"`
	Connected         bool    `json:"connected"`
	Mode              string  `json:"mode,omitempty"`
	DMPolicy          string  `json:"dmPolicy,omitempty"`
	BotID             string  `json:"botId,omitempty"`
	Name              string  `json:"name,omitempty"`
	ReconnectAttempts int     `json:"reconnectAttempts"`
	LastConnectedAt   *int64  `json:"lastConnectedAt"`
	LastInboundAt     *int64  `json:"lastInboundAt"`
	LastOutboundAt    *int64  `json:"lastOutboundAt"`
	LastError         *string `json:"lastError"`
	WebhookPath       string  `json:"webhookPath,omitempty"`
}

type statusIssue struct {
	Channel   string `json:"channel"`
	AccountID string `json:"accountId,omitempty"`
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Fix       string `json:"fix,omitempty"`
}

func msOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ms := t.UnixMilli()
	return &ms
}

// webhookPath is where the platform posts an account's events.
func webhookPath(t *tenant, ch, account string) string {
	return "/channels/" + hubTenant(t) + "/" + ch + "/" + account
}

func channelsStatus(s *Server, c *call) (any, error) {
	var p struct {
		Probe     *bool   `json:"probe"`
		TimeoutMs *int64  `json:"timeoutMs"`
		Channel   *string `json:"channel"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	only := strings.ToLower(strings.TrimSpace(deref(p.Channel)))
	if only != "" && channelLabels[only] == "" {
		return nil, protocol.Errorf("invalid channels.status params: channel %q is not one Talon runs (telegram, slack, discord)", only)
	}
	timeout := 10 * time.Second
	if p.TimeoutMs != nil {
		if *p.TimeoutMs < 100 || *p.TimeoutMs > 120_000 {
			return nil, protocol.Errorf("invalid channels.status params: timeoutMs must be from 100 to 120000")
		}
		timeout = time.Duration(*p.TimeoutMs) * time.Millisecond
	}
	cfg := c.rt.file.Config
	out := map[string]any{"ts": time.Now().UnixMilli()}
	order := []string{}
	channels := map[string]any{}
	accounts := map[string][]accountSnapshot{}
	defaults := map[string]string{}
	for _, ch := range chatChannelIDs {
		if _, ok := cfg.Channels[ch]; !ok || only != "" && ch != only {
			continue
		}
		order = append(order, ch)
		accounts[ch] = []accountSnapshot{}
		if id, _ := channel.DefaultAccountID(cfg, ch); id != "" {
			defaults[ch] = id
		}
	}
	issues := []statusIssue{}
	c.t.mu.Lock()
	h := c.t.channels
	c.t.mu.Unlock()
	if h != nil {
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		rep := h.Status(ctx, p.Probe != nil && *p.Probe)
		cancel()
		for _, a := range rep.Accounts {
			if _, ok := accounts[a.Channel]; !ok {
				continue
			}
			snap := accountSnapshot{
				AccountID: a.AccountID, Enabled: true, Configured: true, Running: a.Running, Connected: a.Connected,
				Mode: a.Mode, DMPolicy: a.DMPolicy, BotID: a.BotID, Name: a.BotName, ReconnectAttempts: a.ReconnectAttempts,
				LastConnectedAt: msOrNil(a.LastConnectedAt), LastInboundAt: msOrNil(a.LastInboundAt), LastOutboundAt: msOrNil(a.LastOutboundAt),
			}
			if a.LastError != "" {
				snap.LastError = &a.LastError
			}
			if a.Mode == "webhook" || a.Mode == "http" {
				snap.WebhookPath = webhookPath(c.t, a.Channel, a.AccountID)
			}
			accounts[a.Channel] = append(accounts[a.Channel], snap)
		}
		for _, is := range rep.Issues {
			if only != "" && is.Channel != "" && is.Channel != only {
				continue
			}
			issues = append(issues, statusIssue{Channel: is.Channel, AccountID: is.AccountID, Kind: is.Kind, Message: is.Message, Fix: is.Fix})
		}
	}
	for _, ch := range order {
		running := slices.ContainsFunc(accounts[ch], func(a accountSnapshot) bool { return a.Running })
		channels[ch] = map[string]any{"configured": true, "running": running}
	}
	labels := map[string]string{}
	for _, ch := range order {
		labels[ch] = channelLabels[ch]
	}
	out["channelOrder"], out["channelLabels"], out["channels"] = order, labels, channels
	out["channelAccounts"], out["channelDefaultAccountId"] = accounts, defaults
	out["statusIssues"] = issues
	out["warnings"] = []string{}
	return out, nil
}

// channelParams are a method's channel and account.
type channelParams struct {
	Channel   *string `json:"channel"`
	AccountID *string `json:"accountId"`
}

// check names the channel and account: an account left out is the
// channel's default (R1.1), unless need says it is required.
func (p channelParams) check(method string, cfg *config.Config, need bool) (string, string, error) {
	ch := strings.ToLower(strings.TrimSpace(deref(p.Channel)))
	switch {
	case ch == "":
		return "", "", missing(method, "channel")
	case channelLabels[ch] == "":
		return "", "", protocol.Errorf("invalid %s params: channel %q is not one Talon runs (telegram, slack, discord)", method, ch)
	}
	acct := strings.TrimSpace(deref(p.AccountID))
	switch {
	case p.AccountID != nil && acct == "":
		return "", "", protocol.Errorf("invalid %s params: accountId must not be blank", method)
	case acct == "" && need:
		return "", "", missing(method, "accountId")
	case acct == "":
		acct, _ = channel.DefaultAccountID(cfg, ch)
	}
	return ch, config.NormalizeAccountID(acct), nil
}

// channelHub is the tenant's hub, or the error a client gets when no
// channel is configured.
func channelHub(c *call, method string) (*hub.Hub, error) {
	c.t.mu.Lock()
	h := c.t.channels
	c.t.mu.Unlock()
	if h == nil {
		return nil, protocol.Errorf("%s: no channel is configured (add channels.telegram, channels.slack or channels.discord to the config)", method)
	}
	return h, nil
}

func channelsStartStop(c *call, method string, start bool) (any, error) {
	var p channelParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	ch, acct, err := p.check(method, c.rt.file.Config, false)
	if err != nil {
		return nil, err
	}
	h, err := channelHub(c, method)
	if err != nil {
		return nil, err
	}
	if start {
		if err := h.Start(ch, acct); err != nil {
			return nil, protocol.Errorf("%s: %v", method, err)
		}
		return map[string]any{"channel": ch, "accountId": acct, "started": true}, nil
	}
	if err := h.Stop(ch, acct); err != nil {
		return nil, protocol.Errorf("%s: %v", method, err)
	}
	return map[string]any{"channel": ch, "accountId": acct, "stopped": true}, nil
}

func channelsStart(s *Server, c *call) (any, error) {
	return channelsStartStop(c, "channels.start", true)
}
func channelsStop(s *Server, c *call) (any, error) {
	return channelsStartStop(c, "channels.stop", false)
}

// channelsLogout clears a channel's stored login. Talon's channels keep
// none (their tokens are in the config); WhatsApp, whose linked device
// is a stored login, is not built.
func channelsLogout(s *Server, c *call) (any, error) {
	return nil, protocol.Errorf("channels.logout: Talon's Telegram, Slack and Discord accounts keep no stored login (their tokens are in the config: remove them there); WhatsApp is not built")
}

func pairingList(s *Server, c *call) (any, error) {
	var p channelParams
	if err := c.params(&p); err != nil {
		return nil, err
	}
	ch := strings.ToLower(strings.TrimSpace(deref(p.Channel)))
	if ch != "" && channelLabels[ch] == "" {
		return nil, protocol.Errorf("invalid channels.pairing.list params: channel %q is not one Talon runs (telegram, slack, discord)", ch)
	}
	acct := strings.TrimSpace(deref(p.AccountID))
	if acct != "" {
		acct = config.NormalizeAccountID(acct)
	}
	cfg := c.rt.file.Config
	out := map[string]any{"accounts": []any{}, "requests": []any{}, "commandOwnerConfigured": len(cfg.Commands.OwnerAllowFrom) > 0,
		"limits": hub.PairingLimits{PendingPerAccount: channel.PendingPerAccount, TTLMs: channel.PairingTTL.Milliseconds()}}
	var accts []map[string]string
	for _, id := range chatChannelIDs {
		if ch != "" && id != ch {
			continue
		}
		for _, a := range channel.Accounts(cfg, id) {
			if acct == "" || a.ID == acct {
				accts = append(accts, map[string]string{"channel": id, "accountId": a.ID, "dmPolicy": a.DMPolicy})
			}
		}
	}
	if accts != nil {
		out["accounts"] = accts
	}
	c.t.mu.Lock()
	h := c.t.channels
	c.t.mu.Unlock()
	if h == nil {
		return out, nil
	}
	l, err := h.Pairing(c.ctx, ch, acct)
	if err != nil {
		return nil, err
	}
	out["requests"], out["limits"] = l.Requests, l.Limits
	return out, nil
}

// pairingAnswer are the params of approve and dismiss.
type pairingAnswer struct {
	channelParams
	RequestID             *string `json:"requestId"`
	Notify                *bool   `json:"notify"`
	BootstrapCommandOwner *bool   `json:"bootstrapCommandOwner"`
}

func (p *pairingAnswer) decode(c *call, method string) (*hub.Hub, string, string, string, error) {
	if err := c.params(p); err != nil {
		return nil, "", "", "", err
	}
	ch, acct, err := p.check(method, c.rt.file.Config, true)
	if err != nil {
		return nil, "", "", "", err
	}
	id := strings.TrimSpace(deref(p.RequestID))
	if id == "" {
		return nil, "", "", "", missing(method, "requestId")
	}
	h, err := channelHub(c, method)
	return h, ch, acct, id, err
}

func pairingApprove(s *Server, c *call) (any, error) {
	const m = "channels.pairing.approve"
	var p pairingAnswer
	h, ch, acct, id, err := p.decode(c, m)
	if err != nil {
		return nil, err
	}
	bootstrap := p.BootstrapCommandOwner != nil && *p.BootstrapCommandOwner
	if bootstrap && !c.c.has(protocol.ScopeAdmin) {
		// It writes the config: the scope config writes need too.
		return nil, protocol.Errorf("missing scope: %s (bootstrapCommandOwner writes commands.ownerAllowFrom)", protocol.ScopeAdmin)
	}
	d, err := h.ApprovePairing(c.ctx, ch, acct, id, p.Notify != nil && *p.Notify)
	if err != nil {
		if errors.Is(err, hub.ErrUnknownRequest) {
			return nil, protocol.Errorf("%s: %v", m, hub.ErrUnknownRequest)
		}
		return nil, err
	}
	boot := channel.OwnerNotRequested
	if bootstrap {
		boot = bootstrapOwner(s, c, ch, d.SenderID)
	}
	return map[string]any{"requestId": d.RequestID, "senderId": d.SenderID, "notification": d.Notification, "commandOwnerBootstrap": boot}, nil
}

// bootstrapOwner makes an approved sender the command owner when the
// config names none (R7.5), under the config's write lock. The approval
// stands either way: a config that cannot be written is "unavailable".
func bootstrapOwner(s *Server, c *call, ch, sender string) string {
	tx, err := beginEdit(c)
	if err != nil {
		s.log.Warn("pairing: bootstrapping the command owner", "tenant", c.t.id, "err", err)
		return channel.OwnerUnavailable
	}
	defer tx.done()
	next := tx.cur.file.Tree.Clone()
	boot := channel.BootstrapOwner(next, tx.cur.file.Config, ch, sender)
	if boot != channel.OwnerConfigured {
		return boot
	}
	f, err := tx.check(next)
	if err == nil {
		err = tx.save(f)
	}
	if err != nil {
		s.log.Warn("pairing: bootstrapping the command owner", "tenant", c.t.id, "err", err)
		return channel.OwnerUnavailable
	}
	return boot
}

func pairingDismiss(s *Server, c *call) (any, error) {
	const m = "channels.pairing.dismiss"
	var p pairingAnswer
	h, ch, acct, id, err := p.decode(c, m)
	if err != nil {
		return nil, err
	}
	d, err := h.DismissPairing(c.ctx, ch, acct, id)
	if err != nil {
		if errors.Is(err, hub.ErrUnknownRequest) {
			return nil, protocol.Errorf("%s: %v", m, hub.ErrUnknownRequest)
		}
		return nil, err
	}
	return map[string]any{"requestId": d.RequestID, "senderId": d.SenderID}, nil
}

// maxSendChars bounds a send's message: chunking makes it many messages,
// and a caller is not to flood a chat.
const maxSendChars = 100_000

// idRE is a platform id in a send target.
var idRE = regexp.MustCompile(`^-?[A-Za-z0-9_.]+$`) // at most 64: platformID

// platformID reports whether s is a platform id in a send target.
func platformID(s string) bool { return len(s) <= 65 && idRE.MatchString(s) }

// parseTarget reads a send's `to` in the channel's grammar (spec R8.2).
func parseTarget(ch, to, thread string) (channel.Target, error) {
	to = strings.TrimSpace(to)
	for _, prefix := range []string{ch + ":", map[string]string{"telegram": "tg:"}[ch]} {
		if prefix != "" && prefix != ":" && strings.HasPrefix(strings.ToLower(to), prefix) {
			to = to[len(prefix):]
		}
	}
	t := channel.Target{ThreadID: strings.TrimSpace(thread)}
	switch ch {
	case "telegram":
		id, topic, _ := strings.Cut(strings.TrimPrefix(to, "topic:"), ":topic:")
		if !platformID(id) || strings.HasPrefix(id, "@") {
			return t, errors.New("a Telegram target is a numeric chat id, optionally with :topic:<id>")
		}
		t.Peer = channel.Peer{Kind: channel.Direct, ID: id}
		if strings.HasPrefix(id, "-") {
			t.Peer.Kind = channel.Group
		}
		if topic != "" {
			if !platformID(topic) {
				return t, errors.New("the topic id is not a number")
			}
			t.Peer = channel.Peer{Kind: channel.Group, ID: id + ":topic:" + topic}
		}
	case "slack", "discord":
		kind, id, ok := strings.Cut(to, ":")
		if !ok {
			if ch == "discord" {
				return t, errors.New("a Discord target is channel:<id> or user:<id> (a bare id is refused)")
			}
			kind, id = "channel", to
		}
		switch kind {
		case "channel":
			t.Peer = channel.Peer{Kind: channel.Room, ID: id}
		case "user":
			t.Peer = channel.Peer{Kind: channel.Direct, ID: id}
		default:
			return t, errors.New("the target's kind is channel: or user:")
		}
		if !platformID(id) {
			return t, errors.New("the target id is not a platform id")
		}
	}
	return t, nil
}

func channelSend(s *Server, c *call) (any, error) {
	const m = "send"
	var p struct {
		channelParams
		To             *string `json:"to"`
		Message        *string `json:"message"`
		ThreadID       *string `json:"threadId"`
		ReplyToID      *string `json:"replyToId"`
		IdempotencyKey *string `json:"idempotencyKey"`
		MediaURL       *string `json:"mediaUrl"`
	}
	if err := c.params(&p); err != nil {
		return nil, err
	}
	key, err := idempotencyKey(m, p.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if p.MediaURL != nil {
		return nil, protocol.Errorf("invalid send params: media is not built in Talon's channels; send text")
	}
	text := deref(p.Message)
	switch {
	case strings.TrimSpace(deref(p.To)) == "":
		return nil, missing(m, "to")
	case strings.TrimSpace(text) == "":
		return nil, missing(m, "message")
	case len(text) > maxSendChars:
		return nil, protocol.Errorf("invalid send params: message is over %d characters", maxSendChars)
	}
	ch, acct, err := p.check(m, c.rt.file.Config, false)
	if err != nil {
		return nil, err
	}
	target, err := parseTarget(ch, deref(p.To), deref(p.ThreadID))
	if err != nil {
		return nil, protocol.Errorf("invalid send params: to %q: %v", deref(p.To), err)
	}
	h, err := channelHub(c, m)
	if err != nil {
		return nil, err
	}
	res, err := h.Send(c.ctx, hub.SendRequest{Channel: ch, AccountID: acct, Target: target, Text: text, ReplyTo: strings.TrimSpace(deref(p.ReplyToID)), IdempotencyKey: "send:" + key})
	if err != nil {
		return nil, protocol.Errorf("%v", err)
	}
	return map[string]any{"runId": key, "channel": res.Channel, "accountId": res.AccountID, "messageId": first(res.MessageIDs), "messageIds": res.MessageIDs, "unconfirmed": res.Unconfirmed}, nil
}

func first(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// handleChannelWebhook serves a platform's post to an account of a
// tenant (/channels/{tenant}/{channel}/{account}; the operator's own
// tenant is "_"). It takes no gateway token: the adapter checks the
// platform's secret or signature.
func (s *Server) handleChannelWebhook(w http.ResponseWriter, r *http.Request) {
	id, ch, acct := r.PathValue("tenant"), r.PathValue("channel"), r.PathValue("account")
	if id == "_" {
		id = ""
	}
	t, err := s.lookup(id)
	if errors.Is(err, errMoving) && s.movingServes(id, true) {
		unavailable(w) // the platform retries; the tenant's new node takes it
		return
	}
	if err != nil || id == "" && r.PathValue("tenant") != "_" {
		writeError(w, http.StatusNotFound, errNotFound, "no such channel account")
		return
	}
	release := s.enter(t)
	defer release()
	t.mu.Lock()
	h := t.channels
	t.mu.Unlock()
	if h == nil {
		writeError(w, http.StatusNotFound, errNotFound, "no such channel account")
		return
	}
	hd, err := h.Webhook(ch, acct)
	if err != nil {
		writeError(w, http.StatusNotFound, errNotFound, "no channel account takes webhooks here")
		return
	}
	hd.ServeHTTP(w, r)
}
