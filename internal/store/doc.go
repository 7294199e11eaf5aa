// Package store keeps a tenant's sessions and transcripts in one SQLite
// database (modernc.org/sqlite: pure Go, no cgo), and the platform's
// catalog (agent library, tenants, installations: Catalog, the SQLite
// catalog.Store) in another, <stateDir>/platform.db. Each kind has its own
// list of migrations and version table; the rest of this comment is about
// the session store, and Catalog follows the same durability and
// concurrency rules. Package pg is the PostgreSQL catalog.
//
// # Tenancy
//
// Tenancy is by file: each tenant's state directory holds its own database,
// opened with its own DB. There is no tenant column, so one tenant's queries
// cannot reach another's rows. Within a file, sessions are keyed by
// (agent id, canonical session key); see package session for the keys.
//
// # Durability
//
// The database runs in WAL mode. When a write method returns nil, its
// transaction is in the WAL file, so it survives kill -9 (and any other end
// of the process). Open fsyncs it before the method returns as well
// (synchronous=FULL), so it survives a power cut too; OpenWith with a
// SyncWindow w commits with synchronous=NORMAL and has the log fsynced at
// most w later (package sqlitedb's syncer), so a power cut or a kernel
// crash can lose the last w of commits but never leaves a torn one, and
// commits stop waiting for the disk. `talon serve` uses 100 ms
// (--fsync-window). Every write is one transaction — all or nothing.
// Transcripts are append-only: rows are never updated (a trigger refuses
// it), each session's rows are numbered 1, 2, 3, … without gaps, and
// resetting a session starts a new transcript under a new session id while
// the old one stays. A row is a message (an assistant message with the
// usage its model call reported), a compaction, a reset boundary or the
// session's pruning projection (Kind). A compaction is committed with the
// session counters that record it in one transaction (AppendCompaction),
// and a turn reads only what is in view (ReadView: from the last
// boundary's first kept entry on), so a long session costs no more per
// turn than its window allows.
//
// The schema is versioned in the schema_migrations table. Open applies the
// missing migrations in one transaction and refuses a database whose
// version is newer than this binary knows.
//
// # Usage
//
// The usage ledger (usage.go) has one row per model call that answered:
// when, agent, session, what for (Call.Kind), provider and model, tokens
// and cost in micro-dollars. Each row is written in the commit of what its
// call produced: a turn's with the messages (Item.Call; a tool's model
// calls with its result, Item.Also) and the session row's token and cost
// counters, a summary's with its compaction (AppendCompaction), a memory
// flush's with its mark (RecordFlush); so a kill -9 neither loses a call
// whose product is stored nor counts one twice. RecordCalls writes the
// calls whose product was never stored. Usage sums a time range, grouped
// by agent, model, kind or calendar day, from an hourly roll-up
// (usage_hourly, rollup.go) that a background roll-up keeps off the
// turn's commit, reading the ledger itself for the rows not rolled up
// yet and where an hour is cut. Rows are never updated; a reset of a
// session keeps them.
//
// # Channels
//
// The channel runtime (package channel/hub) keeps its durable state here
// too (channels.go, pairing.go): the inbox stores each inbound chat
// message before its platform is acknowledged and deduplicates it by
// conversation and message id and by delivery id; its state only moves
// forward, one transaction per step, so a restart resumes every message
// where it stopped. The outbox holds one row per reply chunk, marked
// sending before the platform is called: a chunk with a platform message
// id is never sent again, and one in flight at a crash becomes
// unconfirmed rather than being re-sent. Pairing requests and approvals
// (spec channels.md R7.7) apply the TTL and the cap in one transaction and
// are read per message, so an approval from another process applies at
// once. Finished inbox rows are kept 30 days or 1,000 per account
// (PruneInbox), what a replayed delivery is recognised by.
//
// # Cron
//
// Cron jobs (spec automation.md §4, cron.go) are three tables: the
// definition with its config revision, the runtime state beside it (so an
// edit that keeps the schedule keeps the counters, and the scheduler
// writes state without touching the definition), and the run history.
// An edit names the revision it read and is refused (ErrStateChanged) when
// another came first. A tenant has at most 1,000 jobs; history is kept 7
// days (lost runs 24 h) and 2,000 rows per job. ImportCron stores
// OpenClaw's legacy jobs once — a job already there is left alone — and
// keeps what it cannot store in cron_quarantine for review.
//
// # Concurrency
//
// A DB is safe for concurrent use by many goroutines. Writes go through a
// single connection and so are serialised in the process: concurrent
// writers wait their turn (honouring their context) instead of failing
// with SQLITE_BUSY. Reads use a separate pool of read-only connections and
// run in parallel with each other and with the writer; each read sees the
// database as of the last commit before it started. Several processes may
// open the same file — SQLite's locks keep it consistent and writers wait
// up to 5 s for each other — but Talon runs one process per state
// directory. Close waits for nothing: call it after the last use.
//
// # Caching
//
// Transcript reads of up to 1,000 messages go through an in-memory cache
// of transcript tails (8 MB, least recently used first out). A cached read
// still asks the database for the messages after the last one it holds,
// so writes from anywhere — another DB on the same file, another process
// — are seen; it relies on transcripts being append-only.
package store
