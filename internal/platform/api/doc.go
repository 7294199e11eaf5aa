// Package api is the workforce platform's REST API: the library, tenants,
// installations and sync as JSON over HTTP, and chat with a tenant's
// employee streamed back as server-sent events. It is a thin layer over
// *platform.Platform: it checks the caller (an admin token for platform
// operations; the admin token or the tenant's own gateway token for that
// tenant's chat), validates the request, calls the platform and maps its
// errors to statuses with a JSON body {"error":{"code","message"}}.
// Wrong tokens are throttled per address and per token guessed at
// (authlimit); in `talon serve` the gateway in front also refuses a POST
// or DELETE that is not application/json.
//
// The routes live in one table (routes.go) that both the mux and the test
// comparing it with the OpenAPI document (openapi.json, served at
// /api/openapi.json) read, so the document cannot drift from the code.
//
// Concurrency: the handler is safe for concurrent use; it holds no state
// of its own beyond its options and its throttle, and the platform
// serialises what must be.
package api
