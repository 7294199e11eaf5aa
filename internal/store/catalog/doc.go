// Package catalog is the vocabulary of the platform's store: the agent
// library (one Entry per employee template), tenants, and installations of
// library entries into tenants, with the Store interface the platform
// consumes and the errors every implementation returns.
//
// Implementations live in internal/store (SQLite, the default) and
// internal/store/pg (PostgreSQL); catalogtest is the conformance suite both
// pass. This package imports only the standard library and tenantid, so the stores can
// depend on it without depending on the rest of the platform.
//
// # Rules
//
// The database itself enforces the rules, not only Go: an installation
// names an existing tenant and library entry (foreign keys), a pair is
// installed at most once (primary key), a library entry with installations
// cannot be deleted, deleting a tenant deletes its installations (and an
// installation's record of shipped files goes with it), and values keep
// their formats (check constraints). Go validates the same
// formats first (Normalize) only to give clearer messages.
//
// # Times
//
// Stores keep times to the millisecond, in UTC; a zero time in a write is
// replaced by the store's clock.
//
// # Concurrency
//
// A Store is safe for concurrent use by many goroutines and, for
// PostgreSQL, by many processes: every method is one transaction, and of
// concurrent Installs of the same pair exactly one succeeds, the others
// get ErrExists.
package catalog
