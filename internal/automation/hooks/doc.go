// Package hooks is the HTTP hooks endpoint of one tenant (spec
// automation.md §10): token-authenticated POST <hooks.path>/wake,
// <hooks.path>/agent and mapped <hooks.path>/<name>, so that external
// systems can queue a wake event or start an agent turn.
//
// The package checks and shapes requests — method, token (constant-time,
// never in the query), failed-auth throttling, body size and read time,
// agent and session-key policy, delivery targets, mapping templates and
// forEach fan-out, untrusted-content wrapping, idempotent replay — and
// hands the result to a Dispatcher its consumer owns. It never runs a
// model, touches a session or delivers a message itself, and it never
// listens: the gateway mounts a Handler (New) for each tenant config.
//
// Not built: JavaScript transforms (config validation refuses a mapping
// that names one), presets (the Gmail one), and R10.6's one-at-a-time
// order per session key, which is the Dispatcher's (session lanes).
//
// Concurrency: a Handler is safe for concurrent use. It holds the config
// it was made with; a changed config means a new Handler (and fresh
// replay and throttle state, as after OpenClaw's restart).
package hooks
