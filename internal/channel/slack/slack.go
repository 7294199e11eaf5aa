package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"talon/internal/channel"
	"talon/internal/config"
)

// DefaultAPIURL is Slack's Web API base.
const DefaultAPIURL = "https://slack.com/api/"

// The modes of receiving events.
const (
	ModeSocket = "socket"
	ModeHTTP   = "http"
)

// Options configure one account.
type Options struct {
	AccountID string
	// Mode is "socket" (the default) or "http".
	Mode string
	// BotToken (xoxb-…) calls the Web API.
	BotToken string
	// AppToken (xapp-…, scope connections:write) opens Socket Mode
	// connections; required in socket mode.
	AppToken string
	// SigningSecret verifies Events API requests; required in http mode.
	SigningSecret string
	// APIURL is the Web API base (channels.slack.apiUrl), default
	// DefaultAPIURL.
	APIURL string
	// HTTPClient makes every request, the Socket Mode WebSocket dial
	// included. Required: the caller decides which addresses a tenant may
	// reach.
	HTTPClient *http.Client
	Log        *slog.Logger
	// Now is the clock for the request-timestamp check; default time.Now.
	Now func() time.Time
}

// App is one Slack account. See the package doc.
type App struct {
	account  string
	mode     string
	botToken string
	appToken string
	secret   []byte
	apiURL   string
	client   *http.Client
	log      *slog.Logger
	now      func() time.Time
	// wait sleeps for d or until ctx ends; tests replace it.
	wait func(ctx context.Context, d time.Duration) error

	pingInterval time.Duration
	pongTimeout  time.Duration

	kinds   memo[channel.Kind] // conversation id → kind
	threads memo[struct{}]     // "<channel>/<thread_ts>" the bot posted in
	dms     memo[string]       // user id → the DM conversation's id

	mu     sync.Mutex
	st     channel.Status
	bot    identity
	accept channel.Accept // set while Run receives (http mode)
	issues map[string]channel.Issue
}

// identity is who the bot is, from auth.test.
type identity struct {
	UserID string `json:"user_id"`
	User   string `json:"user"`
	BotID  string `json:"bot_id"`
	TeamID string `json:"team_id"`
}

var _ channel.Transport = (*App)(nil)
var _ http.Handler = (*App)(nil)

// New checks o and returns an App that has not connected yet.
func New(o Options) (*App, error) {
	mode := o.Mode
	if mode == "" {
		mode = ModeSocket
	}
	if mode != ModeSocket && mode != ModeHTTP {
		return nil, fmt.Errorf("slack: mode %q is not supported (socket or http)", o.Mode)
	}
	if err := checkToken("botToken", o.BotToken, "xoxb-"); err != nil {
		return nil, err
	}
	if mode == ModeSocket {
		if err := checkToken("appToken", o.AppToken, "xapp-"); err != nil {
			return nil, fmt.Errorf("%w (socket mode needs an App-Level Token)", err)
		}
	}
	if mode == ModeHTTP {
		if o.SigningSecret == "" {
			return nil, errors.New("slack: signingSecret is required in http mode")
		}
		if len(o.SigningSecret) > 256 {
			return nil, errors.New("slack: signingSecret is longer than 256 bytes")
		}
	}
	api, err := checkAPIURL(o.APIURL)
	if err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		return nil, errors.New("slack: an HTTP client is required")
	}
	a := &App{
		account:      config.NormalizeAccountID(o.AccountID),
		mode:         mode,
		botToken:     o.BotToken,
		appToken:     o.AppToken,
		secret:       []byte(o.SigningSecret),
		apiURL:       api,
		client:       o.HTTPClient,
		log:          o.Log,
		now:          o.Now,
		wait:         sleep,
		pingInterval: 30 * time.Second,
		pongTimeout:  15 * time.Second,
		st:           channel.Status{Mode: mode},
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("channel", "slack", "account", a.account)
	if a.now == nil {
		a.now = time.Now
	}
	return a, nil
}

// checkToken refuses a token of the wrong kind or with characters that
// would not survive an HTTP header. The token itself is never quoted.
func checkToken(key, tok, prefix string) error {
	if tok == "" {
		return fmt.Errorf("slack: %s is required", key)
	}
	if !strings.HasPrefix(tok, prefix) {
		return fmt.Errorf("slack: %s must start with %q", key, prefix)
	}
	if len(tok) > 512 {
		return fmt.Errorf("slack: %s is longer than 512 bytes", key)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] >= 0x7f {
			return fmt.Errorf("slack: %s contains a space or a character that is not printable ASCII", key)
		}
	}
	return nil
}

