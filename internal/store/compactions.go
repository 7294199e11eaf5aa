package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"talon/internal/compaction"
	"talon/internal/session"
)

// This file is the store's side of context management (spec context.md):
// reading what a turn needs of a transcript, and committing a compaction
// or a memory flush with the session counters that record it.

// ErrSessionChanged refuses a compaction or a flush record for a
// transcript that is no longer its session's (a reset or a delete
// meanwhile).
var ErrSessionChanged = errors.New("the session changed")

// View is what a turn reads of a transcript: the rows from the last
// boundary's first kept entry on (the boundary, the kept tail before it,
// everything after it, projections included), and their stored size.
type View struct {
	Records []Record
	Bytes   int64
}

// boundarySQL finds the last compaction or reset of a session through the
// partial index transcripts_boundaries.
const boundarySQL = `SELECT seq, role, message FROM transcripts
	WHERE session_id = ?1 AND role IN ('compaction', 'reset') ORDER BY seq DESC LIMIT 1`

// readFromSQL reads the rows of a session from number ?2 on, in order.
const readFromSQL = `SELECT seq, created_at, role, message, usage FROM transcripts WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq`

// ReadView reads the rows a turn on sessionID needs (View): however long
// the transcript, a read costs what the part in view costs, which
// compaction bounds. Hidden messages are not in view (Visible). An unknown session id has none. The records may be
// the tail cache's own: callers copy before they change them.
func (db *DB) ReadView(ctx context.Context, sessionID string) (View, error) {
	from, err := db.viewStart(ctx, sessionID)
	if err != nil {
		return View{}, fmt.Errorf("reading the view of transcript %q: %w", sessionID, err)
	}
	recs, sizes, err := db.recordsFrom(ctx, sessionID, from)
	if err != nil {
		return View{}, err
	}
	v := View{Records: Visible(recs)}
	kept := map[int64]bool{}
	if len(v.Records) < len(recs) {
		for _, r := range v.Records {
			kept[r.Seq] = true
		}
	}
	for i, n := range sizes {
		if len(v.Records) == len(recs) || kept[recs[i].Seq] {
			v.Bytes += int64(n)
		}
	}
	return v, nil
}

// viewStart is the number of the first row in view: the last boundary's
// first kept entry, else the boundary itself, else 1.
func (db *DB) viewStart(ctx context.Context, sessionID string) (int64, error) {
	var seq int64
	var role, raw string
	err := db.r.QueryRowContext(ctx, boundarySQL, sessionID).Scan(&seq, &role, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	if role != roleCompaction {
		return seq, nil
	}
	var c compactionRow
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return 0, fmt.Errorf("compaction %d: %w", seq, err)
	}
	if kept, err := strconv.ParseInt(c.FirstKeptEntryID, 10, 64); err == nil && kept > 0 && kept < seq {
		return kept, nil
	}
	return seq, nil
}

// recordsFrom reads the rows from number from on, through the tail cache
// when it holds them (what was appended since it last looked is read from
// the database, as records does), else from the database, caching them
// when they are few enough.
func (db *DB) recordsFrom(ctx context.Context, sessionID string, from int64) ([]Record, []int, error) {
	if last, ok := db.tails.holdsFrom(sessionID, from); ok {
		rows, sizes, err := db.readRecords(ctx, db.readAfterStmt, sessionID, last)
		if err != nil {
			return nil, nil, err
		}
		if len(rows) == 0 || rows[0].Seq == last+1 && rows[len(rows)-1].Seq == last+int64(len(rows)) {
			if recs, sizes, ok := db.tails.extendFrom(sessionID, last, rows, sizes, from); ok {
				return recs, sizes, nil
			}
		}
	}
	recs, sizes, err := db.readRecords(ctx, db.readFromStmt, sessionID, from)
	if err != nil || len(recs) == 0 || len(recs) > maxTail {
		return recs, sizes, err
	}
	db.tails.put(sessionID, slices.Clip(recs), slices.Clip(sizes), from <= 1)
	return slices.Clip(recs), sizes, nil
}

// testHookCompacting, when set, runs inside AppendCompaction's transaction
// after the compaction row is written and before the session row is: a
// failure there must leave neither.
var testHookCompacting func() error

