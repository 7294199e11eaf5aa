package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"talon/internal/llm"
)

// Record is one stored transcript message.
type Record struct {
	// Seq numbers a session's messages 1, 2, 3, … in append order.
	Seq int64
	// CreatedAt is when the message was appended, in Unix milliseconds.
	CreatedAt int64
	Message   llm.Message
}

// appendSQL inserts one message numbered after the session's last one.
// The write transaction holds the database's write lock, so no one else
// can take the same number. The number is a scalar subquery of VALUES,
// not INSERT … SELECT: selecting from the table being written makes
// SQLite copy the rows into a temporary table first, a measurable share
// of a turn's commit.
const appendSQL = `INSERT INTO transcripts (session_id, seq, created_at, role, message)
	VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM transcripts WHERE session_id = ?1), ?2, ?3, ?4)`

// readSQL reads the last ?2 messages of a session (all for -1), in order.
const readSQL = `SELECT seq, created_at, message FROM (
		SELECT seq, created_at, message FROM transcripts WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2
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
	err := db.write(ctx, func(tx *sql.Tx) error { return db.appendTx(ctx, tx, sessionID, msgs) })
	if err != nil {
		return fmt.Errorf("appending messages to %q: %w", sessionID, err)
	}
	return nil
}

// appendTx inserts messages inside a write transaction.
func (db *DB) appendTx(ctx context.Context, tx *sql.Tx, sessionID string, msgs []llm.Message) error {
	stmt := tx.StmtContext(ctx, db.appendStmt)
	defer stmt.Close()
	at := ms(db.now())
	for i, m := range msgs {
		if !validRole(m.Role) {
			return fmt.Errorf("message %d: invalid role %q", i, m.Role)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if _, err := stmt.ExecContext(ctx, sessionID, at, string(m.Role), string(b)); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if testHookAppended != nil {
			testHookAppended(i)
		}
	}
	return nil
}

// Transcript returns the last limit messages of a transcript in order (all
// of them when limit <= 0); an unknown session id has none.
func (db *DB) Transcript(ctx context.Context, sessionID string, limit int) ([]llm.Message, error) {
	recs, err := db.records(ctx, sessionID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Message, len(recs))
	for i, r := range recs {
		out[i] = r.Message
	}
	return out, nil
}

// TranscriptRecords is Transcript with each message's sequence number and
// time.
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

// readAfterSQL reads the messages of a session after number ?2, in order.
const readAfterSQL = `SELECT seq, created_at, message FROM transcripts WHERE session_id = ?1 AND seq > ?2 ORDER BY seq`

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
		var raw string
		if err := rows.Scan(&r.Seq, &r.CreatedAt, &raw); err != nil {
			return nil, nil, fmt.Errorf("reading transcript %q: %w", sessionID, err)
		}
		if err := json.Unmarshal([]byte(raw), &r.Message); err != nil {
			return nil, nil, fmt.Errorf("reading transcript %q: message %d: %w", sessionID, r.Seq, err)
		}
		out = append(out, r)
		sizes = append(sizes, len(raw))
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading transcript %q: %w", sessionID, err)
	}
	return out, sizes, nil
}

// headSQL reads the first ?2 messages of a session, in order.
const headSQL = `SELECT seq, created_at, message FROM transcripts WHERE session_id = ?1 ORDER BY seq LIMIT ?2`

// TranscriptHead returns the first n messages of a transcript in order
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
