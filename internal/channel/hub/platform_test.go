package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"talon/internal/channel"
	"talon/internal/config"
	"talon/internal/store"
)

// This file is the outside edge of the hub's tests: an in-memory chat
// platform with one Transport per account, a manual clock, a Turns that
// tests steer, and a rig that opens, kills and reopens a tenant's
// database and hub.

// posted is one message the bot posted on the platform.
type posted struct {
	Account string
	channel.Outbound
	ID string
}

// platform is the chat service: what bots posted, their typing, and a
// deduplication of sends by key for transports that promise it.
type platform struct {
	mu      sync.Mutex
	posts   []posted
	typings int
	changed chan struct{} // closed and replaced on every change
	nextID  int
	// hold, when set, is called for every send after the platform took
	// the message; it may block (a process dying mid-call).
	hold func(ctx context.Context, m channel.Outbound) error
}

func newPlatform() *platform { return &platform{changed: make(chan struct{})} }

func (p *platform) bump() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// wait blocks until cond holds (checked under the lock) or ctx ends.
func (p *platform) wait(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for {
		p.mu.Lock()
		ok, ch := cond(), p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

func (p *platform) texts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.posts {
		out = append(out, m.Plain)
	}
	return out
}

// transport is one account's connection to the platform.
type transport struct {
	p          *platform
	a          Account
	mu         sync.Mutex
	accept     channel.Accept
	running    chan struct{}
	idempotent bool
	botID      string
	private    bool // reports a privacy-mode issue, as the Telegram adapter does
}

func (tr *transport) Run(ctx context.Context, accept channel.Accept) error {
	tr.mu.Lock()
	tr.accept = accept
	close(tr.running)
	tr.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (tr *transport) Send(ctx context.Context, m channel.Outbound) (channel.Sent, error) {
	p := tr.p
	p.mu.Lock()
	if tr.idempotent {
		for _, q := range p.posts {
			if q.Key == m.Key && q.Account == tr.a.ID {
				p.mu.Unlock()
				return channel.Sent{MessageID: q.ID}, nil
			}
		}
	}
	p.nextID++
	id := fmt.Sprint("m", p.nextID)
	p.posts = append(p.posts, posted{Account: tr.a.ID, Outbound: m, ID: id})
	hold := p.hold
	p.bump()
	p.mu.Unlock()
	if hold != nil {
		if err := hold(ctx, m); err != nil {
			return channel.Sent{}, err
		}
	}
	return channel.Sent{MessageID: id}, nil
}

func (tr *transport) Typing(ctx context.Context, t channel.Target) error {
	tr.p.mu.Lock()
	defer tr.p.mu.Unlock()
	tr.p.typings++
	tr.p.bump()
	return nil
}

func (tr *transport) Status() channel.Status {
	st := channel.Status{Mode: "test", Connected: true, BotID: tr.botID}
	if tr.private {
		st.Issues = []channel.Issue{{Kind: "permissions", Message: "privacy mode is on"}}
	}
	return st
}

func (tr *transport) IdempotencyWindow() time.Duration {
	if tr.idempotent {
		return 2 * time.Minute
	}
	return 0
}

// inject delivers an inbound message as the platform would: it is
// acknowledged when accept returns nil.
func (tr *transport) inject(ctx context.Context, t *testing.T, e channel.Envelope) {
	t.Helper()
	select {
	case <-tr.running:
	case <-ctx.Done():
		t.Fatalf("account %s not running", tr.a.ID)
	}
	tr.mu.Lock()
	accept := tr.accept
	tr.mu.Unlock()
	e.Channel, e.AccountID = tr.a.Channel, tr.a.ID
	if err := accept(ctx, e); err != nil {
		t.Fatalf("accept: %v", err)
	}
}

// clock is a manual Clock.
type clock struct {
	mu      sync.Mutex
	now     time.Time
	tickers map[int]chan time.Time
	next    int
}

func newClock() *clock {
	return &clock{now: time.UnixMilli(1_700_000_000_000), tickers: map[int]chan time.Time{}}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) Tick(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	n := c.next
	c.next++
	c.tickers[n] = ch
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.tickers, n)
	}
}

// fire ticks every live ticker once.
func (c *clock) fire() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.tickers {
		select {
		case ch <- c.now:
		default:
		}
	}
	return len(c.tickers)
}

func (c *clock) live() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

// turns answers turns: by default "echo: <text>", or what answer says;
// gate, when set, is called first and may block.
type turns struct {
	mu     sync.Mutex
	calls  []TurnRequest
	answer func(r TurnRequest) string
	gate   func(ctx context.Context, r TurnRequest) error
	// running counts turns in progress per session; most is the highest
	// it reached.
	running map[string]int
	most    int
}

