package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"talon/internal/channel"
	"talon/internal/channel/format"
	"talon/internal/store"
)

// TypingEvery is how often the typing indicator is refreshed while a turn
// runs (R8.6: typingIntervalSeconds, 6 s).
const TypingEvery = 6 * time.Second

// process moves one open message on from where it is: a received one
// through the gates, a running one (a crash cut its turn short) through
// its turn again, an answered one through the delivery of its unsent
// chunks.
func (acc *account) process(r store.Inbound) error {
	switch r.State {
	case store.InboxReceived:
		return acc.gate(r)
	case store.InboxRunning:
		rt, err := route(acc.h.config(), r.Envelope)
		if err != nil {
			rt = Route{}
		}
		rt.AgentID, rt.SessionKey = r.AgentID, r.SessionKey
		if err := acc.h.o.Store.StartInbound(acc.ctx, r.ID, store.InboxRunning, r.AgentID, r.SessionKey); err != nil {
			return acc.stopped(err)
		}
		r.Attempts++
		acc.log.Warn("running a turn again: the process ended during it", "id", r.ID, "attempt", r.Attempts)
		return acc.turn(r, rt)
	case store.InboxAnswered:
		return acc.deliverAnswer(r.ID)
	}
	return nil
}

// own says e is the bot's own message (R2.1 step 1), which an adapter
// should have dropped already; other bots are the gates' (allowBots).
func (acc *account) own(e channel.Envelope) bool {
	id := acc.transport().Status().BotID
	return id != "" && e.Sender.ID == id
}

// gate runs the gates and the route of a received message: dropped,
// kept as history, a pairing request, or its turn.
func (acc *account) gate(r store.Inbound) error {
	st, e := acc.h.o.Store, r.Envelope
	if acc.own(e) {
		return acc.finish(r.ID, store.InboxReceived, store.InboxDropped, "own_message")
	}
	var paired []string
	if needsPairingStore(acc.a, e) {
		var err error
		if paired, err = st.PairingAllowList(acc.ctx, acc.a.Channel, acc.a.ID); err != nil {
			return acc.stopped(err)
		}
	}
	d := admit(acc.h.config(), acc.a, e, paired)
	switch {
	case d.Pairing:
		return acc.pair(r)
	case d.History:
		return acc.finish(r.ID, store.InboxReceived, store.InboxHistory, d.Reason)
	case !d.Allow:
		acc.log.Info("inbound message refused", "reason", d.Reason, "sender", e.Sender.ID, "peer", e.Peer.ID)
		return acc.finish(r.ID, store.InboxReceived, store.InboxDropped, d.Reason)
	}
	rt, err := route(acc.h.config(), e)
	if err != nil {
		acc.log.Error("inbound message not routed", "err", err)
		return acc.finish(r.ID, store.InboxReceived, store.InboxFailed, err.Error())
	}
	if acc.a.Debounce > 0 && batchable(e) {
		if r, err = acc.debounce(r); err != nil {
			return err
		}
	}
	if err := st.StartInbound(acc.ctx, r.ID, store.InboxReceived, rt.AgentID, rt.SessionKey); err != nil {
		return acc.stopped(err)
	}
	r.Attempts++
	return acc.turn(r, rt)
}

// finish moves a message to a final state.
func (acc *account) finish(id int64, from, to store.InboxState, why string) error {
	if err := acc.h.o.Store.SetInbound(context.WithoutCancel(acc.ctx), id, from, to, why); err != nil {
		return err
	}
	acc.settle(id, to)
	return nil
}

// stopped turns an error met because the account stopped into errStopped.
func (acc *account) stopped(err error) error {
	if acc.ctx.Err() != nil {
		return errStopped
	}
	return err
}

