package hub

import (
	"errors"
	"strings"
	"time"

	"talon/internal/channel"
	"talon/internal/store"
)

// Inbound debounce (spec R2.1 step 6): a sender who writes one thought as
// several quick messages gets one turn. An admitted text-only message
// waits until the conversation has been quiet for the account's Debounce
// since that sender's last such message, then the messages are folded
// into the first (store.BatchInbound) and its turn runs. Anything else
// following them — another sender, a command, media, a button press —
// ends the batch at once, so nothing waits behind a quiet window.

// batchable says e may be folded with others: text only, not a
// command, not a press.
func batchable(e channel.Envelope) bool {
	return len(e.Media) == 0 && !e.Pressed && !strings.HasPrefix(strings.TrimSpace(e.Text), "/") && strings.TrimSpace(e.Text) != ""
}

// maxBatch bounds how many messages one turn folds; a sender who keeps
// writing gets a turn every maxBatch messages.
const maxBatch = 20

// debounce waits for r's conversation to go quiet and folds the sender's
// messages that followed r into it. It returns r as it now is.
func (acc *account) debounce(r store.Inbound) (store.Inbound, error) {
	st := acc.h.o.Store
	for {
		rows, err := st.OpenInbound(acc.ctx, acc.a.Channel, acc.a.ID, store.Conversation(r.Envelope))
		if err != nil {
			return r, acc.stopped(err)
		}
		batch, flush := followers(rows, r)
		last := r.ReceivedAt
		for _, f := range batch {
			if f.ReceivedAt.After(last) {
				last = f.ReceivedAt
			}
		}
		wait := last.Add(acc.a.Debounce).Sub(acc.h.o.Clock.Now())
		if !flush && wait > 0 {
			if !acc.sleep(store.Conversation(r.Envelope), wait) {
				return r, errStopped
			}
			continue
		}
		if len(batch) == 0 {
			return r, nil
		}
		e, ids := fold(r.Envelope, batch)
		if err := st.BatchInbound(acc.ctx, r.ID, e, ids); errors.Is(err, store.ErrStateChanged) {
			continue // a command took one of them: look again
		} else if err != nil {
			return r, acc.stopped(err)
		}
		acc.mu.Lock()
		if w := acc.workers[store.Conversation(r.Envelope)]; w != nil {
			for _, id := range ids {
				w.folded[id] = true
			}
		}
		acc.mu.Unlock()
		for _, id := range ids {
			acc.settle(id, store.InboxBatched)
		}
		r.Envelope = e
		return r, nil
	}
}

// followers are the received messages after r that its sender wrote
// without anything between them; flush says the batch is over (something
// else follows it, or it is full).
func followers(rows []store.Inbound, r store.Inbound) (batch []store.Inbound, flush bool) {
	after := false
	for _, x := range rows {
		if x.ID == r.ID {
			after = true
			continue
		}
		if !after {
			continue
		}
		if x.State != store.InboxReceived || x.Envelope.Sender.ID != r.Envelope.Sender.ID || !batchable(x.Envelope) {
			return batch, true
		}
		if len(batch) == maxBatch-1 {
			return batch, true
		}
		batch = append(batch, x)
	}
	return batch, false
}

// fold is lead's envelope with the batch's texts after its own, one per
// line, and the ids of the batched rows.
func fold(lead channel.Envelope, batch []store.Inbound) (channel.Envelope, []int64) {
	texts := []string{lead.Text}
	ids := make([]int64, 0, len(batch))
	for _, b := range batch {
		texts = append(texts, b.Envelope.Text)
		lead.Batched = append(lead.Batched, b.Envelope.MessageID)
		lead.Mentioned = lead.Mentioned || b.Envelope.Mentioned
		ids = append(ids, b.ID)
	}
	lead.Text = strings.Join(texts, "\n")
	if len(lead.Text) > maxText {
		lead.Text = lead.Text[:maxText]
		lead.Text = strings.ToValidUTF8(lead.Text, "")
	}
	return lead, ids
}

// sleep waits d on the hub's clock, or until a message comes in to
// conversation conv; false when the account stopped.
func (acc *account) sleep(conv string, d time.Duration) bool {
	acc.mu.Lock()
	var wake chan struct{}
	if w := acc.workers[conv]; w != nil {
		wake = w.wake
	}
	acc.mu.Unlock()
	tick, stop := acc.h.o.Clock.Tick(d)
	defer stop()
	select {
	case <-tick:
		return true
	case <-wake:
		return true
	case <-acc.ctx.Done():
		return false
	}
}
