// Package studio is Talon's web UI, served by `talon serve` at /: tenants
// and the employee library, agents with their effective tools layer by
// layer, their sandbox and execution role, and chat with approval cards.
//
// Pages are rendered on the server (html/template) and enhanced with
// htmx and one small script for streaming; both are embedded, so there
// is no build step. Studio holds no state of its own beyond sign-in
// sessions: it reads and writes the gateway through the WebSocket
// protocol (a relay.Relay, one connection per tenant) and the workforce
// platform through its Go API, so what it shows is what they enforce.
//
// Concurrency: a Server is safe for concurrent use.
package studio

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"talon/internal/authlimit"
	"talon/internal/platform"
	"talon/internal/platform/relay"
	"talon/internal/tenantid"
)

//go:embed web
var webFS embed.FS

// Options configure a Server.
type Options struct {
	// Relay reaches each tenant's gateway; tenant "" is the default one.
	Relay *relay.Relay
	// TenantToken is the gateway token of a tenant ("" the default one),
	// "" when it has none: signing in with it shows that tenant only.
	TenantToken func(tenant string) (string, error)
	// AdminToken signs in as administrator: every tenant, the platform's
	// pages. Required.
	AdminToken string
	// Platform is the workforce platform, or why it is not running; nil
	// means Studio runs without one (no tenants or library pages).
	Platform func() (*platform.Platform, error)
	// NoDefaultTenant says there is no default tenant (Studio in front
	// of gateway nodes, talon serve --gateways): the tenants page does
	// not offer it.
	NoDefaultTenant bool
	// Log receives what a person is not shown; nil means slog.Default().
	Log *slog.Logger
	// AuthLimit throttles failed sign-ins; `talon serve` shares one with
	// the gateway and the platform API. Nil means one of Studio's own.
	AuthLimit *authlimit.Guard
}

// Server serves Studio.
type Server struct {
	o      Options
	log    *slog.Logger
	mux    *http.ServeMux
	auth   sessions
	limit  *authlimit.Guard
	repair repairs
}

