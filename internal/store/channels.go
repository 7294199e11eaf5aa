package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"talon/internal/channel"
)

// This file is the durable side of the channel runtime (package
// channel/hub, spec channels.md R2.1, R8.12, R11.3): the inbox of inbound
// messages and the outbox of reply chunks.
//
// An inbound message is a row of channel_inbox from before its platform
// is acknowledged. Its state moves forward only:
//
//	received ─┬─> dropped                  refused by a gate (reason says which)
//	          ├─> batched                  folded into an earlier message's turn (debounce)
//	          ├─> history ──> consumed     admitted, not addressed: context of the next turn
//	          ├─> paired                   a pairing request refreshed, nothing to send
//	          └─> running ──> answered ──> delivered | failed
//
// The gates and the routing of a received row are pure and re-run after a
// crash, so a row goes straight from received to running (the brief's
// "gated" is folded into that commit). A pairing request that gets a code
// commits its reply chunk with the request and moves the row to answered,
// so the code is sent by the same delivery path as any answer.

// InboxState is the state of an inbound message.
type InboxState string

// The states of an inbound message.
const (
	InboxReceived  InboxState = "received"
	InboxDropped   InboxState = "dropped"
	InboxBatched   InboxState = "batched"
	InboxHistory   InboxState = "history"
	InboxConsumed  InboxState = "consumed"
	InboxPaired    InboxState = "paired"
	InboxRunning   InboxState = "running"
	InboxAnswered  InboxState = "answered"
	InboxDelivered InboxState = "delivered"
	InboxFailed    InboxState = "failed"
)

// SendState is the state of one outbound chunk.
type SendState string

// The states of an outbound chunk. A chunk is sending from just before
// the platform is called until its answer is recorded; one found sending
// after a crash may or may not have reached the platform and becomes
// unconfirmed, never sent again unless the platform deduplicates by key.
const (
	SendPending     SendState = "pending"
	SendSending     SendState = "sending"
	SendSent        SendState = "sent"
	SendUnconfirmed SendState = "unconfirmed"
	SendFailed      SendState = "failed"
)

// ErrStateChanged refuses a transition from a state the row is no longer
// in: another worker (or process) moved it first.
var ErrStateChanged = errors.New("the row's state changed")

// Inbound is one row of the inbox.
type Inbound struct {
	ID         int64
	Envelope   channel.Envelope
	State      InboxState
	Reason     string // why it was dropped or failed
	AgentID    string // set when it started running
	SessionKey string
	Attempts   int // how many times its turn was started
	ReceivedAt time.Time
}

// Chunk is one outbound message of the outbox.
type Chunk struct {
	Batch     string // "in:<inbox id>" for an answer, "send:<idempotency key>" for a send
	Index     int
	InboxID   int64 // 0 for a send
	Channel   string
	AccountID string
	channel.Outbound
	State     SendState
	MessageID string
	Error     string
}

// Conversation is the key inbound messages are ordered by: a peer and,
// within it, a thread. Messages of one conversation are processed one at a
// time in the order they were accepted.
func Conversation(e channel.Envelope) string {
	return string(e.Peer.Kind) + ":" + e.Peer.ID + "#" + e.ThreadID
}

// AnswerBatch is the outbox batch of an inbound message's answer.
func AnswerBatch(inboxID int64) string { return "in:" + strconv.FormatInt(inboxID, 10) }

// checkEnvelope refuses an envelope the inbox cannot key.
func checkEnvelope(e channel.Envelope) error {
	switch {
	case e.Channel == "" || e.AccountID == "":
		return errors.New("no channel or account")
	case e.Peer.ID == "" || e.Peer.Kind == "":
		return errors.New("no peer")
	case e.MessageID == "" && e.DeliveryID == "":
		return errors.New("neither a message id nor a delivery id")
	}
	return nil
}

// messageKey is the dedupe key of R2.1 step 2 within a channel account:
// the conversation and the message id (the delivery id when the platform
// gave no message id). The agent scope of the spec is not part of it: an
// inbound message is routed to one agent after it is stored.
func messageKey(e channel.Envelope) string {
	if e.MessageID == "" {
		return Conversation(e) + "\x00d:" + e.DeliveryID
	}
	return Conversation(e) + "\x00m:" + e.MessageID
}

