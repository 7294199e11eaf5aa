package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// The channel keys of spec channels.md (§1, §3–§7, §11–§13) that Talon's
// channel layer reads. One struct, ChannelSettings, holds what a
// channel's root and each of its accounts may set, so that an account
// inherits the root key by key (R5.5); maps (groups, direct, channels,
// guilds) are taken whole from the account when it has them, never
// merged. Keys of one platform on another's block are reported by
// checkChannels. Keys OpenClaw defines that Talon does not act on
// (streaming, mediaMaxMb, actions, …) stay in Rest and are listed in
// unusedKeys.

// Channel is one `channels.<id>` entry. `channels.defaults` decodes as
// one too; only its groupPolicy is read (ChannelDefaults).
type Channel struct {
	ChannelSettings
	// DefaultAccount names the account used when a send names none (R1.1).
	DefaultAccount string                    `json:"defaultAccount"`
	Accounts       map[string]ChannelAccount `json:"accounts"`
	Rest           *Raw                      `talon:"rest"`
}

// ChannelAccount is `channels.<id>.accounts.<account>`: its keys override
// the channel's.
type ChannelAccount struct {
	ChannelSettings
	Rest *Raw `talon:"rest"`
}

// ChannelSettings are the keys a channel and each of its accounts share.
// Presence is kept (pointers, nil lists and maps) so that an account's
// absent key inherits the channel's.
type ChannelSettings struct {
	Enabled *bool `json:"enabled"`

	// Access control (§5): pairing (default), allowlist, open, disabled;
	// groups allowlist (default), open, disabled.
	DMPolicy       string            `json:"dmPolicy"`
	AllowFrom      List              `json:"allowFrom"`
	GroupPolicy    string            `json:"groupPolicy"`
	GroupAllowFrom List              `json:"groupAllowFrom"`
	Groups         map[string]Group  `json:"groups"`
	Direct         map[string]Direct `json:"direct"`
	// DangerouslyAllowNameMatching lets allowlists match usernames and
	// display names, which a sender chooses (R5.3).
	DangerouslyAllowNameMatching *bool `json:"dangerouslyAllowNameMatching"`
	// AllowBots admits other bots' messages: a boolean, or on Discord
	// "mentions" (only when they mention this bot). See AllowBotsMode.
	AllowBots *Raw `json:"allowBots"`

	// Mentions and history (§6).
	RequireMention  *bool         `json:"requireMention"`
	MentionPatterns *MentionScope `json:"mentionPatterns"`
	HistoryLimit    *int          `json:"historyLimit"`
	DMHistoryLimit  *int          `json:"dmHistoryLimit"`

	// Output (§8).
	TextChunkLimit *int   `json:"textChunkLimit"`
	ReplyToMode    string `json:"replyToMode"`
	// ResponsePrefix is put before every reply; "" (present) turns a
	// channel's prefix off for an account.
	ResponsePrefix *string `json:"responsePrefix"`
	// AckReaction is the emoji put on a message when its turn starts
	// (R8.7), over messages.ackReaction; "" turns it off.
	AckReaction *string `json:"ackReaction"`
	// TypingReaction is a reaction shown on the message while its turn
	// runs, where the platform has no typing indicator for bots (Slack).
	TypingReaction *string `json:"typingReaction"`
	// MediaMaxMB bounds the attachments of inbound messages a turn
	// downloads (R8.9: Telegram and Discord 100, Slack 20).
	MediaMaxMB *float64 `json:"mediaMaxMb"`
	// Actions gates the message tool's actions by group (R9.3):
	// sendMessage, reactions, poll, deleteMessage, editMessage
	// (Telegram); messages, reactions, pins… (Slack); messages,
	// reactions, polls… (Discord). Unset groups are on.
	Actions map[string]*bool `json:"actions"`
	// HeartbeatVisibility is what a heartbeat may send here (spec
	// automation.md §9); Heartbeat is its legacy name, read under it.
	HeartbeatVisibility *HeartbeatVisibility `json:"heartbeatVisibility"`
	Heartbeat           *HeartbeatVisibility `json:"heartbeat"`

	// Telegram (§11).
	BotToken      *Secret `json:"botToken"` // Telegram and Slack
	TokenFile     string  `json:"tokenFile"`
	APIRoot       string  `json:"apiRoot"`
	WebhookURL    string  `json:"webhookUrl"`
	WebhookSecret *Secret `json:"webhookSecret"`
	WebhookPath   string  `json:"webhookPath"`
	LinkPreview   *bool   `json:"linkPreview"`

	// Slack (§12). APIURL is Talon's: the Web API's base URL, for a
	// stand-in of Slack (Discord's REST base too).
	Mode                  string                 `json:"mode"`
	AppToken              *Secret                `json:"appToken"`
	SigningSecret         *Secret                `json:"signingSecret"`
	APIURL                string                 `json:"apiUrl"`
	Channels              map[string]SlackRoom   `json:"channels"`
	DM                    *DMSettings            `json:"dm"`
	ReplyToModeByChatType *ReplyToModeByChatType `json:"replyToModeByChatType"`
	Thread                *ThreadSettings        `json:"thread"`

	// Discord (§13). GatewayURL is Talon's: the gateway WebSocket's URL.
	Token              *Secret          `json:"token"`
	ApplicationID      string           `json:"applicationId"`
	GatewayURL         string           `json:"gatewayUrl"`
	Guilds             map[string]Guild `json:"guilds"`
	Intents            *Intents         `json:"intents"`
	MaxLinesPerMessage *int             `json:"maxLinesPerMessage"`
	SuppressEmbeds     *bool            `json:"suppressEmbeds"`
}

