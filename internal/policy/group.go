package policy

import (
	"sort"
	"strings"

	"talon/internal/config"
)

// Sender identifies who sent the message a run answers, for toolsBySender.
type Sender struct {
	ID       string `json:"id,omitempty"`
	E164     string `json:"e164,omitempty"`
	Username string `json:"username,omitempty"`
	Name     string `json:"name,omitempty"`
}

// groupOf derives {channel, groupId} from a session key (§4.5 step 1).
func groupOf(key string) (channel, group string, ok bool) {
	k := strings.TrimSpace(key)
	lk := strings.ToLower(k)
	if i := max(strings.LastIndex(lk, ":thread:"), strings.LastIndex(lk, ":topic:")); i >= 0 {
		k = k[:i]
	}
	parts := strings.FieldsFunc(k, func(r rune) bool { return r == ':' })
	if len(parts) >= 2 && strings.EqualFold(parts[0], "agent") {
		parts = parts[2:]
	}
	if len(parts) >= 1 && strings.EqualFold(parts[0], "subagent") {
		parts = parts[1:]
	}
	if len(parts) < 3 {
		return "", "", false
	}
	kind := strings.ToLower(parts[1])
	if kind != "group" && kind != "channel" {
		return "", "", false
	}
	return strings.ToLower(strings.TrimSpace(parts[0])), strings.Join(parts[2:], ":"), true
}

// groupPolicy finds the channel group policy for a run and the config key it
// came from; ok is false when there is none.
func groupPolicy(cfg *config.Config, ctx *Context) (config.ToolPolicy, string, bool) {
	sessCh, sessGroup, sessOK := groupOf(ctx.SessionKey)
	spCh, spGroup, spOK := groupOf(ctx.SpawnedBy)
	groupID := strings.TrimSpace(ctx.GroupID)
	switch {
	case groupID != "":
	case sessOK:
		groupID = sessGroup
	case spOK:
		groupID = spGroup
	}
	channel := normalizeName(ctx.MessageProvider)
	switch {
	case channel != "":
	case sessOK:
		channel = sessCh
	case spOK:
		channel = spCh
	}
	if groupID == "" || channel == "" {
		return config.ToolPolicy{}, "", false
	}
	if channel == "telegram" {
		if i := strings.Index(strings.ToLower(groupID), ":topic:"); i >= 0 {
			groupID = groupID[:i]
		}
	}
	ch, ok := cfg.Channels[channel]
	if !ok {
		return config.ToolPolicy{}, "", false
	}
	groups, base := ch.Groups, "channels"+keySegment(channel)+".groups"
	if key, acct, ok := account(ch.Accounts, ctx.AccountID); ok && acct.Groups != nil {
		groups, base = acct.Groups, "channels"+keySegment(channel)+".accounts"+keySegment(key)+".groups"
	}
	try := func(id string) (config.ToolPolicy, string, bool) {
		g, ok := groups[id]
		if !ok {
			return config.ToolPolicy{}, "", false
		}
		gk := base + keySegment(id)
		if p, key, ok := senderPolicy(g.ToolsBySender, &ctx.Sender); ok {
			return p, gk + ".toolsBySender" + keySegment(key), true
		}
		if hasPolicy(g.Tools) {
			return g.Tools, gk + ".tools", true
		}
		return config.ToolPolicy{}, "", false
	}
	if p, key, ok := try(groupID); ok {
		return p, key, true
	}
	return try("*")
}

// account finds a channel account by its normalised id ("default" when the
// run names none), exactly first and then ignoring case.
func account(accounts map[string]config.ChannelAccount, id string) (string, config.ChannelAccount, bool) {
	n := config.NormalizeAccountID(id)
	if a, ok := accounts[n]; ok {
		return n, a, true
	}
	keys := make([]string, 0, len(accounts))
	for k := range accounts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.EqualFold(k, n) {
			return k, accounts[k], true
		}
	}
	return "", config.ChannelAccount{}, false
}

func hasPolicy(p config.ToolPolicy) bool {
	return p.Allow != nil || p.AlsoAllow != nil || p.Deny != nil
}

// senderPolicy looks a sender up in toolsBySender: id, then E.164, then
// username, then display name, then the "*" wildcard.
func senderPolicy(bySender map[string]config.ToolPolicy, s *Sender) (config.ToolPolicy, string, bool) {
	if len(bySender) == 0 {
		return config.ToolPolicy{}, "", false
	}
	keys := make([]string, 0, len(bySender))
	for k := range bySender {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	find := func(kind, value string) (string, bool) {
		v := strings.ToLower(strings.TrimSpace(value))
		if kind == "username" {
			v = strings.TrimPrefix(v, "@")
		}
		if v == "" {
			return "", false
		}
		for _, k := range keys {
			if kk, kv := senderKey(k); kk == kind && kv == v {
				return k, true
			}
		}
		return "", false
	}
	for _, q := range [][2]string{{"id", s.ID}, {"e164", s.E164}, {"username", s.Username}, {"name", s.Name}} {
		if k, ok := find(q[0], q[1]); ok {
			return bySender[k], k, true
		}
	}
	if p, ok := bySender["*"]; ok {
		return p, "*", true
	}
	return config.ToolPolicy{}, "", false
}

// senderKey splits a toolsBySender key into its kind and lower-cased value.
// Keys without a known prefix are ids (OpenClaw warns that this form is
// deprecated).
func senderKey(k string) (kind, value string) {
	t := strings.TrimSpace(k)
	if t == "*" {
		return "*", "*"
	}
	lt := strings.ToLower(t)
	for _, p := range []string{"id:", "e164:", "username:", "name:"} {
		if strings.HasPrefix(lt, p) {
			v := strings.TrimSpace(lt[len(p):])
			if p == "username:" {
				v = strings.TrimPrefix(v, "@")
			}
			return strings.TrimSuffix(p, ":"), v
		}
	}
	return "id", strings.TrimPrefix(lt, "@")
}
