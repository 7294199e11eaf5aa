package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"talon/internal/automation"
)

// This file is the cron store (spec automation.md §4): jobs, their
// runtime state and their run history. The store checks only what keeps
// the tables sound and bounded (ids, sizes, the per-tenant cap); whether
// a job makes sense is automation's Validate, run by the caller first.

// Bounds of the cron tables (a tenant is untrusted).
const (
	// MaxCronJobs is how many jobs one tenant may have.
	MaxCronJobs = 1000
	// MaxCronRunsPerJob is R4.3's cap on one job's history.
	MaxCronRunsPerJob = 2000
	// CronRunRetention and CronLostRetention are R4.3's ages.
	CronRunRetention  = 7 * 24 * time.Hour
	CronLostRetention = 24 * time.Hour

	maxCronDefinition = 512 << 10 // name ≤ 200, a few texts ≤ 64 KiB each
	maxCronState      = 64 << 10
	maxCronRun        = 256 << 10
	maxCronQuery      = 200
)

// ErrCronJobExists refuses a job whose id is taken.
var ErrCronJobExists = errors.New("a cron job with this id exists")

// ErrCronRunExists refuses a run id the job has recorded already.
var ErrCronRunExists = errors.New("the job has a run with this id already")

// ErrInvalidQuery is wrapped by a cron.list or cron.runs query the store
// refuses (an unknown filter value, a query too long).
var ErrInvalidQuery = errors.New("invalid query")

// ErrTooManyCronJobs refuses a job beyond MaxCronJobs.
var ErrTooManyCronJobs = fmt.Errorf("a tenant has at most %d cron jobs: remove one first", MaxCronJobs)

// cronDefinition is what cron_jobs.definition holds: the job without its
// state and revision (columns of their own), and failureAlert: false,
// which automation.FailureAlert does not marshal.
type cronDefinition struct {
	automation.Job
	FailureAlertOff bool `json:"failureAlertOff,omitempty"`
}

func encodeCronJob(j automation.Job) (def, state string, err error) {
	switch {
	case j.ID == "" || len(j.ID) > automation.MaxJobIDLen || strings.ContainsAny(j.ID, "\x00/\\"):
		return "", "", fmt.Errorf("job id %q: must be 1..%d characters without / \\ or NUL", j.ID, automation.MaxJobIDLen)
	case j.Schedule.Kind == "":
		return "", "", errors.New("job has no schedule kind")
	case j.ConfigRevision < 0:
		return "", "", errors.New("config revision is negative")
	}
	d := cronDefinition{Job: j}
	d.State, d.ConfigRevision = automation.JobState{}, 0
	if j.FailureAlert != nil && j.FailureAlert.Disabled {
		d.FailureAlert, d.FailureAlertOff = nil, true
	}
	b, err := json.Marshal(d)
	if err != nil {
		return "", "", fmt.Errorf("encoding job: %w", err)
	}
	if len(b) > maxCronDefinition {
		return "", "", fmt.Errorf("job definition is %d bytes, more than %d", len(b), maxCronDefinition)
	}
	if state, err = encodeCronState(j.State); err != nil {
		return "", "", err
	}
	return string(b), state, nil
}

func encodeCronState(st automation.JobState) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding job state: %w", err)
	}
	if len(b) > maxCronState {
		return "", fmt.Errorf("job state is %d bytes, more than %d", len(b), maxCronState)
	}
	return string(b), nil
}

const cronJobCols = `j.definition, j.enabled, j.config_revision, s.state`

const cronJobFrom = ` FROM cron_jobs j JOIN cron_job_state s ON s.job_id = j.id`

