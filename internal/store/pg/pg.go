package pg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"talon/internal/store/catalog"
)

// Store is the catalog in one PostgreSQL database.
type Store struct {
	// Now stamps zero times in writes. Tests may set it before first use.
	Now func() time.Time

	pool *pgxpool.Pool
}

var _ catalog.Store = (*Store)(nil)

// migrationLock is the advisory lock key concurrent Opens serialise on
// (an arbitrary constant: "talon" in ASCII).
const migrationLock = 0x74616c6f6e

// Open connects to the database dsn names (a libpq connection string or
// postgres:// URL) and brings its schema up to date.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the password; say only what failed.
		return nil, errors.New("opening PostgreSQL catalog: the connection string does not parse")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening PostgreSQL catalog: %w", err)
	}
	s := &Store{Now: time.Now, pool: pool}
	if err := migrate(ctx, pool, migrations, s.now()); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening PostgreSQL catalog on %s/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return s, nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// migrate brings the schema up to len(list) (tests pass a prefix of
// migrations to build an older schema).
func migrate(ctx context.Context, pool *pgxpool.Pool, list []string, now time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return fmt.Errorf("locking for migration: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS catalog_migrations (
			version    integer     PRIMARY KEY,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return fmt.Errorf("creating catalog_migrations: %w", err)
		}
		var cur int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM catalog_migrations`).Scan(&cur); err != nil {
			return fmt.Errorf("reading schema version: %w", err)
		}
		if cur > len(list) {
			return fmt.Errorf("database schema version %d is newer than this binary supports (%d): upgrade talon", cur, len(list))
		}
		for v := cur + 1; v <= len(list); v++ {
			if _, err := tx.Exec(ctx, list[v-1]); err != nil {
				return fmt.Errorf("applying migration %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO catalog_migrations (version, applied_at) VALUES ($1, $2)`, v, now); err != nil {
				return fmt.Errorf("recording migration %d: %w", v, err)
			}
		}
		return nil
	})
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// SQLSTATEs the store maps.
const (
	foreignKeyViolation = "23503"
	uniqueViolation     = "23505"
	checkViolation      = "23514"
)

// pgError is err's server error when it is one.
func pgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// mapErr turns the server's refusals into catalog's errors. fk maps a
// foreign key's constraint name to the error it means for this statement.
func mapErr(err error, fk map[string]error) error {
	pe := pgError(err)
	switch {
	case pe == nil:
		return err
	case pe.Code == uniqueViolation:
		return catalog.ErrExists
	case pe.Code == checkViolation:
		return fmt.Errorf("%w (%s: %s)", catalog.ErrInvalid, pe.ConstraintName, pe.Message)
	case pe.Code == foreignKeyViolation && fk[pe.ConstraintName] != nil:
		return fk[pe.ConstraintName]
	}
	return err
}

// exec runs one statement and returns the rows it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := s.pool.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}
