package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LastHeartbeat is when agentID's last scheduled heartbeat ran; zero and
// false when it never did.
func (db *DB) LastHeartbeat(ctx context.Context, agentID string) (time.Time, bool, error) {
	var ms int64
	err := db.r.QueryRowContext(ctx, `SELECT last_at FROM heartbeat_state WHERE agent_id = ?`, agentID).Scan(&ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("reading the last heartbeat of %s: %w", agentID, err)
	}
	return time.UnixMilli(ms), true, nil
}

// SetLastHeartbeat records that agentID's scheduled heartbeat ran at at.
func (db *DB) SetLastHeartbeat(ctx context.Context, agentID string, at time.Time) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO heartbeat_state (agent_id, last_at) VALUES (?, ?)
			ON CONFLICT (agent_id) DO UPDATE SET last_at = excluded.last_at`, agentID, ms(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the last heartbeat of %s: %w", agentID, err)
	}
	return nil
}
