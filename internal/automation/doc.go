// Package automation holds the scheduled work of spec automation.md as
// data and rules: the cron job (schedule, payload, session target,
// delivery, runtime state), the run-log entry, and the pure rules over
// them — validation, the next run of a schedule in its time zone,
// stagger, error backoff. It takes no clock (every rule is given "now")
// and does no I/O beyond loading a time zone; the scheduler
// (automation/cron), the store (internal/store) and the gateway act on
// what it decides. Safe for concurrent use: it holds no state.
//
// cron.add runs DecodeJob, Normalize, Validate and Reschedule; cron.update
// runs ApplyPatch, Normalize, Validate, and Reschedule when the patch
// changed the schedule identity. Cron expressions are evaluated here
// (cronexpr.go), wall clock first, so the DST rule has one home.
package automation