// AcceptInbound stores an inbound message in state received. fresh is
// false when the message (same conversation and message id) or the
// delivery (same delivery id) is already in the inbox — a redelivery,
// which must not start a second run; id is then the stored row's.
func (db *DB) AcceptInbound(ctx context.Context, e channel.Envelope) (id int64, fresh bool, err error) {
	if err := checkEnvelope(e); err != nil {
		return 0, false, fmt.Errorf("storing an inbound message: %w", err)
	}
	body, err := json.Marshal(e)
	if err != nil {
		return 0, false, fmt.Errorf("storing an inbound message: %w", err)
	}
	now := ms(db.now())
	key := messageKey(e)
	err = db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO channel_inbox
			(channel, account_id, conv, message_key, delivery_id, envelope, state, received_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 'received', ?, ?) ON CONFLICT DO NOTHING`,
			e.Channel, e.AccountID, Conversation(e), key, e.DeliveryID, string(body), now, now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			id, err = res.LastInsertId()
			fresh = true
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT id FROM channel_inbox WHERE channel = ?1 AND account_id = ?2
			AND (message_key = ?3 OR (?4 <> '' AND delivery_id = ?4)) LIMIT 1`,
			e.Channel, e.AccountID, key, e.DeliveryID).Scan(&id)
	})
	if err != nil {
		return 0, false, fmt.Errorf("storing inbound message %q of %s/%s: %w", e.MessageID, e.Channel, e.AccountID, err)
	}
	return id, fresh, nil
}

const inboundCols = `id, envelope, state, reason, agent_id, session_key, attempts, received_at`

func scanInbound(rows *sql.Rows) ([]Inbound, error) {
	defer rows.Close()
	var out []Inbound
	for rows.Next() {
		var in Inbound
		var body string
		var at int64
		if err := rows.Scan(&in.ID, &body, &in.State, &in.Reason, &in.AgentID, &in.SessionKey, &in.Attempts, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(body), &in.Envelope); err != nil {
			return nil, fmt.Errorf("inbound row %d: %w", in.ID, err)
		}
		in.ReceivedAt = time.UnixMilli(at)
		out = append(out, in)
	}
	return out, rows.Err()
}

// OpenInbound lists the messages of one conversation that are not done
// (received, running or answered), oldest first.
func (db *DB) OpenInbound(ctx context.Context, ch, account, conv string) ([]Inbound, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+inboundCols+` FROM channel_inbox
		WHERE channel = ? AND account_id = ? AND conv = ? AND state IN ('received', 'running', 'answered') ORDER BY id`,
		ch, account, conv)
	if err != nil {
		return nil, fmt.Errorf("reading the open messages of %s/%s: %w", ch, account, err)
	}
	out, err := scanInbound(rows)
	if err != nil {
		return nil, fmt.Errorf("reading the open messages of %s/%s: %w", ch, account, err)
	}
	return out, nil
}

// OpenConversations lists the conversations of an account that have
// messages not done: what a restart resumes.
func (db *DB) OpenConversations(ctx context.Context, ch, account string) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT DISTINCT conv FROM channel_inbox
		WHERE channel = ? AND account_id = ? AND state IN ('received', 'running', 'answered') ORDER BY conv`, ch, account)
	if err != nil {
		return nil, fmt.Errorf("reading the open conversations of %s/%s: %w", ch, account, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// PendingHistory is the last limit messages of a conversation kept as
// history (admitted, not addressed, not yet part of an answered turn)
// that came before the message before, oldest first (R6.5).
func (db *DB) PendingHistory(ctx context.Context, ch, account, conv string, before int64, limit int) ([]Inbound, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT * FROM (SELECT `+inboundCols+` FROM channel_inbox
		WHERE channel = ? AND account_id = ? AND conv = ? AND state = 'history' AND id < ? ORDER BY id DESC LIMIT ?)
		ORDER BY id`, ch, account, conv, before, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the pending history of %s/%s: %w", ch, account, err)
	}
	out, err := scanInbound(rows)
	if err != nil {
		return nil, fmt.Errorf("reading the pending history of %s/%s: %w", ch, account, err)
	}
	return out, nil
}

