package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"talon/internal/compaction"
	"talon/internal/llm"
)

// Kind is what a transcript row is.
type Kind uint8

// Kinds of rows. A message's row is named by its role; the others by
// their kind.
const (
	// KindMessage is a message of the conversation.
	KindMessage Kind = iota
	// KindCompaction is a compaction entry (Record.Compaction): the
	// summary of what came before its first kept entry.
	KindCompaction
	// KindReset is a reset boundary: nothing before it is in view.
	KindReset
	// KindProjection is the session's pruning projection
	// (Record.Projection), a hidden marker the model never sees: the
	// last one in view is the one in force (spec context.md R7.3).
	KindProjection
	// KindHidden marks the messages from Record.HiddenFrom up to itself
	// as internal (a heartbeat that had nothing to say, spec
	// automation.md R9.6): kept in the transcript, left out of what the
	// model, chat.history and session tools read (Visible).
	KindHidden
)

// The role column's values for the rows that are not messages.
const (
	roleCompaction = "compaction"
	roleReset      = "reset"
	roleProjection = "projection"
	roleHidden     = "hidden"
)

// Record is one stored transcript row: a message, or a compaction, a
// reset or a pruning projection (Kind). Records read from the store may
// share memory with its cache: callers do not modify what they point to.
type Record struct {
	// Seq numbers a session's rows 1, 2, 3, … in append order; it is the
	// row's entry id (ID).
	Seq int64
	// CreatedAt is when the row was appended, in Unix milliseconds.
	CreatedAt int64
	Kind      Kind
	// Message is a KindMessage row's message; Usage, for an assistant
	// message, what the provider reported for the call that produced it
	// (zero when unknown).
	Message llm.Message
	Usage   compaction.Usage
	// Compaction is a KindCompaction row's record, and TokensAfter the
	// estimated context size it left (0 when not recorded).
	Compaction  *compaction.Compaction
	TokensAfter int64
	// Projection is a KindProjection row's projection.
	Projection compaction.Projection
	// HiddenFrom is a KindHidden row's first hidden row.
	HiddenFrom int64
}

// ID is the record's entry id: its sequence number in decimal.
func (r *Record) ID() string { return strconv.FormatInt(r.Seq, 10) }

// Entry is the record as package compaction reads a transcript; false for
// a projection, which is not a transcript entry to it.
func (r *Record) Entry() (compaction.Entry, bool) {
	e := compaction.Entry{ID: r.ID()}
	switch r.Kind {
	case KindMessage:
		e.Message, e.Usage = r.Message, r.Usage
	case KindCompaction:
		e.Kind, e.Compaction = compaction.KindCompaction, r.Compaction
	case KindReset:
		e.Kind = compaction.KindReset
	default:
		return e, false
	}
	return e, true
}

// Item is one row to append: a message, with the usage of the model call
// that produced it for an assistant message, or (made by ProjectionItem)
// the session's pruning projection.
type Item struct {
	Message llm.Message
	Usage   compaction.Usage
	// Call, when set, is the model call that produced the message, for
	// the usage ledger (StartTurn and ContinueTurn write it).
	Call *Call
	// Also are the model calls a tool made to produce the message (the
	// image and pdf tools' models), written with it.
	Also []*Call

	projection compaction.Projection
	marker     bool
	hideFrom   int64 // > 0: a KindHidden row (HideItem)
}

// HideItem is the row that hides the messages from row from on (up to
// itself) from every reader but the raw transcript (Visible).
func HideItem(from int64) Item { return Item{hideFrom: max(from, 1)} }

// hiddenRow is a KindHidden row's JSON.
type hiddenRow struct {
	From int64 `json:"from"`
}

// Visible is recs without the messages a KindHidden row hides, and
// without those rows: what the model and the conversation's readers see.
// Compactions, resets and projections stay, hidden or not: they are the
// session's state, not its talk.
func Visible(recs []Record) []Record {
	var out []Record
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind != KindHidden {
			continue
		}
		if out == nil {
			out = slices.Clone(recs)
		}
		from, at := recs[i].HiddenFrom, recs[i].Seq
		out = slices.DeleteFunc(out, func(r Record) bool {
			return r.Seq == at || r.Kind == KindMessage && r.Seq >= from && r.Seq < at
		})
	}
	if out == nil {
		return recs
	}
	return out
}

// ProjectionItem is the item that records p as the session's pruning
// projection from now on.
func ProjectionItem(p compaction.Projection) Item {
	if p == nil {
		p = compaction.Projection{}
	}
	return Item{projection: p, marker: true}
}

