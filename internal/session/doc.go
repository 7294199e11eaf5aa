// Package session names sessions and validates changes to them: it turns any
// session key a client sends into the canonical store key, builds the keys
// the gateway mints itself, defines the stored session Entry, and applies
// `sessions.patch` requests to an entry (spec/gateway-protocol.md §5).
//
// Canonical store keys are lower case and shaped agent:<agentId>:<rest>, or
// are one of the literals "global" (every main alias under
// session.scope "global") and "unknown". Canonical rejects keys that are
// empty, longer than MaxKeyLen bytes, not UTF-8, or that contain control
// characters, and agent-prefixed keys without an agent id or a rest.
//
// Validation failures are *ValidationError values whose message is the one
// the protocol sends back as INVALID_REQUEST, word for word.
//
// The package is pure: no I/O, no clock, no randomness (callers pass the
// ids in). Every function is safe for concurrent use; an Entry is a value
// and ApplyPatch never modifies the entry it is given.
package session
