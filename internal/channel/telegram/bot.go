package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"talon/internal/channel"
)

// DefaultAPIRoot is the public Bot API.
const DefaultAPIRoot = "https://api.telegram.org"

// Options configure one bot account.
type Options struct {
	AccountID string
	// Token is the bot token from BotFather. It appears only in request
	// URLs: never in an error, a log line or Status.
	Token string
	// APIRoot is the Bot API server without "/bot<TOKEN>" (a self-hosted
	// telegram-bot-api); empty is DefaultAPIRoot.
	APIRoot string
	// HTTPClient makes every request. The caller builds it (for a tenant,
	// one that refuses private addresses): the bot never dials itself.
	HTTPClient *http.Client
	// Webhook selects webhook mode; nil is long polling.
	Webhook *Webhook
	// LinkPreview is channels.telegram.linkPreview (true unless the
	// config says false): false sends link_preview_options.is_disabled.
	LinkPreview bool
	Log         *slog.Logger
}

// Webhook is where Telegram posts updates: URL is public, the gateway
// mounts the Bot (an http.Handler) behind it. Secret is sent by Telegram
// in X-Telegram-Bot-Api-Secret-Token; a webhook without one would take
// updates from anyone, so it is required.
type Webhook struct {
	URL    string
	Secret string
}

// Bot is one Telegram account: a channel.Transport, and in webhook mode
// the http.Handler Telegram posts to.
type Bot struct {
	api       client
	accountID string
	webhook   *Webhook
	preview   bool
	log       *slog.Logger
	timing    timing

	running atomic.Bool
	accept  atomic.Pointer[channel.Accept] // webhook mode, set by Run

	mu     sync.Mutex
	info   Info
	status channel.Status
}

// timing holds the loop's durations; tests shorten them.
type timing struct {
	pollTimeout time.Duration // getUpdates long-poll timeout
	stall       time.Duration // restart a getUpdates not done by then
	backoffMin  time.Duration
	backoffMax  time.Duration
	maxWait     time.Duration // longest retry_after a Send waits out
	// sleep waits d or until ctx ends (false); tests see the waits.
	sleep func(ctx context.Context, d time.Duration) bool
}

var defaultTiming = timing{
	pollTimeout: 30 * time.Second,
	stall:       120 * time.Second, // R11.1
	backoffMin:  time.Second,
	backoffMax:  30 * time.Second,
	maxWait:     30 * time.Second,
	sleep:       sleep,
}

// Telegram's token shape: the bot id, a colon, 35 characters today.
var (
	tokenShape  = regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]+$`) // with tokenLen
	secretShape = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)        // setWebhook's secret_token rule, with at most 256
)

// New checks o and builds the bot; nothing is sent until Run.
func New(o Options) (*Bot, error) {
	if !tokenShape.MatchString(o.Token) || !tokenLen(o.Token) {
		return nil, errors.New("telegram: bot token is not of the form <bot id>:<secret> that BotFather gives")
	}
	if o.HTTPClient == nil {
		return nil, errors.New("telegram: an HTTP client is required")
	}
	root, err := apiRoot(o.APIRoot)
	if err != nil {
		return nil, err
	}
	if o.Webhook != nil {
		if err := checkWebhook(o.Webhook); err != nil {
			return nil, err
		}
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bot{
		api: client{http: o.HTTPClient, base: root + "/bot" + o.Token + "/",
			files: root + "/file/bot" + o.Token + "/", token: o.Token},
		accountID: o.AccountID,
		webhook:   o.Webhook,
		preview:   o.LinkPreview,
		log:       log.With("channel", "telegram", "account", o.AccountID),
		timing:    defaultTiming,
	}
	b.status.Mode = "polling"
	if o.Webhook != nil {
		b.status.Mode = "webhook"
	}
	return b, nil
}

// apiRoot validates channels.telegram.apiRoot and drops a trailing slash.
func apiRoot(s string) (string, error) {
	if s == "" {
		return DefaultAPIRoot, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("telegram: apiRoot: %w", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "", fmt.Errorf("telegram: apiRoot %q: scheme must be https or http", s)
	case u.Host == "":
		return "", fmt.Errorf("telegram: apiRoot %q: no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("telegram: apiRoot: must be a plain URL without credentials, query or fragment")
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if strings.HasPrefix(seg, "bot") && len(seg) > 3 {
			return "", errors.New("telegram: apiRoot must not include /bot<TOKEN>: give the server's root, the token goes in botToken")
		}
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func checkWebhook(w *Webhook) error {
	if len(w.Secret) > 256 || !secretShape.MatchString(w.Secret) {
		return errors.New("telegram: webhook mode needs webhookSecret: 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}
	u, err := url.Parse(w.URL)
	if err != nil || u.Host == "" || u.Scheme != "https" {
		return errors.New("telegram: webhookUrl must be an absolute https URL (Telegram posts only to https)")
	}
	return nil
}

// Info is what getMe said; zero until Run has called it.
func (b *Bot) Info() Info {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.info
}

// Status implements channel.Transport.
func (b *Bot) Status() channel.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.status
	s.Issues = slices.Clone(s.Issues)
	return s
}

func (b *Bot) update(f func(s *channel.Status)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.status)
}

// setIssue adds or replaces the issue of kind with key (the first words
// of its message name it), so a repeated failure is one entry.
func (b *Bot) setIssue(key string, is channel.Issue) {
	b.update(func(s *channel.Status) {
		s.Issues = slices.DeleteFunc(s.Issues, func(i channel.Issue) bool { return strings.HasPrefix(i.Message, key) })
		s.Issues = append(s.Issues, is)
	})
}

func (b *Bot) clearIssue(key string) {
	b.update(func(s *channel.Status) {
		s.Issues = slices.DeleteFunc(s.Issues, func(i channel.Issue) bool { return strings.HasPrefix(i.Message, key) })
	})
}

// failed records a transient failure: shown in Status, logged, counted.
func (b *Bot) failed(step string, err error) {
	b.log.Warn("telegram "+step+" failed", "err", err)
	b.update(func(s *channel.Status) {
		s.Connected = false
		s.LastError = err.Error()
		s.ReconnectAttempts++
	})
}

// backoff is the wait before retry n (from 0): doubling from backoffMin
// to backoffMax, with up to a quarter of jitter so that accounts that
// failed together do not retry together.
func (t timing) backoff(n int) time.Duration {
	d := t.backoffMin
	for i := 0; i < n && d < t.backoffMax; i++ {
		d *= 2
	}
	d = min(d, t.backoffMax)
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// sleep waits d or until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

var _ channel.Transport = (*Bot)(nil)
var _ http.Handler = (*Bot)(nil)

// PrivacyIssue is Info().PrivacyIssue: the hub asks it of an account
// whose groups are to be read without mentions.
func (b *Bot) PrivacyIssue() (channel.Issue, bool) { return b.Info().PrivacyIssue() }

// tokenLen checks the lengths a bot token's shape allows: 1–20 digits of
// bot id, 30–100 characters of secret. (Bounded repeats in the pattern
// itself would make a program of hundreds of instructions, built at every
// start.)
func tokenLen(tok string) bool {
	id, secret, _ := strings.Cut(tok, ":")
	return len(id) >= 1 && len(id) <= 20 && len(secret) >= 30 && len(secret) <= 100
}
