package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"talon/internal/channel"
	"talon/internal/store"
)

// account is one configured account: when running, its adapter's Run
// loop and one worker per conversation with unfinished messages.
type account struct {
	h   *Hub
	a   Account
	log *slog.Logger

	mu        sync.Mutex
	t         channel.Transport // nil until run
	ctx       context.Context
	cancel    context.CancelFunc
	running   bool
	err       error // why it is not running, or Run's last error
	startedAt time.Time
	workers   map[string]*worker
	wg        sync.WaitGroup // Run and the workers
	release   func()
	accepted  int // since the last prune
}

// worker is the goroutine of one conversation. more says messages came
// in since it last read the inbox; wake tells a debounce wait so; folded
// are the rows of its last read that the debounce folded into another.
type worker struct {
	more   bool
	wake   chan struct{}
	folded map[int64]bool
}

func newAccount(h *Hub, a Account) *account {
	return &account{h: h, a: a, log: h.log.With("channel", a.Channel, "account", a.ID), workers: map[string]*worker{}}
}

// run claims the token, builds the adapter, settles what a previous
// process left mid-way, and starts receiving and resuming.
func (acc *account) run() error {
	h, a := acc.h, acc.a
	token, err := tokenOf(a, h.o.Env)
	if err != nil {
		return acc.fail(fmt.Errorf("starting %s: %w", h.owner(a), err))
	}
	release, err := h.o.Tokens.Claim(token, Owner{h.o.Tenant, a.Channel, a.ID})
	if err != nil {
		return acc.fail(err)
	}
	t, err := h.o.Transports(a)
	if err != nil {
		release()
		return acc.fail(fmt.Errorf("starting %s: %w", h.owner(a), err))
	}
	var window time.Duration
	if i, ok := t.(Idempotent); ok {
		window = i.IdempotencyWindow()
	}
	ctx := context.Background()
	if n, err := h.o.Store.RecoverSends(ctx, a.Channel, a.ID, window); err != nil {
		release()
		return acc.fail(err)
	} else if n > 0 {
		acc.log.Warn("chunks in flight when the last process ended", "count", n, "resendWindow", window)
	}
	if _, err := h.o.Store.PruneInbox(ctx, a.Channel, a.ID, store.DefaultInboxBounds); err != nil {
		acc.log.Warn("pruning the inbox", "err", err)
	}
	convs, err := h.o.Store.OpenConversations(ctx, a.Channel, a.ID)
	if err != nil {
		release()
		return acc.fail(err)
	}
	acc.mu.Lock()
	acc.t, acc.release, acc.running, acc.err, acc.startedAt = t, release, true, nil, h.o.Clock.Now()
	acc.ctx, acc.cancel = context.WithCancel(context.Background())
	acc.wg.Add(1)
	acc.mu.Unlock()
	go acc.receive(t)
	for _, c := range convs {
		acc.kick(c)
	}
	return nil
}

func (acc *account) fail(err error) error {
	acc.mu.Lock()
	acc.err = err
	acc.mu.Unlock()
	return err
}

// receive runs the adapter until the account stops or the adapter gives
// up (a permanent refusal: bad token, missing scope).
func (acc *account) receive(t channel.Transport) {
	defer acc.wg.Done()
	err := t.Run(acc.ctx, acc.accept)
	acc.mu.Lock()
	defer acc.mu.Unlock()
	if err != nil && acc.ctx.Err() == nil {
		acc.err = fmt.Errorf("%s stopped: %w", acc.h.owner(acc.a), err)
		acc.log.Error("channel account stopped", "err", err)
	}
	if acc.ctx.Err() == nil {
		acc.running = false
	}
}

// stop cancels the adapter and the workers and waits for them. A turn or
// a send cut short leaves its message and chunk as they are in the
// store: the next start resumes them as after a crash.
func (acc *account) stop() {
	acc.mu.Lock()
	cancel, release := acc.cancel, acc.release
	acc.running = false
	acc.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	acc.wg.Wait()
	if release != nil {
		release()
	}
}

func (acc *account) isRunning() bool {
	acc.mu.Lock()
	defer acc.mu.Unlock()
	return acc.running
}

func (acc *account) lastErr() error {
	acc.mu.Lock()
	defer acc.mu.Unlock()
	return acc.err
}

// maxText bounds the text of one inbound message the inbox stores; the
// platforms' own limits are far below (Slack's 40,000 characters).
const maxText = 64 << 10

