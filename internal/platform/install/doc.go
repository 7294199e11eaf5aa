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
// The template owns exactly the files it shipped, by path: Install and
// Update return that record (Shipped: path, SHA-256, execute bit) for the
// caller to keep, and Update takes it back. An update writes only the
// files the template adds or changes and removes only files an earlier
// version shipped and this one does not; a file whose content differs
// from the record is the employee's edit and is never overwritten or
// removed (a copy is kept as <path>.local-<stamp> when the template
// changes it too). Every other file — memory/, MEMORY.md, USER.md,
// TOOLS.md, canvas/, skills and tools the employee added — is never read
// or written, and an unchanged template writes nothing at all.
//
// An update's steps run under a journal in the tenant directory: a crash
// at any point (kill -9 included) leaves, after Recover — which every
// operation runs first — either the old files or the new ones, with
// nothing of the employee's lost; a pending record on disk (Pending,
// Settle) carries the new record until the caller has stored it. Symlinks
// the employee made are never followed. See swap.go.
//
// Concurrency: every operation on a tenant holds an exclusive flock on
// <tenant>/.install.lock, so operations on one tenant are serialised across
// goroutines and processes; different tenants proceed in parallel. Config
// writes are also guarded by the file's hash (baseHash), so a concurrent
// edit by the gateway is never overwritten: the edit is re-applied to the
// new file instead.
package install
