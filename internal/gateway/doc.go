// Package gateway is Talon's HTTP server: the OpenAI-compatible
// /v1/chat/completions and /v1/models endpoints, health and readiness, bearer
// auth, and tenants selected by X-Tenant-ID, each with its own config,
// token, agents, workspaces and session store under the state dir.
//
// Every request passes the browser-safety rules first (browser.go): a
// Host that is the gateway's, JSON bodies on the APIs, a WebSocket Origin
// that is the gateway's own; failed bearer and connect auth is throttled
// per client address and per tenant (throttle.go, authlimit).
//
// A tenant's handles open on its first use and close when it has been
// idle for Options.TenantIdle or a cold tenant needs the room, at most
// Options.MaxWarmTenants open at once (warm.go); a tenant at work stays
// open.
//
// A Server is safe for concurrent use. Runs on one session are serialised;
// runs on different sessions proceed in parallel. Shutdown stops accepting
// requests and waits for runs in flight.
package gateway