// transition moves row id from state from to state to inside tx.
func transition(ctx context.Context, tx *sql.Tx, id int64, from, to InboxState, now int64, set string, args ...any) error {
	q := `UPDATE channel_inbox SET state = ?, updated_at = ?` + set + ` WHERE id = ? AND state = ?`
	res, err := tx.ExecContext(ctx, q, append(append([]any{to, now}, args...), id, from)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: inbound row %d is not %s", ErrStateChanged, id, from)
	}
	return nil
}

// BatchInbound folds received messages into an earlier received one, the
// lead, whose envelope becomes e (the batch's text): the followers move
// to batched in the same transaction, so a crash leaves the messages
// either apart or batched, never both. ErrStateChanged when any of them
// is no longer received (a control command took it).
func (db *DB) BatchInbound(ctx context.Context, lead int64, e channel.Envelope, followers []int64) error {
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("batching into inbound row %d: %w", lead, err)
	}
	err = db.write(ctx, func(tx *sql.Tx) error {
		now := ms(db.now())
		if err := transition(ctx, tx, lead, InboxReceived, InboxReceived, now, `, envelope = ?`, string(body)); err != nil {
			return err
		}
		for _, id := range followers {
			if err := transition(ctx, tx, id, InboxReceived, InboxBatched, now, `, reason = ?`, fmt.Sprintf("batched into %d", lead)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("batching into inbound row %d: %w", lead, err)
	}
	return nil
}

// SetInbound moves an inbound message from one state to another,
// recording why (a gate's reason code, an error); ErrStateChanged says it
// was not in state from.
func (db *DB) SetInbound(ctx context.Context, id int64, from, to InboxState, reason string) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		return transition(ctx, tx, id, from, to, ms(db.now()), `, reason = ?`, reason)
	})
	if err != nil {
		return fmt.Errorf("moving inbound row %d to %s: %w", id, to, err)
	}
	return nil
}

// StartInbound moves a message to running, from received (first run) or
// running (a run a crash interrupted), recording its agent and session
// and counting the attempt.
func (db *DB) StartInbound(ctx context.Context, id int64, from InboxState, agent, sessionKey string) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		return transition(ctx, tx, id, from, InboxRunning, ms(db.now()),
			`, agent_id = ?, session_key = ?, attempts = attempts + 1`, agent, sessionKey)
	})
	if err != nil {
		return fmt.Errorf("starting the turn of inbound row %d: %w", id, err)
	}
	return nil
}

// AnswerInbound commits a turn's answer in one transaction: its chunks
// (state pending) in the outbox, the history rows of the conversation
// before it marked consumed (they are in the transcript now), and the
// message moved from running to answered — or to delivered when there is
// nothing to send (NO_REPLY).
func (db *DB) AnswerInbound(ctx context.Context, id int64, chunks []Chunk) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		return db.answer(ctx, tx, id, InboxRunning, chunks)
	})
	if err != nil {
		return fmt.Errorf("committing the answer of inbound row %d: %w", id, err)
	}
	return nil
}

