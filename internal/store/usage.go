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

// dayBucket is the width of the buckets ByDay folds into days: a
// quarter of an hour divides every time zone's offset and its changes.
const dayBucket = 15 * 60 * 1000

// usageGroupKeys are the SQL expressions of each grouping.
var usageGroupKeys = map[string]string{
	"":      "''",
	ByAgent: "agent_id",
	ByModel: "provider || '/' || model",
	ByKind:  "kind",
	ByDay:   fmt.Sprintf("at / %d", dayBucket),
}

// Usage sums the ledger rows q selects: the totals, and the groups in
// key order when q.By is set.
func (db *DB) Usage(ctx context.Context, q UsageQuery) (UsageTotals, []UsageGroup, error) {
	key, ok := usageGroupKeys[q.By]
	if !ok {
		return UsageTotals{}, nil, fmt.Errorf("querying usage: unknown grouping %q (want agent, model, day or kind)", q.By)
	}
	until := q.Until
	if until <= 0 {
		until = 1<<63 - 1
	}
	var where strings.Builder
	where.WriteString("at >= ? AND at < ?")
	args := []any{q.Since, until}
	if a := strings.ToLower(strings.TrimSpace(q.AgentID)); a != "" {
		where.WriteString(" AND agent_id = ?")
		args = append(args, a)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+key+`, count(*), sum(input), sum(output), sum(cache_read), sum(cache_write),
		coalesce(sum(cost), 0), count(*) - count(cost) FROM usage WHERE `+where.String()+` GROUP BY 1`, args...)
	if err != nil {
		return UsageTotals{}, nil, fmt.Errorf("querying usage: %w", err)
	}
	defer rows.Close()
	var total UsageTotals
	var groups []UsageGroup
	for rows.Next() {
		var g UsageGroup
		var k any
		if err := rows.Scan(&k, &g.Calls, &g.Input, &g.Output, &g.CacheRead, &g.CacheWrite, &g.Cost, &g.Unpriced); err != nil {
			return UsageTotals{}, nil, fmt.Errorf("querying usage: %w", err)
		}
		total.Add(&g.UsageTotals)
		if q.By == ByDay {
			n, _ := k.(int64)
			g.Key = time.UnixMilli(n * dayBucket).In(orUTC(q.Location)).Format(time.DateOnly)
		} else {
			g.Key = fmt.Sprint(k)
		}
		groups = append(groups, g)
	}
	if err := rows.Err(); err != nil {
		return UsageTotals{}, nil, fmt.Errorf("querying usage: %w", err)
	}
	if q.By == "" {
		return total, nil, nil
	}
	return total, merge(groups), nil
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
