package memory

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"talon/internal/sqlitedb"
	"talon/internal/tools"
)

// Limits of the indexer.
const (
	// MaxFileBytes is the largest memory file indexed or read.
	MaxFileBytes = 1 << 20
	// MaxFiles is how many memory files of one agent are indexed.
	MaxFiles = 2000
)

// schemaVersion is kept in PRAGMA user_version. The index is a cache of
// the files, so a database of another version is rebuilt, not migrated.
// Version 2 added chunk hashes and vectors.
const schemaVersion = 2

// schemaSQL creates the tables. chunks_fts is an external-content FTS5
// table over chunks, kept in step by triggers, so deleting a file's rows
// by (agent, path) uses chunks' index instead of scanning the FTS table.
// vectors holds the embeddings of chunk texts by content hash (SHA-256)
// and model identity, not by chunk row: a file edited in one place is
// re-chunked whole, but only its changed chunks have new hashes and are
// embedded again. vec is float32 little-endian, scaled to unit length.
const schemaSQL = `
CREATE TABLE files (
	agent    TEXT    NOT NULL,
	path     TEXT    NOT NULL,
	size     INTEGER NOT NULL,
	mtime_ns INTEGER NOT NULL,
	hash     TEXT    NOT NULL,
	PRIMARY KEY (agent, path)
);
CREATE TABLE chunks (
	id         INTEGER PRIMARY KEY,
	agent      TEXT    NOT NULL,
	path       TEXT    NOT NULL,
	start_line INTEGER NOT NULL,
	end_line   INTEGER NOT NULL,
	text       TEXT    NOT NULL,
	hash       BLOB    NOT NULL
);
CREATE INDEX chunks_by_file ON chunks (agent, path);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
	text, content='chunks', content_rowid='id',
	tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
	INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
	INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TABLE vectors (
	agent TEXT NOT NULL,
	model TEXT NOT NULL,
	hash  BLOB NOT NULL,
	vec   BLOB NOT NULL,
	PRIMARY KEY (agent, model, hash)
) WITHOUT ROWID;
`

const dropSQL = `
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TABLE IF EXISTS chunks_fts;
DROP TABLE IF EXISTS chunks;
DROP TABLE IF EXISTS files;
DROP TABLE IF EXISTS vectors;
`

// Index is one tenant's memory index.
type Index struct {
	db *sqlitedb.DB
	w  *sql.DB // exactly one connection: all writes
	r  *sql.DB // read-only connections

	locks sync.Map // agent id → *sync.Mutex, serialising that agent's sync
	gens  sync.Map // agent id → *atomic.Uint64, bumped by every write of its rows

	log *slog.Logger
	now func() time.Time // the clock of the embeddings back-off; tests set it

	done     sync.Map // agent id → doneMark: all its chunks had vectors
	vecs     vecCache
	setBytes int // maxSetBytes
	failedMu sync.Mutex
	failed   map[string]failure // model identity → its last failure
}

// Open opens the index database at path, creating it (mode 0600, parent
// directories 0700) if needed.
func Open(path string) (*Index, error) {
	// synchronous NORMAL: a lost last transaction only means re-indexing
	// a file on the next search.
	db, err := sqlitedb.Open(path, sqlitedb.Options{What: "memory index", Synchronous: "NORMAL"})
	if err != nil {
		return nil, err
	}
	ix := &Index{db: db, w: db.W, r: db.R, log: slog.New(slog.DiscardHandler), now: time.Now,
		vecs: vecCache{budget: vecBudget}, setBytes: maxSetBytes, failed: map[string]failure{}}
	if err := ix.setup(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening memory index %q: %w", db.Path, err)
	}
	return ix, nil
}

// setup creates the schema, rebuilding a database of another version.
func (ix *Index) setup(ctx context.Context) error {
	tx, err := ix.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("reading schema version: %w", err)
	}
	if v == schemaVersion {
		return nil
	}
	if _, err := tx.ExecContext(ctx, dropSQL); err != nil {
		return fmt.Errorf("dropping index of schema version %d: %w", v, err)
	}
	if _, err := tx.ExecContext(ctx, schemaSQL); err != nil {
		if strings.Contains(err.Error(), "fts5") {
			return fmt.Errorf("creating schema: this SQLite build lacks FTS5: %w", err)
		}
		return fmt.Errorf("creating schema: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("setting schema version: %w", err)
	}
	return tx.Commit()
}

// Close closes the database. Call it after the last use.
func (ix *Index) Close() error { return ix.db.Close() }

// SetLog sets where the index reports an embeddings provider that
// failed; by default nowhere. Call it before the first search.
func (ix *Index) SetLog(l *slog.Logger) { ix.log = l }

// Tools returns memory_search and memory_get, which use this index;
// memory_search ranks as opts says.
func (ix *Index) Tools(opts Options) []tools.Tool {
	return []tools.Tool{&searchTool{ix: ix, opts: opts}, &getTool{}}
}

// gen returns the counter of writes to an agent's rows. A value read
// before reading rows, and found unchanged later, means nothing read has
// changed since.
func (ix *Index) gen(agent string) *atomic.Uint64 {
	g, _ := ix.gens.LoadOrStore(agent, new(atomic.Uint64))
	return g.(*atomic.Uint64)
}

// lock returns the mutex serialising the sync of one agent's files.
func (ix *Index) lock(agent string) *sync.Mutex {
	m, _ := ix.locks.LoadOrStore(agent, new(sync.Mutex))
	return m.(*sync.Mutex)
}
