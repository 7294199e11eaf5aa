package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"talon/internal/llm"
	"talon/internal/session"
)

// SessionRow is one session of a listing.
type SessionRow struct {
	Key   string
	Entry session.Entry
}

// ids lower-cases and trims an agent id and a session key, which callers
// pass in canonical form (session.Canonical). It refuses an empty agent id
// and the keys session.CheckKey refuses.
func ids(agent, key string) (string, string, error) {
	a := strings.ToLower(strings.TrimSpace(agent))
	if a == "" {
		return "", "", errors.New("empty agent id")
	}
	if err := session.CheckKey(key); err != nil {
		return "", "", err
	}
	return a, strings.ToLower(strings.TrimSpace(key)), nil
}

// getEntrySQL and putEntrySQL are prepared once in Open: re-parsing them
// on every turn was a measurable share of the gateway's overhead.
const (
	getEntrySQL = `SELECT entry FROM sessions WHERE agent_id = ? AND key = ?`
	putEntrySQL = `INSERT INTO sessions (agent_id, key, session_id, label, updated_at, entry)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (agent_id, key) DO UPDATE SET
			session_id = excluded.session_id, label = excluded.label,
			updated_at = excluded.updated_at, entry = excluded.entry`
)

// getEntry reads an entry inside tx, or from the read pool when tx is nil.
func (db *DB) getEntry(ctx context.Context, tx *sql.Tx, agent, key string) (session.Entry, error) {
	stmt := db.getStmt
	if tx != nil {
		stmt = tx.StmtContext(ctx, db.getStmtW)
		defer stmt.Close()
	}
	var raw string
	err := stmt.QueryRowContext(ctx, agent, key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return session.Entry{}, ErrNotFound
	}
	if err != nil {
		return session.Entry{}, err
	}
	var e session.Entry
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return session.Entry{}, fmt.Errorf("decoding entry: %w", err)
	}
	return e, nil
}

func (db *DB) putEntry(ctx context.Context, tx *sql.Tx, agent, key string, e session.Entry) error {
	if e.SessionID == "" {
		return errors.New("entry has no sessionId")
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding entry: %w", err)
	}
	var label any
	if e.Label != "" {
		label = e.Label
	}
	stmt := tx.StmtContext(ctx, db.putStmt)
	defer stmt.Close()
	_, err = stmt.ExecContext(ctx, agent, key, e.SessionID, label, e.UpdatedAt, string(b))
	return err
}

// GetSession returns a session's entry, or ErrNotFound.
func (db *DB) GetSession(ctx context.Context, agent, key string) (session.Entry, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return session.Entry{}, fmt.Errorf("getting session: %w", err)
	}
	e, err := db.getEntry(ctx, nil, a, k)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return session.Entry{}, fmt.Errorf("getting session %q: %w", k, err)
	}
	return e, err
}

// touchSQL creates a session row or raises its updatedAt, in one
// statement, and returns its transcript id: the hot path of every turn.
const touchSQL = `INSERT INTO sessions (agent_id, key, session_id, label, updated_at, entry)
	VALUES (?1, ?2, ?3, NULL, ?4, json_object('sessionId', ?3, 'updatedAt', ?4))
	ON CONFLICT (agent_id, key) DO UPDATE SET
		updated_at = max(updated_at, excluded.updated_at),
		entry = json_set(entry, '$.updatedAt', max(updated_at, excluded.updated_at))
	RETURNING session_id`

// createSQL is touchSQL's insert alone, for a session known to be new: no
// conflict clause and no RETURNING, whose row SQLite buffers in a
// temporary table; together a measurable share of a stateless turn.
const createSQL = `INSERT INTO sessions (agent_id, key, session_id, label, updated_at, entry)
	VALUES (?1, ?2, ?3, NULL, ?4, json_object('sessionId', ?3, 'updatedAt', ?4))`

