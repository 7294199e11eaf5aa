// Package channel connects chat platforms (Telegram, Slack, Discord) to a
// tenant's agents: it defines what every platform adapter turns an event
// into (Envelope), what an adapter does (Transport), and the pure rules of
// spec/channels.md that decide what happens to an inbound message — who
// may talk to the bot (access control and pairing), whether a group
// message is addressed to it (mention gating), which agent answers
// (bindings) and in which session (session keys).
//
// The adapters live in the subpackages telegram, slack and discord; the
// rendering and chunking of replies in format; the per-tenant runtime
// that stores each inbound message before it is acknowledged, runs the
// turn and delivers the answer exactly once in hub.
//
// Everything in this package is pure: no I/O, no clock (callers pass the
// time), safe for concurrent use.
package channel
