package channel

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"talon/internal/config"
	"talon/internal/policy"
)

// Route is where an inbound message goes (R3.7): the agent that answers
// and the session it answers in. MatchedBy names the tier that chose the
// agent; LastRoutePolicy is "main" when the session is the agent's main
// one, else "session". ParentSessionKey is a thread's parent conversation
// (a Discord thread's channel, a Slack thread's channel), "" otherwise.
type Route struct {
	AgentID, SessionKey, MainSessionKey, MatchedBy, LastRoutePolicy, ParentSessionKey string

	Channel, AccountID, DMScope, GroupScope string
	// SkipLastRoute says not to move the main session's lastRoute to this
	// conversation (R4.5): a DM under dmScope main, on an account whose
	// allowFrom names one owner, from someone else — so that heartbeats
	// and cron keep answering the owner.
	SkipLastRoute bool
}

// What chose the agent (R3.7), and Talon's "topic" for a Telegram forum
// topic's agentId.
const (
	ByPeer       = "binding.peer"
	ByParentPeer = "binding.peer.parent"
	ByPeerAny    = "binding.peer.wildcard"
	ByGuildRoles = "binding.guild+roles"
	ByGuild      = "binding.guild"
	ByTeam       = "binding.team"
	ByAccount    = "binding.account"
	ByChannel    = "binding.channel"
	ByTopic      = "topic.agentId"
	ByDefault    = "default"
)

// ErrAgentSelection is the error of a message no binding routes when the
// config has several agents and none is the default (R3.1 tier 9): Talon
// never picks the first agent of a list.
var ErrAgentSelection = errors.New("AGENT_SELECTION_REQUIRED")

// Resolve routes an inbound message: the bindings choose the agent
// (R3.1–R3.8), then the session key follows (R4.1–R4.4). defaultAgent is
// the caller's fallback owner; "" falls back to the only agent, else the
// one marked default, else ErrAgentSelection.
func Resolve(cfg *config.Config, e Envelope, defaultAgent string) (Route, error) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	r := Route{Channel: strings.ToLower(e.Channel), AccountID: config.NormalizeAccountID(e.AccountID)}
	b, by := pickBinding(cfg, e)
	switch {
	case b != nil:
		r.AgentID, r.MatchedBy = config.NormalizeAgentID(b.AgentID), by
	case by == ByTopic:
		r.AgentID, r.MatchedBy = config.NormalizeAgentID(topicAgent(cfg, e)), by
	default:
		id, err := fallbackAgent(cfg, e, defaultAgent)
		if err != nil {
			return Route{}, err
		}
		r.AgentID, r.MatchedBy = id, ByDefault
	}
	r.DMScope = cmpOr(cfg.Session.DMScope, "main")
	r.GroupScope = cmpOr(cfg.Session.GroupScope, "per-group")
	if b != nil && b.Session != nil {
		r.DMScope = cmpOr(b.Session.DMScope, r.DMScope)
		r.GroupScope = cmpOr(b.Session.GroupScope, r.GroupScope)
	}
	r.MainSessionKey = policy.MainSessionKey(cfg, r.AgentID)
	r.SessionKey, r.ParentSessionKey = sessionKeys(cfg, r, e)
	r.LastRoutePolicy = "session"
	if r.SessionKey == r.MainSessionKey {
		r.LastRoutePolicy = "main"
	}
	r.SkipLastRoute = e.Peer.Kind == Direct && r.DMScope == "main" && !isPinnedOwner(cfg, e)
	return r, nil
}

// tiers in order; ByTopic sits after the peer tiers, since a topic's
// agentId names one conversation, as a peer binding does.
var tiers = []string{ByPeer, ByParentPeer, ByPeerAny, ByTopic, ByGuildRoles, ByGuild, ByTeam, ByAccount, ByChannel}

// pickBinding is the first binding of the first tier that has one; the
// ByTopic tier returns no binding. The parent tier tries the concrete
// peer bindings against the thread's parent conversation.
func pickBinding(cfg *config.Config, e Envelope) (*config.Binding, string) {
	parent := parentPeer(e)
	for _, tier := range tiers {
		switch {
		case tier == ByTopic:
			if topicAgent(cfg, e) != "" {
				return nil, ByTopic
			}
			continue
		case tier == ByParentPeer && parent == nil:
			continue
		}
		want := tier
		if tier == ByParentPeer {
			want = ByPeer
		}
		for i := range cfg.Bindings {
			b := &cfg.Bindings[i]
			if hasAgent(cfg, b.AgentID) && tierOf(b) == want && bindingMatches(b, e, tier, parent) {
				return b, tier
			}
		}
	}
	return nil, ""
}

// hasAgent skips a binding to an agent the config does not have, as
// OpenClaw does, rather than start a run of nobody.
func hasAgent(cfg *config.Config, id string) bool {
	return strings.TrimSpace(id) != "" && cfg.HasAgent(id)
}

// tierOf is the tier a binding belongs to, by the most specific key it
// sets.
func tierOf(b *config.Binding) string {
	m := b.Match
	switch {
	case m.Peer != nil && strings.TrimSpace(m.Peer.ID) == "*":
		return ByPeerAny
	case m.Peer != nil:
		return ByPeer
	case m.GuildID != "" && len(m.Roles) > 0:
		return ByGuildRoles
	case m.GuildID != "":
		return ByGuild
	case m.TeamID != "":
		return ByTeam
	case m.AccountID != nil && strings.TrimSpace(*m.AccountID) == "*":
		return ByChannel
	}
	return ByAccount
}

// bindingMatches checks every key a binding sets (R3.2); for the parent
// tier the binding's peer is compared with the parent conversation.
func bindingMatches(b *config.Binding, e Envelope, tier string, parent *Peer) bool {
	m := b.Match
	if !strings.EqualFold(strings.TrimSpace(m.Channel), e.Channel) {
		return false
	}
	acct := config.NormalizeAccountID(e.AccountID)
	switch {
	case m.AccountID == nil:
		if acct != "default" {
			return false // R3.3: omitted means the default account only
		}
	case strings.TrimSpace(*m.AccountID) == "*":
	case config.NormalizeAccountID(*m.AccountID) != acct:
		return false
	}
	if m.Peer != nil {
		p := e.Peer
		if tier == ByParentPeer {
			p = *parent
		}
		if !kindMatches(m.Peer.Kind, p.Kind) {
			return false
		}
		if id := strings.TrimSpace(m.Peer.ID); id != "*" && !strings.EqualFold(id, p.ID) {
			return false
		}
	}
	if m.GuildID != "" && !strings.EqualFold(m.GuildID, e.GuildID) {
		return false
	}
	if len(m.Roles) > 0 && !matchRoles(e.RoleIDs, m.Roles) {
		return false
	}
	if m.TeamID != "" && !strings.EqualFold(m.TeamID, e.TeamID) {
		return false
	}
	return true
}

// kindMatches: "dm" is "direct", and group and channel match each other
// (R3.4).
func kindMatches(want string, got Kind) bool {
	w := strings.ToLower(strings.TrimSpace(want))
	if w == "dm" {
		w = string(Direct)
	}
	if w == string(Direct) || got == Direct {
		return w == string(got)
	}
	return w == string(Group) || w == string(Room)
}

// parentPeer is the conversation a thread belongs to: the adapter's
// ParentPeer (a Discord thread's channel), or a Telegram topic's group.
func parentPeer(e Envelope) *Peer {
	if e.ParentPeer != nil {
		return e.ParentPeer
	}
	if chat, _, ok := strings.Cut(e.Peer.ID, ":topic:"); ok && e.Peer.Kind != Direct {
		return &Peer{Kind: e.Peer.Kind, ID: chat}
	}
	return nil
}

// topicAgent is the agentId of the Telegram forum topic a message is in.
func topicAgent(cfg *config.Config, e Envelope) string {
	if !strings.EqualFold(e.Channel, "telegram") {
		return ""
	}
	chat, topic, ok := strings.Cut(e.Peer.ID, ":topic:")
	if !ok {
		return ""
	}
	ch := cfg.Channels["telegram"]
	groups := ch.Groups
	if a, _, ok := lookupFold(ch.Accounts, config.NormalizeAccountID(e.AccountID)); ok && a.Groups != nil {
		groups = a.Groups
	}
	id := strings.TrimSpace(groups[chat].Topics[topic].AgentID)
	if id == "" || !cfg.HasAgent(id) {
		return ""
	}
	return id
}