// tokenMembers are the json_set paths and values that write a turn's
// token counts and cost (session.Tokens, parameters ?5 to ?17) over prev, the
// entry as it was: the turn's figures and the model's window (0 when
// unknown, which Entry omits) replace the last turn's, and the cumulative
// counters grow. The statements that write a session row during a turn
// all take them from here, so the commit never decodes the entry.
func tokenMembers(prev string) string {
	grow := func(field, param string) string {
		return fmt.Sprintf("'$.%s', coalesce(json_extract(%s, '$.%s'), 0) + %s", field, prev, field, param)
	}
	// Costs are micro-dollars in the parameters and dollars in the
	// entry, as OpenClaw's estimatedCostUsd; rounding to the micro-dollar
	// keeps the float sum from drifting.
	usd := func(micros string) string { return "round(" + micros + " / 1e6, 6)" }
	return strings.Join([]string{
		"'$.inputTokens', ?5, '$.outputTokens', ?6, '$.totalTokens', ?7, '$.contextTokens', ?8",
		grow("cumulativeInputTokens", "?9"), grow("cumulativeOutputTokens", "?10"), grow("cumulativeTotalTokens", "?11"),
		"'$.cacheRead', ?12, '$.cacheWrite', ?13, '$.estimatedCostUsd', " + usd("?14"),
		grow("cumulativeCacheReadTokens", "?15"), grow("cumulativeCacheWriteTokens", "?16"),
		fmt.Sprintf("'$.cumulativeCostUsd', round(coalesce(json_extract(%s, '$.cumulativeCostUsd'), 0) + %s, 6)", prev, usd("?17")),
	}, ", ")
}

// createTokensSQL and touchTokensSQL are createSQL and touchSQL that also
// write the token counts of the turn's first model call; tokensSQL writes
// those of a later one, if the session still has the transcript the turn
// appends to (a reset meanwhile starts the counters afresh). Counts a
// model reported make totalTokens fresh again after a compaction marked
// it stale (AppendCompaction).
var (
	createTokensSQL = `INSERT INTO sessions (agent_id, key, session_id, label, updated_at, entry)
	VALUES (?1, ?2, ?3, NULL, ?4, json_set(json_object('sessionId', ?3, 'updatedAt', ?4), ` + tokenMembers("NULL") + `))`
	touchTokensSQL = `INSERT INTO sessions (agent_id, key, session_id, label, updated_at, entry)
	VALUES (?1, ?2, ?3, NULL, ?4, json_set(json_object('sessionId', ?3, 'updatedAt', ?4), ` + tokenMembers("NULL") + `))
	ON CONFLICT (agent_id, key) DO UPDATE SET
		updated_at = max(updated_at, excluded.updated_at),
		entry = json_remove(json_set(entry, '$.updatedAt', max(updated_at, excluded.updated_at), ` + tokenMembers("entry") + `), '$.totalTokensFresh')
	RETURNING session_id`
	tokensSQL = `UPDATE sessions SET entry = json_remove(json_set(entry, ` + tokenMembers("entry") + `), '$.totalTokensFresh')
	WHERE agent_id = ?1 AND key = ?2 AND session_id = ?3`
)

// tokenArgs are a statement's arguments: agent, key, session id (or the
// id of a new session), now (which tokensSQL does not use), then the
// token counts; tok nil counts none.
func tokenArgs(agent, key, id string, now int64, tok *session.Tokens) []any {
	args := []any{agent, key, id, now}
	if tok != nil {
		args = append(args, tok.Input, tok.Output, tok.Context, tok.Window, tok.AddInput, tok.AddOutput, tok.AddTotal,
			tok.CacheRead, tok.CacheWrite, tok.Cost, tok.AddCacheRead, tok.AddCacheWrite, tok.AddCost)
	}
	return args
}

// BeginTurn records a turn on a session in one durable transaction: it
// creates the session (or raises its updatedAt to now) and appends msgs to
// its transcript, and returns the session's transcript id.
func (db *DB) BeginTurn(ctx context.Context, agent, key string, msgs ...llm.Message) (string, error) {
	return db.StartTurn(ctx, agent, key, false, nil, Items(msgs...))
}