// IsMarker reports whether the item is a marker, not a message: a
// projection (ProjectionItem) or a hidden row (HideItem).
func (it *Item) IsMarker() bool { return it.marker || it.hideFrom > 0 }

// Items are msgs as items without usage.
func Items(msgs ...llm.Message) []Item {
	out := make([]Item, len(msgs))
	for i, m := range msgs {
		out[i].Message = m
	}
	return out
}

// compactionRow is a compaction row's stored JSON: OpenClaw's compaction
// entry without its envelope (the row's seq and created_at), with the
// context size it left.
type compactionRow struct {
	compaction.Compaction
	TokensAfter int64 `json:"tokensAfter,omitempty"`
}

// appendSQL inserts one message numbered after the session's last one.
// The write transaction holds the database's write lock, so no one else
// can take the same number. The number is a scalar subquery of VALUES,
// not INSERT … SELECT: selecting from the table being written makes
// SQLite copy the rows into a temporary table first, a measurable share
// of a turn's commit.
const appendSQL = `INSERT INTO transcripts (session_id, seq, created_at, role, message, usage)
	VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM transcripts WHERE session_id = ?1), ?2, ?3, ?4, ?5)`

// readSQL reads the last ?2 rows of a session (all for -1), in order.
const readSQL = `SELECT seq, created_at, role, message, usage FROM (
		SELECT seq, created_at, role, message, usage FROM transcripts WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2
	) ORDER BY seq`

// testHookAppended, when set, runs after each message AppendMessages has
// inserted (uncommitted), with its index in the batch.
var testHookAppended func(i int)

// validRole reports whether a transcript may hold a message of this role:
// the roles a provider can replay.
func validRole(r llm.Role) bool {
	switch r {
	case llm.RoleUser, llm.RoleAssistant, llm.RoleTool:
		return true
	}
	return false
}

// AppendMessages appends messages to a session's transcript in one
// transaction: when it returns nil all of them are durable, numbered after
// the transcript's last message; when it returns an error none was
// written. A message with a role other than user, assistant or tool is an
// error.
func (db *DB) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error {
	if sessionID == "" {
		return errors.New("appending messages: empty session id")
	}
	if len(msgs) == 0 {
		return nil
	}
	err := db.write(ctx, func(tx *sql.Tx) error { return db.appendTx(ctx, tx, sessionID, Items(msgs...)) })
	if err != nil {
		return fmt.Errorf("appending messages to %q: %w", sessionID, err)
	}
	return nil
}

// appendTx inserts items inside a write transaction.
func (db *DB) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, items []Item) error {
	stmt := tx.StmtContext(ctx, db.appendStmt)
	defer stmt.Close()
	at := ms(db.now())
	for i := range items {
		role, body, usage, err := items[i].row()
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if _, err := stmt.ExecContext(ctx, sessionID, at, role, body, usage); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if testHookAppended != nil {
			testHookAppended(i)
		}
	}
	return nil
}

// row is the item's role, JSON and usage columns (usage NULL when none).
func (it *Item) row() (role, body string, usage any, err error) {
	if it.marker {
		b, err := json.Marshal(it.projection)
		return roleProjection, string(b), nil, err
	}
	if it.hideFrom > 0 {
		b, err := json.Marshal(hiddenRow{From: it.hideFrom})
		return roleHidden, string(b), nil, err
	}
	m := &it.Message
	if !validRole(m.Role) {
		return "", "", nil, fmt.Errorf("invalid role %q", m.Role)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", "", nil, err
	}
	if it.Usage != (compaction.Usage{}) {
		u, err := json.Marshal(it.Usage)
		if err != nil {
			return "", "", nil, err
		}
		usage = string(u)
	}
	return string(m.Role), string(b), usage, nil
}

// Transcript returns the messages among the last limit rows of a
// transcript, in order (all of them when limit <= 0); an unknown session
// id has none. Compactions, resets and projections are not messages: a
// transcript keeps every message whatever was compacted. Hidden messages
// are left out (Visible); TranscriptRecords has them.
func (db *DB) Transcript(ctx context.Context, sessionID string, limit int) ([]llm.Message, error) {
	recs, err := db.records(ctx, sessionID, limit)
	if err != nil {
		return nil, err
	}
	recs = Visible(recs)
	out := make([]llm.Message, 0, len(recs))
	for _, r := range recs {
		if r.Kind == KindMessage {
			out = append(out, r.Message)
		}
	}
	return out, nil
}

// TranscriptRecords returns the last limit rows of a transcript in order
// (all of them when limit <= 0), of every kind, with their numbers and
// times.
func (db *DB) TranscriptRecords(ctx context.Context, sessionID string, limit int) ([]Record, error) {
	recs, err := db.records(ctx, sessionID, limit)
	return slices.Clone(recs), err
}

