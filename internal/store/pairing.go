package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// This file is the pairing store (spec channels.md §7, R7.7): the pending
// requests of unknown DM senders and the senders an owner approved, per
// channel account. Every rule that spans rows (expiry, the cap, one code
// per sender) runs inside one write transaction, so two messages racing —
// or the gateway and `talon pairing approve` in another process on the
// same file — cannot both take the last free slot or approve twice.

// PairingRequest is a pending request.
type PairingRequest struct {
	Channel    string
	AccountID  string
	SenderID   string
	Code       string
	CreatedAt  time.Time
	LastSeenAt time.Time
	Meta       json.RawMessage // what the sender's platform says of them (untrusted)
}

// PairingAsk is an unknown sender's DM asking for a code.
type PairingAsk struct {
	Channel, AccountID, SenderID string
	Meta                         json.RawMessage // nil for none
	Now                          time.Time
	TTL                          time.Duration // R7.2: 1 hour
	Cap                          int           // R7.2: 3 pending per channel account
	// NewCode draws a fresh code; it is called again when the code is in
	// use by another pending request of the channel.
	NewCode func() (string, error)
}

// PairingOutcome is what a PairingAsk did.
type PairingOutcome struct {
	Request PairingRequest // zero when Capped
	Created bool           // a new request: the sender gets its code
	Capped  bool           // no slot free: no code, no reply (R7.2)
}

// PairingMatch selects a pending request: Channel, and either Code or
// SenderID; AccountID "" matches any account of the channel.
type PairingMatch struct {
	Channel, AccountID, Code, SenderID string
}

// ErrPairingNotFound says no pending (unexpired) request matched.
var ErrPairingNotFound = errors.New("no pending pairing request matches")

