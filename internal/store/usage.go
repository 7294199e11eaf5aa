package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// What a model call was made for: the kind column of the usage ledger.
const (
	CallTurn        = "turn"         // a turn asked by a client or a channel
	CallHeartbeat   = "heartbeat"    // a scheduled heartbeat's turn
	CallCron        = "cron"         // a cron job's turn
	CallHook        = "hook"         // a webhook's or the boot checklist's turn
	CallSubagent    = "subagent"     // a subagent's turn
	CallSummary     = "summary"      // a compaction's summary
	CallMemoryFlush = "memory-flush" // the silent turn before a compaction
	CallImage       = "image"        // the image tool's model
	CallPDF         = "pdf"          // the pdf tool's model
)

// Call is one model call that answered: a row of the usage ledger.
// Tokens are counted apart: Input is the prompt's tokens that were
// neither read from nor written to the provider's prompt cache.
type Call struct {
	// At is when it answered, in Unix milliseconds; 0: when the row is
	// written.
	At int64
	// AgentID and SessionKey are the turn's; the commit of a turn fills
	// them (and the session's transcript id) itself.
	AgentID, SessionKey string
	Kind                string
	Provider, Model     string
	Input, Output       int64
	CacheRead           int64
	CacheWrite          int64
	// Cost is in millionths of a US dollar; Priced says the model had a
	// price (config.ModelCost), so a zero cost is free, not unknown.
	Cost   int64
	Priced bool
}

// Tokens are all the call's tokens.
func (c *Call) Tokens() int64 { return c.Input + c.Output + c.CacheRead + c.CacheWrite }

