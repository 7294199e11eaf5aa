package discord

import (
	"encoding/json"
)

// The gateway opcodes Talon speaks (Discord API v10, "Gateway Opcodes").
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Gateway intents (bit positions from Discord's "Gateway Intents").
const (
	intentGuilds                 = 1 << 0
	intentGuildMembers           = 1 << 1
	intentGuildMessages          = 1 << 9
	intentGuildMessageReactions  = 1 << 10
	intentDirectMessages         = 1 << 12
	intentDirectMessageReactions = 1 << 13
	intentMessageContent         = 1 << 15
)

// Application flags that say a privileged intent is enabled in the
// Developer Portal (the _LIMITED form is the unverified-bot one).
const (
	appFlagGuildMembers          = 1 << 14
	appFlagGuildMembersLimited   = 1 << 15
	appFlagMessageContent        = 1 << 18
	appFlagMessageContentLimited = 1 << 19
)

// Channel types (Discord "Channel Types") that decide a peer's shape.
const (
	chanGuildText          = 0
	chanDM                 = 1
	chanGroupDM            = 3
	chanAnnouncementThread = 10
	chanPublicThread       = 11
	chanPrivateThread      = 12
)

// Message types a person writes; the rest (joins, pins, thread
// starters, slash-command echoes) are not conversation.
const (
	msgDefault = 0
	msgReply   = 19
)

// Message flags Talon sets or reads.
const (
	flagSuppressEmbeds = 1 << 2  // hides link previews
	flagVoiceMessage   = 1 << 13 // the attachment is a voice message
)

// payload is one gateway frame.
type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

type hello struct {
	HeartbeatInterval int64 `json:"heartbeat_interval"`
}

type identify struct {
	Token      string             `json:"token"`
	Intents    int                `json:"intents"`
	Properties identifyProperties `json:"properties"`
}

type identifyProperties struct {
	OS      string `json:"os"`
	Browser string `json:"browser"`
	Device  string `json:"device"`
}

type resume struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
}

type ready struct {
	User             user   `json:"user"`
	SessionID        string `json:"session_id"`
	ResumeGatewayURL string `json:"resume_gateway_url"`
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
	Bot        bool   `json:"bot"`
}

type member struct {
	User  *user    `json:"user,omitempty"`
	Nick  string   `json:"nick"`
	Roles []string `json:"roles"`
}

type channelObj struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id"`
	ParentID string `json:"parent_id"`
	Name     string `json:"name"`
}

type guildCreate struct {
	ID          string       `json:"id"`
	Unavailable bool         `json:"unavailable"`
	Channels    []channelObj `json:"channels"`
	Threads     []channelObj `json:"threads"`
	Members     []member     `json:"members"`
}

type memberUpdate struct {
	GuildID string   `json:"guild_id"`
	User    user     `json:"user"`
	Roles   []string `json:"roles"`
}

type threadListSync struct {
	GuildID string       `json:"guild_id"`
	Threads []channelObj `json:"threads"`
}

type messageRef struct {
	MessageID string `json:"message_id,omitempty"`
	ChannelID string `json:"channel_id,omitempty"`
	// FailIfNotExists false posts the reply even when the replied-to
	// message was deleted meanwhile, rather than losing the chunk.
	FailIfNotExists *bool `json:"fail_if_not_exists,omitempty"`
}

type message struct {
	ID                string       `json:"id"`
	ChannelID         string       `json:"channel_id"`
	GuildID           string       `json:"guild_id"`
	Author            user         `json:"author"`
	Member            *member      `json:"member"`
	Content           string       `json:"content"`
	Timestamp         string       `json:"timestamp"`
	Type              int          `json:"type"`
	Flags             int          `json:"flags"`
	WebhookID         string       `json:"webhook_id"`
	Attachments       []attachment `json:"attachments"`
	Reactions         []reaction   `json:"reactions"`
	Mentions          []user       `json:"mentions"`
	MentionRoles      []string     `json:"mention_roles"`
	MentionEveryone   bool         `json:"mention_everyone"`
	MessageReference  *messageRef  `json:"message_reference"`
	ReferencedMessage *message     `json:"referenced_message"`
}

// messageText is what a post and an edit both set: the text, whom it
// may ping and its flags. It is the body of PATCH
// /channels/{id}/messages/{id}.
type messageText struct {
	Content         string          `json:"content"`
	Flags           int             `json:"flags,omitempty"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
}

// createMessage is the body of POST /channels/{id}/messages.
type createMessage struct {
	messageText
	Nonce            string      `json:"nonce,omitempty"`
	EnforceNonce     bool        `json:"enforce_nonce,omitempty"`
	MessageReference *messageRef `json:"message_reference,omitempty"`
	// Attachments describe the files[n] parts of a multipart post.
	Attachments []attachmentRef `json:"attachments,omitempty"`
	Poll        *pollRequest    `json:"poll,omitempty"`
	Components  []component     `json:"components,omitempty"`
}

// component is a message component: an action row (type 1) holding
// buttons (type 2).
type component struct {
	Type       int         `json:"type"`
	Style      int         `json:"style,omitempty"`
	Label      string      `json:"label,omitempty"`
	CustomID   string      `json:"custom_id,omitempty"`
	Components []component `json:"components,omitempty"`
}

// interaction is INTERACTION_CREATE's payload, as far as a button press
// needs it.
type interaction struct {
	ID        string   `json:"id"`
	Type      int      `json:"type"`
	Token     string   `json:"token"`
	GuildID   string   `json:"guild_id"`
	ChannelID string   `json:"channel_id"`
	Member    *member  `json:"member"`
	User      *user    `json:"user"`
	Message   *message `json:"message"`
	Data      struct {
		CustomID      string `json:"custom_id"`
		ComponentType int    `json:"component_type"`
	} `json:"data"`
}

// pollRequest is Discord's poll create request object.
type pollRequest struct {
	Question         pollMedia    `json:"question"`
	Answers          []pollAnswer `json:"answers"`
	Duration         *int         `json:"duration,omitempty"` // hours; nil for Discord's 24
	AllowMultiselect bool         `json:"allow_multiselect"`
	LayoutType       int          `json:"layout_type"`
}

type pollMedia struct {
	Text string `json:"text"`
}

type pollAnswer struct {
	PollMedia pollMedia `json:"poll_media"`
}

// attachmentRef names the file part files[ID] of a post.
type attachmentRef struct {
	ID       int    `json:"id"`
	Filename string `json:"filename"`
}

// reaction is one emoji's reactions on a message.
type reaction struct {
	Count int   `json:"count"`
	Me    bool  `json:"me"`
	Emoji emoji `json:"emoji"`
}

// emoji is a reaction's emoji: a Unicode one has only a name.
type emoji struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Animated bool   `json:"animated"`
}

// attachment is a file of a message as Discord describes it.
type attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
}

type allowedMentions struct {
	Parse       []string `json:"parse"`
	RepliedUser bool     `json:"replied_user"`
}

type gatewayBot struct {
	URL               string `json:"url"`
	SessionStartLimit struct {
		Remaining  int   `json:"remaining"`
		ResetAfter int64 `json:"reset_after"`
	} `json:"session_start_limit"`
}

type application struct {
	Flags int `json:"flags"`
}