func (db *DB) answer(ctx context.Context, tx *sql.Tx, id int64, from InboxState, chunks []Chunk) error {
	now := ms(db.now())
	to := InboxAnswered
	if len(chunks) == 0 {
		to = InboxDelivered
	}
	if err := transition(ctx, tx, id, from, to, now, ""); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE channel_inbox SET state = 'consumed', updated_at = ?1
		WHERE state = 'history' AND (channel, account_id, conv) = (SELECT channel, account_id, conv FROM channel_inbox WHERE id = ?2)
		AND id < ?2`, now, id); err != nil {
		return err
	}
	for i := range chunks {
		chunks[i].Batch, chunks[i].Index, chunks[i].InboxID = AnswerBatch(id), i, id
	}
	return insertChunks(ctx, tx, chunks, now)
}

func insertChunks(ctx context.Context, tx *sql.Tx, chunks []Chunk, now int64) error {
	for _, c := range chunks {
		target, err := json.Marshal(c.Target)
		if err != nil {
			return err
		}
		var inbox any
		if c.InboxID != 0 {
			inbox = c.InboxID
		}
		var buttons []byte
		if len(c.Buttons) > 0 {
			if buttons, err = json.Marshal(c.Buttons); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO channel_outbox
			(batch, idx, inbox_id, key, channel, account_id, target, text, plain, reply_to, buttons, state, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
			c.Batch, c.Index, inbox, c.Key, c.Channel, c.AccountID, string(target), c.Text, c.Plain, c.ReplyTo, string(buttons), now, now); err != nil {
			return fmt.Errorf("chunk %d: %w", c.Index, err)
		}
	}
	return nil
}

// QueueSend puts the chunks of a send that is not an answer (the gateway's
// send method, the message tool) in the outbox under batch "send:<key>".
// When that batch exists already — the same idempotency key again — it
// stores nothing and returns the chunks as they are, so a retried request
// is never sent twice.
func (db *DB) QueueSend(ctx context.Context, idempotencyKey string, chunks []Chunk) ([]Chunk, bool, error) {
	if strings.TrimSpace(idempotencyKey) == "" {
		return nil, false, errors.New("queueing a send: empty idempotency key")
	}
	batch := "send:" + idempotencyKey
	var existing bool
	err := db.write(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM channel_outbox WHERE batch = ?`, batch).Scan(&n); err != nil {
			return err
		}
		if existing = n > 0; existing {
			return nil
		}
		for i := range chunks {
			chunks[i].Batch, chunks[i].Index, chunks[i].InboxID = batch, i, 0
		}
		return insertChunks(ctx, tx, chunks, ms(db.now()))
	})
	if err != nil {
		return nil, false, fmt.Errorf("queueing send %q: %w", idempotencyKey, err)
	}
	out, err := db.Chunks(ctx, batch)
	return out, existing, err
}

// Chunks lists the chunks of a batch in order, whatever their state.
func (db *DB) Chunks(ctx context.Context, batch string) ([]Chunk, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT batch, idx, COALESCE(inbox_id, 0), key, channel, account_id, target,
		text, plain, reply_to, buttons, state, message_id, error FROM channel_outbox WHERE batch = ? ORDER BY idx`, batch)
	if err != nil {
		return nil, fmt.Errorf("reading outbox batch %q: %w", batch, err)
	}
	defer rows.Close()
	var out []Chunk
	for rows.Next() {
		var c Chunk
		var target, buttons string
		if err := rows.Scan(&c.Batch, &c.Index, &c.InboxID, &c.Key, &c.Channel, &c.AccountID, &target,
			&c.Text, &c.Plain, &c.ReplyTo, &buttons, &c.State, &c.MessageID, &c.Error); err != nil {
			return nil, fmt.Errorf("reading outbox batch %q: %w", batch, err)
		}
		if err := json.Unmarshal([]byte(target), &c.Target); err != nil {
			return nil, fmt.Errorf("reading outbox batch %q: chunk %d: %w", batch, c.Index, err)
		}
		if buttons != "" {
			if err := json.Unmarshal([]byte(buttons), &c.Buttons); err != nil {
				return nil, fmt.Errorf("reading outbox batch %q: chunk %d buttons: %w", batch, c.Index, err)
			}
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// setChunk moves a chunk from one state to another.
func (db *DB) setChunk(ctx context.Context, batch string, idx int, from, to SendState, messageID, errText string) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE channel_outbox SET state = ?, message_id = ?, error = ?, updated_at = ?
			WHERE batch = ? AND idx = ? AND state = ?`, to, messageID, errText, ms(db.now()), batch, idx, from)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%w: chunk %d is not %s", ErrStateChanged, idx, from)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("moving chunk %d of %q to %s: %w", idx, batch, to, err)
	}
	return nil
}

// BeginSend marks a pending chunk sending; it must be committed before
// the platform is called, so that a crash during the call leaves the
// chunk sending (then unconfirmed), never pending again.
func (db *DB) BeginSend(ctx context.Context, batch string, idx int) error {
	return db.setChunk(ctx, batch, idx, SendPending, SendSending, "", "")
}