// prunePairing deletes the expired requests of a channel (of one account
// when account is not ""): R7.2 prunes on every read and write.
func prunePairing(ctx context.Context, tx *sql.Tx, ch, account string, now time.Time, ttl time.Duration) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM channel_pairing_requests
		WHERE channel = ?1 AND (?2 = '' OR account_id = ?2) AND created_at <= ?3`, ch, account, ms(now.Add(-ttl)))
	return err
}

const pairingCols = `channel, account_id, sender_id, code, created_at, last_seen_at, meta_json`

func scanPairing(row interface{ Scan(...any) error }) (PairingRequest, error) {
	var r PairingRequest
	var created, seen int64
	var meta string
	err := row.Scan(&r.Channel, &r.AccountID, &r.SenderID, &r.Code, &created, &seen, &meta)
	r.CreatedAt, r.LastSeenAt, r.Meta = time.UnixMilli(created), time.UnixMilli(seen), json.RawMessage(meta)
	return r, err
}

func checkPairingAsk(a PairingAsk) error {
	switch {
	case a.Channel == "" || a.AccountID == "" || a.SenderID == "":
		return errors.New("no channel, account or sender")
	case a.TTL <= 0 || a.Cap <= 0 || a.NewCode == nil:
		return errors.New("no ttl, cap or code source")
	case a.Meta != nil && !json.Valid(a.Meta):
		return errors.New("metadata is not JSON")
	}
	return nil
}

// AskPairing records an unknown sender's DM (R7.2, R7.3) in one
// transaction: expired requests are pruned; a sender with a pending
// request has it refreshed (same code, Created false); otherwise, below
// the cap, a request with a new code is created; at the cap nothing is
// stored (Capped).
func (db *DB) AskPairing(ctx context.Context, a PairingAsk) (PairingOutcome, error) {
	return db.PairInbound(ctx, 0, a, nil)
}

// PairInbound is AskPairing for inbound message inboxID (0 for none),
// in the same transaction moving the message from received to answered
// with the chunks reply returns when a request was created (the pairing
// message, delivered through the outbox like any answer), or to paired
// when there is nothing to send.
func (db *DB) PairInbound(ctx context.Context, inboxID int64, a PairingAsk, reply func(PairingRequest) ([]Chunk, error)) (PairingOutcome, error) {
	if err := checkPairingAsk(a); err != nil {
		return PairingOutcome{}, fmt.Errorf("asking for pairing: %w", err)
	}
	meta := "{}"
	if a.Meta != nil {
		meta = string(a.Meta)
	}
	var out PairingOutcome
	err := db.write(ctx, func(tx *sql.Tx) error {
		out = PairingOutcome{}
		var err error
		if out, err = askPairing(ctx, tx, a, meta); err != nil {
			return err
		}
		if inboxID == 0 {
			return nil
		}
		if !out.Created || reply == nil {
			return transition(ctx, tx, inboxID, InboxReceived, InboxPaired, ms(a.Now), `, reason = ?`, "dm_policy_pairing_required")
		}
		chunks, err := reply(out.Request)
		if err != nil {
			return err
		}
		return db.answer(ctx, tx, inboxID, InboxReceived, chunks)
	})
	if err != nil {
		return PairingOutcome{}, fmt.Errorf("asking for pairing on %s/%s: %w", a.Channel, a.AccountID, err)
	}
	return out, nil
}

func askPairing(ctx context.Context, tx *sql.Tx, a PairingAsk, meta string) (PairingOutcome, error) {
	if err := prunePairing(ctx, tx, a.Channel, a.AccountID, a.Now, a.TTL); err != nil {
		return PairingOutcome{}, err
	}
	now := ms(a.Now)
	res, err := tx.ExecContext(ctx, `UPDATE channel_pairing_requests SET last_seen_at = ?, meta_json = ?
		WHERE channel = ? AND account_id = ? AND sender_id = ?`, now, meta, a.Channel, a.AccountID, a.SenderID)
	if err != nil {
		return PairingOutcome{}, err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		r, err := scanPairing(tx.QueryRowContext(ctx, `SELECT `+pairingCols+` FROM channel_pairing_requests
			WHERE channel = ? AND account_id = ? AND sender_id = ?`, a.Channel, a.AccountID, a.SenderID))
		return PairingOutcome{Request: r}, err
	}
	var pending int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM channel_pairing_requests WHERE channel = ? AND account_id = ?`,
		a.Channel, a.AccountID).Scan(&pending); err != nil {
		return PairingOutcome{}, err
	}
	if pending >= a.Cap {
		return PairingOutcome{Capped: true}, nil
	}
	for range 16 {
		code, err := a.NewCode()
		if err != nil {
			return PairingOutcome{}, fmt.Errorf("drawing a code: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO channel_pairing_requests (`+pairingCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel, code) DO NOTHING`,
			a.Channel, a.AccountID, a.SenderID, code, now, now, meta)
		if err != nil {
			return PairingOutcome{}, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return PairingOutcome{Created: true, Request: PairingRequest{Channel: a.Channel, AccountID: a.AccountID,
				SenderID: a.SenderID, Code: code, CreatedAt: a.Now, LastSeenAt: a.Now, Meta: json.RawMessage(meta)}}, nil
		}
	}
	return PairingOutcome{}, errors.New("drawing a code: 16 draws all in use")
}