// HeartbeatVisibility is channels.defaults, channels.<id> or an account's
// heartbeatVisibility: whether a heartbeat sends its OK, sends its
// alerts and reports itself to UIs. An unset key inherits.
type HeartbeatVisibility struct {
	ShowOK       *bool `json:"showOk"`
	ShowAlerts   *bool `json:"showAlerts"`
	UseIndicator *bool `json:"useIndicator"`
}

// Group is `channels.<id>.groups.<groupId>` (Telegram chats, generic groups).
type Group struct {
	Enabled *bool `json:"enabled"`
	// GroupPolicy overrides the channel's sender policy in this group
	// (Telegram: "open" lets every member talk to the bot).
	GroupPolicy    string                `json:"groupPolicy"`
	RequireMention *bool                 `json:"requireMention"`
	AllowFrom      List                  `json:"allowFrom"`
	Tools          ToolPolicy            `json:"tools"`
	ToolsBySender  map[string]ToolPolicy `json:"toolsBySender"`
	Topics         map[string]Topic      `json:"topics"`
	Rest           *Raw                  `talon:"rest"`
}

// Topic is a Telegram forum topic, `groups.<chatId>.topics.<topicId>`.
type Topic struct {
	RequireMention *bool `json:"requireMention"`
	// AgentID picks the agent that answers in the topic, after the
	// bindings' peer tiers (R3.8).
	AgentID       string                `json:"agentId"`
	Tools         ToolPolicy            `json:"tools"`
	ToolsBySender map[string]ToolPolicy `json:"toolsBySender"`
	Rest          *Raw                  `talon:"rest"`
}

// Direct is `channels.telegram.direct.<chatId>`: a DM's tool policy.
type Direct struct {
	Tools         ToolPolicy            `json:"tools"`
	ToolsBySender map[string]ToolPolicy `json:"toolsBySender"`
	Rest          *Raw                  `talon:"rest"`
}

// SlackRoom is `channels.slack.channels.<C…>`.
type SlackRoom struct {
	Enabled             *bool                 `json:"enabled"`
	RequireMention      *bool                 `json:"requireMention"`
	IgnoreOtherMentions *bool                 `json:"ignoreOtherMentions"`
	Users               List                  `json:"users"`
	AllowBots           *bool                 `json:"allowBots"`
	ReplyToMode         string                `json:"replyToMode"`
	Tools               ToolPolicy            `json:"tools"`
	ToolsBySender       map[string]ToolPolicy `json:"toolsBySender"`
	Rest                *Raw                  `talon:"rest"`
}

// Guild is `channels.discord.guilds.<id>`.
type Guild struct {
	RequireMention      *bool                   `json:"requireMention"`
	IgnoreOtherMentions *bool                   `json:"ignoreOtherMentions"`
	Users               List                    `json:"users"`
	Roles               List                    `json:"roles"`
	Tools               ToolPolicy              `json:"tools"`
	ToolsBySender       map[string]ToolPolicy   `json:"toolsBySender"`
	Channels            map[string]GuildChannel `json:"channels"`
	Rest                *Raw                    `talon:"rest"`
}