// EndSend records what the platform answered to a chunk being sent: its
// message id (sent), no id or an error wrapping channel.ErrUnconfirmed
// (unconfirmed: R8.12, it may have been posted) or another error (failed).
func (db *DB) EndSend(ctx context.Context, batch string, idx int, messageID string, sendErr error) error {
	switch {
	case errors.Is(sendErr, channel.ErrUnconfirmed):
		return db.setChunk(ctx, batch, idx, SendSending, SendUnconfirmed, "", sendErr.Error())
	case sendErr != nil:
		return db.setChunk(ctx, batch, idx, SendSending, SendFailed, "", sendErr.Error())
	case messageID == "":
		return db.setChunk(ctx, batch, idx, SendSending, SendUnconfirmed, "", "")
	}
	return db.setChunk(ctx, batch, idx, SendSending, SendSent, messageID, "")
}

// RecoverSends settles the chunks of an account left sending by a process
// that ended during the platform call: whether they reached the platform
// is unknown, so they become unconfirmed and are not sent again — except
// on a platform that deduplicates a send by the chunk's key for a while
// (Discord's enforced nonce, a few minutes): chunks marked sending within
// that window (resendWindow > 0) go back to pending. Call it before the
// account's delivery starts; it returns how many chunks it settled.
func (db *DB) RecoverSends(ctx context.Context, ch, account string, resendWindow time.Duration) (int, error) {
	now := db.now()
	since := ms(now) + 1 // none
	if resendWindow > 0 {
		since = ms(now.Add(-resendWindow))
	}
	var n int64
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE channel_outbox
			SET state = CASE WHEN updated_at >= ? THEN 'pending' ELSE 'unconfirmed' END, updated_at = ?
			WHERE channel = ? AND account_id = ? AND state = 'sending'`, since, ms(now), ch, account)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recovering the sends of %s/%s: %w", ch, account, err)
	}
	return int(n), nil
}

// InboxBounds bound what the inbox remembers of finished messages (R11.3:
// 30 days or 1,000 per account), which is what a redelivery is recognised
// by.
type InboxBounds struct {
	MaxAge     time.Duration
	PerAccount int
}

// DefaultInboxBounds are R11.3's.
var DefaultInboxBounds = InboxBounds{MaxAge: 30 * 24 * time.Hour, PerAccount: 1000}

// PruneInbox deletes an account's finished messages (and their chunks)
// older than b.MaxAge or beyond the newest b.PerAccount. Open messages (received, running, answered) are
// never pruned, nor is pending history younger than b.MaxAge. Sends
// (QueueSend) are kept as long and as many (in chunks).
func (db *DB) PruneInbox(ctx context.Context, ch, account string, b InboxBounds) (int, error) {
	cutoff := ms(db.now().Add(-b.MaxAge))
	var n int64
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM channel_inbox WHERE channel = ?1 AND account_id = ?2
			AND state NOT IN ('received', 'running', 'answered') AND (updated_at < ?3 OR (state <> 'history' AND id <= (
				SELECT id FROM channel_inbox WHERE channel = ?1 AND account_id = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?4)))`,
			ch, account, cutoff, b.PerAccount)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		// Sends (their idempotency keys) are kept as long, and as many
		// chunks; a batch's chunks share created_at, so none is cut in two.
		_, err = tx.ExecContext(ctx, `DELETE FROM channel_outbox WHERE inbox_id IS NULL AND channel = ?1 AND account_id = ?2
			AND (created_at < ?3 OR created_at < (SELECT created_at FROM channel_outbox WHERE inbox_id IS NULL
				AND channel = ?1 AND account_id = ?2 ORDER BY created_at DESC LIMIT 1 OFFSET ?4))`, ch, account, cutoff, b.PerAccount)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pruning the inbox of %s/%s: %w", ch, account, err)
	}
	return int(n), nil
}

// LatestInbound is the last message that started a turn of a session:
// where the session's conversation is, for a message the session sends
// on its own (an exec approval's prompt). ErrNotFound when none.
func (db *DB) LatestInbound(ctx context.Context, sessionKey string) (Inbound, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+inboundCols+` FROM channel_inbox
		WHERE session_key = ? ORDER BY id DESC LIMIT 1`, sessionKey)
	if err != nil {
		return Inbound{}, fmt.Errorf("reading the conversation of session %q: %w", sessionKey, err)
	}
	out, err := scanInbound(rows)
	if err != nil {
		return Inbound{}, fmt.Errorf("reading the conversation of session %q: %w", sessionKey, err)
	}
	if len(out) == 0 {
		return Inbound{}, ErrNotFound
	}
	return out[0], nil
}
