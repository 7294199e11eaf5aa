// Package gateway is Talon's HTTP server: the OpenAI-compatible
// /v1/chat/completions and /v1/models endpoints, health and readiness, bearer
// auth, and tenants selected by X-Tenant-ID, each with its own config,
// token, agents, workspaces and session store under the state dir.
//
// A Server is safe for concurrent use. Runs on one session are serialised;
// runs on different sessions proceed in parallel. Shutdown stops accepting
// requests and waits for runs in flight.
package gateway
