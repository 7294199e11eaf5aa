// Package approval holds Talon's exec approvals: the approvals file
// (<state-dir>/exec-approvals.json, OpenClaw's shape) with its hash and
// baseHash-guarded atomic writes (Store), the effective exec policy of a
// run (Resolve), the decision for one analysed command (Decide), and the
// pending approvals an operator resolves (Manager).
//
// The command analyser lives in approval/analyze; this package takes its
// result as a Verdict so that the decision never depends on how a command
// was parsed, only on what the analysis concluded. Analysis that could not
// decide is a miss, never a hit.
//
// Fail closed: a corrupt or unreadable approvals file yields a deny-all
// policy together with a diagnostic saying so, never a permissive default.
//
// Concurrency: Resolve and Decide are pure. A Store serialises its writers
// with a mutex and, across processes, an flock on a lock file beside the
// approvals file, so two writers with one baseHash cannot both win. A
// Manager is safe for concurrent use; it calls its event callback without
// holding its lock.
package approval