func (tu *turns) Turn(ctx context.Context, r TurnRequest) (TurnResult, error) {
	tu.mu.Lock()
	tu.calls = append(tu.calls, r)
	if tu.running == nil {
		tu.running = map[string]int{}
	}
	tu.running[r.SessionKey]++
	tu.most = max(tu.most, tu.running[r.SessionKey])
	gate, answer := tu.gate, tu.answer
	tu.mu.Unlock()
	defer func() {
		tu.mu.Lock()
		tu.running[r.SessionKey]--
		tu.mu.Unlock()
	}()
	if gate != nil {
		if err := gate(ctx, r); err != nil {
			return TurnResult{}, err
		}
	}
	if answer != nil {
		return TurnResult{Text: answer(r)}, nil
	}
	return TurnResult{Text: "echo: " + r.Envelope.Text}, nil
}

func (tu *turns) count() int {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	return len(tu.calls)
}

// event is a message reaching a final state.
type event struct {
	Account string
	ID      int64
	State   store.InboxState
}

// rig is one tenant: its database file, hub, platform and turns.
type rig struct {
	t      *testing.T
	path   string
	db     *store.DB
	hub    *Hub
	p      *platform
	turns  *turns
	clock  *clock
	tokens *Tokens
	tenant string

	mu      sync.Mutex
	trs     map[string]*transport // by account id, the latest
	built   int
	events  chan event
	private bool
	idem    bool
	max     int // Options.MaxAccounts
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "talon.db"), p: newPlatform(), turns: &turns{},
		clock: newClock(), tokens: NewTokens(), tenant: "acme", trs: map[string]*transport{}, events: make(chan event, 1000)}
	r.open()
	t.Cleanup(r.kill)
	return r
}

// open opens the database and a hub on it, as a process starting.
func (r *rig) open() {
	db, err := store.Open(r.path)
	if err != nil {
		r.t.Fatal(err)
	}
	db.Now = r.clock.Now
	r.db = db
	r.hub = New(Options{Tenant: r.tenant, Store: db, Log: slog.New(slog.DiscardHandler), Turns: r.turns, Tokens: r.tokens, Clock: r.clock,
		Rand:       strings.NewReader(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 100)),
		Transports: r.transport, MaxAccounts: r.max})
	r.hub.settled = func(a Account, id int64, s store.InboxState) { r.events <- event{a.ID, id, s} }
}

func (r *rig) transport(a Account) (channel.Transport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.BotToken != nil && a.BotToken.Text == "bad" {
		return nil, errors.New("the token is malformed")
	}
	tr := &transport{p: r.p, a: a, running: make(chan struct{}), idempotent: r.idem, botID: "bot", private: r.private}
	r.trs[a.ID] = tr
	r.built++
	return tr, nil
}

func (r *rig) tr(account string) *transport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.trs[account]
}

// kill ends the process: every account stops where it is (a turn or a
// send in progress is abandoned, as kill -9 would) and the database is
// closed.
func (r *rig) kill() {
	if r.db == nil {
		return
	}
	r.hub.Close()
	r.db.Close()
	r.db = nil
}

// restart is kill then open, with the same config applied.
func (r *rig) restart(cfg string) {
	r.kill()
	r.open()
	r.apply(cfg)
}

func (r *rig) apply(cfg string) {
	r.t.Helper()
	f, err := config.Parse("test.json5", []byte(cfg))
	if err != nil {
		r.t.Fatal(err)
	}
	// Only the tests of the debounce wait for a quiet window: the others
	// would wait for a clock nobody advances.
	if f.Config.Messages.Inbound.DebounceMs == nil && f.Config.Messages.Inbound.ByChannel == nil {
		none := 0
		f.Config.Messages.Inbound.DebounceMs = &none
	}
	if err := r.hub.Apply(f.Config); err != nil {
		r.t.Fatal(err)
	}
}

// settled waits for n messages to reach a final state and returns them.
func (r *rig) settled(ctx context.Context, n int) []event {
	r.t.Helper()
	var out []event
	for len(out) < n {
		select {
		case e := <-r.events:
			out = append(out, e)
		case <-ctx.Done():
			r.t.Fatalf("waiting for %d settled messages, got %v: %v", n, out, ctx.Err())
		}
	}
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dm(sender, msg string) channel.Envelope {
	return channel.Envelope{DeliveryID: "u" + msg, MessageID: msg, Peer: channel.Peer{Kind: channel.Direct, ID: sender},
		Sender: channel.Sender{ID: sender, Name: "User " + sender}, Text: "hello " + msg}
}

func groupMsg(group, sender, msg string, mentioned bool) channel.Envelope {
	return channel.Envelope{DeliveryID: "u" + msg, MessageID: msg, Peer: channel.Peer{Kind: channel.Group, ID: group},
		Sender: channel.Sender{ID: sender, Name: "User " + sender}, Text: "text " + msg, Mentioned: mentioned}
}

// openDMs lets anyone DM the bot, each sender in a session of their own.
const openDMs = `{session: {dmScope: "per-channel-peer"}, channels: {telegram: {botToken: "tok-1", dmPolicy: "open", allowFrom: ["*"]}}}`

func states(evs []event) []store.InboxState {
	var out []store.InboxState
	for _, e := range evs {
		out = append(out, e.State)
	}
	slices.Sort(out)
	return out
}
