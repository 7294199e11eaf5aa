// Package protocol holds the wire types of the OpenClaw gateway WebSocket
// protocol as Talon speaks it: frames, the connect handshake, hello-ok,
// error codes, roles and scopes. The server (internal/gateway), the Go
// client (protocol/client) and the tests share them, so one change to the
// wire shows up everywhere at once.
//
// Types here are plain data with no behaviour beyond encoding; they are
// safe to share between goroutines once built.
package protocol