// New prepares a Server.
func New(o Options) (*Server, error) {
	if o.Relay == nil || o.TenantToken == nil {
		return nil, errors.New("studio: a relay and a tenant token source are required")
	}
	if len(o.AdminToken) < 16 {
		return nil, errors.New("studio: the admin token must be at least 16 characters")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.AuthLimit == nil {
		o.AuthLimit = authlimit.NewGuard()
	}
	s := &Server{o: o, log: o.Log, auth: sessions{m: map[string]*session{}}, limit: o.AuthLimit, repair: repairs{done: map[string]*repairOutcome{}}}
	s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Studio's pages are never framed (clickjacking of the approval
	// buttons) and load nothing from elsewhere.
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", cacheable(http.FileServerFS(static))))
	m.HandleFunc("GET /signin", s.signinPage)
	m.HandleFunc("POST /signin", s.signin)
	m.HandleFunc("POST /signout", s.signout)
	m.HandleFunc("GET /{$}", s.signedIn(s.home))
	m.HandleFunc("GET /tenants", s.admin(s.tenantsPage))
	m.HandleFunc("POST /tenants", s.admin(s.createTenant))
	m.HandleFunc("POST /tenants/{tenant}/install", s.admin(s.install))
	m.HandleFunc("POST /tenants/{tenant}/uninstall", s.admin(s.uninstall))
	m.HandleFunc("POST /library/{slug}/sync", s.admin(s.sync))
	// A tenant's pages: the default tenant's at /agents, another's under
	// /t/ID/.
	for _, base := range []string{"", "/t/{tenant}"} {
		m.HandleFunc("GET "+base+"/agents", s.tenant(s.agentsPage))
		m.HandleFunc("POST "+base+"/agents", s.tenant(s.createAgent))
		m.HandleFunc("GET "+base+"/agents/{agent}", s.tenant(s.agentPage))
		m.HandleFunc("POST "+base+"/agents/{agent}/role", s.tenant(s.setRole))
		m.HandleFunc("GET "+base+"/agents/{agent}/chat", s.tenant(s.chatPage))
		m.HandleFunc("POST "+base+"/agents/{agent}/chat", s.tenant(s.chatSend))
		m.HandleFunc("GET "+base+"/agents/{agent}/chat/since", s.tenant(s.chatSince))
		m.HandleFunc("GET "+base+"/agents/{agent}/sessions", s.tenant(s.sessionsPage))
		m.HandleFunc("POST "+base+"/approvals/{id}", s.tenant(s.resolveApproval))
		m.HandleFunc("GET "+base+"/automations", s.tenant(s.automationsIndex))
		m.HandleFunc("GET "+base+"/agents/{agent}/automations", s.tenant(s.automationsPage))
		m.HandleFunc("POST "+base+"/agents/{agent}/automations", s.tenant(s.addJob))
		m.HandleFunc("POST "+base+"/agents/{agent}/automations/{job}/{action}", s.tenant(s.jobAction))
		m.HandleFunc("GET "+base+"/channels", s.tenant(s.channelsPage))
		m.HandleFunc("GET "+base+"/usage", s.tenant(s.usagePage))
		m.HandleFunc("POST "+base+"/channels/pairing/{request}/{action}", s.tenant(s.answerPairing))
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, nil, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	s.mux = m
}

func cacheable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// req is one signed-in request: who, and which tenant it is about.
type req struct {
	w    http.ResponseWriter
	r    *http.Request
	sess *session
	// tenant is "" for the default tenant; base is its pages' prefix.
	tenant, base string
}

// tenantLabel names the tenant for people.
func (q *req) tenantLabel() string {
	if q.tenant == "" {
		return "default tenant"
	}
	return "tenant " + q.tenant
}

// tenant wraps a handler of a tenant's pages: signed in, allowed to see
// that tenant, and a well-formed tenant id.
func (s *Server) tenant(h func(*req)) http.HandlerFunc {
	return s.signedIn(func(q *req) {
		t := q.r.PathValue("tenant")
		if t != "" && !tenantid.Valid(t) {
			s.fail(q.w, q.r, q.sess, http.StatusNotFound, fmt.Sprintf("%q is not a tenant id: letters, digits, _ and -, starting with a letter or digit.", t))
			return
		}
		if !q.sess.admin && t != q.sess.tenant {
			s.fail(q.w, q.r, q.sess, http.StatusForbidden, "You signed in with the token of "+tenantName(q.sess.tenant)+"; sign in with this tenant's token (or the admin token) to see it.")
			return
		}
		q.tenant = t
		if t != "" {
			q.base = "/t/" + t
		}
		h(q)
	})
}

func tenantName(t string) string {
	if t == "" {
		return "the default tenant"
	}
	return "tenant " + t
}

// admin wraps a handler of the platform's pages.
func (s *Server) admin(h func(*req)) http.HandlerFunc {
	return s.signedIn(func(q *req) {
		if !q.sess.admin {
			s.fail(q.w, q.r, q.sess, http.StatusForbidden, "Tenants and the employee library are for the administrator: sign in with the admin token.")
			return
		}
		h(q)
	})
}

func (s *Server) home(q *req) {
	if q.sess.admin && s.o.Platform != nil {
		http.Redirect(q.w, q.r, "/tenants", http.StatusSeeOther)
		return
	}
	to := "/agents"
	if q.sess.tenant != "" {
		to = "/t/" + q.sess.tenant + "/agents"
	}
	http.Redirect(q.w, q.r, to, http.StatusSeeOther)
}

// page is what every template gets.
type page struct {
	Title string
	Sess  *session
	// Base is the tenant's prefix, Tenant its label; Nav the current
	// section for the menu.
	Base, Tenant, Nav string
	HasPlatform       bool
	// Notice and Error are shown at the top.
	Notice []string
	Error  string
	Data   any
}

func (s *Server) newPage(q *req, title, nav string, data any) *page {
	return &page{Title: title, Sess: q.sess, Base: q.base, Tenant: q.tenantLabel(), Nav: nav, HasPlatform: s.o.Platform != nil, Data: data}
}

// render writes a page; a template error is logged and becomes a plain
// 500 (the page may be half-written by then, which is why templates
// only format data the handler already has).
func (s *Server) render(w http.ResponseWriter, status int, name string, p *page) {
	t, err := s.template(name)
	if err != nil {
		s.log.Error("studio: template", "name", name, "err", err)
		http.Error(w, "studio: internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := t.ExecuteTemplate(w, "page", p); err != nil {
		s.log.Error("studio: rendering", "page", name, "err", err)
	}
}

// fragment writes one named template on its own (an htmx swap).
func (s *Server) fragment(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := s.fragmentTo(w, name, data); err != nil {
		s.log.Error("studio: rendering", "fragment", name, "err", err)
	}
}

// fragmentTo executes one named template of the fragments into w.
func (s *Server) fragmentTo(w io.Writer, name string, data any) error {
	t, err := s.template("fragments")
	if err != nil {
		return err
	}
	return t.ExecuteTemplate(w, name, data)
}

// template returns a parsed page. Pages are parsed at the first request,
// not at start: parsing takes about 1.5 ms, which `talon serve` would
// otherwise add to every start.
func (s *Server) template(name string) (*template.Template, error) {
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	t := pages[name]
	if t == nil {
		return nil, fmt.Errorf("studio: no template %q", name)
	}
	return t, nil
}

// fail shows an error page.
func (s *Server) fail(w http.ResponseWriter, _ *http.Request, sess *session, status int, msg string) {
	p := &page{Title: http.StatusText(status), Sess: sess, HasPlatform: s.o.Platform != nil, Error: msg}
	s.render(w, status, "error", p)
}

var (
	parseOnce sync.Once
	parsed    map[string]*template.Template
	parseErr  error
)

// parsePages parses each page with the layout and the fragments, once.
func parsePages() (map[string]*template.Template, error) {
	parseOnce.Do(func() {
		base, err := template.New("").Funcs(funcs).ParseFS(webFS, "web/templates/layout.html", "web/templates/fragments.html")
		if err != nil {
			parseErr = fmt.Errorf("studio: parsing the layout: %w", err)
			return
		}
		parsed = map[string]*template.Template{"fragments": base}
		names, err := fs.Glob(webFS, "web/templates/*.html")
		if err != nil {
			parseErr = err
			return
		}
		for _, n := range names {
			short := strings.TrimSuffix(strings.TrimPrefix(n, "web/templates/"), ".html")
			if short == "layout" || short == "fragments" {
				continue
			}
			t, err := template.Must(base.Clone()).ParseFS(webFS, n)
			if err != nil {
				parseErr = fmt.Errorf("studio: parsing %s: %w", n, err)
				return
			}
			parsed[short] = t
		}
	})
	return parsed, parseErr
}