// insertCallSQL writes one ledger row; prepared once in Open, as it runs
// in every turn's commit.
const insertCallSQL = `INSERT INTO usage (at, agent_id, session_key, session_id, kind, provider, model,
	input, output, cache_read, cache_write, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertCalls writes calls inside a write transaction; a call without a
// time gets now, and one without an agent the turn's (agent, key, id).
func (db *DB) insertCalls(ctx context.Context, tx *sql.Tx, now int64, agent, key, sessionID string, calls []*Call) error {
	if len(calls) == 0 {
		return nil
	}
	stmt := tx.StmtContext(ctx, db.insertCallStmt)
	defer stmt.Close()
	for i, c := range calls {
		if err := c.check(); err != nil {
			return fmt.Errorf("usage row %d: %w", i, err)
		}
		at, a, k, id := c.At, c.AgentID, c.SessionKey, ""
		if at == 0 {
			at = now
		}
		if a == "" {
			a, k, id = agent, key, sessionID
		}
		var cost any
		if c.Priced {
			cost = c.Cost
		}
		res, err := stmt.ExecContext(ctx, at, a, k, id, c.Kind, c.Provider, c.Model,
			c.Input, c.Output, c.CacheRead, c.CacheWrite, cost)
		if err != nil {
			return fmt.Errorf("usage row %d: %w", i, err)
		}
		rowID, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("usage row %d: %w", i, err)
		}
		db.month.stage(tx, staged{id: rowID, at: at, call: c})
	}
	return nil
}

// check refuses a row the ledger cannot sum: negative counts or cost, no
// kind or model.
func (c *Call) check() error {
	switch {
	case c.Input < 0 || c.Output < 0 || c.CacheRead < 0 || c.CacheWrite < 0 || c.Cost < 0:
		return errors.New("negative token count or cost")
	case c.At < 0:
		// The hourly roll-up's buckets start at the epoch.
		return errors.New("a time before 1970")
	case c.Kind == "":
		return errors.New("no kind")
	case c.Model == "":
		return errors.New("no model")
	}
	return nil
}

// RecordCalls writes model calls outside a turn's commit (a compaction's
// summary, a memory flush, the image model) in one transaction. Each
// call names its agent; a call without a time gets now.
func (db *DB) RecordCalls(ctx context.Context, calls ...*Call) error {
	for i, c := range calls {
		if strings.TrimSpace(c.AgentID) == "" {
			return fmt.Errorf("recording model calls: call %d: empty agent id", i)
		}
	}
	err := db.write(ctx, func(tx *sql.Tx) error {
		return db.insertCalls(ctx, tx, ms(db.now()), "", "", "", calls)
	})
	if err != nil {
		return fmt.Errorf("recording model calls: %w", err)
	}
	return nil
}

// Ways to group a usage query's rows (UsageQuery.By).
const (
	ByAgent = "agent"
	ByModel = "model" // provider/model
	ByDay   = "day"   // YYYY-MM-DD in UsageQuery.Location
	ByKind  = "kind"
)

// UsageQuery selects ledger rows: those of [Since, Until) (Unix
// milliseconds; Until 0: no end), of one agent when AgentID is set,
// grouped by By ("" for totals alone).
type UsageQuery struct {
	Since, Until int64
	AgentID      string
	By           string
	// Location is the time zone of ByDay's days; nil is UTC.
	Location *time.Location
}

// UsageTotals sums ledger rows. Unpriced counts the calls of models
// with no price, whose cost is not in Cost.
type UsageTotals struct {
	Calls         int64
	Input, Output int64
	CacheRead     int64
	CacheWrite    int64
	Cost          int64
	Unpriced      int64
}

// Tokens are all the tokens summed.
func (t *UsageTotals) Tokens() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// Add adds o to t.
func (t *UsageTotals) Add(o *UsageTotals) {
	t.Calls += o.Calls
	t.Input += o.Input
	t.Output += o.Output
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
	t.Cost += o.Cost
	t.Unpriced += o.Unpriced
}

// UsageGroup is one group of a usage query: its key (agent id,
// provider/model, day or kind) and sums.
type UsageGroup struct {
	Key string
	UsageTotals
}

// dayBucket is the width of the buckets ByDay folds into days when it
// reads the ledger itself: a quarter of an hour divides every time
// zone's offset and its changes.
const dayBucket = 15 * 60 * 1000

// hourMs is the width of a usage_hourly row (migrations 10 and 11).
const hourMs = 3600 * 1000

// usageGroupKeys are the SQL expressions of each grouping, in the
// ledger (usage) and in its hourly roll-up (usage_hourly).
var usageGroupKeys = map[string][2]string{
	"":      {"''", "''"},
	ByAgent: {"agent_id", "agent_id"},
	ByModel: {"provider || '/' || model", "provider || '/' || model"},
	ByKind:  {"kind", "kind"},
	ByDay:   {fmt.Sprintf("at / %d", dayBucket), "hour"},
}

// Usage sums the ledger rows q selects: the totals, and the groups in
// key order when q.By is set. The whole hours of the range are read from
// the hourly roll-up, the ends from the ledger; for ByDay, so are the
// hours a day boundary of q.Location cuts (in zones offset by half or
// quarter hours). Rows still waiting for the roll-up are read from the
// ledger. Everything is read in one transaction: a roll-up committing
// meanwhile moves no row between the two.
func (db *DB) Usage(ctx context.Context, q UsageQuery) (UsageTotals, []UsageGroup, error) {
	if _, ok := usageGroupKeys[q.By]; !ok {
		return UsageTotals{}, nil, fmt.Errorf("querying usage: unknown grouping %q (want agent, model, day or kind)", q.By)
	}
	var total UsageTotals
	var groups []UsageGroup
	err := db.read(ctx, func(tx *sql.Tx) (err error) {
		total, groups, err = usageIn(ctx, tx, q)
		return err
	})
	if err != nil {
		return UsageTotals{}, nil, fmt.Errorf("querying usage: %w", err)
	}
	return total, groups, nil
}

// read runs fn in a read transaction: one snapshot of the database.
func (db *DB) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// usageIn is Usage in the read transaction tx.
func usageIn(ctx context.Context, tx *sql.Tx, q UsageQuery) (UsageTotals, []UsageGroup, error) {
	u := usageRead{tx: tx, q: q, loc: orUTC(q.Location), agent: strings.ToLower(strings.TrimSpace(q.AgentID))}
	if err := tx.QueryRowContext(ctx, `SELECT upto FROM usage_rolled`).Scan(&u.upto); err != nil {
		return UsageTotals{}, nil, fmt.Errorf("reading the roll-up's mark: %w", err)
	}
	since := max(q.Since, 0)
	until := q.Until
	if until <= 0 {
		until = 1<<63 - 1
	}
	first := (since + hourMs - 1) / hourMs * hourMs
	last := until / hourMs * hourMs
	err := u.waiting(ctx, since, until)
	if first >= last {
		err = errors.Join(err, u.cut(ctx, since, until))
	} else {
		err = errors.Join(err, u.cut(ctx, since, first), u.hours(ctx, first, last), u.cut(ctx, last, until))
	}
	if err != nil {
		return UsageTotals{}, nil, err
	}
	var total UsageTotals
	for i := range u.groups {
		total.Add(&u.groups[i].UsageTotals)
	}
	if q.By == "" {
		return total, nil, nil
	}
	return total, merge(u.groups), nil
}

// usageRead gathers the groups of one usage query.
type usageRead struct {
	tx     *sql.Tx
	q      UsageQuery
	loc    *time.Location
	agent  string
	upto   int64 // the rows the roll-up holds: ids up to this
	groups []UsageGroup
}

const usageSums = `count(*), sum(input), sum(output), sum(cache_read), sum(cache_write), coalesce(sum(cost), 0), count(*) - count(cost)`

// waiting adds the groups of the rows in [from, to) the roll-up does not
// hold yet: at most about rollEvery rows, at the table's end.
func (u *usageRead) waiting(ctx context.Context, from, to int64) error {
	return u.query(ctx, `SELECT `+usageGroupKeys[u.q.By][0]+`, `+usageSums+` FROM usage WHERE id > ? AND at >= ? AND at < ?`,
		[]any{u.upto, from, to}, dayBucket, nil)
}

// cut adds the groups of the rolled-up rows in [from, to), a range
// within at most two hours: their rows are found between the first and
// last ids the roll-up keeps for those hours.
func (u *usageRead) cut(ctx context.Context, from, to int64) error {
	if from >= to {
		return nil
	}
	var lo, hi sql.NullInt64
	err := u.tx.QueryRowContext(ctx, `SELECT min(first_id), max(last_id) FROM usage_hourly WHERE hour >= ? AND hour <= ?`,
		from/hourMs, (to-1)/hourMs).Scan(&lo, &hi)
	if err != nil || !lo.Valid {
		return err
	}
	return u.query(ctx, `SELECT `+usageGroupKeys[u.q.By][0]+`, `+usageSums+` FROM usage WHERE id >= ? AND id <= ? AND at >= ? AND at < ?`,
		[]any{lo.Int64, min(hi.Int64, u.upto), from, to}, dayBucket, nil)
}

// hours adds the groups of the roll-up's hours in [from, to), whole
// hours. For ByDay, an hour a day boundary cuts is read from the ledger.
func (u *usageRead) hours(ctx context.Context, from, to int64) error {
	var cut []int64
	err := u.query(ctx, `SELECT `+usageGroupKeys[u.q.By][1]+`, sum(calls), sum(input), sum(output), sum(cache_read), sum(cache_write), sum(cost), sum(unpriced)
		FROM usage_hourly WHERE hour >= ? AND hour < ?`, []any{from / hourMs, to / hourMs}, hourMs, func(hour int64) bool {
		start := hour * hourMs
		if u.day(start) == u.day(start+hourMs-1) {
			return true
		}
		cut = append(cut, start)
		return false
	})
	for _, start := range cut {
		err = errors.Join(err, u.cut(ctx, start, start+hourMs))
	}
	return err
}

// query runs sql with args, of the agent when one is asked, and adds its
// groups. A ByDay key is a bucket of width ms; keep, when set, says
// whether a bucket's row is to be counted.
func (u *usageRead) query(ctx context.Context, sql string, args []any, width int64, keep func(int64) bool) error {
	if u.agent != "" {
		sql += " AND agent_id = ?"
		args = append(args, u.agent)
	}
	rows, err := u.tx.QueryContext(ctx, sql+" GROUP BY 1", args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var g UsageGroup
		var k any
		if err := rows.Scan(&k, &g.Calls, &g.Input, &g.Output, &g.CacheRead, &g.CacheWrite, &g.Cost, &g.Unpriced); err != nil {
			return err
		}
		if u.q.By == ByDay {
			n, _ := k.(int64)
			if keep != nil && !keep(n) {
				continue
			}
			g.Key = u.day(n * width)
		} else {
			g.Key = fmt.Sprint(k)
		}
		u.groups = append(u.groups, g)
	}
	return rows.Err()
}

// day is the calendar day of ms in the query's zone.
func (u *usageRead) day(ms int64) string {
	return time.UnixMilli(ms).In(u.loc).Format(time.DateOnly)
}

// orUTC is loc, or UTC for nil.
func orUTC(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// merge sorts groups by key and sums those with the same key (the
// quarter hours of one day).
func merge(groups []UsageGroup) []UsageGroup {
	slices.SortStableFunc(groups, func(a, b UsageGroup) int { return strings.Compare(a.Key, b.Key) })
	out := groups[:0]
	for _, g := range groups {
		if n := len(out); n > 0 && out[n-1].Key == g.Key {
			out[n-1].Add(&g.UsageTotals)
			continue
		}
		out = append(out, g)
	}
	return out
}
