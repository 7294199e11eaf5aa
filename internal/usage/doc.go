// Package usage reports a tenant's usage ledger (store.DB.Usage) in the
// shape `talon usage --json` prints and the platform API answers: the
// totals of a time range and, when asked, one row per agent, model or
// UTC day. It reads the tenant's database file directly, so it needs no
// running gateway, and it never creates one: a tenant that has made no
// model call has zero totals.
//
// Tenancy is by file: a report reads one tenant's database, named by
// the caller, which has already checked who may read it.
package usage