// pair handles a DM from an unknown sender under dmPolicy pairing (§7):
// a new request's code is sent through the outbox; a refreshed or capped
// one sends nothing.
func (acc *account) pair(r store.Inbound) error {
	e, h := r.Envelope, acc.h
	meta, err := json.Marshal(map[string]string{"accountId": acc.a.ID, "username": e.Sender.Username, "name": e.Sender.Name})
	if err != nil {
		return err
	}
	ask := store.PairingAsk{Channel: acc.a.Channel, AccountID: acc.a.ID, SenderID: e.Sender.ID, Meta: meta,
		Now: h.o.Clock.Now(), TTL: channel.PairingTTL, Cap: channel.PendingPerAccount,
		NewCode: func() (string, error) { return newCode(h.o.Rand) }}
	build := func(req store.PairingRequest) ([]store.Chunk, error) {
		text := channel.PairingReply(acc.a.Channel, req.SenderID, req.Code, req.CreatedAt.Add(channel.PairingTTL))
		chunks := render(acc.a, text, channel.Target{Peer: e.Peer, ThreadID: e.ThreadID})
		answerKeys(r.ID, chunks)
		return chunks, nil
	}
	out, err := h.o.Store.PairInbound(acc.ctx, r.ID, ask, build)
	if err != nil {
		return acc.stopped(err)
	}
	if !out.Created {
		if out.Capped {
			acc.log.Warn("pairing request refused: the account has the most pending", "sender", e.Sender.ID)
		}
		acc.settle(r.ID, store.InboxPaired)
		return nil
	}
	acc.log.Info("pairing requested", "sender", e.Sender.ID)
	return acc.deliverAnswer(r.ID)
}

// turn runs the turn of a running message, commits its answer and
// delivers it. A turn the stopping account cut short leaves the message
// running: the next start runs it again.
func (acc *account) turn(r store.Inbound, rt Route) error {
	st, e := acc.h.o.Store, r.Envelope
	conv := store.Conversation(e)
	hist, err := st.PendingHistory(acc.ctx, acc.a.Channel, acc.a.ID, conv, r.ID, historyLimit(acc.a))
	if err != nil {
		return acc.stopped(err)
	}
	target := channel.Target{Peer: e.Peer, ThreadID: e.ThreadID}
	if r.Attempts <= 1 {
		acc.ack(e, target, rt.AgentID)
	}
	stopTyping := acc.typing(target)
	defer stopTyping()
	defer acc.typingReaction(e, target)()
	res, err := acc.h.o.Turns.Turn(acc.ctx, TurnRequest{AgentID: rt.AgentID, SessionKey: rt.SessionKey,
		Text: Prompt(e, hist), Envelope: e, Route: rt, Key: acc.turnKey(r.ID), Attempt: max(r.Attempts, 1)})
	if err != nil {
		if acc.ctx.Err() != nil {
			return errStopped
		}
		acc.log.Error("turn failed", "id", r.ID, "agent", rt.AgentID, "err", err)
		return acc.finish(r.ID, store.InboxRunning, store.InboxFailed, fmt.Sprintf("turn: %v", err))
	}
	text := res.Text
	if Sent(acc.h.TakeToolSends(rt.SessionKey), acc.a.Channel, target, text) {
		text = "" // the message tool already sent it here (R9.6)
	}
	if !format.IsSilent(text) {
		text = format.Prefix(text, channel.ResponsePrefix(acc.h.config(), acc.a, rt.AgentID, res.Model))
	}
	chunks := reply(acc.a, text, target, e.MessageID, len(e.Batched) > 0)
	answerKeys(r.ID, chunks)
	// The answer exists: commit it even if the account is stopping, so
	// the turn is not run again.
	if err := st.AnswerInbound(context.WithoutCancel(acc.ctx), r.ID, chunks); err != nil {
		return err
	}
	if len(chunks) == 0 {
		stopTyping()
		acc.settle(r.ID, store.InboxDelivered)
		return nil
	}
	err = acc.deliver(acc.ctx, store.AnswerBatch(r.ID))
	stopTyping()
	return acc.delivered(r.ID, err)
}

