package api

import "net/http"

// access is who may call a route.
type access int

const (
	public access = iota // the OpenAPI document
	admin                // Authorization: Bearer <admin token>
	tenant               // the admin token, or the {id} tenant's own token
)

// route is one operation of the API.
type route struct {
	method, path string
	access       access
	handle       func(*server, http.ResponseWriter, *http.Request) error
}

// routes is the API. The mux registers exactly these, and the OpenAPI test
// checks openapi.json against them in both directions.
var routes = []route{
	{"GET", "/api/openapi.json", public, (*server).openAPI},
	{"GET", "/api/library", admin, (*server).library},
	{"POST", "/api/library/sync", admin, (*server).syncAll},
	{"POST", "/api/library/sync/{slug}", admin, (*server).syncOne},
	{"GET", "/api/tenants", admin, (*server).tenants},
	{"GET", "/api/usage", admin, (*server).allUsage},
	{"POST", "/api/tenants", admin, (*server).createTenant},
	{"DELETE", "/api/tenants/{id}", admin, (*server).deleteTenant},
	{"GET", "/api/tenants/{id}/installations", admin, (*server).installations},
	{"POST", "/api/tenants/{id}/installations", admin, (*server).install},
	{"DELETE", "/api/tenants/{id}/installations/{slug}", admin, (*server).uninstall},
	{"POST", "/api/tenants/{id}/employees/{slug}/chat", tenant, (*server).chat},
	{"GET", "/api/tenants/{id}/usage", tenant, (*server).usage},
	{"POST", "/api/tenants/{id}/move", admin, (*server).move},
	{"GET", "/api/nodes", admin, (*server).nodes},
}
