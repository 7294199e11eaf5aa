// Package sqlitedb opens a SQLite database file (modernc.org/sqlite: pure
// Go, no cgo) the way Talon's databases use one: created with mode 0600 in
// a 0700 directory, in WAL mode, with a single writer connection whose
// transactions begin IMMEDIATE, a pool of read-only connections, and, when
// asked, a syncer that fsyncs the log within a window after each commit
// instead of in every commit.
// Package store (sessions) and package memory (the memory index) open
// their files through it.
//
// # Concurrency
//
// A DB is safe for concurrent use. Writes go through the one writer
// connection, so writers in the process wait their turn instead of failing
// with SQLITE_BUSY; readers run in parallel with each other and with the
// writer, each seeing the last commit before it began. Connections wait
// up to BusyTimeout for another process's lock.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// BusyTimeout is how long a connection waits for another process's lock.
const BusyTimeout = 5 * time.Second

// Options say how to open one database.
type Options struct {
	// What names the database in errors: "opening <What> ...".
	What string
	// Synchronous is the writer's synchronous pragma, FULL or NORMAL.
	Synchronous string
	// Pragmas are set on every connection, such as "foreign_keys(1)".
	Pragmas []string
	// SyncWindow, with Synchronous NORMAL, bounds how long a commit the
	// caller reports with Committed waits for its fsync (see walSyncer);
	// 0 leaves syncing to SQLite alone.
	SyncWindow time.Duration
	// Log receives the syncer's failures; nil means slog.Default().
	Log *slog.Logger
}

// DB is one database file: W is its single writer connection, R its pool
// of read-only connections.
type DB struct {
	Path string // absolute
	W    *sql.DB
	R    *sql.DB

	syncer *walSyncer // nil without a SyncWindow
}

// Open opens the database at path, creating it and its parent directories
// if needed, and checks that it runs in WAL mode.
func Open(path string, o Options) (*DB, error) {
	if path == "" {
		return nil, fmt.Errorf("opening %s: empty path", o.What)
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("opening %s %q: path may not contain '?'", o.What, path)
	}
	switch o.Synchronous {
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("opening %s: synchronous must be FULL or NORMAL, not %q", o.What, o.Synchronous)
	}
	if o.SyncWindow < 0 || o.SyncWindow > 0 && o.Synchronous != "NORMAL" {
		return nil, fmt.Errorf("opening %s: a sync window (%s) needs synchronous NORMAL and a duration ≥ 0", o.What, o.SyncWindow)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s %q: %w", o.What, path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("opening %s: creating directory: %w", o.What, err)
	}
	// Create the file here so that it, and the -wal and -shm files SQLite
	// derives from it, get mode 0600.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", o.What, err)
	}
	f.Close()

	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds())
	for _, p := range o.Pragmas {
		pragmas += "&_pragma=" + p
	}
	w, err := sql.Open("sqlite", abs+"?"+pragmas+
		"&_pragma=journal_mode(WAL)&_pragma=synchronous("+o.Synchronous+")&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("opening %s %q: %w", o.What, abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	var mode string
	if err := w.QueryRowContext(context.Background(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		w.Close()
		return nil, fmt.Errorf("opening %s %q: %w", o.What, abs, err)
	}
	if !strings.EqualFold(mode, "wal") {
		w.Close()
		return nil, fmt.Errorf("opening %s %q: journal mode is %q, want wal", o.What, abs, mode)
	}
	r, err := sql.Open("sqlite", abs+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("opening %s %q: %w", o.What, abs, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	db := &DB{Path: abs, W: w, R: r}
	if o.SyncWindow > 0 {
		db.syncer = newWALSyncer(abs, o.SyncWindow, o.Log)
	}
	return db, nil
}

// Committed tells the database's syncer, if it has one, that a write
// transaction has committed: its fsync is then due within the window.
func (db *DB) Committed() {
	if db.syncer != nil {
		db.syncer.committed()
	}
}

// Syncs is how many fsyncs the syncer has made; 0 without one.
func (db *DB) Syncs() int64 {
	if db.syncer == nil {
		return 0
	}
	return db.syncer.syncs.Load()
}

// Close syncs what the syncer has not yet and closes both connection
// pools.
func (db *DB) Close() error {
	if db.syncer != nil {
		db.syncer.close()
	}
	return errors.Join(db.R.Close(), db.W.Close())
}