// GuildChannel is `channels.discord.guilds.<id>.channels.<id>`.
type GuildChannel struct {
	Enabled        *bool                 `json:"enabled"`
	RequireMention *bool                 `json:"requireMention"`
	Users          List                  `json:"users"`
	Tools          ToolPolicy            `json:"tools"`
	ToolsBySender  map[string]ToolPolicy `json:"toolsBySender"`
	Rest           *Raw                  `talon:"rest"`
}

// DMSettings is Slack's and Discord's `dm`: DMs on or off, and group DMs.
type DMSettings struct {
	Enabled      *bool `json:"enabled"`
	GroupEnabled *bool `json:"groupEnabled"`
	Rest         *Raw  `talon:"rest"`
}

// ReplyToModeByChatType is Slack's `replyToModeByChatType`.
type ReplyToModeByChatType struct {
	Direct  string `json:"direct"`
	Group   string `json:"group"`
	Channel string `json:"channel"`
}

// ThreadSettings is Slack's `thread`.
type ThreadSettings struct {
	HistoryScope        string `json:"historyScope"`
	InheritParent       *bool  `json:"inheritParent"`
	InitialHistoryLimit *int   `json:"initialHistoryLimit"`
	Rest                *Raw   `talon:"rest"`
}

// Intents is Discord's `intents`: which privileged intents are asked for.
type Intents struct {
	MessageContent *bool `json:"messageContent"`
	GuildMembers   *bool `json:"guildMembers"`
	Rest           *Raw  `talon:"rest"`
}

// MentionScope is `channels.<id>.mentionPatterns` (R6.3): where the
// mention patterns apply. Mode "allow" uses them except in DenyIn, "deny"
// only in AllowIn; DenyIn wins.
type MentionScope struct {
	Mode    string `json:"mode"`
	AllowIn List   `json:"allowIn"`
	DenyIn  List   `json:"denyIn"`
}

// Binding is one `bindings[]` entry (§3): the agent for the messages its
// match fits.
type Binding struct {
	AgentID string          `json:"agentId"`
	Match   BindingMatch    `json:"match"`
	Session *BindingSession `json:"session"`
	Rest    *Raw            `talon:"rest"`
}

// BindingMatch is `bindings[].match`. Every key set must match.
type BindingMatch struct {
	Channel string `json:"channel"`
	// AccountID absent means the default account only, "*" any (R3.3).
	AccountID *string      `json:"accountId"`
	Peer      *BindingPeer `json:"peer"`
	GuildID   string       `json:"guildId"`
	Roles     List         `json:"roles"`
	TeamID    string       `json:"teamId"`
}

// BindingPeer is `bindings[].match.peer`: kind direct (or dm), group or
// channel, and the id, or "*" for every peer of that kind.
type BindingPeer struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// BindingSession overrides session.dmScope and session.groupScope for
// the messages a binding routes.
type BindingSession struct {
	DMScope    string `json:"dmScope"`
	GroupScope string `json:"groupScope"`
}

// Messages is the `messages` section.
type Messages struct {
	GroupChat MessagesGroupChat `json:"groupChat"`
	// AckReaction is the emoji a channel puts on a message whose turn
	// starts (R8.7; default the agent's identity emoji, else 👀, on
	// Slack "eyes"); AckReactionScope which turns get it.
	AckReaction      *string `json:"ackReaction"`
	AckReactionScope string  `json:"ackReactionScope"`
	// Inbound batches quick messages of one sender (R2.1 step 6).
	Inbound MessagesInbound `json:"inbound"`
	Rest    *Raw            `talon:"rest"`
}

// MessagesInbound is `messages.inbound`: the quiet window in which
// text-only messages of one sender in one conversation are taken as one
// turn; byChannel.<channel> over debounceMs; with neither, Telegram waits
// 300 ms and the other channels not at all.
type MessagesInbound struct {
	DebounceMs *int           `json:"debounceMs"`
	ByChannel  map[string]int `json:"byChannel"`
	Rest       *Raw           `talon:"rest"`
}

// MessagesGroupChat is `messages.groupChat`.
type MessagesGroupChat struct {
	MentionPatterns List `json:"mentionPatterns"`
	// HistoryLimit is how many unanswered group messages a turn sees,
	// unless the channel sets its own.
	HistoryLimit *int `json:"historyLimit"`
	Rest         *Raw `talon:"rest"`
}

// AccessGroup is `accessGroups.<name>`: senders per channel ("*" for
// every channel) that an allowFrom entry "accessGroup:<name>" stands for.
type AccessGroup struct {
	Members map[string]List `json:"members"`
	Rest    *Raw            `talon:"rest"`
}

