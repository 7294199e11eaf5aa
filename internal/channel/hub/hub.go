package hub

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"talon/internal/channel"
	"talon/internal/config"
	"talon/internal/store"
)

// Turns runs an agent turn for an inbound message; the gateway implements
// it with its session runtime (queueing, transcript, model, tools).
type Turns interface {
	Turn(ctx context.Context, r TurnRequest) (TurnResult, error)
}

// TurnRequest is one turn to run.
type TurnRequest struct {
	AgentID    string
	SessionKey string
	// Text is the prompt body (R2.2): the message, for a group prefixed
	// with its sender's label, with the pending group history and the
	// quoted message fenced as untrusted metadata before it.
	Text     string
	Envelope channel.Envelope
	Route    Route
	// Key names the inbound message ("<channel>/<account>/<inbox id>"):
	// the same on every attempt. Attempt is 1 for the first run, more
	// when a crash interrupted an earlier one before its answer was
	// committed — the earlier attempt may have written the message (and
	// part of an answer) into the transcript already.
	Key     string
	Attempt int
}

// TurnResult is a turn's final reply, Markdown as the model wrote it,
// and the model that wrote it (for responsePrefix's {model}).
type TurnResult struct {
	Text  string
	Model string
}

// Clock is the hub's time: Now for what it records and compares (pairing
// expiry), Tick for the typing refresh. Tests pass a manual one.
type Clock interface {
	Now() time.Time
	// Tick sends on the channel every d until stop is called.
	Tick(d time.Duration) (c <-chan time.Time, stop func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) Tick(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Idempotent is implemented by a Transport whose platform deduplicates a
// send by its chunk's Key for a while (Discord's enforced nonce, a few
// minutes): a chunk in flight at a crash less than that window ago is
// sent again instead of being left unconfirmed.
type Idempotent interface{ IdempotencyWindow() time.Duration }

// Prober is implemented by a Transport that can check its account on
// demand (channels.status --probe: Telegram getMe, Discord intents).
type Prober interface {
	Probe(ctx context.Context) error
}

// Options configure a Hub.
type Options struct {
	Tenant string // for messages and the token registry; "_" for the operator's
	Store  *store.DB
	Turns  Turns
	// Transports builds an account's adapter; the gateway wires each
	// channel's constructor with its guarded http.Client.
	Transports func(a Account) (channel.Transport, error)
	Tokens     *Tokens // the process's; nil for a registry of this hub's own
	// Control says a message is a control command (a stop word,
	// /approve) that must not wait behind its conversation's turn: an
	// admitted sender's is run at once, beside the turn, and answered.
	// Nil: none is.
	Control func(text string) bool
	// MaxAccounts bounds the accounts that run (0: no bound): those past
	// it, in config order, are reported and not started, so a tenant's
	// config cannot make the process hold thousands of connections.
	MaxAccounts int
	// Env is the environment the config's secrets are read from (the
	// tenant's own config env; the operator's process environment only
	// for the operator's tenant), for the token registry.
	Env   func(string) string
	Log   *slog.Logger
	Clock Clock     // nil for the real one
	Rand  io.Reader // pairing codes; nil for crypto/rand
}

// Hub is one tenant's channel runtime.
type Hub struct {
	o   Options
	log *slog.Logger

	applyMu sync.Mutex // Apply, Start, Stop and Close, one at a time

	mu       sync.Mutex
	cfg      *config.Config
	accounts map[key]*account
	issues   []channel.Issue // config issues of the last Apply
	closed   bool

	settled func(a Account, id int64, state store.InboxState) // tests: a message reached a final state
	sent    toolSends                                         // R9.6
}

type key struct{ channel, account string }

// New returns a hub with no account running; Apply starts them.
func New(o Options) *Hub {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Tokens == nil {
		o.Tokens = NewTokens()
	}
	return &Hub{o: o, log: o.Log.With("tenant", o.Tenant), cfg: &config.Config{}, accounts: map[key]*account{}}
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("channels: the hub is closed")

// Apply makes the running accounts those of cfg: an account whose
// resolved settings are unchanged keeps running (a change to bindings or
// session keys applies to its next message), a changed one restarts, a
// removed or disabled one stops, a new one starts. An account that cannot
// start (a token in use elsewhere, an adapter that refuses its settings)
// is reported by Status, not returned: the others still run.
func (h *Hub) Apply(cfg *config.Config) error {
	switch {
	case cfg == nil:
		return errors.New("applying channel config: no config")
	case h.o.Store == nil || h.o.Turns == nil || h.o.Transports == nil:
		return errors.New("applying channel config: the hub needs a store, turns and transports")
	}
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	accounts, issues := accountsOf(cfg)
	if n := h.o.MaxAccounts; n > 0 && len(accounts) > n {
		for _, a := range accounts[n:] {
			issues = append(issues, channel.Issue{Kind: "config", Message: fmt.Sprintf("%s account %q is not started: at most %d channel accounts run for this tenant", a.Channel, a.ID, n),
				Fix: "remove accounts you do not use, or ask the operator to raise the limit"})
		}
		accounts = accounts[:n]
	}
	want := map[key]Account{}
	for _, a := range accounts {
		want[key{a.Channel, a.ID}] = a
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	h.cfg, h.issues = cfg, issues
	var stop []*account
	var start []Account
	for k, cur := range h.accounts {
		if a, ok := want[k]; !ok || !reflect.DeepEqual(a, cur.a) {
			stop = append(stop, cur)
			delete(h.accounts, k)
		}
	}
	for _, a := range accounts { // in order: of two accounts with one token, the first runs
		if _, ok := h.accounts[key{a.Channel, a.ID}]; !ok {
			start = append(start, a)
		}
	}
	h.mu.Unlock()
	for _, a := range stop {
		a.stop()
	}
	for _, a := range start {
		h.start(a, false)
	}
	return nil
}

// start creates and, unless held (disabled or stopped by the operator),
// runs an account, and records it.
func (h *Hub) start(a Account, held bool) {
	acc := newAccount(h, a)
	h.mu.Lock()
	h.accounts[key{a.Channel, a.ID}] = acc
	h.mu.Unlock()
	if held {
		return
	}
	if err := acc.run(); err != nil {
		h.log.Warn("channel account not started", "channel", a.Channel, "account", a.ID, "err", err)
	}
}

// Start starts an account the operator stopped (channels.start).
func (h *Hub) Start(channelID, accountID string) error {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	acc, err := h.account(channelID, accountID)
	if err != nil {
		return fmt.Errorf("channels.start: %w", err)
	}
	if acc.isRunning() {
		return nil
	}
	acc.stop()
	h.start(acc.a, false)
	acc, _ = h.account(channelID, accountID)
	return acc.lastErr()
}

// Stop stops an account until Start or a change of its settings
// (channels.stop). Its unfinished messages stay in the inbox and resume
// when it starts again.
func (h *Hub) Stop(channelID, accountID string) error {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	acc, err := h.account(channelID, accountID)
	if err != nil {
		return fmt.Errorf("channels.stop: %w", err)
	}
	acc.stop()
	h.start(acc.a, true)
	return nil
}

// Close stops every account and waits for them; the store stays open.
func (h *Hub) Close() error {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	h.mu.Lock()
	h.closed = true
	all := make([]*account, 0, len(h.accounts))
	for _, a := range h.accounts {
		all = append(all, a)
	}
	h.accounts = map[key]*account{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range all {
		wg.Go(a.stop)
	}
	wg.Wait()
	return nil
}

// account finds a configured account.
func (h *Hub) account(channelID, accountID string) (*account, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	if acc, ok := h.accounts[key{channelID, accountID}]; ok {
		return acc, nil
	}
	return nil, fmt.Errorf("no %s account %q is configured", channelID, accountID)
}

// config is the config of the last Apply.
func (h *Hub) config() *config.Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

func (h *Hub) owner(a Account) string { return Owner{h.o.Tenant, a.Channel, a.ID}.String() }
