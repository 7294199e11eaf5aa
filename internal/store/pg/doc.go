// Package pg is the PostgreSQL implementation of catalog.Store (pgx v5
// with its connection pool), for platforms that share one database across
// processes or hosts. It keeps the same schema as the SQLite catalog in
// package store — foreign keys, primary keys and check constraints —
// expressed for PostgreSQL, versioned in its catalog_migrations table,
// and maps the server's refusals to catalog's errors by SQLSTATE and
// constraint name.
//
// # Concurrency
//
// A Store is safe for concurrent use by many goroutines, and several
// processes may open the same database: Open takes a transaction-level
// advisory lock while migrating, every method is one statement or one
// transaction, and of concurrent Installs of one pair the primary key lets
// exactly one through.
package pg
