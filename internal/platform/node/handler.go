package node

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"talon/internal/authlimit"
	"talon/internal/platform/install"
	"talon/internal/platform/template"
	"talon/internal/procfs"
	"talon/internal/store"
	"talon/internal/tenantid"
	"talon/internal/usage"
)

// Gateway is what the node API asks of the gateway it is mounted on
// (gateway.Server implements it).
type Gateway interface {
	// DropTenant forgets a tenant whose directory was deleted, ending
	// everything it had running and closing its handles.
	DropTenant(id string)
	// DrainTenant refuses the tenant's new work, waits (bounded) for its
	// runs, aborts those left, and closes its handles, so that its
	// directory is consistent to copy.
	DrainTenant(ctx context.Context, id string) error
	// ResumeTenant undoes DrainTenant, or opens a tenant that arrived
	// (Import): its channels and cron jobs start as at the gateway's
	// start.
	ResumeTenant(id string) error
	// Draining reports whether the tenant is drained or being drained.
	Draining(id string) bool
	// WarmTenants is how many tenants the gateway holds open.
	WarmTenants() int
}

// MinTokenLen is the shortest node token accepted: the token is the
// operator's, and guessing it must be out of reach.
const MinTokenLen = 16

// maxJSONBody bounds a request's JSON: a template travels in it, packed
// and base64-encoded.
const maxJSONBody = 48 << 20

// Options configure a Handler.
type Options struct {
	// StateDir is the gateway's: tenants are its tenants/<id>/.
	StateDir string
	// Token is TALON_NODE_TOKEN, at least MinTokenLen bytes.
	Token string
	// AuthLimit throttles wrong tokens by client address; nil means one of
	// the handler's own.
	AuthLimit *authlimit.Guard
	// Version is reported by Health.
	Version string
	// MaxImportBytes and MaxImportEntries bound an imported tenant; 0
	// means DefaultMaxImportBytes and DefaultMaxImportEntries.
	MaxImportBytes   int64
	MaxImportEntries int
	Log              *slog.Logger
}

// Handler serves the node API under /node/.
type Handler struct {
	o   Options
	gw  atomic.Pointer[Gateway]
	mux *http.ServeMux
}

// NewHandler checks o and returns the handler; Attach gives it its
// gateway before it serves.
func NewHandler(o Options) (*Handler, error) {
	if len(o.Token) < MinTokenLen {
		return nil, fmt.Errorf("node api: the node token must be at least %d characters", MinTokenLen)
	}
	if o.StateDir == "" {
		return nil, errors.New("node api: no state directory given")
	}
	abs, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, fmt.Errorf("node api: state dir: %w", err)
	}
	o.StateDir = abs
	if o.AuthLimit == nil {
		o.AuthLimit = authlimit.NewGuard()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxImportBytes <= 0 {
		o.MaxImportBytes = DefaultMaxImportBytes
	}
	if o.MaxImportEntries <= 0 {
		o.MaxImportEntries = DefaultMaxImportEntries
	}
	h := &Handler{o: o, mux: http.NewServeMux()}
	h.routes()
	h.cleanImports()
	return h, nil
}

// cleanImports removes what imports a killed process left: hidden
// directories beside the tenants, never served, which only an import of
// this state dir's one gateway writes.
func (h *Handler) cleanImports() {
	left, _ := filepath.Glob(filepath.Join(h.o.StateDir, install.TenantsDir, importPrefix+"*"))
	for _, dir := range left {
		if err := os.RemoveAll(dir); err != nil {
			h.o.Log.Warn("node api: removing an interrupted import", "dir", dir, "err", err)
		} else {
			h.o.Log.Info("node api: removed an interrupted import", "dir", dir)
		}
	}
}

// Attach gives the handler the gateway it serves beside: the gateway is
// made with the handler in its options, so it comes second.
func (h *Handler) Attach(g Gateway) { h.gw.Store(&g) }

func (h *Handler) gateway() (Gateway, error) {
	g := h.gw.Load()
	if g == nil {
		return nil, errors.New("the node's gateway is not attached yet")
	}
	return *g, nil
}

func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /node/health", h.health)
	m.HandleFunc("POST /node/tenants", h.create)
	m.HandleFunc("DELETE /node/tenants/{id}", h.tenant(h.delete))
	m.HandleFunc("GET /node/tenants/{id}/token", h.tenant(h.token))
	m.HandleFunc("GET /node/tenants/{id}/usage", h.tenant(h.usage))
	m.HandleFunc("POST /node/tenants/{id}/install", h.tenant(h.still(h.install)))
	m.HandleFunc("POST /node/tenants/{id}/update", h.tenant(h.still(h.update)))
	m.HandleFunc("POST /node/tenants/{id}/plan", h.tenant(h.plan))
	m.HandleFunc("POST /node/tenants/{id}/recover", h.tenant(h.still(h.recover)))
	m.HandleFunc("GET /node/tenants/{id}/employees/{slug}/pending", h.tenant(h.pending))
	m.HandleFunc("POST /node/tenants/{id}/employees/{slug}/settle", h.tenant(h.still(h.settle)))
	m.HandleFunc("DELETE /node/tenants/{id}/employees/{slug}", h.tenant(h.still(h.uninstall)))
	m.HandleFunc("POST /node/tenants/{id}/drain", h.tenant(h.drain))
	m.HandleFunc("POST /node/tenants/{id}/resume", h.tenant(h.resume))
	m.HandleFunc("GET /node/tenants/{id}/archive", h.tenant(h.export))
	m.HandleFunc("PUT /node/tenants/{id}/archive", h.tenant(h.importTenant))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, fmt.Errorf("%w: no node API route %s %s", errNoRoute, r.Method, r.URL.Path))
	})
}