func scanCronJob(row interface{ Scan(...any) error }) (automation.Job, error) {
	var def, state string
	var enabled bool
	var rev int64
	if err := row.Scan(&def, &enabled, &rev, &state); err != nil {
		return automation.Job{}, err
	}
	var d cronDefinition
	if err := json.Unmarshal([]byte(def), &d); err != nil {
		return automation.Job{}, fmt.Errorf("decoding job definition: %w", err)
	}
	j := d.Job
	if d.FailureAlertOff {
		j.FailureAlert = &automation.FailureAlert{Disabled: true}
	}
	j.Enabled, j.ConfigRevision = enabled, rev
	if err := json.Unmarshal([]byte(state), &j.State); err != nil {
		return automation.Job{}, fmt.Errorf("decoding state of job %s: %w", j.ID, err)
	}
	return j, nil
}

func queryCronJobs(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, where string, args ...any) ([]automation.Job, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+cronJobCols+cronJobFrom+` `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []automation.Job
	for rows.Next() {
		j, err := scanCronJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// CronJobs lists every job of the tenant (definition and state), enabled
// or not, oldest first.
func (db *DB) CronJobs(ctx context.Context) ([]automation.Job, error) {
	jobs, err := queryCronJobs(ctx, db.r, `ORDER BY j.created_at, j.id`)
	if err != nil {
		return nil, fmt.Errorf("listing cron jobs: %w", err)
	}
	return jobs, nil
}

// CronJob is one job; ErrNotFound when there is none with id.
func (db *DB) CronJob(ctx context.Context, id string) (automation.Job, error) {
	j, err := scanCronJob(db.r.QueryRowContext(ctx, `SELECT `+cronJobCols+cronJobFrom+` WHERE j.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return automation.Job{}, fmt.Errorf("reading cron job %s: %w", id, err)
	}
	return j, nil
}

// AddCronJob stores a new job as the caller made it (id, timestamps,
// state and revision set): ErrCronJobExists when its id is taken,
// ErrTooManyCronJobs at MaxCronJobs.
func (db *DB) AddCronJob(ctx context.Context, j automation.Job) error {
	def, state, err := encodeCronJob(j)
	if err == nil {
		err = db.write(ctx, func(tx *sql.Tx) error { return insertCronJob(ctx, tx, j, def, state) })
	}
	if err != nil {
		return fmt.Errorf("adding cron job: %w", err)
	}
	return nil
}

func insertCronJob(ctx context.Context, tx *sql.Tx, j automation.Job, def, state string) error {
	var n int
	var taken bool
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(id = ?), 0) FROM cron_jobs`, j.ID).Scan(&n, &taken); err != nil {
		return err
	}
	switch {
	case taken:
		return fmt.Errorf("%w: %s", ErrCronJobExists, j.ID)
	case n >= MaxCronJobs:
		return ErrTooManyCronJobs
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO cron_jobs (id, name, agent_id, enabled, schedule_kind,
		definition, config_revision, created_at, updated_at, search) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.Name, j.AgentID, j.Enabled, j.Schedule.Kind, def, j.ConfigRevision,
		j.CreatedAtMs, j.UpdatedAtMs, cronJobSearch(j)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO cron_job_state (job_id, next_run_at, last_run_status, state)
		VALUES (?, ?, ?, ?)`, j.ID, j.State.NextRunAtMs, j.State.LastRunStatus, state)
	return err
}

// UpdateCronJob replaces job j.ID's definition and state when its
// revision is expectedRevision, and returns it with the revision bumped:
// ErrStateChanged when another edit came first, ErrNotFound when the job
// is gone. The caller decides, by automation's rules, what the state
// becomes (kept, or reset when the schedule identity changed).
func (db *DB) UpdateCronJob(ctx context.Context, j automation.Job, expectedRevision int64) (automation.Job, error) {
	j.ConfigRevision = expectedRevision + 1
	def, state, err := encodeCronJob(j)
	if err == nil {
		err = db.write(ctx, func(tx *sql.Tx) error { return updateCronJob(ctx, tx, j, def, state, expectedRevision) })
	}
	if err != nil {
		return automation.Job{}, fmt.Errorf("updating cron job %s: %w", j.ID, err)
	}
	return j, nil
}

func updateCronJob(ctx context.Context, tx *sql.Tx, j automation.Job, def, state string, expected int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE cron_jobs SET name = ?, agent_id = ?, enabled = ?, schedule_kind = ?,
		definition = ?, config_revision = ?, updated_at = ?, search = ? WHERE id = ? AND config_revision = ?`,
		j.Name, j.AgentID, j.Enabled, j.Schedule.Kind, def, j.ConfigRevision, j.UpdatedAtMs, cronJobSearch(j),
		j.ID, expected)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var rev int64
		if err := tx.QueryRowContext(ctx, `SELECT config_revision FROM cron_jobs WHERE id = ?`, j.ID).Scan(&rev); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		return fmt.Errorf("%w: the job is at revision %d, not %d", ErrStateChanged, rev, expected)
	}
	return putCronState(ctx, tx, j.ID, j.State, state)
}

func putCronState(ctx context.Context, tx *sql.Tx, id string, st automation.JobState, state string) error {
	res, err := tx.ExecContext(ctx, `UPDATE cron_job_state SET next_run_at = ?, last_run_status = ?, state = ?
		WHERE job_id = ?`, st.NextRunAtMs, st.LastRunStatus, state, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// SetCronState replaces a job's runtime state and, when enabled is not
// nil, its enabled flag (an auto-disable, a one-shot that ran), leaving
// the definition's revision alone; ErrNotFound when the job is gone. A
// disabled job keeps no next run, whatever st says: a run that ends after
// cron.update disabled its job must not arm it again.
func (db *DB) SetCronState(ctx context.Context, id string, st automation.JobState, enabled *bool) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		var on bool
		if err := tx.QueryRowContext(ctx, `SELECT enabled FROM cron_jobs WHERE id = ?`, id).Scan(&on); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		if enabled != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE cron_jobs SET enabled = ? WHERE id = ?`, *enabled, id); err != nil {
				return err
			}
			on = *enabled
		}
		if !on {
			st.NextRunAtMs = nil
		}
		state, err := encodeCronState(st)
		if err != nil {
			return err
		}
		return putCronState(ctx, tx, id, st, state)
	})
	if err != nil {
		return fmt.Errorf("setting the state of cron job %s: %w", id, err)
	}
	return nil
}

// RemoveCronJob deletes a job and its state (its runs stay until pruned)
// and reports whether it existed.
func (db *DB) RemoveCronJob(ctx context.Context, id string) (bool, error) {
	var n int64
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM cron_jobs WHERE id = ?`, id)
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("removing cron job %s: %w", id, err)
	}
	return n > 0, nil
}

// CronListQuery is cron.list's params (spec §11); the zero value lists
// the enabled jobs by next run.
type CronListQuery struct {
	IncludeDisabled bool
	// Enabled is all, enabled or disabled; it wins over IncludeDisabled.
	Enabled string
	// Query is a case-insensitive substring of id, name, description or
	// agent id.
	Query string
	// ScheduleKind is at, every or cron; "" or all for any.
	ScheduleKind string
	// LastRunStatus is ok, error, skipped or unknown (never ran); "" or
	// all for any.
	LastRunStatus string
	// AgentID selects the jobs of one agent; a job without an agent is
	// DefaultAgentID's.
	AgentID, DefaultAgentID string
	// SortBy is nextRunAtMs (jobs without a next run last), updatedAtMs
	// or name (case-insensitive); ties go by id.
	SortBy, SortDir string
	// Limit is 1..200 (0: every job, at most 200); Offset skips.
	Limit, Offset int
}

func (q CronListQuery) where() (string, []any, error) {
	var conds []string
	var args []any
	enabled := q.Enabled
	if enabled == "" {
		enabled = map[bool]string{true: "all", false: "enabled"}[q.IncludeDisabled]
	}
	switch enabled {
	case "enabled":
		conds = append(conds, "j.enabled = 1")
	case "disabled":
		conds = append(conds, "j.enabled = 0")
	case "all":
	default:
		return "", nil, fmt.Errorf("enabled %q: want all, enabled or disabled", q.Enabled)
	}
	if q.Query != "" {
		if len(q.Query) > maxCronQuery {
			return "", nil, fmt.Errorf("query is longer than %d bytes", maxCronQuery)
		}
		conds = append(conds, "instr(j.search, ?) > 0")
		args = append(args, strings.ToLower(q.Query))
	}
	switch q.ScheduleKind {
	case "", "all":
	case automation.KindAt, automation.KindEvery, automation.KindCron:
		conds, args = append(conds, "j.schedule_kind = ?"), append(args, q.ScheduleKind)
	default:
		return "", nil, fmt.Errorf("scheduleKind %q: want at, every or cron", q.ScheduleKind)
	}
	switch q.LastRunStatus {
	case "", "all":
	case "unknown":
		conds = append(conds, "s.last_run_status = ''")
	case automation.StatusOK, automation.StatusError, automation.StatusSkipped:
		conds, args = append(conds, "s.last_run_status = ?"), append(args, q.LastRunStatus)
	default:
		return "", nil, fmt.Errorf("lastRunStatus %q: want ok, error, skipped or unknown", q.LastRunStatus)
	}
	if q.AgentID != "" {
		conds = append(conds, "(j.agent_id = ? OR (j.agent_id = '' AND ? = ?))")
		args = append(args, q.AgentID, q.AgentID, q.DefaultAgentID)
	}
	if len(conds) == 0 {
		return "", args, nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args, nil
}

func (q CronListQuery) orderBy() (string, error) {
	dir, err := sortDir(q.SortDir)
	if err != nil {
		return "", err
	}
	switch q.SortBy {
	case "", "nextRunAtMs":
		return "ORDER BY s.next_run_at IS NULL, s.next_run_at " + dir + ", j.id", nil
	case "updatedAtMs":
		return "ORDER BY j.updated_at " + dir + ", j.id", nil
	case "name":
		return "ORDER BY j.name COLLATE NOCASE " + dir + ", j.id", nil
	}
	return "", fmt.Errorf("sortBy %q: want nextRunAtMs, updatedAtMs or name", q.SortBy)
}

func sortDir(d string) (string, error) {
	switch d {
	case "", "asc":
		return "ASC", nil
	case "desc":
		return "DESC", nil
	}
	return "", fmt.Errorf("sortDir %q: want asc or desc", d)
}

// ListCronJobs is cron.list: one page of the jobs q selects, in its
// order, and how many it selects in all.
func (db *DB) ListCronJobs(ctx context.Context, q CronListQuery) ([]automation.Job, int, error) {
	jobs, total, err := db.listCronJobs(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("listing cron jobs: %w", err)
	}
	return jobs, total, nil
}

func (db *DB) listCronJobs(ctx context.Context, q CronListQuery) ([]automation.Job, int, error) {
	where, args, err := q.where()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrInvalidQuery, err)
	}
	order, err := q.orderBy()
	if err != nil {
		return nil, 0, err
	}
	if q.Limit < 0 || q.Limit > 200 || q.Offset < 0 {
		return nil, 0, fmt.Errorf("limit %d, offset %d: want limit 1..200 and offset ≥ 0", q.Limit, q.Offset)
	}
	var total int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*)`+cronJobFrom+` `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = 200
	}
	jobs, err := queryCronJobs(ctx, db.r, where+" "+order+" LIMIT ? OFFSET ?", append(args, limit, q.Offset)...)
	return jobs, total, err
}

func checkCronRun(r automation.Run) error {
	switch {
	case r.JobID == "" || len(r.JobID) > automation.MaxJobIDLen:
		return fmt.Errorf("job id %q: must be 1..%d characters", r.JobID, automation.MaxJobIDLen)
	case r.RunID == "" || len(r.RunID) > automation.MaxJobIDLen:
		return fmt.Errorf("run id %q: must be 1..%d characters", r.RunID, automation.MaxJobIDLen)
	case r.Action != "finished":
		return fmt.Errorf("action %q: only finished runs are recorded", r.Action)
	case !slices.Contains([]string{automation.StatusOK, automation.StatusError, automation.StatusSkipped, automation.StatusLost}, r.Status):
		return fmt.Errorf("status %q: want ok, error, skipped or lost", r.Status)
	}
	return nil
}

// cronJobSearch is what CronListQuery.Query matches, lower-cased once.
func cronJobSearch(j automation.Job) string {
	return strings.ToLower(j.ID + " " + j.Name + " " + j.Description + " " + j.AgentID)
}

// cronRunSearch is what CronRunQuery.Query matches, lower-cased once.
func cronRunSearch(r automation.Run) string {
	return strings.ToLower(r.Summary + "\n" + r.Error + "\n" + r.JobName)
}

func encodeCronRun(r automation.Run) (string, error) {
	if err := checkCronRun(r); err != nil {
		return "", err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	if len(b) > maxCronRun {
		return "", fmt.Errorf("run entry is %d bytes, more than %d: shorten its summary", len(b), maxCronRun)
	}
	return string(b), nil
}

// AppendCronRun records a run-log entry and drops that job's oldest
// entries beyond MaxCronRunsPerJob; ErrCronRunExists when the job has
// the run id already.
func (db *DB) AppendCronRun(ctx context.Context, r automation.Run) error {
	entry, err := encodeCronRun(r)
	if err == nil {
		err = db.write(ctx, func(tx *sql.Tx) error {
			if added, err := insertCronRun(ctx, tx, r, entry); err != nil {
				return err
			} else if !added {
				return ErrCronRunExists
			}
			return capCronRuns(ctx, tx, r.JobID)
		})
	}
	if err != nil {
		return fmt.Errorf("recording run %s of cron job %s: %w", r.RunID, r.JobID, err)
	}
	return nil
}

// insertCronRun adds a run and reports whether it did: a run id the job
// has already is left as it is.
func insertCronRun(ctx context.Context, tx *sql.Tx, r automation.Run, entry string) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO cron_runs (job_id, run_id, ts, status, delivery_status, search, entry)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (job_id, run_id) DO NOTHING`,
		r.JobID, r.RunID, r.Ts, r.Status, r.DeliveryStatus, cronRunSearch(r), entry)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