// BeginFreshTurn is BeginTurn for a session key the caller has just minted
// from a random id, so that no session can have it yet (a stateless HTTP
// request). It is cheaper and has the same effect; should the key exist
// after all, it does what BeginTurn does.
func (db *DB) BeginFreshTurn(ctx context.Context, agent, key string, msgs ...llm.Message) (string, error) {
	return db.StartTurn(ctx, agent, key, true, nil, Items(msgs...))
}

// StartTurn is BeginTurn (BeginFreshTurn when fresh) that appends items
// (messages with their usage, a pruning projection) and also writes the
// turn's token counts, tok (nil: none), in the same transaction.
func (db *DB) StartTurn(ctx context.Context, agent, key string, fresh bool, tok *session.Tokens, msgs []Item) (string, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return "", fmt.Errorf("beginning a turn: %w", err)
	}
	now := ms(db.now())
	create, touch := db.createStmt, db.touchStmt
	if tok == nil || !tok.Pending() {
		tok = nil
	} else {
		create, touch = db.createTokensStmt, db.touchTokensStmt
	}
	var id string
	err = db.write(ctx, func(tx *sql.Tx) error {
		if fresh {
			// A taken key fails the statement alone (SQLite rolls back the
			// statement, not the transaction): the upsert then does what
			// BeginTurn does. Other errors may have ended the transaction.
			id = NewID()
			stmt := tx.StmtContext(ctx, create)
			_, err := stmt.ExecContext(ctx, tokenArgs(a, k, id, now, tok)...)
			stmt.Close()
			switch constraintCode(err) {
			case 0:
				if err != nil {
					return err
				}
				return db.appendTurnTx(ctx, tx, now, a, k, id, msgs)
			case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			default:
				return err
			}
		}
		stmt := tx.StmtContext(ctx, touch)
		defer stmt.Close()
		if err := stmt.QueryRowContext(ctx, tokenArgs(a, k, NewID(), now, tok)...).Scan(&id); err != nil {
			return err
		}
		return db.appendTurnTx(ctx, tx, now, a, k, id, msgs)
	})
	if err != nil {
		return "", fmt.Errorf("beginning a turn on %q: %w", k, err)
	}
	return id, nil
}

// appendTurnTx appends a turn's items to its transcript and the model
// calls they carry (Item.Call) to the usage ledger: one commit, so a
// crash neither loses a call whose answer is stored nor counts one twice.
func (db *DB) appendTurnTx(ctx context.Context, tx *sql.Tx, now int64, agent, key, sessionID string, items []Item) error {
	if err := db.appendTx(ctx, tx, sessionID, items); err != nil {
		return err
	}
	var calls []*Call
	for i := range items {
		if items[i].Call != nil {
			calls = append(calls, items[i].Call)
		}
		calls = append(calls, items[i].Also...)
	}
	return db.insertCalls(ctx, tx, now, agent, key, sessionID, calls)
}

