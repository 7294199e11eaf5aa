// Package config loads, validates, patches and saves Talon's OpenClaw-shaped
// JSON5 config file (talon.json, openclaw.json).
//
// A file is held twice: as an ordered tree (Value), which is what gets
// patched, redacted and written back so that unknown keys and member order
// survive a round trip, and as the typed Config decoded from that tree,
// which is what the rest of Talon reads. Redact hides a tree's secrets,
// RedactText a file's text (comments kept), and Restore puts them back
// into what a client sends, failing with a *RestoreError that says which
// value to send again.
//
// The config also owns its vocabulary, so that each rule has one home:
// agent ids (NormalizeAgentID; Config.Agent finds an entry by normalised
// id, Config.DefaultAgentID and Config.AgentIDs list them), an agent's
// model (Config.AgentModel; ModelRef and ParseModelRef read a reference)
// and an agent's workspace (Config.AgentWorkspace, by its text). Other
// packages ask here rather than walking agents.list themselves.
//
// Concurrency: a Value, Config or File is not safe for concurrent mutation;
// share one only if nobody modifies it, or copy it (Value.Clone). Load,
// Parse, Decode and Save share nothing but a concurrency-safe cache of
// struct layouts, so they are safe to call from many goroutines on
// different paths. Two concurrent Saves of one path each replace the file
// atomically and the last rename wins; callers serialise writers with
// baseHash and a lock of their own.
package config
