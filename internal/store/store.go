package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"talon/internal/sqlitedb"
)

// ErrNotFound is returned for a session that does not exist.
var ErrNotFound = errors.New("not found")

// DB is one tenant's database.
type DB struct {
	// Now is the clock for the times the store records by itself (a
	// transcript row's created_at). Tests may set it before first use.
	Now func() time.Time

	path string
	w    *sql.DB // exactly one connection: all writes
	r    *sql.DB // read-only connections
	sdb  *sqlitedb.DB

	// Prepared once: parsing SQL costs more than running these.
	appendStmt       *sql.Stmt // on w
	readStmt         *sql.Stmt // on r
	getStmt          *sql.Stmt // on r
	getStmtW         *sql.Stmt // on w
	putStmt          *sql.Stmt // on w
	touchStmt        *sql.Stmt // on w
	createStmt       *sql.Stmt // on w
	tokensStmt       *sql.Stmt // on w
	createTokensStmt *sql.Stmt // on w
	touchTokensStmt  *sql.Stmt // on w
	readAfterStmt    *sql.Stmt // on r
	readFromStmt     *sql.Stmt // on r
	insertCallStmt   *sql.Stmt // on w

	tails *tails
	// month is the running total of the current month's usage.
	month monthTally
	// rolls runs the usage ledger's hourly roll-up (rollup.go).
	rolls rollUps
	log   *slog.Logger
}

// Options say how to open a store.
type Options struct {
	// SyncWindow is how long an acknowledged commit may wait for the disk.
	// 0 fsyncs every commit before it returns (SQLite's synchronous=FULL):
	// a commit survives a power cut once it has returned. A window w
	// commits with synchronous=NORMAL and fsyncs the write-ahead log at
	// most w after each commit (sqlitedb's syncer): a commit survives the
	// process being killed at once, and a power cut or kernel crash after
	// w, and commits no longer wait for the disk.
	SyncWindow time.Duration
	// Log receives what the syncer cannot do (a failed fsync); nil means
	// slog.Default().
	Log *slog.Logger
}

// File is the name of a tenant's database in its directory (and of the
// operator's in the state directory).
const File = "talon.db"

// Open opens the database at path with every commit fsynced; see OpenWith.
func Open(path string) (*DB, error) { return OpenWith(path, Options{}) }

// OpenWith opens the database at path, creating it (mode 0600, parent
// directories 0700) if needed, and brings its schema up to date.
func OpenWith(path string, o Options) (*DB, error) {
	so := sqlitedb.Options{What: "store", Synchronous: "FULL", Pragmas: []string{"foreign_keys(1)"}}
	if o.SyncWindow != 0 {
		so.Synchronous, so.SyncWindow, so.Log = "NORMAL", o.SyncWindow, o.Log
	}
	sdb, err := sqlitedb.Open(path, so)
	if err != nil {
		return nil, err
	}
	abs, w, r := sdb.Path, sdb.W, sdb.R
	db := &DB{Now: time.Now, path: abs, w: w, r: r, sdb: sdb, tails: newTails(defaultTailBytes), log: o.Log}
	if db.log == nil {
		db.log = slog.Default()
	}
	db.rolls.every = rollEvery
	ctx := context.Background()
	if err := db.migrate(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("opening store %q: %w", abs, err)
	}
	for _, p := range []struct {
		dst  **sql.Stmt
		on   *sql.DB
		text string
	}{
		{&db.appendStmt, w, appendSQL}, {&db.readStmt, r, readSQL},
		{&db.getStmt, r, getEntrySQL}, {&db.getStmtW, w, getEntrySQL}, {&db.putStmt, w, putEntrySQL},
		{&db.touchStmt, w, touchSQL}, {&db.createStmt, w, createSQL}, {&db.tokensStmt, w, tokensSQL},
		{&db.createTokensStmt, w, createTokensSQL}, {&db.touchTokensStmt, w, touchTokensSQL},
		{&db.readAfterStmt, r, readAfterSQL}, {&db.readFromStmt, r, readFromSQL},
		{&db.insertCallStmt, w, insertCallSQL},
	} {
		if *p.dst, err = p.on.PrepareContext(ctx, p.text); err != nil {
			break
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %q: preparing statements: %w", abs, err)
	}
	if err := db.countWaiting(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %q: %w", abs, err)
	}
	return db, nil
}

// Path is the database file's absolute path.
func (db *DB) Path() string { return db.path }

// Close closes the database.
func (db *DB) Close() error {
	db.stopRollUps()
	var errs []error
	for _, st := range []*sql.Stmt{db.appendStmt, db.readStmt, db.getStmt, db.getStmtW, db.putStmt, db.touchStmt, db.createStmt, db.tokensStmt,
		db.createTokensStmt, db.touchTokensStmt, db.readAfterStmt, db.readFromStmt, db.insertCallStmt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, db.sdb.Close())...)
}

func (db *DB) now() time.Time {
	if db.Now != nil {
		return db.Now()
	}
	return time.Now()
}

// write runs fn in a write transaction (BEGIN IMMEDIATE on the single
// write connection) and commits it if fn returns nil.
func (db *DB) write(ctx context.Context, fn func(*sql.Tx) error) error {
	var tx *sql.Tx
	err := writeTx(ctx, db.w, func(t *sql.Tx) error { tx = t; return fn(t) })
	rows := db.month.unstage(tx)
	if err != nil {
		return err
	}
	db.sdb.Committed()
	db.month.add(rows)
	db.committed(len(rows))
	return nil
}

// writeTx runs fn in a transaction on w and commits it if fn returns nil.
func writeTx(ctx context.Context, w *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err = fn(tx); err != nil {
		tx.Rollback()
	} else {
		err = tx.Commit()
	}
	// A cancelled context rolls the transaction back under fn's feet, and
	// fn then sees "statement is closed" or "transaction has already been
	// committed or rolled back": report the cause.
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// NewID returns a random (version 4) UUID. A turn mints up to three (the
// session key, the transcript, the completion), hence no fmt.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	hex.Encode(out[9:13], b[4:6])
	hex.Encode(out[14:18], b[6:8])
	hex.Encode(out[19:23], b[8:10])
	hex.Encode(out[24:36], b[10:16])
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	return string(out[:])
}

// ms is t in Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }
