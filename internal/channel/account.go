package channel

import (
	"slices"
	"sort"
	"strings"
	"time"

	"talon/internal/config"
)

// Account is the resolved settings of one account of a channel: its
// own keys over the channel's (R5.5; maps such as groups are taken whole
// from the account when it has them, never merged), with the defaults of
// spec channels.md filled in. Secrets stay unresolved: the caller reads
// them with Secret.Resolve and its environment, and applies the env
// fallbacks of R1.2 (TELEGRAM_BOT_TOKEN, …) to the default account only.
type Account struct {
	Channel string
	ID      string // normalised (config.NormalizeAccountID)
	// Key is the account's key as written under accounts ("" for the
	// implicit default account of a channel without accounts).
	Key string

	DMPolicy       string   // pairing, allowlist, open or disabled
	AllowFrom      []string // effective, see boundAllow
	GroupPolicy    string   // allowlist, open or disabled
	GroupAllowFrom []string
	// NameMatching lets allowlists match usernames and display names.
	NameMatching bool
	AllowBots    string // off, on or mentions
	// DMEnabled and GroupDMEnabled are Slack's and Discord's dm.enabled
	// (default true) and dm.groupEnabled (default false).
	DMEnabled, GroupDMEnabled bool

	Groups     map[string]config.Group
	Direct     map[string]config.Direct
	SlackRooms map[string]config.SlackRoom
	Guilds     map[string]config.Guild

	RequireMention  *bool // the account's default, under the rooms' own
	MentionScope    *config.MentionScope
	HistoryLimit    int // pending group messages a turn sees (R6.5)
	DMHistoryLimit  int
	TextChunkLimit  int
	MaxLines        int    // Discord's maxLinesPerMessage, 0 elsewhere
	ReplyToMode     string // off, first, all, batched
	ReplyByChatType config.ReplyToModeByChatType
	ResponsePrefix  string
	// AckReaction is the account's own ackReaction (over the channel's);
	// nil: messages.ackReaction or the default apply (AckReaction).
	AckReaction *string
	// TypingReaction is the reaction shown on a message while its turn
	// runs ("" for none): Slack's stand-in for a typing indicator.
	TypingReaction string

	// Connection settings. TokenFile names a file on the gateway's host:
	// the runtime must refuse it for a tenant, whose config is untrusted.
	BotToken, AppToken, SigningSecret, Token, WebhookSecret *config.Secret
	TokenFile, APIRoot, APIURL, GatewayURL                  string
	WebhookURL, WebhookPath, Mode, ApplicationID            string
	LinkPreview, SuppressEmbeds                             bool
	// ThreadHistoryScope, ThreadInheritParent and ThreadInitialHistory
	// are Slack's thread settings.
	ThreadHistoryScope   string
	ThreadInheritParent  bool
	ThreadInitialHistory int
	// MessageContent and GuildMembers are the Discord intents to request.
	MessageContent, GuildMembers bool

	// MediaMax is the size in bytes of the largest inbound attachment a
	// turn downloads (mediaMaxMb, R8.9).
	MediaMax int64
	// Actions are the message tool's action gates (R9.3); see ActionOn.
	Actions map[string]*bool
	// Debounce is the quiet window in which one sender's text-only
	// messages in a conversation are taken as one turn (R2.1 step 6).
	Debounce time.Duration
}

// Limits of spec channels.md §6 and §8.
const (
	maxHistory          = 200
	defaultHistory      = 50
	discordHistory      = 20
	defaultTextChunk    = 4000
	slackTextChunk      = 8000
	discordTextChunk    = 2000
	discordMaxLines     = 17
	slackThreadHistory  = 20
	telegramDMHistory   = 10
	defaultSlackAPIURL  = "https://slack.com/api"
	defaultTelegramRoot = "https://api.telegram.org"
)

