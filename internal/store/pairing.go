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

// PairingAllow is a sender approved on a channel account.
type PairingAllow struct {
	Channel, AccountID, SenderID string
}

// PairingImport is pairing state kept elsewhere (OpenClaw's legacy
// files) to add to the store.
type PairingImport struct {
	Requests []PairingRequest
	Allow    []PairingAllow
	Now      time.Time
	TTL      time.Duration // R7.2: 1 hour
	Cap      int           // R7.2: 3 pending per channel account
	// DryRun rolls the transaction back: the result says what the import
	// would do, and nothing changes.
	DryRun bool
}

// ImportOutcome is what an import did with one request.
type ImportOutcome int

// The outcomes of importing a request. Only ImportNew stores it: the
// others keep the rules a request made here obeys (R7.1, R7.2).
const (
	ImportNew           ImportOutcome = iota + 1
	ImportPresent                     // the same sender and code are pending already
	ImportSenderPending               // the sender has another pending request on the account
	ImportCodeInUse                   // another pending request of the channel has the code
	ImportCapped                      // the account has Cap pending requests
	ImportExpired                     // past TTL at Now
)

// PairingImported is what ImportPairing did: the outcome of each
// request, and whether each allow entry was new, in the order given.
type PairingImported struct {
	Requests []ImportOutcome
	Allow    []bool
}

var errDryRun = errors.New("dry run")

func checkImport(in PairingImport) error {
	if in.TTL <= 0 || in.Cap <= 0 {
		return errors.New("no ttl or cap")
	}
	for i, r := range in.Requests {
		switch {
		case r.Channel == "" || r.AccountID == "" || r.SenderID == "" || r.Code == "":
			return fmt.Errorf("request %d: no channel, account, sender or code", i)
		case r.CreatedAt.IsZero() || r.LastSeenAt.Before(r.CreatedAt):
			return fmt.Errorf("request %d: no creation time, or seen before it", i)
		case r.Meta != nil && !json.Valid(r.Meta):
			return fmt.Errorf("request %d: metadata is not JSON", i)
		}
	}
	for i, a := range in.Allow {
		if a.Channel == "" || a.AccountID == "" || a.SenderID == "" {
			return fmt.Errorf("allow entry %d: no channel, account or sender", i)
		}
	}
	return nil
}

// ImportPairing adds requests and allow entries in one transaction: all
// of them or, on an error, none. Expired requests are pruned first, as
// on every write; a request is stored only where AskPairing could have
// made it (see ImportOutcome), so importing the same state twice adds
// nothing the second time. An allow entry already there is kept as it
// is.
func (db *DB) ImportPairing(ctx context.Context, in PairingImport) (PairingImported, error) {
	if err := checkImport(in); err != nil {
		return PairingImported{}, fmt.Errorf("importing pairing state: %w", err)
	}
	var out PairingImported
	err := db.write(ctx, func(tx *sql.Tx) error {
		out = PairingImported{}
		pruned := map[string]bool{}
		for _, r := range in.Requests {
			if !pruned[r.Channel] {
				pruned[r.Channel] = true
				if err := prunePairing(ctx, tx, r.Channel, "", in.Now, in.TTL); err != nil {
					return err
				}
			}
			o, err := importRequest(ctx, tx, r, in)
			if err != nil {
				return fmt.Errorf("request of %s on %s/%s: %w", r.SenderID, r.Channel, r.AccountID, err)
			}
			out.Requests = append(out.Requests, o)
		}
		for _, a := range in.Allow {
			res, err := tx.ExecContext(ctx, `INSERT INTO channel_pairing_allow_entries (channel, account_id, sender_id, approved_at)
				VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, a.Channel, a.AccountID, a.SenderID, ms(in.Now))
			if err != nil {
				return fmt.Errorf("allow entry %s on %s/%s: %w", a.SenderID, a.Channel, a.AccountID, err)
			}
			n, _ := res.RowsAffected()
			out.Allow = append(out.Allow, n == 1)
		}
		if in.DryRun {
			return errDryRun
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return PairingImported{}, fmt.Errorf("importing pairing state: %w", err)
	}
	return out, nil
}

func importRequest(ctx context.Context, tx *sql.Tx, r PairingRequest, in PairingImport) (ImportOutcome, error) {
	if !r.CreatedAt.Add(in.TTL).After(in.Now) {
		return ImportExpired, nil
	}
	var code string
	err := tx.QueryRowContext(ctx, `SELECT code FROM channel_pairing_requests WHERE channel = ? AND account_id = ? AND sender_id = ?`,
		r.Channel, r.AccountID, r.SenderID).Scan(&code)
	switch {
	case err == nil && strings.EqualFold(code, r.Code):
		return ImportPresent, nil
	case err == nil:
		return ImportSenderPending, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	var taken, pending int
	if err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM channel_pairing_requests WHERE channel = ?1 AND code = ?3),
		(SELECT count(*) FROM channel_pairing_requests WHERE channel = ?1 AND account_id = ?2)`,
		r.Channel, r.AccountID, strings.ToUpper(r.Code)).Scan(&taken, &pending); err != nil {
		return 0, err
	}
	switch {
	case taken > 0:
		return ImportCodeInUse, nil
	case pending >= in.Cap:
		return ImportCapped, nil
	}
	meta := "{}"
	if r.Meta != nil {
		meta = string(r.Meta)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO channel_pairing_requests (`+pairingCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.Channel, r.AccountID, r.SenderID, strings.ToUpper(r.Code), ms(r.CreatedAt), ms(r.LastSeenAt), meta)
	return ImportNew, err
}
