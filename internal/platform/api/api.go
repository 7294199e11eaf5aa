package api

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"talon/internal/authlimit"
	"talon/internal/platform"
)

// DefaultMaxBody caps request bodies when Options.MaxBody is 0.
const DefaultMaxBody = 1 << 20

// Options configure the API.
type Options struct {
	// AdminToken authorises platform operations. Empty refuses every
	// admin call with 503: the API is never open.
	AdminToken string
	// AdminTokenHint tells an operator how to set AdminToken (a flag or
	// an env var); it ends the 503 message.
	AdminTokenHint string
	// TenantToken returns the tenant's gateway token, read from its
	// config; chat accepts it for that tenant. Nil means chat takes the
	// admin token only.
	TenantToken func(tenantID string) (string, error)
	// MaxBody caps request bodies in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	Log     *slog.Logger
	// AuthLimit throttles wrong tokens; `talon serve` shares one with the
	// gateway and Studio. Nil means one of the API's own.
	AuthLimit *authlimit.Guard
}

type server struct {
	p *platform.Platform
	o Options
}

// New returns the API over p as an http.Handler serving /api/.
func New(p *platform.Platform, o Options) http.Handler {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.AuthLimit == nil {
		o.AuthLimit = authlimit.NewGuard()
	}
	s := &server{p: p, o: o}
	mux := http.NewServeMux()
	// byPath answers "which methods does this path take?" for the 405s
	// the catch-all gives, since the mux hands it every unmatched request.
	byPath := http.NewServeMux()
	allow := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
		if allow[rt.path] == nil {
			path := rt.path
			byPath.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Allow", strings.Join(allow[path], ", "))
				s.fail(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow[path], " or ")))
			})
		}
		allow[rt.path] = append(allow[rt.path], rt.method)
	}
	for _, m := range allow {
		slices.Sort(m)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if h, pat := byPath.Handler(r); pat != "" {
			h.ServeHTTP(w, r)
			return
		}
		s.fail(w, r, errorf(http.StatusNotFound, "no_route", "no API route %s %s; the routes are listed in /api/openapi.json", r.Method, r.URL.Path))
	})
	return mux
}

// wrap checks the caller and runs the route, turning its error into a
// JSON error response.
func (s *server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.o.MaxBody)
		if err := s.authorizeLimited(rt.access, r); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := rt.handle(s, w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}