// ChannelDefaults is `channels.defaults`, whose groupPolicy applies to a
// channel that exists but sets none (R5.9).
func (c *Config) ChannelDefaults() Channel {
	if c == nil {
		return Channel{}
	}
	return c.Channels["defaults"]
}

// AllowBotsMode reads allowBots: "" when absent (an account inherits
// the channel's), "off" (false), "on" (true) or "mentions". Validation
// has refused other values.
func (s *ChannelSettings) AllowBotsMode() string {
	switch v := s.AllowBots; {
	case v == nil || v.Value == nil:
		return ""
	case v.Kind == Bool && v.Bool:
		return "on"
	case v.Kind == String && v.Str == "mentions":
		return "mentions"
	}
	return "off"
}

// Secret is a credential of the config (a bot token, a signing secret):
// the value itself, "${NAME}" for the variable NAME of the environment
// the caller passes (a tenant's own config env, never the operator's), or
// OpenClaw's secret reference {source: "env", id: "NAME"}. Other sources
// (file, exec) are refused when decoding: they would read the gateway's
// files or run its programs on a tenant's word.
type Secret struct {
	Text string // as written, when a string
	Env  string // the variable a reference names
}

// envRefRE is a string secret written as "${NAME}".
var envRefRE = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// EnvName is the variable the secret reads, "" for a literal value.
func (s *Secret) EnvName() string {
	if s == nil {
		return ""
	}
	if s.Env != "" {
		return s.Env
	}
	if m := envRefRE.FindStringSubmatch(s.Text); m != nil {
		return m[1]
	}
	return ""
}

// Resolve returns the secret's value, reading a variable through env. An
// absent secret is "" without error; a variable that is unset or empty
// is an error naming it (not its value).
func (s *Secret) Resolve(env func(string) string) (string, error) {
	if s == nil {
		return "", nil
	}
	name := s.EnvName()
	if name == "" {
		return s.Text, nil
	}
	v := ""
	if env != nil {
		v = env(name)
	}
	if v == "" {
		return "", fmt.Errorf("reading secret: environment variable %s is not set", name)
	}
	return v, nil
}

var secretType = reflect.TypeFor[Secret]()

// decodeSecret reads a string or {source: "env", provider?, id}.
func (d *decoder) decodeSecret(path string, v *Value, rv reflect.Value) bool {
	const want = `expected a string, "${NAME}" or {source: "env", id: "NAME"}`
	switch v.Kind {
	case String:
		rv.Set(reflect.ValueOf(Secret{Text: v.Str}))
		return true
	case Object:
	default:
		d.fail(path, want)
		return false
	}
	var src, id, provider string
	for _, m := range v.Members {
		var dst *string
		switch m.Key {
		case "source":
			dst = &src
		case "id":
			dst = &id
		case "provider":
			dst = &provider
		default:
			d.fail(joinKey(path, m.Key), "unknown key of a secret reference (source, provider, id)")
			return false
		}
		if m.Value == nil || m.Value.Kind != String {
			d.fail(joinKey(path, m.Key), "expected string")
			return false
		}
		*dst = m.Value.Str
	}
	switch {
	case src != "env":
		d.fail(path, fmt.Sprintf(`secret source %q is not supported: Talon reads secrets from the environment only; `+want, src))
	case provider != "" && provider != "default":
		d.fail(path+".provider", fmt.Sprintf(`secret provider %q is not supported: omit it or use "default"`, provider))
	case !envWord.MatchString(id):
		d.fail(path+".id", fmt.Sprintf("expected an environment variable name (got %q)", id))
	default:
		rv.Set(reflect.ValueOf(Secret{Env: id}))
		return true
	}
	return false
}

// MaxMentionPattern bounds a mention pattern's length. Go's regular
// expressions run in linear time, so no pattern backtracks
// catastrophically; the bound keeps compiled programs small.
const MaxMentionPattern = 512

// MaxMentionPatterns bounds the patterns of one list.
const MaxMentionPatterns = 64

// CompileMention compiles a mention pattern as OpenClaw uses it: a
// regular expression matched case-insensitively anywhere in the text.
func CompileMention(p string) (*regexp.Regexp, error) {
	if len(p) > MaxMentionPattern {
		return nil, fmt.Errorf("longer than %d bytes", MaxMentionPattern)
	}
	if strings.TrimSpace(p) == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	return regexp.Compile("(?i)" + p)
}