// Accounts are the enabled accounts of a channel, sorted by id: the
// entries of channels.<ch>.accounts, or one "default" account when it has
// none. None when the block is absent or enabled is false (R1.3).
func Accounts(cfg *config.Config, channel string) []Account {
	if cfg == nil {
		return nil
	}
	ch, ok := cfg.Channels[channel]
	if !ok || channel == "defaults" || (ch.Enabled != nil && !*ch.Enabled) {
		return nil
	}
	if len(ch.Accounts) == 0 {
		return []Account{resolveAccount(cfg, channel, "", &ch.ChannelSettings, nil)}
	}
	seen := map[string]bool{}
	var out []Account
	for _, key := range sortedKeys(ch.Accounts) {
		a := ch.Accounts[key]
		id := config.NormalizeAccountID(key)
		if seen[id] || (a.Enabled != nil && !*a.Enabled) {
			continue
		}
		seen[id] = true
		acct := resolveAccount(cfg, channel, key, &a.ChannelSettings, &ch.ChannelSettings)
		out = append(out, acct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// FindAccount is the enabled account id of a channel, if any.
func FindAccount(cfg *config.Config, channel, id string) (Account, bool) {
	id = config.NormalizeAccountID(id)
	for _, a := range Accounts(cfg, channel) {
		if a.ID == id {
			return a, true
		}
	}
	return Account{}, false
}

// DefaultAccountID is the account a send without one uses (R1.1):
// defaultAccount when it names an account, else "default" when there
// is one, else the first in sorted order; ambiguous says the last rule
// chose among two or more, which deserves a warning. "" when the channel
// has no enabled account.
func DefaultAccountID(cfg *config.Config, channel string) (id string, ambiguous bool) {
	accts := Accounts(cfg, channel)
	if len(accts) == 0 {
		return "", false
	}
	want := config.NormalizeAccountID(cfg.Channels[channel].DefaultAccount)
	for _, try := range []string{want, "default"} {
		for _, a := range accts {
			if a.ID == try {
				return a.ID, false
			}
		}
	}
	return accts[0].ID, len(accts) > 1
}

// resolveAccount layers an account's settings over its channel's (root
// nil means s is the channel's own, for the implicit default account).
func resolveAccount(cfg *config.Config, channel, key string, s, root *config.ChannelSettings) Account {
	if root == nil {
		root = &config.ChannelSettings{}
	}
	str := func(a, b, def string) string { return cmpOr(a, b, def) }
	boolOf := func(a, b *bool, def bool) bool {
		switch {
		case a != nil:
			return *a
		case b != nil:
			return *b
		}
		return def
	}
	secret := func(a, b *config.Secret) *config.Secret {
		if a != nil {
			return a
		}
		return b
	}
	a := Account{
		Channel: channel, ID: config.NormalizeAccountID(key), Key: key,
		DMPolicy:    str(s.DMPolicy, root.DMPolicy, "pairing"),
		AllowFrom:   boundAllow(root.AllowFrom, s.AllowFrom),
		GroupPolicy: str(s.GroupPolicy, root.GroupPolicy, cmpOr(cfg.ChannelDefaults().GroupPolicy, "allowlist")),
		GroupAllowFrom: func() []string {
			if s.GroupAllowFrom != nil {
				return s.GroupAllowFrom
			}
			return root.GroupAllowFrom
		}(),
		NameMatching: boolOf(s.DangerouslyAllowNameMatching, root.DangerouslyAllowNameMatching, false),
		AllowBots:    cmpOr(s.AllowBotsMode(), root.AllowBotsMode(), "off"),
		Groups:       pick(s.Groups, root.Groups),
		Direct:       pick(s.Direct, root.Direct),
		SlackRooms:   pick(s.Channels, root.Channels),
		Guilds:       pick(s.Guilds, root.Guilds),

		RequireMention: firstPtr(s.RequireMention, root.RequireMention),
		MentionScope:   firstPtr(s.MentionPatterns, root.MentionPatterns),
		ReplyToMode:    str(s.ReplyToMode, root.ReplyToMode, "off"),

		BotToken: secret(s.BotToken, root.BotToken), AppToken: secret(s.AppToken, root.AppToken),
		SigningSecret: secret(s.SigningSecret, root.SigningSecret), Token: secret(s.Token, root.Token),
		WebhookSecret:  secret(s.WebhookSecret, root.WebhookSecret),
		TokenFile:      str(s.TokenFile, root.TokenFile, ""),
		WebhookURL:     str(s.WebhookURL, root.WebhookURL, ""),
		WebhookPath:    str(s.WebhookPath, root.WebhookPath, ""),
		ApplicationID:  str(s.ApplicationID, root.ApplicationID, ""),
		GatewayURL:     str(s.GatewayURL, root.GatewayURL, ""),
		LinkPreview:    boolOf(s.LinkPreview, root.LinkPreview, true),
		SuppressEmbeds: boolOf(s.SuppressEmbeds, root.SuppressEmbeds, true),
	}
	if p := firstPtr(s.ResponsePrefix, root.ResponsePrefix); p != nil {
		a.ResponsePrefix = *p
	}
	a.AckReaction = firstPtr(s.AckReaction, root.AckReaction)
	if p := firstPtr(s.TypingReaction, root.TypingReaction); p != nil {
		a.TypingReaction = strings.TrimSpace(*p)
	}
	dm, rdm := s.DM, root.DM
	if dm == nil {
		dm = &config.DMSettings{}
	}
	if rdm == nil {
		rdm = &config.DMSettings{}
	}
	a.DMEnabled = boolOf(dm.Enabled, rdm.Enabled, true)
	a.GroupDMEnabled = boolOf(dm.GroupEnabled, rdm.GroupEnabled, false)
	if r := firstPtr(s.ReplyToModeByChatType, root.ReplyToModeByChatType); r != nil {
		a.ReplyByChatType = *r
	}
	a.limits(cfg, s, root)
	a.transport(s, root)
	a.media(cfg, s, root)
	return a
}

// Default inbound attachment limits in megabytes (R8.9).
const (
	defaultMediaMB = 100
	slackMediaMB   = 20
	// telegramDebounce is Telegram's quiet window when neither
	// messages.inbound key sets one.
	telegramDebounce = 300 * time.Millisecond
)

// media fills in the attachment limit, the action gates and the
// inbound quiet window.
func (a *Account) media(cfg *config.Config, s, root *config.ChannelSettings) {
	mb := float64(defaultMediaMB)
	if a.Channel == "slack" {
		mb = slackMediaMB
	}
	if m := firstPtr(s.MediaMaxMB, root.MediaMaxMB); m != nil {
		mb = *m
	}
	a.MediaMax = int64(mb * (1 << 20))
	a.Actions = map[string]*bool{}
	for _, m := range []map[string]*bool{root.Actions, s.Actions} {
		for k, v := range m {
			a.Actions[k] = v
		}
	}
	in := cfg.Messages.Inbound
	switch ms, ok := in.ByChannel[a.Channel]; {
	case ok:
		a.Debounce = time.Duration(ms) * time.Millisecond
	case in.DebounceMs != nil:
		a.Debounce = time.Duration(*in.DebounceMs) * time.Millisecond
	case a.Channel == "telegram":
		a.Debounce = telegramDebounce
	}
}

// ActionOn says whether the message tool may take actions of group on
// the account: channels.<ch>[.accounts.<id>].actions.<group>, on unless
// set false (R9.3). Talon's tool has none of the groups that OpenClaw
// keeps off by default (roles, moderation, presence, stickers).
func (a Account) ActionOn(group string) bool {
	v, ok := a.Actions[group]
	return !ok || v == nil || *v
}

// limits fills in the history and chunk sizes with their defaults.
func (a *Account) limits(cfg *config.Config, s, root *config.ChannelSettings) {
	hist := defaultHistory
	if a.Channel == "discord" {
		hist = discordHistory
	}
	if h := cfg.Messages.GroupChat.HistoryLimit; h != nil {
		hist = *h
	}
	if h := firstPtr(s.HistoryLimit, root.HistoryLimit); h != nil {
		hist = *h
	}
	a.HistoryLimit = min(max(hist, 0), maxHistory)
	dmHist := 0
	if a.Channel == "telegram" {
		dmHist = telegramDMHistory
	}
	if h := firstPtr(s.DMHistoryLimit, root.DMHistoryLimit); h != nil {
		dmHist = *h
	}
	a.DMHistoryLimit = min(max(dmHist, 0), maxHistory)
	a.TextChunkLimit = defaultTextChunk
	switch a.Channel {
	case "slack":
		a.TextChunkLimit = slackTextChunk
	case "discord":
		a.TextChunkLimit, a.MaxLines = discordTextChunk, discordMaxLines
		if n := firstPtr(s.MaxLinesPerMessage, root.MaxLinesPerMessage); n != nil {
			a.MaxLines = *n
		}
	}
	if n := firstPtr(s.TextChunkLimit, root.TextChunkLimit); n != nil {
		a.TextChunkLimit = *n
	}
}

// transport fills in the connection settings of each platform.
func (a *Account) transport(s, root *config.ChannelSettings) {
	switch a.Channel {
	case "telegram":
		a.APIRoot = cmpOr(s.APIRoot, root.APIRoot, defaultTelegramRoot)
		a.APIURL = cmpOr(s.APIURL, root.APIURL, "")
	case "slack":
		a.Mode = cmpOr(s.Mode, root.Mode, "socket")
		a.APIURL = cmpOr(s.APIURL, root.APIURL, defaultSlackAPIURL)
		th, rth := s.Thread, root.Thread
		if th == nil {
			th = &config.ThreadSettings{}
		}
		if rth == nil {
			rth = &config.ThreadSettings{}
		}
		a.ThreadHistoryScope = cmpOr(th.HistoryScope, rth.HistoryScope, "thread")
		a.ThreadInheritParent = th.InheritParent != nil && *th.InheritParent ||
			th.InheritParent == nil && rth.InheritParent != nil && *rth.InheritParent
		a.ThreadInitialHistory = slackThreadHistory
		if n := firstPtr(th.InitialHistoryLimit, rth.InitialHistoryLimit); n != nil {
			a.ThreadInitialHistory = *n
		}
	case "discord":
		a.APIURL = cmpOr(s.APIURL, root.APIURL, "")
		in, rin := s.Intents, root.Intents
		if in == nil {
			in = &config.Intents{}
		}
		if rin == nil {
			rin = &config.Intents{}
		}
		a.MessageContent = firstPtr(in.MessageContent, rin.MessageContent) == nil || *firstPtr(in.MessageContent, rin.MessageContent)
		a.GuildMembers = firstPtr(in.GuildMembers, rin.GuildMembers) != nil && *firstPtr(in.GuildMembers, rin.GuildMembers)
	default:
		a.APIURL = cmpOr(s.APIURL, root.APIURL, "")
	}
}

// boundAllow is an account's DM allowlist (R5.5): its own when it sets
// one, else the channel's. A channel list without "*" bounds the
// account: the account's "*" does not open it, and the account admits
// the channel's senders and its own concrete ones.
func boundAllow(root, own []string) []string {
	if own == nil {
		return root
	}
	if len(root) == 0 || slices.Contains(root, "*") || !slices.Contains(own, "*") {
		return own
	}
	out := slices.Clone(root)
	for _, e := range own {
		if e != "*" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// pick is the account's map when it has one (even empty, which isolates
// it), else the channel's.
func pick[V any](own, root map[string]V) map[string]V {
	if own != nil {
		return own
	}
	return root
}

func firstPtr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// lookupFold finds a map key equal to id, exactly first and then
// ignoring case (platform ids are compared lower-case, R3.6).
func lookupFold[V any](m map[string]V, id string) (V, string, bool) {
	if v, ok := m[id]; ok {
		return v, id, true
	}
	for _, k := range sortedKeys(m) {
		if strings.EqualFold(k, id) {
			return m[k], k, true
		}
	}
	var zero V
	return zero, "", false
}

// FallbackEnv names the environment variables the default account takes
// its tokens from when the config sets none (R1.2): TELEGRAM_BOT_TOKEN;
// SLACK_BOT_TOKEN and SLACK_APP_TOKEN; DISCORD_BOT_TOKEN. Other accounts
// have none. Accounts only exist for a channel block, so the variables
// alone never start a channel.
func (a Account) FallbackEnv() (bot, app string) {
	if a.ID != "default" {
		return "", ""
	}
	switch a.Channel {
	case "telegram":
		return "TELEGRAM_BOT_TOKEN", ""
	case "slack":
		return "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"
	case "discord":
		return "DISCORD_BOT_TOKEN", ""
	}
	return "", ""
}

// AgentName is how an agent is named to the people it talks to: its
// identity's name, else its name, else its id.
func AgentName(cfg *config.Config, agentID string) string {
	ag, _ := cfg.Agent(agentID)
	if ag == nil {
		return agentID
	}
	if ag.Identity != nil && ag.Identity.Value != nil {
		if n := ag.Identity.Get("name"); n != nil && n.Kind == config.String && strings.TrimSpace(n.Str) != "" {
			return strings.TrimSpace(n.Str)
		}
	}
	if strings.TrimSpace(ag.Name) != "" {
		return strings.TrimSpace(ag.Name)
	}
	return agentID
}

// ResponsePrefix is an account's responsePrefix for a reply of agentID
// made with model (R8.10): "auto" is the agent's name in brackets, and
// {agent}, {name} and {model} in a template are filled ("" when there
// is none).
func ResponsePrefix(cfg *config.Config, a Account, agentID, model string) string {
	p := strings.TrimSpace(a.ResponsePrefix)
	if p == "auto" {
		return "[" + AgentName(cfg, agentID) + "]"
	}
	return strings.NewReplacer("{agent}", agentID, "{name}", AgentName(cfg, agentID), "{model}", model).Replace(p)
}

// AckReaction is the emoji to put on the message e when its turn starts
// (R8.7), and whether to: messages.ackReactionScope (group-mentions by
// default: a group or channel message that mentioned the bot; group-all;
// direct; all; off or none) decides; the emoji is the account's
// ackReaction, else messages.ackReaction, else the agent's identity
// emoji, else 👀 (Slack's name "eyes"). An empty emoji turns it off.
func AckReaction(cfg *config.Config, a Account, e Envelope, agentID string) (string, bool) {
	group := e.Peer.Kind != Direct
	switch cmpOr(cfg.Messages.AckReactionScope, "group-mentions") {
	case "group-mentions":
		if !group || !e.Mentioned {
			return "", false
		}
	case "group-all":
		if !group {
			return "", false
		}
	case "direct":
		if group {
			return "", false
		}
	case "all":
	default: // off, none
		return "", false
	}
	emoji := ""
	switch {
	case a.AckReaction != nil:
		emoji = *a.AckReaction
	case cfg.Messages.AckReaction != nil:
		emoji = *cfg.Messages.AckReaction
	default:
		if ag, _ := cfg.Agent(agentID); ag != nil && ag.Identity != nil && ag.Identity.Value != nil {
			if em := ag.Identity.Get("emoji"); em != nil && em.Kind == config.String {
				emoji = strings.TrimSpace(em.Str)
			}
		}
		if emoji == "" {
			emoji = "👀"
			if a.Channel == "slack" {
				emoji = "eyes"
			}
		}
	}
	emoji = strings.TrimSpace(emoji)
	return emoji, emoji != ""
}

// ActionGroups are the actions.<group> gates that the message tool's
// action needs on channel (R9.3, OpenClaw's groups): all must be on.
func ActionGroups(channel, action string) []string {
	switch channel {
	case "telegram":
		switch action {
		case "react", "reactions":
			return []string{"reactions"}
		case "edit":
			return []string{"editMessage"}
		case "delete":
			return []string{"deleteMessage"}
		case "poll":
			return []string{"sendMessage", "poll"}
		}
		return []string{"sendMessage"}
	case "discord":
		switch action {
		case "react", "reactions":
			return []string{"reactions"}
		case "poll":
			return []string{"polls"}
		}
	case "slack":
		if action == "react" || action == "reactions" {
			return []string{"reactions"}
		}
	}
	return []string{"messages"}
}
