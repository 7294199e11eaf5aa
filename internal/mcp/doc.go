// Package mcp is Talon's client of the MCP servers configured under
// mcp.servers: it starts them, lists their tools and turns each tool into a
// tools.Tool whose calls go to the server.
//
// A Manager holds one tenant's servers and lives across config reloads.
// Configure applies a new mcp.servers map: a server whose config changed or
// that was removed is stopped, an unchanged one keeps running, and one with
// enabled:false is absent. A server is started on first use (Tools, or a
// call of one of its tools), within its startup timeout (default 30 s),
// which also bounds listing its tools. Its tool list is cached until the
// server sends notifications/tools/list_changed. A server that crashed, or
// whose connection failed during a call, is restarted on its next use; after
// consecutive failures each further start waits a doubling backoff (up to
// two minutes), and the error says when the next attempt is allowed, so a
// crash-looping server cannot make Talon fork without bound. Close stops
// every server: stdio processes get stdin closed, then SIGTERM, then SIGKILL,
// and are always reaped; no goroutine outlives Close.
//
// Stdio servers run with a minimal environment (PATH, HOME, LANG, TMPDIR
// and what the config's env sets), never the gateway's own secrets; their
// stderr goes to the log, line by line and bounded. Streamable HTTP servers
// get the config's headers on every request and are not redirected: the URL
// is the operator's, not the model's, so the network guard does not apply.
//
// Tool names are the MCP names lower-cased with every character outside
// [a-z0-9_] mapped to '_' (ToolName); a tool whose name cannot be made
// valid, collides with an earlier one after mapping, or whose inputSchema is
// not an object schema that compiles (AcceptSchema: type "object", known
// type names, only local acyclic $refs, so recursive schemas are refused)
// is skipped with a warning naming server and tool. A server contributes at
// most 256 tools; descriptions are cut at 2 KiB. Arguments are validated against the
// schema before the call, so the model gets a specific error and the server
// never sees them; a call is bounded by the server's tool timeout (default
// 60 s).
//
// Every Manager method and every tool it returns is safe for concurrent
// use. Starts of one server are serialised; different servers start and
// run independently.
package mcp
