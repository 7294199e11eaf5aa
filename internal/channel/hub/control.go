package hub

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"talon/internal/channel"
	"talon/internal/channel/format"
	"talon/internal/store"
)

// control takes a control command (Options.Control) out of its
// conversation's queue: a stop word must reach the turn it stops, and
// /approve the turn that waits for it, not wait behind them. The message
// passes the same gates as any other; a command the gates do not admit,
// or one a worker took first, goes the ordinary way (false). An admitted
// one is claimed (its row leaves the queue), run at once through Turns
// with its raw text (R2.3), and its answer sent once. A crash after the
// claim loses the command, never a turn: it was momentary.
func (acc *account) control(ctx context.Context, id int64, e channel.Envelope) bool {
	if acc.h.o.Control == nil || !acc.h.o.Control(e.Text) || acc.own(e) {
		return false
	}
	var paired []string
	if needsPairingStore(acc.a, e) {
		var err error
		if paired, err = acc.h.o.Store.PairingAllowList(ctx, acc.a.Channel, acc.a.ID); err != nil {
			return false
		}
	}
	cfg := acc.h.config()
	if d := admit(cfg, acc.a, e, paired); !d.Allow || d.History || d.Pairing {
		return false
	}
	rt, err := route(cfg, e)
	if err != nil {
		return false
	}
	if err := acc.h.o.Store.SetInbound(ctx, id, store.InboxReceived, store.InboxDropped, "control command"); err != nil {
		if !errors.Is(err, store.ErrStateChanged) {
			acc.log.Warn("claiming a control command", "id", id, "err", err)
		}
		return false
	}
	acc.mu.Lock()
	if acc.ctx == nil || acc.ctx.Err() != nil {
		acc.mu.Unlock()
		return true // stopping: the command ends with the account
	}
	actx := acc.ctx
	acc.wg.Add(1)
	acc.mu.Unlock()
	go func() {
		defer acc.wg.Done()
		key := acc.turnKey(id)
		res, err := acc.h.o.Turns.Turn(actx, TurnRequest{AgentID: rt.AgentID, SessionKey: rt.SessionKey, Text: strings.TrimSpace(e.Text),
			Envelope: e, Route: rt, Key: key, Attempt: 1})
		if err != nil {
			acc.log.Warn("control command failed", "id", id, "err", err)
			return
		}
		text := format.StripHeartbeat(res.Text)
		if strings.TrimSpace(text) == "" || format.IsSilent(text) {
			return
		}
		if _, err := acc.h.Send(actx, SendRequest{Channel: acc.a.Channel, AccountID: acc.a.ID, Target: channel.Target{Peer: e.Peer, ThreadID: e.ThreadID},
			Text: text, IdempotencyKey: "control:" + key + ":" + strconv.Itoa(1)}); err != nil {
			acc.log.Warn("answering a control command", "id", id, "err", err)
		}
	}()
	return true
}
