// Package browser is the browser tool, OpenClaw's: a headless Chromium
// driven over the DevTools protocol (chromedp, through a pipe, so no
// DevTools port is open), one per agent, with OpenClaw's actions —
// status, start, stop, tabs, open, focus, close, navigate, snapshot (the
// page's accessibility tree as text, with element refs that map to DOM
// backend node ids), act (click, type, press, hover, select, … by ref),
// screenshot and pdf (saved as new files in the workspace), console.
//
// Every request of a page goes through a forward proxy of the tool
// (HTTP CONNECT and absolute-URI requests, on a random port of
// 127.0.0.1) whose connections are dialled by internal/netguard with the
// run's network rule; Chromium is told to send loopback through it too,
// to send no UDP around it (WebRTC, QUIC), and resolves no names itself,
// so redirects, subresources, fetches and WebSockets meet the same rule
// and DNS rebinding gains nothing. Navigations take http and https URLs
// only.
//
// The profile of an agent's browser is under the tenant's state
// directory (browser/<agentId>), never in the workspace the model
// writes. A browser starts on the first call that needs one and closes
// after Options.Idle without calls, on action stop, and when its tenant
// is forgotten (Forget). A crash of Chromium, or a broken DevTools
// connection, ends the call with a tool error and the next call starts a
// fresh browser. The tool refuses to run in a sandboxed session: the
// browser would run on the host (the policy does not offer it there).
//
// The Tool is safe for concurrent use: calls on one agent's browser are
// serialised, browsers of different agents run in parallel.
package browser