// checkAPIURL validates channels.slack.apiUrl and returns it ending in "/".
func checkAPIURL(raw string) (string, error) {
	if raw == "" {
		return DefaultAPIURL, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("slack: apiUrl: %w", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return "", fmt.Errorf("slack: apiUrl %q: scheme must be https or http", raw)
	case u.Host == "":
		return "", fmt.Errorf("slack: apiUrl %q: no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("slack: apiUrl: must not carry credentials")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("slack: apiUrl %q: must not have a query or fragment", raw)
	}
	s := u.String()
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	return s, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run connects and receives until ctx ends. See channel.Transport.
func (a *App) Run(ctx context.Context, accept channel.Accept) error {
	if accept == nil {
		return errors.New("slack: run: accept is nil")
	}
	if err := a.authenticate(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if a.mode == ModeHTTP {
		return a.serveEvents(ctx, accept)
	}
	return a.runSocket(ctx, accept)
}

// authenticate calls auth.test until it answers, retrying transient
// failures with backoff and stopping on a permanent refusal.
func (a *App) authenticate(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		var id identity
		err := a.call(ctx, "auth.test", a.botToken, nil, &id)
		if err == nil {
			err = checkIdentity(id)
		}
		if err == nil {
			a.mu.Lock()
			a.bot = id
			a.st.BotID, a.st.BotName = id.UserID, id.User
			a.mu.Unlock()
			a.clearIssue("auth")
			return nil
		}
		if isPermanent(err) {
			a.authIssue("botToken", err)
			return fmt.Errorf("slack: auth.test: %w", err)
		}
		a.failed(err)
		if werr := a.wait(ctx, retryDelay(err, attempt)); werr != nil {
			return werr
		}
	}
}

// checkIdentity validates auth.test's answer: the bot user id is what
// mentions are matched against.
func checkIdentity(id identity) error {
	if !validID(id.UserID) {
		return errors.New("auth.test answered without a valid user_id")
	}
	if id.BotID != "" && !validID(id.BotID) {
		return errors.New("auth.test answered an invalid bot_id")
	}
	if id.TeamID != "" && !validID(id.TeamID) {
		return errors.New("auth.test answered an invalid team_id")
	}
	if !utf8.ValidString(id.User) || len(id.User) > 200 {
		return errors.New("auth.test answered an invalid user name")
	}
	return nil
}

// backoff is the wait before retry number attempt (from 0): 2 s doubling
// to 30 s.
func backoff(attempt int) time.Duration {
	d := 2 * time.Second
	for i := 0; i < attempt && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// retryDelay is the wait before retry number attempt after err: the
// backoff, or a 429's Retry-After when that is longer.
func retryDelay(err error, attempt int) time.Duration {
	d := backoff(attempt)
	var rl *RateLimitError
	if errors.As(err, &rl) && rl.RetryAfter > d {
		return rl.RetryAfter
	}
	return d
}

// serveEvents marks the account ready for ServeHTTP until ctx ends.
func (a *App) serveEvents(ctx context.Context, accept channel.Accept) error {
	a.mu.Lock()
	a.accept = accept
	a.st.Connected = true
	a.st.LastConnectedAt = a.now()
	a.mu.Unlock()
	<-ctx.Done()
	a.mu.Lock()
	a.accept = nil
	a.st.Connected = false
	a.mu.Unlock()
	return nil
}

// Typing shows nothing and returns nil: Slack has no typing indicator for
// bots outside assistant threads (see the package doc).
func (a *App) Typing(ctx context.Context, t channel.Target) error { return nil }

// Status is the account's state now.
func (a *App) Status() channel.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.st
	s.Issues = nil
	for _, k := range slices.Sorted(maps.Keys(a.issues)) {
		s.Issues = append(s.Issues, a.issues[k])
	}
	return s
}

// failed records a transient error in Status.
func (a *App) failed(err error) {
	a.log.Warn("slack: transient failure", "err", err)
	a.mu.Lock()
	a.st.LastError = err.Error()
	a.mu.Unlock()
}

// setIssue records the current issue named key ("auth", "permissions",
// "connections"), replacing an earlier one of that name.
func (a *App) setIssue(key string, is channel.Issue) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.issues == nil {
		a.issues = map[string]channel.Issue{}
	}
	a.issues[key] = is
}

func (a *App) clearIssue(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.issues, key)
}

// authIssue records a permanent refusal of a token with the way to fix it.
func (a *App) authIssue(key string, err error) {
	a.log.Error("slack: token refused; not retrying", "key", key, "err", err)
	fix := "Copy the Bot User OAuth Token (xoxb-…) from the Slack app's OAuth & Permissions page into channels.slack.botToken and reinstall the app to the workspace."
	if key == "appToken" {
		fix = "Generate an App-Level Token with the connections:write scope under the Slack app's Basic Information page, put it in channels.slack.appToken, and make sure Socket Mode is enabled."
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == "missing_scope" {
		fix = "Add the missing scope under the Slack app's OAuth & Permissions page and reinstall the app."
		if ae.Needed != "" {
			fix = "Add the scope " + ae.Needed + " under the Slack app's OAuth & Permissions page and reinstall the app."
		}
	}
	a.setIssue("auth", channel.Issue{Kind: "auth", Message: "Slack refused channels.slack." + key + ": " + err.Error(), Fix: fix})
	a.mu.Lock()
	a.st.LastError = err.Error()
	a.st.Connected = false
	a.mu.Unlock()
}

// botIdentity is who the bot is, zero before auth.test answered.
func (a *App) botIdentity() identity {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bot
}