// typing shows the typing indicator in t now and every TypingEvery until
// the returned stop is called; stop waits until no call is in progress,
// so nothing types after it.
func (acc *account) typing(t channel.Target) (stop func()) {
	ctx, cancel := context.WithCancel(acc.ctx)
	tick, stopTick := acc.h.o.Clock.Tick(TypingEvery)
	done := make(chan struct{})
	tr := acc.transport()
	go func() {
		defer close(done)
		for {
			if err := tr.Typing(ctx, t); err != nil && ctx.Err() == nil {
				acc.log.Debug("typing", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		}
	}()
	var stopped bool
	return func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		stopTick()
		<-done
	}
}

// deliverAnswer sends the unsent chunks of a message's answer, then marks
// it delivered (or failed).
func (acc *account) deliverAnswer(id int64) error {
	return acc.delivered(id, acc.deliver(acc.ctx, store.AnswerBatch(id)))
}

// delivered records how the delivery of a message's answer ended.
func (acc *account) delivered(id int64, err error) error {
	if errors.Is(err, errStopped) {
		return err
	}
	if err != nil {
		acc.log.Error("delivery failed", "id", id, "err", err)
		return acc.finish(id, store.InboxAnswered, store.InboxFailed, err.Error())
	}
	return acc.finish(id, store.InboxAnswered, store.InboxDelivered, "")
}

// deliver sends the pending chunks of batch in order, each marked sending
// before the platform is called. A chunk sent or unconfirmed is skipped,
// and one the platform leaves unconfirmed does not stop the rest; a
// failed one ends the batch (what follows it would read out of order).
func (acc *account) deliver(ctx context.Context, batch string) error {
	st := acc.h.o.Store
	chunks, err := st.Chunks(ctx, batch)
	if err != nil {
		return acc.stopped(err)
	}
	tr := acc.transport()
	for _, c := range chunks {
		switch c.State {
		case store.SendSent, store.SendUnconfirmed:
			continue
		case store.SendFailed:
			return fmt.Errorf("chunk %d: %s", c.Index, c.Error)
		case store.SendSending:
			// Another caller is sending it (a send retried while the
			// first is in flight): it owns the chunk.
			continue
		}
		if err := st.BeginSend(ctx, batch, c.Index); errors.Is(err, store.ErrStateChanged) {
			continue
		} else if err != nil {
			return acc.stopped(err)
		}
		sent, err := tr.Send(ctx, c.Outbound)
		if err != nil && ctx.Err() != nil {
			return errStopped // left sending: unconfirmed at the next start
		}
		if rerr := st.EndSend(context.WithoutCancel(ctx), batch, c.Index, sent.MessageID, err); rerr != nil {
			return rerr
		}
		if err != nil && !errors.Is(err, channel.ErrUnconfirmed) {
			return fmt.Errorf("chunk %d: %w", c.Index, err)
		}
	}
	return nil
}

func (acc *account) transport() channel.Transport {
	acc.mu.Lock()
	defer acc.mu.Unlock()
	return acc.t
}

// ack puts the acknowledgement reaction on a message whose turn starts
// (R8.7), beside the turn: a platform that is slow or refuses it delays
// and fails nothing. Only an adapter that can react (channel.Actor) does.
func (acc *account) ack(e channel.Envelope, t channel.Target, agentID string) {
	emoji, ok := channel.AckReaction(acc.h.config(), acc.a, e, agentID)
	actor, can := acc.transport().(channel.Actor)
	if !ok || !can || e.MessageID == "" {
		return
	}
	acc.mu.Lock()
	if acc.ctx == nil || acc.ctx.Err() != nil {
		acc.mu.Unlock()
		return
	}
	ctx := acc.ctx
	acc.wg.Add(1)
	acc.mu.Unlock()
	go func() {
		defer acc.wg.Done()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := actor.React(rctx, t, e.MessageID, emoji, false); err != nil && ctx.Err() == nil {
			acc.log.Info("ack reaction not put", "message", e.MessageID, "err", err)
		}
	}()
}

// typingReaction shows the account's typingReaction on the message while
// its turn runs, and the returned function takes it off: a stand-in for
// the typing indicator a platform does not offer bots (Slack). Both go
// beside the turn, in order, and delay nothing.
func (acc *account) typingReaction(e channel.Envelope, t channel.Target) (done func()) {
	emoji := acc.a.TypingReaction
	actor, can := acc.transport().(channel.Actor)
	if emoji == "" || !can || e.MessageID == "" {
		return func() {}
	}
	acc.mu.Lock()
	if acc.ctx == nil || acc.ctx.Err() != nil {
		acc.mu.Unlock()
		return func() {}
	}
	ctx := context.WithoutCancel(acc.ctx) // taken off also when the account stops
	acc.wg.Add(1)
	acc.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		defer acc.wg.Done()
		put := func(remove bool) {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := actor.React(rctx, t, e.MessageID, emoji, remove); err != nil {
				acc.log.Info("typing reaction", "message", e.MessageID, "remove", remove, "err", err)
			}
		}
		put(false)
		<-finished
		put(true)
	}()
	var once sync.Once
	return func() { once.Do(func() { close(finished) }) }
}
