package discord

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"talon/internal/channel"
	"talon/internal/config"
)

// DefaultAPIURL is Discord's REST base for API v10.
const DefaultAPIURL = "https://discord.com/api/v10"

// Options configure one Discord account.
type Options struct {
	AccountID string
	// Token is the bot token (channels.discord.token). It is sent only in
	// the Authorization header and the gateway's IDENTIFY/RESUME, never
	// logged, never returned.
	Token string
	// APIURL is the REST base (channels.discord.apiUrl); DefaultAPIURL
	// when empty.
	APIURL string
	// GatewayURL is the gateway WebSocket (channels.discord.gatewayUrl);
	// when empty it is asked from GET /gateway/bot.
	GatewayURL string
	// HTTPClient carries every request and dials the gateway: the caller
	// builds it (with netguard for a tenant), so a URL a tenant names is
	// reached only through it. Required.
	HTTPClient *http.Client
	Intents    Intents
	// SuppressEmbeds hides link previews on sent messages; nil means true.
	SuppressEmbeds *bool
	Log            *slog.Logger
}

// Intents are the privileged intents an account asks for.
type Intents struct {
	// MessageContent asks for guild message text; nil means true. Without
	// it guild messages arrive empty unless they mention the bot.
	MessageContent *bool
	// GuildMembers asks for member events (role allowlists by member).
	GuildMembers bool
}

// Bot is one Discord account: a channel.Transport over the gateway and
// REST API. Safe for concurrent use; Run is called once at a time.
type Bot struct {
	account        string
	token          string
	apiURL         string
	gatewayURL     string
	client         *http.Client
	intents        int
	suppressEmbeds bool
	log            *slog.Logger
	cache          *cache
	now            func() time.Time
	timing         timing

	running atomic.Bool

	mu          sync.Mutex
	status      channel.Status
	globalUntil time.Time
	botID       string
}

// timing are the waits of the gateway loop; tests shorten them.
type timing struct {
	backoffMin, backoffMax time.Duration
	acceptRetry            time.Duration // first wait before retrying a failed accept
	helloTimeout           time.Duration
	invalidMin, invalidMax time.Duration // Discord asks for 1–5 s before re-identifying
}

var defaultTiming = timing{
	backoffMin:   time.Second,
	backoffMax:   2 * time.Minute,
	acceptRetry:  200 * time.Millisecond,
	helloTimeout: 30 * time.Second,
	invalidMin:   time.Second,
	invalidMax:   5 * time.Second,
}

var _ channel.Transport = (*Bot)(nil)

// New checks o and returns the account's bot; it does no I/O.
func New(o Options) (*Bot, error) {
	if o.HTTPClient == nil {
		return nil, errors.New("discord: an HTTP client is required")
	}
	if strings.TrimSpace(o.Token) == "" {
		return nil, errors.New("discord: a bot token is required")
	}
	if strings.ContainsAny(o.Token, " \t\r\n") {
		return nil, errors.New("discord: the bot token contains white space")
	}
	api := strings.TrimRight(o.APIURL, "/")
	if api == "" {
		api = DefaultAPIURL
	}
	if err := checkURL(api, "http", "https"); err != nil {
		return nil, fmt.Errorf("discord: apiUrl: %w", err)
	}
	if o.GatewayURL != "" {
		if err := checkURL(o.GatewayURL, "ws", "wss"); err != nil {
			return nil, fmt.Errorf("discord: gatewayUrl: %w", err)
		}
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bot{
		account:        config.NormalizeAccountID(o.AccountID),
		token:          o.Token,
		apiURL:         api,
		gatewayURL:     o.GatewayURL,
		client:         o.HTTPClient,
		intents:        intentsFor(o.Intents),
		suppressEmbeds: o.SuppressEmbeds == nil || *o.SuppressEmbeds,
		cache:          newCache(),
		now:            time.Now,
		timing:         defaultTiming,
	}
	b.log = log.With("channel", "discord", "account", b.account)
	b.status = channel.Status{Mode: "gateway"}
	b.setIssue("intent", contentIssue(b.intents))
	return b, nil
}

// intentsFor is the IDENTIFY intents (spec R13.1): what a chat bot needs,
// plus the privileged ones the account asks for.
func intentsFor(in Intents) int {
	n := intentGuilds | intentGuildMessages | intentDirectMessages |
		intentGuildMessageReactions | intentDirectMessageReactions
	if in.MessageContent == nil || *in.MessageContent {
		n |= intentMessageContent
	}
	if in.GuildMembers {
		n |= intentGuildMembers
	}
	return n
}

// contentIssue reports mention-only operation (spec R13.2).
func contentIssue(intents int) *channel.Issue {
	if intents&intentMessageContent != 0 {
		return nil
	}
	return &channel.Issue{
		Kind:    "intent",
		Message: "message content intent is off: guild messages arrive without text unless they mention the bot",
		Fix:     "set requireMention: true on every guild and channel under channels.discord.guilds, or enable Message Content Intent in the Discord Developer Portal (Bot page) and remove intents.messageContent: false",
	}
}

func checkURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok || u.Host == "" {
		return fmt.Errorf("%q is not a %s URL", raw, strings.Join(schemes, " or "))
	}
	if u.User != nil {
		return fmt.Errorf("%q carries credentials", raw)
	}
	return nil
}

// Status is the account's state now (a copy).
func (b *Bot) Status() channel.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.status
	s.Issues = append([]channel.Issue(nil), s.Issues...)
	return s
}

// update changes the status under the lock.
func (b *Bot) update(f func(s *channel.Status)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.status)
}

// setIssue replaces the issues of kind with iss (none when iss is nil),
// keeping the others.
func (b *Bot) setIssue(kind string, iss *channel.Issue) {
	b.update(func(s *channel.Status) {
		kept := s.Issues[:0:0]
		for _, i := range s.Issues {
			if i.Kind != kind {
				kept = append(kept, i)
			}
		}
		if iss != nil {
			kept = append(kept, *iss)
		}
		s.Issues = kept
	})
}

func (b *Bot) setError(err error) {
	b.update(func(s *channel.Status) { s.LastError = err.Error() })
}

func (b *Bot) self() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.botID
}
