package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"talon/internal/automation"
)

// CronImported counts what ImportCron did.
type CronImported struct {
	Jobs        int // jobs added
	JobsPresent int // jobs whose id was there already: left as they are
	Runs        int // runs added (a run already there is not counted)
	Quarantined int // rows newly quarantined
}

// ImportCron stores a legacy import (automation.ParseLegacy) in one
// transaction. A job whose id is taken is left alone, so importing twice
// adds nothing; a job or run the tables refuse (too large, beyond
// MaxCronJobs) is quarantined, never dropped, and the rest still goes in.
func (db *DB) ImportCron(ctx context.Context, imp automation.LegacyImport) (CronImported, error) {
	var out CronImported
	err := db.write(ctx, func(tx *sql.Tx) error {
		out = CronImported{}
		quarantine := imp.Quarantine
		for _, j := range imp.Jobs {
			added, err := importCronJob(ctx, tx, j)
			var refused refusal
			switch {
			case errors.As(err, &refused):
				quarantine = append(quarantine, automation.Quarantined{Source: "job " + j.ID,
					Reason: refused.Error(), Raw: refused.raw, AtMs: ms(db.now())})
			case err != nil:
				return err
			case added:
				out.Jobs++
			default:
				out.JobsPresent++
			}
		}
		jobs := map[string]bool{}
		for _, r := range imp.Runs {
			added, err := importCronRun(ctx, tx, r)
			var refused refusal
			switch {
			case errors.As(err, &refused):
				quarantine = append(quarantine, automation.Quarantined{Source: "run " + r.JobID + "/" + r.RunID,
					Reason: refused.Error(), Raw: refused.raw, AtMs: ms(db.now())})
			case err != nil:
				return err
			case added:
				out.Runs++
				jobs[r.JobID] = true
			}
		}
		for id := range jobs {
			if err := capCronRuns(ctx, tx, id); err != nil {
				return err
			}
		}
		var err error
		out.Quarantined, err = quarantineCron(ctx, tx, quarantine)
		return err
	})
	if err != nil {
		return CronImported{}, fmt.Errorf("importing cron jobs: %w", err)
	}
	return out, nil
}

// refusal is a row the tables will not take, with what it was.
type refusal struct {
	error
	raw string
}

// importCronJob adds j unless its id is taken (added false); a job the
// table refuses is a refusal.
func importCronJob(ctx context.Context, tx *sql.Tx, j automation.Job) (bool, error) {
	def, state, err := encodeCronJob(j)
	if err != nil {
		return false, refusal{err, jsonText(j)}
	}
	err = insertCronJob(ctx, tx, j, def, state)
	switch {
	case errors.Is(err, ErrCronJobExists):
		return false, nil
	case errors.Is(err, ErrTooManyCronJobs):
		return false, refusal{err, def}
	}
	return err == nil, err
}

// importCronRun adds r unless the job has its run id.
func importCronRun(ctx context.Context, tx *sql.Tx, r automation.Run) (bool, error) {
	entry, err := encodeCronRun(r)
	if err != nil {
		return false, refusal{err, jsonText(r)}
	}
	return insertCronRun(ctx, tx, r, entry)
}

// jsonText is v as JSON, for a quarantined row.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// quarantineCron keeps rows for review; a row already kept (same source,
// same text) is not kept twice. It reports how many it added.
func quarantineCron(ctx context.Context, tx *sql.Tx, rows []automation.Quarantined) (int, error) {
	added := 0
	for _, q := range rows {
		res, err := tx.ExecContext(ctx, `INSERT INTO cron_quarantine (source, reason, raw, quarantined_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (source, raw) DO NOTHING`, q.Source, q.Reason, q.Raw, q.AtMs)
		if err != nil {
			return 0, err
		}
		n, _ := res.RowsAffected()
		added += int(n)
	}
	return added, nil
}

// CronQuarantine is every quarantined row, oldest first.
func (db *DB) CronQuarantine(ctx context.Context) ([]automation.Quarantined, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT source, reason, raw, quarantined_at FROM cron_quarantine ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("reading the cron quarantine: %w", err)
	}
	defer rows.Close()
	var out []automation.Quarantined
	for rows.Next() {
		var q automation.Quarantined
		if err := rows.Scan(&q.Source, &q.Reason, &q.Raw, &q.AtMs); err != nil {
			return nil, fmt.Errorf("reading the cron quarantine: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
