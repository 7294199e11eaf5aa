package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
)

// rollEvery is how many ledger rows may wait outside the hourly roll-up
// before a commit starts one. A query reads the waiting rows themselves
// (by rowid, the table's own order), so the bound keeps a query's
// extra scan under a millisecond, and a roll-up's batch to a few.
const rollEvery = 1024

// rollUpSQL adds the ledger rows with ids in (?1, ?2] to their hours.
const rollUpSQL = `INSERT INTO usage_hourly
	SELECT at / 3600000, agent_id, kind, provider, model, count(*), sum(input), sum(output),
		sum(cache_read), sum(cache_write), coalesce(sum(cost), 0), count(*) - count(cost), min(id), max(id)
	FROM usage WHERE id > ?1 AND id <= ?2 GROUP BY 1, 2, 3, 4, 5
	ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, input = input + excluded.input,
		output = output + excluded.output, cache_read = cache_read + excluded.cache_read,
		cache_write = cache_write + excluded.cache_write, cost = cost + excluded.cost,
		unpriced = unpriced + excluded.unpriced,
		first_id = min(first_id, excluded.first_id), last_id = max(last_id, excluded.last_id)`

// rollUps starts the hourly roll-up off the commit path: a commit that
// leaves rollEvery rows waiting starts one in the background, one at a
// time; Close waits for it.
type rollUps struct {
	// every is rollEvery; a test sets it to keep roll-ups its own.
	every   int64
	waiting atomic.Int64 // rows committed since the last roll-up, about
	running atomic.Bool
	mu      sync.Mutex // guards closed and wg.Add
	closed  bool
	wg      sync.WaitGroup
}

// committed counts n ledger rows just committed and starts a roll-up
// when enough wait.
func (db *DB) committed(n int) {
	if n > 0 && db.rolls.waiting.Add(int64(n)) >= db.rolls.every {
		db.startRollUp()
	}
}

// startRollUp starts a roll-up in the background unless one runs.
func (db *DB) startRollUp() {
	r := &db.rolls
	if !r.running.CompareAndSwap(false, true) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.running.Store(false)
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.running.Store(false)
		if err := db.rollUp(context.Background()); err != nil {
			// The rows wait for the next roll-up; queries read them meanwhile.
			db.log.Error("rolling up the usage ledger", "db", db.path, "err", err)
		}
	}()
}

// stopRollUps waits for a running roll-up and starts no other.
func (db *DB) stopRollUps() {
	r := &db.rolls
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

// rollUp adds every ledger row not yet rolled up to usage_hourly and
// moves usage_rolled.upto past them, in one transaction: a query sees
// each row either in its hour or among the waiting rows, never both.
func (db *DB) rollUp(ctx context.Context) error {
	return db.write(ctx, func(tx *sql.Tx) error {
		var upto, top int64
		if err := tx.QueryRowContext(ctx, `SELECT upto, (SELECT coalesce(max(id), 0) FROM usage) FROM usage_rolled`).Scan(&upto, &top); err != nil {
			return fmt.Errorf("reading the roll-up's mark: %w", err)
		}
		db.rolls.waiting.Store(0)
		if top <= upto {
			return nil
		}
		if _, err := tx.ExecContext(ctx, rollUpSQL, upto, top); err != nil {
			return fmt.Errorf("rolling up rows %d to %d: %w", upto+1, top, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE usage_rolled SET upto = ?`, top); err != nil {
			return fmt.Errorf("moving the roll-up's mark: %w", err)
		}
		return nil
	})
}

// countWaiting seeds the count of rows waiting for a roll-up, at open,
// and starts one when enough wait (after a crash, or a database from
// before migration 11).
func (db *DB) countWaiting(ctx context.Context) error {
	var n int64
	err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM usage WHERE id > (SELECT upto FROM usage_rolled)`).Scan(&n)
	if err != nil {
		return fmt.Errorf("counting usage rows to roll up: %w", err)
	}
	db.rolls.waiting.Store(n)
	if n >= db.rolls.every {
		db.startRollUp()
	}
	return nil
}