// ContinueTurn appends items to a turn's transcript, sessionID, and writes
// the turn's token counts, tok, to its session in one transaction: the
// commits of a turn after StartTurn's. The counts are written only while
// the session still has that transcript (a reset meanwhile starts afresh).
func (db *DB) ContinueTurn(ctx context.Context, agent, key, sessionID string, tok *session.Tokens, msgs []Item) error {
	a, k, err := ids(agent, key)
	if err != nil {
		return fmt.Errorf("continuing a turn: %w", err)
	}
	if sessionID == "" {
		return errors.New("continuing a turn: empty session id")
	}
	if len(msgs) == 0 && (tok == nil || !tok.Pending()) {
		return nil
	}
	now := ms(db.now())
	err = db.write(ctx, func(tx *sql.Tx) error {
		if err := db.appendTurnTx(ctx, tx, now, a, k, sessionID, msgs); err != nil {
			return err
		}
		if tok == nil || !tok.Pending() {
			return nil
		}
		stmt := tx.StmtContext(ctx, db.tokensStmt)
		defer stmt.Close()
		_, err := stmt.ExecContext(ctx, tokenArgs(a, k, sessionID, now, tok)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("continuing a turn on %q: %w", k, err)
	}
	return nil
}

// PutSession writes a session's entry as given, creating or replacing it.
// It checks only that the entry has a sessionId; label uniqueness is
// PatchSession's.
func (db *DB) PutSession(ctx context.Context, agent, key string, e session.Entry) error {
	a, k, err := ids(agent, key)
	if err != nil {
		return fmt.Errorf("putting session: %w", err)
	}
	if err := db.write(ctx, func(tx *sql.Tx) error { return db.putEntry(ctx, tx, a, k, e) }); err != nil {
		return fmt.Errorf("putting session %q: %w", k, err)
	}
	return nil
}

// PatchSession applies a sessions.patch request (spec §5.3) to a session
// and returns the new entry. A missing session is created with a new
// sessionId and updatedAt = now; an existing one has updatedAt raised to
// now. A label must be unique among the agent's sessions. Validation
// failures are *session.ValidationError, returned unwrapped so that their
// message is the protocol's.
func (db *DB) PatchSession(ctx context.Context, agent, key string, patch json.RawMessage, now time.Time) (session.Entry, error) {
	return db.PatchSessionWith(ctx, agent, key, patch, now, nil)
}

// PatchSessionWith is PatchSession with the fields session.Patch leaves
// to its caller (session.CallerFields: model, thinkingLevel): fn, when not
// nil, gets the entry as it was and as the patch left it, inside the same
// transaction, and may change next or refuse the patch. A
// *session.ValidationError from fn is returned unwrapped, like the
// patch's own.
func (db *DB) PatchSessionWith(ctx context.Context, agent, key string, patch json.RawMessage, now time.Time,
	fn func(prev session.Entry, next *session.Entry) error) (session.Entry, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return session.Entry{}, fmt.Errorf("patching session: %w", err)
	}
	p, err := session.ParsePatch(patch)
	if err != nil {
		return session.Entry{}, err
	}
	var out session.Entry
	var invalid error
	err = db.write(ctx, func(tx *sql.Tx) error {
		cur, err := db.getEntry(ctx, tx, a, k)
		switch {
		case errors.Is(err, ErrNotFound):
			cur = session.Entry{SessionID: NewID(), UpdatedAt: ms(now)}
		case err != nil:
			return err
		default:
			cur.UpdatedAt = max(cur.UpdatedAt, ms(now))
		}
		next, err := p.Apply(k, cur)
		if err != nil {
			invalid = err
			return err
		}
		if fn != nil {
			if err := fn(cur, &next); err != nil {
				var ve *session.ValidationError
				if errors.As(err, &ve) {
					invalid = err
				}
				return err
			}
		}
		if p.Sets("label") && next.Label != "" {
			var other string
			err := tx.QueryRowContext(ctx, `SELECT key FROM sessions WHERE agent_id = ? AND label = ? AND key <> ? LIMIT 1`,
				a, next.Label, k).Scan(&other)
			if err == nil {
				invalid = &session.ValidationError{Message: "label already in use: " + next.Label}
				return invalid
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if err := db.putEntry(ctx, tx, a, k, next); err != nil {
			return err
		}
		out = next
		return nil
	})
	if invalid != nil {
		return session.Entry{}, invalid
	}
	if err != nil {
		return session.Entry{}, fmt.Errorf("patching session %q: %w", k, err)
	}
	return out, nil
}

// ResetSession starts a new transcript for a session: a new sessionId,
// updatedAt raised to now, token counts and costs and the compaction and memory
// flush counters cleared (the model's context window stays) and
// systemSent and abortedLastRun false; settings and unknown fields stay.
// The old
// transcript stays in the store under the old id. A missing session is
// created.
func (db *DB) ResetSession(ctx context.Context, agent, key string, now time.Time) (session.Entry, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return session.Entry{}, fmt.Errorf("resetting session: %w", err)
	}
	var out session.Entry
	err = db.write(ctx, func(tx *sql.Tx) error {
		cur, err := db.getEntry(ctx, tx, a, k)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		next := cur.Clone()
		next.SessionID = NewID()
		next.UpdatedAt = max(cur.UpdatedAt, ms(now))
		next.InputTokens, next.OutputTokens, next.TotalTokens = 0, 0, 0
		next.CumulativeInputTokens, next.CumulativeOutputTokens, next.CumulativeTotalTokens = 0, 0, 0
		next.CacheRead, next.CacheWrite, next.EstimatedCostUsd = 0, 0, 0
		next.CumulativeCacheReadTokens, next.CumulativeCacheWriteTokens, next.CumulativeCostUsd = 0, 0, 0
		next.SystemSent, next.AbortedLastRun = false, false
		next.CompactionCount, next.MemoryFlushAt, next.MemoryFlushCompactionCount, next.TotalTokensFresh = 0, 0, nil, nil
		if err := db.putEntry(ctx, tx, a, k, next); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return session.Entry{}, fmt.Errorf("resetting session %q: %w", k, err)
	}
	return out, nil
}

// DeleteSession removes a session's entry and reports whether it existed.
// Its transcripts stay: they are append-only.
func (db *DB) DeleteSession(ctx context.Context, agent, key string) (bool, error) {
	a, k, err := ids(agent, key)
	if err != nil {
		return false, fmt.Errorf("deleting session: %w", err)
	}
	var n int64
	err = db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE agent_id = ? AND key = ?`, a, k)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("deleting session %q: %w", k, err)
	}
	return n > 0, nil
}

// ListSessions returns an agent's sessions, most recently updated first
// (ties by key), skipping offset rows and returning at most limit (all
// when limit <= 0).
func (db *DB) ListSessions(ctx context.Context, agent string, limit, offset int) ([]SessionRow, error) {
	a := strings.ToLower(strings.TrimSpace(agent))
	if a == "" {
		return nil, errors.New("listing sessions: empty agent id")
	}
	if limit <= 0 {
		limit = -1
	}
	return db.listRows(ctx, "listing sessions", `SELECT key, entry FROM sessions WHERE agent_id = ?
		ORDER BY updated_at DESC, key LIMIT ? OFFSET ?`, a, limit, max(offset, 0))
}

// ListSubagentSessions returns an agent's subagent sessions
// (agent:<id>:subagent:…), most recently updated first: the only sessions
// that record a spawnedBy (session.ApplyPatch refuses it elsewhere), so
// the candidates for a session's children. It reads those rows alone, a
// range of the primary key.
func (db *DB) ListSubagentSessions(ctx context.Context, agent string) ([]SessionRow, error) {
	a := strings.ToLower(strings.TrimSpace(agent))
	if a == "" {
		return nil, errors.New("listing subagent sessions: empty agent id")
	}
	prefix := session.Subagent(a, "")
	// ';' follows ':', so [prefix, prefix with ';' last) holds exactly
	// the keys that start with prefix.
	end := prefix[:len(prefix)-1] + ";"
	return db.listRows(ctx, "listing subagent sessions", `SELECT key, entry FROM sessions
		WHERE agent_id = ? AND key >= ? AND key < ? ORDER BY updated_at DESC, key`, a, prefix, end)
}

func (db *DB) listRows(ctx context.Context, step, query string, args ...any) ([]SessionRow, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	defer rows.Close()
	var out []SessionRow
	for rows.Next() {
		var r SessionRow
		var raw string
		if err := rows.Scan(&r.Key, &raw); err != nil {
			return nil, fmt.Errorf("%s: %w", step, err)
		}
		if err := json.Unmarshal([]byte(raw), &r.Entry); err != nil {
			return nil, fmt.Errorf("%s: decoding %q: %w", step, r.Key, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	return out, nil
}