func capCronRuns(ctx context.Context, tx *sql.Tx, jobID string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM cron_runs WHERE job_id = ?1 AND id IN (
		SELECT id FROM cron_runs WHERE job_id = ?1 ORDER BY ts DESC, id DESC LIMIT -1 OFFSET ?2)`,
		jobID, MaxCronRunsPerJob)
	return err
}

// CronRunQuery is cron.runs' params (spec §11).
type CronRunQuery struct {
	JobID string // "" for every job
	RunID string
	// Statuses and DeliveryStatuses select runs with one of them; empty
	// selects any.
	Statuses, DeliveryStatuses []string
	// Query is a case-insensitive substring of the summary, the error or
	// the job's name.
	Query string
	// Limit is 1..200 (0: 50); Offset skips; SortDir asc or desc (the
	// default) by ts.
	Limit, Offset int
	SortDir       string
}

func (q CronRunQuery) where() (string, []any, error) {
	var conds []string
	var args []any
	add := func(cond string, a ...any) { conds, args = append(conds, cond), append(args, a...) }
	if q.JobID != "" {
		add("job_id = ?", q.JobID)
	}
	if q.RunID != "" {
		add("run_id = ?", q.RunID)
	}
	for _, set := range []struct {
		col  string
		vals []string
	}{{"status", q.Statuses}, {"delivery_status", q.DeliveryStatuses}} {
		if len(set.vals) == 0 {
			continue
		}
		if len(set.vals) > 10 {
			return "", nil, fmt.Errorf("%s: at most 10 values", set.col)
		}
		add(set.col+" IN (?"+strings.Repeat(", ?", len(set.vals)-1)+")", anys(set.vals)...)
	}
	if q.Query != "" {
		if len(q.Query) > maxCronQuery {
			return "", nil, fmt.Errorf("query is longer than %d bytes", maxCronQuery)
		}
		add("instr(search, ?) > 0", strings.ToLower(q.Query))
	}
	if len(conds) == 0 {
		return "", args, nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args, nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// CronRuns is cron.runs: one page of the runs q selects and how many it
// selects in all.
func (db *DB) CronRuns(ctx context.Context, q CronRunQuery) ([]automation.Run, int, error) {
	runs, total, err := db.cronRuns(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("querying cron runs: %w", err)
	}
	return runs, total, nil
}

func (db *DB) cronRuns(ctx context.Context, q CronRunQuery) ([]automation.Run, int, error) {
	where, args, err := q.where()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrInvalidQuery, err)
	}
	dir := "DESC"
	if q.SortDir != "" {
		if dir, err = sortDir(q.SortDir); err != nil {
			return nil, 0, err
		}
	}
	if q.Limit < 0 || q.Limit > 200 || q.Offset < 0 {
		return nil, 0, fmt.Errorf("limit %d, offset %d: want limit 1..200 and offset ≥ 0", q.Limit, q.Offset)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 50
	}
	var total int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cron_runs `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := db.r.QueryContext(ctx, `SELECT entry FROM cron_runs `+where+` ORDER BY ts `+dir+`, id `+dir+
		` LIMIT ? OFFSET ?`, append(args, limit, q.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []automation.Run
	for rows.Next() {
		var entry string
		var r automation.Run
		if err := rows.Scan(&entry); err != nil {
			return nil, 0, err
		}
		if err := json.Unmarshal([]byte(entry), &r); err != nil {
			return nil, 0, fmt.Errorf("decoding a run entry: %w", err)
		}
		out = append(out, r)
	}
	return out, total, rows.Err()
}

// PruneCronRuns drops the history R4.3 no longer keeps: runs older than
// CronRunRetention, lost runs older than CronLostRetention, and each
// job's runs beyond MaxCronRunsPerJob; it reports how many it dropped.
func (db *DB) PruneCronRuns(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM cron_runs WHERE ts < ? OR (status = ? AND ts < ?)`,
			ms(now.Add(-CronRunRetention)), automation.StatusLost, ms(now.Add(-CronLostRetention)))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		res, err = tx.ExecContext(ctx, `DELETE FROM cron_runs WHERE id IN (SELECT id FROM (
			SELECT id, ROW_NUMBER() OVER (PARTITION BY job_id ORDER BY ts DESC, id DESC) AS k FROM cron_runs) WHERE k > ?)`,
			MaxCronRunsPerJob)
		if err != nil {
			return err
		}
		m, _ := res.RowsAffected()
		n += m
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pruning cron runs: %w", err)
	}
	return int(n), nil
}

// PruneCronSessions removes the sessions of isolated cron runs
// (agent:<id>:cron:<job>:run:<run>, spec automation.md R3.8) last
// updated before before, with their transcripts: cron.sessionRetention
// (R4.3) bounds what a frequent job leaves behind. A run's history row
// (cron_runs, with its summary) is pruned on its own terms. It returns
// how many sessions went.
func (db *DB) PruneCronSessions(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := db.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT agent_id, key, session_id FROM sessions
			WHERE key GLOB 'agent:*:cron:*:run:*' AND updated_at < ?`, ms(before))
		if err != nil {
			return err
		}
		type victim struct{ agent, key, id string }
		var vs []victim
		for rows.Next() {
			var v victim
			if err := rows.Scan(&v.agent, &v.key, &v.id); err != nil {
				rows.Close()
				return err
			}
			// The pattern's stars span colons: only the exact shape is
			// a run's.
			if p := strings.Split(v.key, ":"); len(p) == 6 && p[2] == "cron" && p[4] == "run" {
				vs = append(vs, v)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, v := range vs {
			if _, err := tx.ExecContext(ctx, `DELETE FROM transcripts WHERE session_id = ?`, v.id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE agent_id = ? AND key = ?`, v.agent, v.key); err != nil {
				return err
			}
		}
		n = len(vs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pruning cron run sessions: %w", err)
	}
	return n, nil
}