// errNoRoute is a path or method the node API does not have.
var errNoRoute = errors.New("not found")

// ServeHTTP checks the node token, in constant time and under the
// failed-auth throttle (by client address only: a scope shared by every
// client would let anyone who can reach the node lock the platform out),
// then serves the route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	addr := authlimit.Addr(r)
	if wait := h.o.AuthLimit.Wait(addr); wait > 0 {
		w.Header().Set("Retry-After", authlimit.RetryAfter(wait))
		writeJSON(w, http.StatusTooManyRequests, errorBody{wireError{Code: "rate_limited", Message: "too many failed authentication attempts; try again later"}})
		return
	}
	tok := bearer(r)
	if subtle.ConstantTimeCompare([]byte(tok), []byte(h.o.Token)) != 1 {
		if tok != "" {
			h.o.AuthLimit.Fail(addr)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="talon-node"`)
		h.fail(w, r, fmt.Errorf("%w: send Authorization: Bearer <the node token>", ErrUnauthorized))
		return
	}
	h.mux.ServeHTTP(w, r)
}

func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// tenantHandler serves a route of one tenant, its id checked.
type tenantHandler func(w http.ResponseWriter, r *http.Request, id string) error

func (h *Handler) tenant(f tenantHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !tenantid.Valid(id) {
			h.fail(w, r, fmt.Errorf("%w: tenant id %q is invalid", ErrInvalid, id))
			return
		}
		if err := f(w, r, id); err != nil {
			h.fail(w, r, err)
		}
	}
}

// still refuses a change to a tenant that is moving: its directory is
// being copied, and a write now would be lost or torn.
func (h *Handler) still(f tenantHandler) tenantHandler {
	return func(w http.ResponseWriter, r *http.Request, id string) error {
		if g, err := h.gateway(); err == nil && g.Draining(id) {
			return fmt.Errorf("tenant %q: %w; resume it or finish the move first", id, ErrMoving)
		}
		return f(w, r, id)
	}
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	g, err := h.gateway()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := countTenants(h.o.StateDir)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	hl := Health{Tenants: n, Warm: g.WarmTenants(), Version: h.o.Version}
	// /proc is Linux's; elsewhere the figures are 0, which placement
	// treats as unknown.
	if of, err := procfs.OpenFiles(os.Getpid()); err == nil {
		hl.OpenFiles = of
	}
	if mx, err := procfs.MaxOpenFiles(os.Getpid()); err == nil {
		hl.MaxOpenFiles = int(mx)
	}
	writeJSON(w, http.StatusOK, hl)
}

// countTenants counts the tenant directories: entries that are
// directories (not symlinks) named by a valid id, as install.ListTenants
// lists them, without opening each.
func countTenants(stateDir string) (int, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, install.TenantsDir))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("counting tenants: %w", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() && tenantid.Valid(e.Name()) {
			n++
		}
	}
	return n, nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	var b tenantBody
	if err := readJSON(w, r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	if !tenantid.Valid(b.ID) {
		h.fail(w, r, fmt.Errorf("%w: tenant id %q is invalid", ErrInvalid, b.ID))
		return
	}
	for k := range b.Env {
		if !install.ValidEnvName(k) {
			h.fail(w, r, fmt.Errorf("%w: env name %q is invalid: use letters, digits and _, not starting with a digit", ErrInvalid, k))
			return
		}
	}
	t, err := install.CreateTenant(h.o.StateDir, b.ID, b.Env)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, tenantReply{ID: t.ID, Dir: t.Dir, ConfigPath: t.ConfigPath, Token: t.Token})
}

func (h *Handler) delete(w http.ResponseWriter, _ *http.Request, id string) error {
	g, err := h.gateway()
	if err != nil {
		return err
	}
	if err := install.DeleteTenant(h.o.StateDir, id); err != nil {
		return err
	}
	g.DropTenant(id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) token(w http.ResponseWriter, _ *http.Request, id string) error {
	tok, err := install.Token(h.o.StateDir, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tokenReply{Token: tok})
	return nil
}

func (h *Handler) usage(w http.ResponseWriter, r *http.Request, id string) error {
	q := usage.Query{By: r.URL.Query().Get("by")}
	if err := usage.CheckBy(q.By); err != nil {
		return fmt.Errorf("%w: by: %v", ErrInvalid, err)
	}
	if s := r.URL.Query().Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("%w: since %q is not an RFC 3339 time", ErrInvalid, s)
		}
		q.Since = t
	}
	// usage.Read reads a missing database as no usage: the tenant itself
	// must exist.
	dir, err := h.tenantDir(id)
	if err != nil {
		return err
	}
	rep, err := usage.Read(r.Context(), filepath.Join(dir, store.File), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// tenantDir is the tenant's directory, which must exist as one.
func (h *Handler) tenantDir(id string) (string, error) {
	dir := filepath.Join(h.o.StateDir, install.TenantsDir, id)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) || err == nil && !fi.IsDir():
		return "", fmt.Errorf("tenant %q: %w", id, install.ErrNoTenant)
	case err != nil:
		return "", fmt.Errorf("opening tenant %q: %w", id, err)
	}
	return dir, nil
}

// readTemplate reads a template request and loads its template.
func readTemplate(w http.ResponseWriter, r *http.Request) (*template.Template, templateBody, error) {
	var b templateBody
	if err := readJSON(w, r, &b); err != nil {
		return nil, b, err
	}
	tp, err := loadTemplate(b.Template, b.Slug)
	return tp, b, err
}

func (h *Handler) install(w http.ResponseWriter, r *http.Request, id string) error {
	tp, _, err := readTemplate(w, r)
	if err != nil {
		return err
	}
	res, err := install.Install(h.o.StateDir, id, tp)
	if err != nil {
		return err
	}
	return writeResult(w, res)
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request, id string) error {
	tp, b, err := readTemplate(w, r)
	if err != nil {
		return err
	}
	res, err := install.Update(h.o.StateDir, id, tp, b.Shipped)
	if err != nil {
		return err
	}
	return writeResult(w, res)
}

func writeResult(w http.ResponseWriter, res install.Result) error {
	ch, err := toWire(res.Changes)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resultReply{Changes: ch, Files: res.Files})
	return nil
}

// planError is install.Plan's error with the changes it found beside it.
type planError struct {
	err     error
	changes wireChanges
}

func (e *planError) Error() string { return e.err.Error() }
func (e *planError) Unwrap() error { return e.err }

func (h *Handler) plan(w http.ResponseWriter, r *http.Request, id string) error {
	tp, b, err := readTemplate(w, r)
	if err != nil {
		return err
	}
	ch, err := install.Plan(h.o.StateDir, id, tp, b.Shipped)
	wc, werr := toWire(ch)
	if werr != nil {
		return werr
	}
	if err != nil {
		return &planError{err: err, changes: wc}
	}
	writeJSON(w, http.StatusOK, wc)
	return nil
}

func (h *Handler) recover(w http.ResponseWriter, _ *http.Request, id string) error {
	if err := install.Recover(h.o.StateDir, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// slug is the route's employee slug, checked.
func slug(r *http.Request) (string, error) {
	s := r.PathValue("slug")
	if !template.ValidSlug(s) {
		return "", fmt.Errorf("%w: employee slug %q is invalid", ErrInvalid, s)
	}
	return s, nil
}

func (h *Handler) pending(w http.ResponseWriter, r *http.Request, id string) error {
	s, err := slug(r)
	if err != nil {
		return err
	}
	files, ok, err := install.Pending(h.o.StateDir, id, s)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pendingReply{Files: files, OK: ok})
	return nil
}

func (h *Handler) settle(w http.ResponseWriter, r *http.Request, id string) error {
	s, err := slug(r)
	if err != nil {
		return err
	}
	var b settleBody
	if err := readJSON(w, r, &b); err != nil {
		return err
	}
	if err := install.Settle(h.o.StateDir, id, s, b.Files); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) uninstall(w http.ResponseWriter, r *http.Request, id string) error {
	s, err := slug(r)
	if err != nil {
		return err
	}
	if err := install.Uninstall(h.o.StateDir, id, s); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readJSON decodes r's body strictly into v: unknown fields and trailing
// data are errors, and so is a body over maxJSONBody.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return fmt.Errorf("%w: reading the request: the body is larger than %d bytes", ErrInvalid, mb.Limit)
		}
		return fmt.Errorf("%w: reading the request: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: reading the request: data after the JSON value", ErrInvalid)
	}
	return nil
}

// fail writes err with its wire code. The node API is the operator's, so
// the message is the error's own, paths and all.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, we := encodeError(err)
	if status >= 500 {
		h.o.Log.Error("node api", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, errorBody{we})
}

// encodeError is err's status and wire form.
func encodeError(err error) (int, wireError) {
	we := wireError{Code: "failed", Message: err.Error()}
	var pe *install.PluginError
	var pl *planError
	if errors.As(err, &pl) {
		we.Changes = &pl.changes
	}
	switch {
	case errors.As(err, &pe):
		we.Code, we.Plugin = "plugin_off", pe
		return http.StatusUnprocessableEntity, we
	case errors.Is(err, errNoRoute):
		we.Code = "no_route"
		return http.StatusNotFound, we
	case errors.Is(err, context.Canceled):
		we.Code = "canceled"
		return 499, we
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			we.Code = c.code
			return c.status, we
		}
	}
	return http.StatusInternalServerError, we
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a client that went away is not our error
}
