package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"talon/internal/budget"
)

// monthTally is the running total of one calendar month's ledger rows,
// so that a budget check costs no scan: seeded once from the table (and
// again when the month changes), then moved by each commit that writes
// rows. Every row has an id that grows with each insert (the ledger
// deletes none), so a row is counted by the seed when its id is at most
// the seed's largest, and by add otherwise: never both, never neither.
type monthTally struct {
	mu         sync.Mutex
	seeded     bool
	start, end int64 // Unix ms, [start, end)
	maxID      int64 // the largest row id the seed saw
	tot        UsageTotals
	// pending are the rows a write transaction inserted, until it ends.
	pending map[*sql.Tx][]staged
}

// staged is a ledger row of a transaction not yet committed.
type staged struct {
	id, at int64
	call   *Call
}

func (m *monthTally) stage(tx *sql.Tx, r staged) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		m.pending = map[*sql.Tx][]staged{}
	}
	m.pending[tx] = append(m.pending[tx], r)
}

// unstage takes the rows tx inserted (committed or not).
func (m *monthTally) unstage(tx *sql.Tx) []staged {
	if tx == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := m.pending[tx]
	delete(m.pending, tx)
	return rows
}

// add counts committed rows the seed did not see.
func (m *monthTally) add(rows []staged) {
	if len(rows) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.seeded {
		return
	}
	for _, r := range rows {
		if r.id <= m.maxID || r.at < m.start || r.at >= m.end {
			continue
		}
		c := r.call
		m.tot.Calls++
		m.tot.Input += c.Input
		m.tot.Output += c.Output
		m.tot.CacheRead += c.CacheRead
		m.tot.CacheWrite += c.CacheWrite
		if c.Priced {
			m.tot.Cost += c.Cost
		} else {
			m.tot.Unpriced++
		}
	}
}

// MonthUsage sums the ledger rows of the calendar month (UTC,
// budget.Month) holding now. The first call of a month reads the table;
// the others read a running total that each commit moves, so that a
// budget check per turn costs no query.
func (db *DB) MonthUsage(ctx context.Context, now time.Time) (UsageTotals, error) {
	start, end := budget.Month(now)
	s, e := start.UnixMilli(), end.UnixMilli()
	m := &db.month
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seeded && m.start == s {
		return m.tot, nil
	}
	// Under the lock, so that a commit's add waits for the seed and is
	// then counted by row id.
	var t UsageTotals
	var maxID int64
	err := db.read(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM usage`).Scan(&maxID); err != nil {
			return err
		}
		var err error
		t, _, err = usageIn(ctx, tx, UsageQuery{Since: s, Until: e})
		return err
	})
	if err != nil {
		return UsageTotals{}, fmt.Errorf("summing the month's usage: %w", err)
	}
	m.seeded, m.start, m.end, m.maxID, m.tot = true, s, e, maxID, t
	return t, nil
}

// MarkAlert records that the budget alert of month (budget.MonthKey) has
// fired; first is false when it already had.
func (db *DB) MarkAlert(ctx context.Context, month string) (first bool, err error) {
	err = db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO budget_alerts (month, at) VALUES (?, ?)`, month, ms(db.now()))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		first = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("recording the budget alert of %s: %w", month, err)
	}
	return first, nil
}