// AppendCompaction commits a compaction of sessionID, agent's session key,
// in one transaction (spec context.md R5.12): the compaction row appended
// to the transcript, and on the session row compactionCount raised by
// one, totalTokens set to tokensAfter (the estimated context the
// compaction left, 0 when unknown) and marked stale until the next model
// call reports usage (totalTokensFresh false), updatedAt raised to now.
// Killed at any point, the session is before it or after it, never
// between. calls are the summary model's calls, written to the usage
// ledger in the same transaction. ErrSessionChanged says the session no
// longer has that transcript. It returns the new entry and the
// compaction's row number.
func (db *DB) AppendCompaction(ctx context.Context, agent, key, sessionID string, c compaction.Compaction, tokensAfter int64, calls ...*Call) (session.Entry, int64, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return session.Entry{}, 0, fmt.Errorf("committing a compaction: %w", err)
	}
	body, err := json.Marshal(compactionRow{Compaction: c, TokensAfter: max(0, tokensAfter)})
	if err != nil {
		return session.Entry{}, 0, fmt.Errorf("committing a compaction of %q: %w", k, err)
	}
	var out session.Entry
	var seq int64
	err = db.write(ctx, func(tx *sql.Tx) error {
		cur, err := db.current(ctx, tx, a, k, sessionID)
		if err != nil {
			return err
		}
		if seq, err = db.appendRow(ctx, tx, sessionID, roleCompaction, string(body)); err != nil {
			return err
		}
		if testHookCompacting != nil {
			if err := testHookCompacting(); err != nil {
				return err
			}
		}
		next := cur.Clone()
		next.CompactionCount++
		next.TotalTokens = max(0, tokensAfter)
		stale := false
		next.TotalTokensFresh = &stale
		next.UpdatedAt = max(cur.UpdatedAt, ms(db.now()))
		if err := db.putEntry(ctx, tx, a, k, next); err != nil {
			return err
		}
		out = next
		return db.insertCalls(ctx, tx, ms(db.now()), a, k, sessionID, calls)
	})
	if err != nil {
		return session.Entry{}, 0, fmt.Errorf("committing a compaction of %q: %w", k, err)
	}
	return out, seq, nil
}

// RecordFlush records on a session that a memory flush ran at at (spec
// context.md R6.4): memoryFlushAt, and memoryFlushCompactionCount set to
// the compactionCount, so that no second flush runs before the next
// compaction. calls are the flush's model calls, written to the usage
// ledger in the same transaction. ErrSessionChanged says the session no
// longer has the transcript sessionID.
func (db *DB) RecordFlush(ctx context.Context, agent, key, sessionID string, at time.Time, calls ...*Call) (session.Entry, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return session.Entry{}, fmt.Errorf("recording a memory flush: %w", err)
	}
	var out session.Entry
	err = db.write(ctx, func(tx *sql.Tx) error {
		cur, err := db.current(ctx, tx, a, k, sessionID)
		if err != nil {
			return err
		}
		next := cur.Clone()
		count := cur.CompactionCount
		next.MemoryFlushAt, next.MemoryFlushCompactionCount = ms(at), &count
		if err := db.putEntry(ctx, tx, a, k, next); err != nil {
			return err
		}
		out = next
		return db.insertCalls(ctx, tx, ms(db.now()), a, k, sessionID, calls)
	})
	if err != nil {
		return session.Entry{}, fmt.Errorf("recording a memory flush of %q: %w", k, err)
	}
	return out, nil
}

// current reads a session's entry inside tx and checks it still has the
// transcript sessionID.
func (db *DB) current(ctx context.Context, tx *sql.Tx, agent, key, sessionID string) (session.Entry, error) {
	cur, err := db.getEntry(ctx, tx, agent, key)
	if errors.Is(err, ErrNotFound) || err == nil && cur.SessionID != sessionID {
		return session.Entry{}, ErrSessionChanged
	}
	return cur, err
}

// lastSeqSQL is the number of a session's last row.
const lastSeqSQL = `SELECT seq FROM transcripts WHERE session_id = ? ORDER BY seq DESC LIMIT 1`

// appendRow appends one row that is not a message and returns its number.
func (db *DB) appendRow(ctx context.Context, tx *sql.Tx, sessionID, role, body string) (int64, error) {
	stmt := tx.StmtContext(ctx, db.appendStmt)
	defer stmt.Close()
	if _, err := stmt.ExecContext(ctx, sessionID, ms(db.now()), role, body, nil); err != nil {
		return 0, err
	}
	var seq int64
	err := tx.QueryRowContext(ctx, lastSeqSQL, sessionID).Scan(&seq)
	return seq, err
}