// records reads the last limit records of a transcript. Reads of up to
// maxTail messages go through the tail cache (see tails.go), and the
// result may then be the cache's own memory: callers copy before they
// change or hand it out.
func (db *DB) records(ctx context.Context, sessionID string, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = -1 // all: LIMIT -1 is no limit
	}
	if limit < 0 || limit > maxTail {
		recs, _, err := db.readRecords(ctx, db.readStmt, sessionID, int64(limit))
		return recs, err
	}
	if last, covers, ok := db.tails.snapshot(sessionID, limit); ok && covers {
		rows, sizes, err := db.readRecords(ctx, db.readAfterStmt, sessionID, last)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 || rows[0].Seq == last+1 && rows[len(rows)-1].Seq == last+int64(len(rows)) {
			if recs, ok := db.tails.extend(sessionID, last, rows, sizes, limit); ok {
				return recs, nil
			}
		}
	}
	recs, sizes, err := db.readRecords(ctx, db.readStmt, sessionID, int64(limit))
	if err != nil || len(recs) == 0 {
		return recs, err
	}
	db.tails.put(sessionID, recs, sizes, len(recs) < limit)
	return lastN(recs, limit), nil
}

// readAfterSQL reads the rows of a session after number ?2, in order.
const readAfterSQL = `SELECT seq, created_at, role, message, usage FROM transcripts WHERE session_id = ?1 AND seq > ?2 ORDER BY seq`

// readRecords runs readSQL or readAfterSQL and decodes the rows; sizes are
// their stored JSON lengths.
func (db *DB) readRecords(ctx context.Context, stmt *sql.Stmt, sessionID string, arg int64) ([]Record, []int, error) {
	rows, err := stmt.QueryContext(ctx, sessionID, arg)
	if err != nil {
		return nil, nil, fmt.Errorf("reading transcript %q: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Record
	var sizes []int
	for rows.Next() {
		var r Record
		var role, raw string
		var usage sql.NullString
		if err := rows.Scan(&r.Seq, &r.CreatedAt, &role, &raw, &usage); err != nil {
			return nil, nil, fmt.Errorf("reading transcript %q: %w", sessionID, err)
		}
		if err := r.decode(role, raw, usage); err != nil {
			return nil, nil, fmt.Errorf("reading transcript %q: row %d: %w", sessionID, r.Seq, err)
		}
		out = append(out, r)
		sizes = append(sizes, len(raw)+len(usage.String))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading transcript %q: %w", sessionID, err)
	}
	return out, sizes, nil
}

// decode fills r from a row's role, JSON and usage columns.
func (r *Record) decode(role, raw string, usage sql.NullString) error {
	switch role {
	case roleCompaction:
		var c compactionRow
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return fmt.Errorf("compaction: %w", err)
		}
		r.Kind, r.Compaction, r.TokensAfter = KindCompaction, &c.Compaction, c.TokensAfter
	case roleReset:
		r.Kind = KindReset
	case roleProjection:
		r.Kind = KindProjection
		if err := json.Unmarshal([]byte(raw), &r.Projection); err != nil {
			return fmt.Errorf("projection: %w", err)
		}
	case roleHidden:
		var h hiddenRow
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			return fmt.Errorf("hidden: %w", err)
		}
		r.Kind, r.HiddenFrom = KindHidden, h.From
	default:
		if err := json.Unmarshal([]byte(raw), &r.Message); err != nil {
			return err
		}
		if usage.Valid && usage.String != "" {
			if err := json.Unmarshal([]byte(usage.String), &r.Usage); err != nil {
				return fmt.Errorf("usage: %w", err)
			}
		}
	}
	return nil
}

// headSQL reads the first ?2 rows of a session, in order.
const headSQL = `SELECT seq, created_at, role, message, usage FROM transcripts WHERE session_id = ?1 ORDER BY seq LIMIT ?2`

// TranscriptHead returns the first n rows of a transcript in order
// (for a title derived from how a session began); an unknown session id
// has none. It bypasses the tail cache, which holds only the ends of
// transcripts.
func (db *DB) TranscriptHead(ctx context.Context, sessionID string, n int) ([]Record, error) {
	if n <= 0 {
		return nil, nil
	}
	stmt, err := db.r.PrepareContext(ctx, headSQL)
	if err != nil {
		return nil, fmt.Errorf("reading the head of transcript %q: %w", sessionID, err)
	}
	defer stmt.Close()
	recs, _, err := db.readRecords(ctx, stmt, sessionID, int64(n))
	return recs, err
}