// PairingRequests lists the pending requests of a channel (all channels
// when ch is "") and account ("" for all), oldest first, after pruning
// the expired ones — a write, so that what is listed is what can be
// approved.
func (db *DB) PairingRequests(ctx context.Context, ch, account string, now time.Time, ttl time.Duration) ([]PairingRequest, error) {
	var out []PairingRequest
	err := db.write(ctx, func(tx *sql.Tx) error {
		out = nil
		if _, err := tx.ExecContext(ctx, `DELETE FROM channel_pairing_requests
			WHERE (?1 = '' OR channel = ?1) AND (?2 = '' OR account_id = ?2) AND created_at <= ?3`,
			ch, account, ms(now.Add(-ttl))); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+pairingCols+` FROM channel_pairing_requests
			WHERE (?1 = '' OR channel = ?1) AND (?2 = '' OR account_id = ?2) ORDER BY created_at, channel, account_id, sender_id`,
			ch, account)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanPairing(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("listing pairing requests: %w", err)
	}
	return out, nil
}

func checkMatch(m PairingMatch) error {
	switch {
	case m.Channel == "":
		return errors.New("no channel")
	case (m.Code == "") == (m.SenderID == ""):
		return errors.New("give exactly one of a code and a sender id")
	}
	return nil
}

// takeRequest deletes the unexpired request m selects and returns it.
func takeRequest(ctx context.Context, tx *sql.Tx, m PairingMatch, now time.Time, ttl time.Duration) (PairingRequest, error) {
	if err := prunePairing(ctx, tx, m.Channel, m.AccountID, now, ttl); err != nil {
		return PairingRequest{}, err
	}
	r, err := scanPairing(tx.QueryRowContext(ctx, `SELECT `+pairingCols+` FROM channel_pairing_requests
		WHERE channel = ?1 AND (?2 = '' OR account_id = ?2) AND (?3 = '' OR code = ?3) AND (?4 = '' OR sender_id = ?4)
		ORDER BY account_id LIMIT 1`, m.Channel, m.AccountID, strings.ToUpper(m.Code), m.SenderID))
	if errors.Is(err, sql.ErrNoRows) {
		return PairingRequest{}, ErrPairingNotFound
	}
	if err != nil {
		return PairingRequest{}, err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM channel_pairing_requests WHERE channel = ? AND account_id = ? AND sender_id = ?`,
		r.Channel, r.AccountID, r.SenderID)
	return r, err
}

// ApprovePairing approves the pending request m selects (R7.5): in one
// transaction the request is deleted and its sender added to the channel
// account's allow entries. Codes compare case-insensitively.
func (db *DB) ApprovePairing(ctx context.Context, m PairingMatch, now time.Time, ttl time.Duration) (PairingRequest, error) {
	if err := checkMatch(m); err != nil {
		return PairingRequest{}, fmt.Errorf("approving a pairing request: %w", err)
	}
	var r PairingRequest
	err := db.write(ctx, func(tx *sql.Tx) error {
		var err error
		if r, err = takeRequest(ctx, tx, m, now, ttl); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO channel_pairing_allow_entries (channel, account_id, sender_id, approved_at)
			VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, r.Channel, r.AccountID, r.SenderID, ms(now))
		return err
	})
	if err != nil {
		return PairingRequest{}, fmt.Errorf("approving a pairing request on %s: %w", m.Channel, err)
	}
	return r, nil
}

// DismissPairing deletes the pending request m selects without approving
// or blocking its sender (R7.6): a later DM asks again.
func (db *DB) DismissPairing(ctx context.Context, m PairingMatch, now time.Time, ttl time.Duration) (PairingRequest, error) {
	if err := checkMatch(m); err != nil {
		return PairingRequest{}, fmt.Errorf("dismissing a pairing request: %w", err)
	}
	var r PairingRequest
	err := db.write(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = takeRequest(ctx, tx, m, now, ttl)
		return err
	})
	if err != nil {
		return PairingRequest{}, fmt.Errorf("dismissing a pairing request on %s: %w", m.Channel, err)
	}
	return r, nil
}

// PairingAllowList is the senders approved on a channel account. It reads
// the database each time (one indexed range), so an approval committed by
// any process — `talon pairing approve` while the gateway runs — applies
// to the next message.
func (db *DB) PairingAllowList(ctx context.Context, ch, account string) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT sender_id FROM channel_pairing_allow_entries
		WHERE channel = ? AND account_id = ? ORDER BY sender_id`, ch, account)
	if err != nil {
		return nil, fmt.Errorf("reading the pairing allow list of %s/%s: %w", ch, account, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("reading the pairing allow list of %s/%s: %w", ch, account, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// RevokePairing removes an approved sender; it reports whether there was
// one.
func (db *DB) RevokePairing(ctx context.Context, ch, account, sender string) (bool, error) {
	var n int64
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM channel_pairing_allow_entries WHERE channel = ? AND account_id = ? AND sender_id = ?`,
			ch, account, sender)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("revoking %s on %s/%s: %w", sender, ch, account, err)
	}
	return n == 1, nil
}