// fallbackAgent is tier 9: the caller's owner, else the only agent, else
// the one marked default.
func fallbackAgent(cfg *config.Config, e Envelope, owner string) (string, error) {
	if strings.TrimSpace(owner) != "" {
		return config.NormalizeAgentID(owner), nil
	}
	if ids := cfg.ListedAgentIDs(); len(ids) == 1 {
		return ids[0], nil
	}
	for _, a := range cfg.Agents.List {
		if a.Default != nil && *a.Default {
			return config.NormalizeAgentID(a.ID), nil
		}
	}
	return "", fmt.Errorf(`%w: no binding chooses an agent for %s account %q %s %q, and no agent is the default: `+
		`add {agentId: "<agent>", match: {channel: %q, accountId: %q, peer: {kind: %q, id: %q}}} to bindings[] `+
		`(or a channel-wide {agentId: "<agent>", match: {channel: %q, accountId: "*"}}), or mark one agent default: true`,
		ErrAgentSelection, e.Channel, config.NormalizeAccountID(e.AccountID), e.Peer.Kind, e.Peer.ID,
		strings.ToLower(e.Channel), config.NormalizeAccountID(e.AccountID), e.Peer.Kind, e.Peer.ID, strings.ToLower(e.Channel))
}

// sessionKeys are the session key of a routed message and its parent's
// (R4.1–R4.4), lower-case.
func sessionKeys(cfg *config.Config, r Route, e Envelope) (key, parent string) {
	agent, ch := r.AgentID, strings.ToLower(e.Channel)
	if e.Peer.Kind == Direct {
		return dmKey(cfg, r, e), ""
	}
	if r.GroupScope == "main" {
		return r.MainSessionKey, ""
	}
	kind := string(Group)
	if e.Peer.Kind == Room {
		kind = string(Room)
	}
	key = "agent:" + agent + ":" + ch + ":" + kind + ":" + strings.ToLower(strings.TrimSpace(e.Peer.ID))
	switch {
	case e.ParentPeer != nil:
		pk := string(Group)
		if e.ParentPeer.Kind == Room {
			pk = string(Room)
		}
		parent = "agent:" + agent + ":" + ch + ":" + pk + ":" + strings.ToLower(strings.TrimSpace(e.ParentPeer.ID))
	case e.ThreadID != "":
		// A Slack thread is a session of its own under its channel's (R4.3).
		parent = key
		key += ":thread:" + strings.ToLower(strings.TrimSpace(e.ThreadID))
	}
	return key, parent
}

// dmKey is the key of a direct message under the route's dmScope (R4.1).
func dmKey(cfg *config.Config, r Route, e Envelope) string {
	peer := strings.TrimSpace(e.Sender.ID)
	if peer == "" {
		peer = strings.TrimSpace(e.Peer.ID)
	}
	if peer == "" || r.DMScope == "main" {
		return r.MainSessionKey
	}
	peer = strings.ToLower(linkedIdentity(cfg, e.Channel, peer))
	head := "agent:" + r.AgentID + ":"
	switch r.DMScope {
	case "per-peer":
		return head + "direct:" + peer
	case "per-account-channel-peer":
		return head + strings.ToLower(e.Channel) + ":" + r.AccountID + ":direct:" + peer
	}
	return head + strings.ToLower(e.Channel) + ":direct:" + peer
}

// linkedIdentity maps a sender to its canonical name in
// session.identityLinks: candidates are the raw id and <channel>:<id>,
// compared lower-case; the first canonical name in sorted order whose
// list holds one wins.
func linkedIdentity(cfg *config.Config, channel, id string) string {
	cands := []string{strings.ToLower(id), strings.ToLower(channel + ":" + id)}
	for _, name := range sortedKeys(cfg.Session.IdentityLinks) {
		for _, l := range cfg.Session.IdentityLinks[name] {
			if slices.Contains(cands, strings.ToLower(strings.TrimSpace(l))) && strings.TrimSpace(name) != "" {
				return strings.TrimSpace(name)
			}
		}
	}
	return id
}

// isPinnedOwner reports whether a DM's sender may move the main
// session's lastRoute: always, unless the account's allowFrom names
// exactly one sender (no "*") and this is someone else.
func isPinnedOwner(cfg *config.Config, e Envelope) bool {
	a, ok := FindAccount(cfg, strings.ToLower(e.Channel), e.AccountID)
	if !ok || slices.Contains(a.AllowFrom, "*") {
		return true
	}
	owners := map[string]bool{}
	for _, entry := range a.AllowFrom {
		if id := strings.ToLower(EntryID(a.Channel, entry)); id != "" {
			owners[id] = true
		}
	}
	return len(owners) != 1 || owners[strings.ToLower(strings.TrimSpace(e.Sender.ID))]
}
