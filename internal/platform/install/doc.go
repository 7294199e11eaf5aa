// Package install manages tenants and the employees installed for them,
// over the tenant directories the gateway serves: <stateDir>/tenants/<id>/
// holding the tenant's config (talon.json) and, per employee, its
// workspace <tenant>/agents/<slug>/.
//
// Install, Update and Uninstall copy a template's files into the
// workspace, write the employee's agents.list[] entry (merged by id; the
// rest of the config is left as it was) and turn on the plugins the
// template requires, refusing with the key and the fix when the tenant's
// config keeps one off.
//
// A workspace is replaced by building the new one beside it and swapping
// directories by rename, under a journal in the tenant directory: a crash
// at any point (kill -9 included) leaves, after Recover — which every
// operation runs first — either the old workspace or the new one, and the
// tenant's memory/ whole in both cases. See swap.go.
//
// Concurrency: every operation on a tenant holds an exclusive flock on
// <tenant>/.install.lock, so operations on one tenant are serialised across
// goroutines and processes; different tenants proceed in parallel. Config
// writes are also guarded by the file's hash (baseHash), so a concurrent
// edit by the gateway is never overwritten: the edit is re-applied to the
// new file instead.
package install