// accept is the adapter's channel.Accept: it stores the message and wakes
// its conversation's worker. It returns once the message is committed, so
// the adapter acknowledges only what a crash cannot lose.
func (acc *account) accept(ctx context.Context, e channel.Envelope) error {
	if e.Channel != acc.a.Channel || e.AccountID != acc.a.ID {
		return fmt.Errorf("accepting a message: it is for %s/%s, not %s/%s", e.Channel, e.AccountID, acc.a.Channel, acc.a.ID)
	}
	if len(e.Text) > maxText {
		cut := maxText
		for cut > 0 && !utf8.RuneStart(e.Text[cut]) {
			cut--
		}
		e.Text = e.Text[:cut]
	}
	id, fresh, err := acc.h.o.Store.AcceptInbound(ctx, e)
	if err != nil {
		return fmt.Errorf("accepting a message: %w", err)
	}
	if !fresh {
		return nil
	}
	if !acc.control(ctx, id, e) {
		acc.kick(store.Conversation(e))
	}
	acc.mu.Lock()
	acc.accepted++
	prune := acc.accepted >= store.DefaultInboxBounds.PerAccount/10
	if prune {
		acc.accepted = 0
	}
	acc.mu.Unlock()
	if prune {
		if _, err := acc.h.o.Store.PruneInbox(ctx, acc.a.Channel, acc.a.ID, store.DefaultInboxBounds); err != nil {
			acc.log.Warn("pruning the inbox", "err", err)
		}
	}
	return nil
}

// kick makes sure a worker takes the open messages of conversation conv.
func (acc *account) kick(conv string) {
	acc.mu.Lock()
	defer acc.mu.Unlock()
	if acc.ctx == nil || acc.ctx.Err() != nil {
		return // stopped: the messages wait in the inbox for the next start
	}
	if w, ok := acc.workers[conv]; ok {
		w.more = true
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	acc.workers[conv] = &worker{wake: make(chan struct{}, 1), folded: map[int64]bool{}}
	acc.wg.Add(1)
	go acc.work(conv)
}

// work processes the open messages of one conversation in order until
// none is left. A message it cannot move on (the store failing) ends the
// worker; it stays open and resumes at the next start or message.
func (acc *account) work(conv string) {
	defer acc.wg.Done()
	for {
		ok := acc.drain(conv)
		acc.mu.Lock()
		w := acc.workers[conv]
		if ok && w.more && acc.ctx.Err() == nil {
			w.more = false
			acc.mu.Unlock()
			continue
		}
		delete(acc.workers, conv)
		acc.mu.Unlock()
		return
	}
}

func (acc *account) drain(conv string) bool {
	rows, err := acc.h.o.Store.OpenInbound(acc.ctx, acc.a.Channel, acc.a.ID, conv)
	if err != nil {
		if acc.ctx.Err() == nil {
			acc.log.Error("reading the inbox", "err", err)
		}
		return false
	}
	for _, r := range rows {
		if acc.ctx.Err() != nil {
			return false
		}
		if acc.folded(conv, r.ID) {
			continue // the debounce folded it into an earlier one
		}
		if err := acc.process(r); err != nil {
			if errors.Is(err, store.ErrStateChanged) {
				continue // taken meanwhile (a control command): not this worker's
			}
			if !errors.Is(err, errStopped) {
				acc.log.Error("processing an inbound message", "id", r.ID, "err", err)
			}
			return false
		}
	}
	return true
}

// folded says the debounce folded row id of conv into an earlier row
// since the worker last read the inbox, and forgets it.
func (acc *account) folded(conv string, id int64) bool {
	acc.mu.Lock()
	defer acc.mu.Unlock()
	w := acc.workers[conv]
	if w == nil || !w.folded[id] {
		return false
	}
	delete(w.folded, id)
	return true
}

// errStopped says the account stopped while a message was processed: it
// is left where it was, for the next start.
var errStopped = errors.New("cut short: the account stopped or the request ended")

// turnKey names an inbound message across attempts.
func (acc *account) turnKey(id int64) string {
	return acc.a.Channel + "/" + acc.a.ID + "/" + strconv.FormatInt(id, 10)
}

// settle reports a message that reached a final state.
func (acc *account) settle(id int64, s store.InboxState) {
	if f := acc.h.settled; f != nil {
		f(acc.a, id, s)
	}
}
